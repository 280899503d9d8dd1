import http from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Histogram, Registry } from "prom-client";
import { formatIssues } from "../../statemachine/problems.ts";
import {
  matchesRoute,
  type ProxyConfig,
  type ProxyConfigInput,
  ProxyConfigSchema,
  ProxyConfigUpdateSchema,
} from "./config.ts";
import { ExactShare } from "./exact-share.ts";
import { RequestWindow } from "./window.ts";

/**
 * The local traffic router: an HTTP reverse proxy with a stable and a candidate upstream, used by
 * the embedded runtime and the demo in place of an ALB or a Lambda alias. It does what those do
 * for a rollout (an exact weighted split, a testers header route, per-version request metrics)
 * with nothing but `node:http` and `prom-client`, so it starts in milliseconds inside a test.
 *
 * Endpoints handled by the proxy itself (everything else is forwarded):
 * - `GET /admin/config` → the configuration and the split counters since the last weight change;
 * - `POST /admin/config` → merge a (partial) configuration `{"stable","canary","weight",…}`;
 * - `GET /metrics` → Prometheus text: `http_requests_total{version,code}` and
 *   `http_request_duration_seconds{version}` for every forwarded request;
 * - `GET /admin/stats?version=V&window=S` → the version's requests and success rate over the last
 *   S seconds from the proxy's own samples (`result` is `[rate]`, or `[]` without requests).
 */

/** The header that reaches the candidate whatever the weight (blue/green preview, testers). */
export interface TestersHeader {
  readonly name: string;
  readonly value: string;
}

export interface ProxyOptions {
  /** 0 = any free port (tests). */
  readonly port?: number;
  /** Defaults to 127.0.0.1: the proxy has an unauthenticated admin API. */
  readonly host?: string;
  /** Initial configuration; without it the proxy answers 503 until `POST /admin/config`. */
  readonly config?: ProxyConfigInput;
  /** Defaults to `X-Canary: always` (the usual testers header). */
  readonly testersHeader?: TestersHeader;
  /** Milliseconds an upstream may take to answer before the proxy gives up with a 504. */
  readonly upstreamTimeoutMs?: number;
  /**
   * The clock of `/admin/stats` windows (epoch ms): the embedded runtime's clock, so a rollout in
   * virtual time sees the traffic of its own virtual seconds.
   */
  readonly now?: () => number;
}

/** A running proxy. */
export interface RunningProxy {
  /** `http://host:port` of the proxy. */
  readonly url: string;
  readonly port: number;
  /** The current configuration (a copy). */
  config(): ProxyConfig | null;
  /** Stops accepting connections, drops idle upstream sockets and resolves when closed. */
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);

const MAX_ADMIN_BODY = 64 * 1024;

type Side = "stable" | "canary";

/** Starts the proxy and resolves once it listens. */
export async function startProxy(options: ProxyOptions = {}): Promise<RunningProxy> {
  const testers = options.testersHeader ?? { name: "X-Canary", value: "always" };
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? 30_000;
  let config: ProxyConfig | null = options.config ? ProxyConfigSchema.parse(options.config) : null;
  let share = new ExactShare(config?.weight ?? 0);

  const registry = new Registry();
  const requests = new Counter({
    name: "http_requests_total",
    help: "Requests forwarded by the proxy, by upstream version and status code.",
    labelNames: ["version", "code"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to the end of the upstream's response, by upstream version.",
    labelNames: ["version"] as const,
    registers: [registry],
  });

  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const window = new RequestWindow(options.now ? { now: options.now } : {});

  function applyConfig(next: ProxyConfig): void {
    const weightChanged = config === null || config.weight !== next.weight || config.canary !== next.canary;
    config = next;
    if (weightChanged) share = new ExactShare(next.weight);
  }

  function chooseSide(current: ProxyConfig, req: http.IncomingMessage): { side: Side; route: string } {
    if (current.canary !== null) {
      const testersValue = req.headers[testers.name.toLowerCase()];
      if (testersValue === testers.value) return { side: "canary", route: "testers" };
      const route = current.headerRoutes.find((r) => matchesRoute(r, req.headers));
      if (route) return { side: "canary", route: route.name };
    }
    return { side: share.next() ? "canary" : "stable", route: "weight" };
  }

  function forward(current: ProxyConfig, req: http.IncomingMessage, res: http.ServerResponse): void {
    const started = process.hrtime.bigint();
    const { side, route } = chooseSide(current, req);
    const base = new URL(side === "canary" && current.canary !== null ? current.canary : current.stable);
    const configuredVersion = side === "canary" ? current.canaryVersion : current.stableVersion;
    let counted = false;
    const record = (version: string, code: number) => {
      if (counted) return;
      counted = true;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      requests.inc({ version, code: String(code) });
      duration.observe({ version }, seconds);
      window.record(version, code);
    };

    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(name) && value !== undefined) headers[name] = value;
    }
    headers["x-forwarded-host"] = req.headers.host ?? "";
    headers["x-forwarded-proto"] = "http";
    const basePath = base.pathname.replace(/\/$/, "");

    const upstream = http.request(
      {
        agent,
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        method: req.method,
        path: basePath + (req.url ?? "/"),
        headers,
        timeout: upstreamTimeoutMs,
      },
      (upRes) => {
        const headerVersion = upRes.headers["x-version"];
        const version =
          typeof headerVersion === "string" && headerVersion.length > 0 ? headerVersion : configuredVersion;
        const code = upRes.statusCode ?? 502;
        const outHeaders: http.OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(upRes.headers)) {
          if (!HOP_BY_HOP.has(name) && value !== undefined) outHeaders[name] = value;
        }
        outHeaders["x-proxy-upstream"] = side;
        outHeaders["x-proxy-route"] = route;
        res.writeHead(code, outHeaders);
        upRes.pipe(res);
        upRes.on("end", () => record(version, code));
        upRes.on("error", () => {
          record(version, 502);
          res.destroy();
        });
      },
    );
    upstream.on("timeout", () => {
      upstream.destroy(new Error(`no answer within ${upstreamTimeoutMs} ms`));
    });
    upstream.on("error", (err) => {
      const timedOut = err.message.startsWith("no answer within");
      const code = timedOut ? 504 : 502;
      record(configuredVersion, code);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(code, {
        "content-type": "text/plain; charset=utf-8",
        "x-proxy-upstream": side,
        "x-proxy-route": route,
      });
      res.end(
        `${code === 504 ? "Gateway Timeout" : "Bad Gateway"}: the ${side} upstream ${configuredVersion} ` +
          `(${base.origin}${basePath}) ${timedOut ? "did not answer" : "is unreachable"}: ${err.message}\n`,
      );
    });
    req.pipe(upstream);
  }

  async function readBody(req: http.IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > MAX_ADMIN_BODY) throw new Error(`body larger than ${MAX_ADMIN_BODY} bytes`);
      chunks.push(buf);
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  function sendJson(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(`${JSON.stringify(body)}\n`);
  }

  async function admin(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method === "GET") {
      sendJson(res, 200, { config, split: share.counts, testersHeader: testers });
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, { allow: "GET, POST" }).end("method not allowed\n");
      return;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(await readBody(req));
    } catch (err) {
      sendJson(res, 400, { error: `body is not JSON: ${(err as Error).message}` });
      return;
    }
    const update = ProxyConfigUpdateSchema.safeParse(raw);
    if (!update.success) {
      sendJson(res, 400, { error: formatIssues(update.error, "(body)") });
      return;
    }
    const merged = ProxyConfigSchema.safeParse({ ...(config ?? {}), ...stripUndefined(update.data) });
    if (!merged.success) {
      sendJson(res, 400, { error: formatIssues(merged.error, "(body)") });
      return;
    }
    applyConfig(merged.data);
    sendJson(res, 200, { config, split: share.counts, testersHeader: testers });
  }

  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/admin/config") {
      admin(req, res).catch((err: unknown) => sendJson(res, 500, { error: String(err) }));
      return;
    }
    if (path === "/admin/stats" && req.method === "GET") {
      const query = new URL(req.url ?? "/", "http://proxy").searchParams;
      const version = query.get("version");
      const seconds = Number(query.get("window") ?? "20");
      if (!version || !Number.isFinite(seconds) || seconds <= 0) {
        sendJson(res, 400, { error: "give ?version=NAME and optionally &window=SECONDS (> 0)" });
        return;
      }
      const stats = window.stats(version, seconds);
      // `result` is a vector like Prometheus' answer, so `result[0] >= 0.95` reads the same; empty with no data.
      sendJson(res, 200, {
        version,
        window: seconds,
        ...stats,
        result: stats.successRate === null ? [] : [stats.successRate],
      });
      return;
    }
    if (path === "/metrics" && req.method === "GET") {
      registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { "content-type": registry.contentType });
          res.end(text);
        })
        .catch((err: unknown) => sendJson(res, 500, { error: String(err) }));
      return;
    }
    if (config === null) {
      res.writeHead(503, { "content-type": "text/plain; charset=utf-8" });
      res.end("Service Unavailable: the proxy has no upstream yet; POST /admin/config first\n");
      return;
    }
    forward(config, req, res);
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    config: () => (config === null ? null : structuredClone(config)),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
