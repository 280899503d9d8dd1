import http from "node:http";
import { ownHosts } from "../../cli/http-guard.ts";
import { adminHandler, serveMetrics } from "./admin.ts";
import type { ProxyConfig, ProxyConfigInput } from "./config.ts";
import { type ForwardContext, forward } from "./forward.ts";
import { close, listen } from "./listen.ts";
import { TrafficMetrics } from "./metrics.ts";
import { modelForward } from "./model.ts";
import { ProxyState, type TestersHeader } from "./state.ts";

export type { TestersHeader } from "./state.ts";

/**
 * The local traffic router: an HTTP reverse proxy with a stable and a candidate upstream, used by
 * the embedded runtime and the demo in place of an ALB or a Lambda alias. It does what those do
 * for a rollout (an exact weighted split, a testers header route, per-version request metrics)
 * with nothing but `node:http` and `prom-client`, so it starts in milliseconds inside a test.
 *
 * Two listeners:
 * - traffic (`url`): forwards every request, except `GET /metrics` (Prometheus text:
 *   `http_requests_total{version,code}` and `http_request_duration_seconds{version}`);
 * - admin (`adminUrl`, always its own port, on 127.0.0.1 unless `adminHost` says otherwise): the
 *   unauthenticated admin API (`admin.ts`), which refuses cross-origin requests and non-JSON
 *   bodies, so neither the service's clients nor a web page can change the weight.
 */
export interface ProxyOptions {
  /** Traffic port; 0 = any free port (tests). */
  readonly port?: number;
  /** Traffic address; defaults to 127.0.0.1. */
  readonly host?: string;
  /** Admin port; 0 (the default) = any free port. Never the traffic port. */
  readonly adminPort?: number;
  /**
   * Admin address; defaults to 127.0.0.1, because the admin API has no authentication. Change it
   * only to reach the proxy from a container (the LocalStack test).
   */
  readonly adminHost?: string;
  /**
   * Names, besides 127.0.0.1, localhost, [::1] and `adminHost`, that the admin listener is reached
   * by (e.g. `host.docker.internal` from a container): a request whose `Host` names anything else
   * is refused, so a page that rebinds its own name to this machine cannot read the admin API.
   */
  readonly adminReachableAs?: readonly string[];
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
  /** `http://host:port` of the traffic listener. */
  readonly url: string;
  readonly port: number;
  /** `http://127.0.0.1:port` of the admin listener (`/admin/config`, `/admin/stats`, `/metrics`). */
  readonly adminUrl: string;
  readonly adminPort: number;
  /** The current configuration (a copy). */
  config(): ProxyConfig | null;
  /**
   * Records one request as if the proxy had forwarded it, at the proxy's clock (`now`): how a
   * simulation's requests reach `/admin/stats`, `/compare` and `/metrics` without a socket each.
   */
  record(version: string, code: number, seconds: number): void;
  /** Stops accepting connections, drops idle upstream sockets and resolves when both are closed. */
  close(): Promise<void>;
}

/** Starts the proxy and resolves once both listeners listen. */
export async function startProxy(options: ProxyOptions = {}): Promise<RunningProxy> {
  const state = new ProxyState(
    options.config,
    options.testersHeader ?? { name: "X-Canary", value: "always" },
    {
      ...(options.now ? { now: options.now } : {}),
      timeoutMs: options.upstreamTimeoutMs ?? 30_000,
      shadowTimeoutMs: options.upstreamTimeoutMs ?? 30_000,
    },
  );
  const metrics = new TrafficMetrics(options.now);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let adminOrigin = "";
  let adminHosts: readonly string[] = [];
  const traffic = trafficServer(
    { state, metrics, agent, upstreamTimeoutMs: options.upstreamTimeoutMs ?? 30_000 },
    () => adminOrigin,
  );
  const admin = http.createServer(
    adminHandler(
      state,
      metrics,
      () => adminOrigin,
      () => adminHosts,
    ),
  );
  const trafficAt = await listen(traffic, options.port ?? 0, options.host ?? "127.0.0.1");
  let adminAt: { url: string; port: number };
  try {
    adminAt = await listen(admin, options.adminPort ?? 0, options.adminHost ?? "127.0.0.1");
  } catch (error) {
    await close(traffic);
    throw error;
  }
  adminOrigin = adminAt.url;
  adminHosts = ownHosts(adminAt.port, [
    options.adminHost ?? "127.0.0.1",
    ...(options.adminReachableAs ?? []),
  ]);
  return {
    url: trafficAt.url,
    port: trafficAt.port,
    adminUrl: adminAt.url,
    adminPort: adminAt.port,
    config: () => (state.config === null ? null : structuredClone(state.config)),
    record: (version, code, seconds) => metrics.record(version, code, seconds),
    close: async () => {
      agent.destroy();
      await Promise.all([close(traffic), close(admin)]);
    },
  };
}

/** The traffic listener: `GET /metrics`, a 503 until configured, otherwise forwarded. */
function trafficServer(ctx: ForwardContext, adminUrl: () => string): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/metrics" && req.method === "GET") {
      serveMetrics(ctx.metrics, res);
      return;
    }
    const current = ctx.state.config;
    if (current === null) {
      res.writeHead(503, { "content-type": "text/plain; charset=utf-8" });
      res.end(
        `Service Unavailable: the proxy has no upstream yet; POST /admin/config to ${adminUrl()} first\n`,
      );
      return;
    }
    if (ctx.state.modelMode) {
      modelForward(ctx, ctx.state.model, current, req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        res.end(`model router failed: ${String(err)}\n`);
      });
      return;
    }
    forward(ctx, current, req, res);
  });
}
