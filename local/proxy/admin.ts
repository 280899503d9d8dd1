import type http from "node:http";
import { contentTypeRefusal, crossOriginRefusal, hostRefusal, sendRefusal } from "../../cli/http-guard.ts";
import { formatIssues } from "../../statemachine/problems.ts";
import { ProxyConfigSchema, ProxyConfigUpdateSchema } from "./config.ts";
import type { TrafficMetrics } from "./metrics.ts";
import type { ProxyState } from "./state.ts";

const MAX_ADMIN_BODY = 64 * 1024;

/**
 * The admin API, served on its own listener (never the traffic port, so nothing that reaches the
 * service can reconfigure it):
 * - `GET /admin/config` → the configuration and the split counters since the last weight change;
 * - `POST /admin/config` (`Content-Type: application/json`) → merge a (partial) configuration;
 * - `GET /admin/stats?version=V&window=S` → the version's requests and success rate over the last
 *   S seconds from the proxy's own samples;
 * - `GET /compare?primary=NAME&candidate=NAME&window=S` → a summary of each version over the last S
 *   seconds (requests, errors, rates, latency), the contract of the samples provider
 *   (`functions/metrics/samples.ts`); `stable`/`primary` and `canary`/`candidate` name the versions
 *   the configuration routes to;
 * - `GET /metrics` → the Prometheus text, as on the traffic port.
 *
 * Every request whose `Host` is not one of `ownHosts` (DNS rebinding) or that comes from another
 * origin is refused with 403, and a POST body that is not JSON with 415 (`local/http-guard.ts`),
 * so a web page can neither change the weight nor read the configuration or the counters.
 */
export function adminHandler(
  state: ProxyState,
  metrics: TrafficMetrics,
  ownOrigin: () => string,
  ownHosts: () => readonly string[],
): http.RequestListener {
  return (req, res) => {
    const refusal = hostRefusal(req, ownHosts()) ?? crossOriginRefusal(req, ownOrigin());
    if (refusal !== undefined) {
      req.resume();
      sendRefusal(res, refusal);
      return;
    }
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/admin/config") {
      config(state, req, res).catch((err: unknown) => sendJson(res, 500, { error: String(err) }));
      return;
    }
    if (path === "/admin/stats" && req.method === "GET") {
      stats(metrics, req, res);
      return;
    }
    if (path === "/compare" && req.method === "GET") {
      compare(state, metrics, req, res);
      return;
    }
    if (path === "/metrics" && req.method === "GET") {
      serveMetrics(metrics, res);
      return;
    }
    sendJson(res, 404, {
      error: `${req.method} ${path} is not part of the admin API (GET/POST /admin/config, GET /admin/stats, GET /compare, GET /metrics)`,
    });
  };
}

/** `GET /metrics` on either listener. */
export function serveMetrics(metrics: TrafficMetrics, res: http.ServerResponse): void {
  metrics.registry
    .metrics()
    .then((text) => {
      res.writeHead(200, { "content-type": metrics.registry.contentType });
      res.end(text);
    })
    .catch((err: unknown) => sendJson(res, 500, { error: String(err) }));
}

async function config(state: ProxyState, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.method === "GET") {
    sendJson(res, 200, state.view());
    return;
  }
  if (req.method !== "POST") {
    req.resume();
    res.writeHead(405, { allow: "GET, POST", "content-type": "application/json" });
    res.end(`${JSON.stringify({ error: "method not allowed: GET or POST" })}\n`);
    return;
  }
  const refusal = contentTypeRefusal(req, ["application/json"]);
  if (refusal !== undefined) {
    req.resume();
    sendRefusal(res, refusal);
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
  const merged = ProxyConfigSchema.safeParse({ ...(state.config ?? {}), ...stripUndefined(update.data) });
  if (!merged.success) {
    sendJson(res, 400, { error: formatIssues(merged.error, "(body)") });
    return;
  }
  state.apply(merged.data);
  sendJson(res, 200, state.view());
}

function stats(metrics: TrafficMetrics, req: http.IncomingMessage, res: http.ServerResponse): void {
  const query = new URL(req.url ?? "/", "http://proxy").searchParams;
  const version = query.get("version");
  const seconds = Number(query.get("window") ?? "20");
  if (!version || !Number.isFinite(seconds) || seconds <= 0) {
    sendJson(res, 400, { error: "give ?version=NAME and optionally &window=SECONDS (> 0)" });
    return;
  }
  sendJson(res, 200, metrics.stats(version, seconds));
}

/** Argo's and the samples provider's words for the two sides, resolved through the configuration. */
const ROLES: Record<string, "stableVersion" | "canaryVersion"> = {
  stable: "stableVersion",
  primary: "stableVersion",
  canary: "canaryVersion",
  candidate: "canaryVersion",
};

function compare(
  state: ProxyState,
  metrics: TrafficMetrics,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): void {
  const query = new URL(req.url ?? "/", "http://proxy").searchParams;
  const primary = query.get("primary");
  const candidate = query.get("candidate");
  const rawWindow = query.get("window") ?? "60";
  const seconds = Number(rawWindow);
  const missing = [primary ? undefined : "primary", candidate ? undefined : "candidate"].filter(Boolean);
  if (missing.length > 0) {
    sendJson(res, 400, {
      error: `GET /compare needs ?${missing.join(" and ")}=NAME (give ?primary=NAME&candidate=NAME&window=SECONDS)`,
    });
    return;
  }
  if (!Number.isFinite(seconds) || seconds <= 0) {
    sendJson(res, 400, {
      error: `window must be a number of seconds above 0, got ${JSON.stringify(rawWindow)}`,
    });
    return;
  }
  if (state.modelMode) {
    // The model router's summaries: the same fields, plus feedback, users and the shadow's view.
    state.model.compare(req.url ?? "/").then(
      (answer) => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body);
      },
      (err: unknown) => sendJson(res, 500, { error: String(err) }),
    );
    return;
  }
  const resolve = (name: string) => {
    const role = Object.hasOwn(ROLES, name) ? ROLES[name] : undefined;
    return role && state.config ? state.config[role] : name;
  };
  sendJson(res, 200, {
    window: seconds,
    primary: metrics.window.summary(resolve(primary as string), seconds),
    candidate: metrics.window.summary(resolve(candidate as string), seconds),
  });
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

export function sendJson(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(`${JSON.stringify(body)}\n`);
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
