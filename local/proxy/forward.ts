import http from "node:http";
import { HOP_BY_HOP_HEADERS } from "../../functions/router/router.ts";
import { matchesRoute, type ProxyConfig } from "./config.ts";
import type { TrafficMetrics } from "./metrics.ts";
import type { ProxyState } from "./state.ts";

type Side = "stable" | "canary";

/** What forwarding needs: the state, where to record, the upstream sockets and how long to wait. */
export interface ForwardContext {
  readonly state: ProxyState;
  readonly metrics: TrafficMetrics;
  readonly agent: http.Agent;
  readonly upstreamTimeoutMs: number;
}

/**
 * The testers header, then the named header routes, then the exact weighted split (unless
 * `byWeight` is false: the model router splits by cohort itself).
 */
export function chooseSide(
  state: ProxyState,
  current: ProxyConfig,
  req: http.IncomingMessage,
  byWeight = true,
): { side: Side; route: string } {
  if (current.canary !== null) {
    const testersValue = req.headers[state.testers.name.toLowerCase()];
    if (testersValue === state.testers.value) return { side: "canary", route: "testers" };
    const route = current.headerRoutes.find((r) => matchesRoute(r, req.headers));
    if (route) return { side: "canary", route: route.name };
  }
  if (!byWeight) return { side: "stable", route: "weight" };
  return { side: state.share.next() ? "canary" : "stable", route: "weight" };
}

/** Headers without the hop-by-hop ones (and `host`), which describe one connection, not the request. */
function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_BY_HOP_HEADERS.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * Forwards one request to the upstream its route picks, streams the answer back with
 * `X-Proxy-Upstream` and `X-Proxy-Route`, and records it once under the upstream's `X-Version`
 * (or the configured version name); an unreachable or silent upstream is a 502 or 504 saying which.
 */
export function forward(
  ctx: ForwardContext,
  current: ProxyConfig,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): void {
  const started = process.hrtime.bigint();
  const { side, route } = chooseSide(ctx.state, current, req);
  const base = new URL(side === "canary" && current.canary !== null ? current.canary : current.stable);
  const configuredVersion = side === "canary" ? current.canaryVersion : current.stableVersion;
  let counted = false;
  const record = (version: string, code: number) => {
    if (counted) return;
    counted = true;
    ctx.metrics.record(version, code, Number(process.hrtime.bigint() - started) / 1e9);
  };

  const headers = endToEnd(req.headers);
  headers["x-forwarded-host"] = req.headers.host ?? "";
  headers["x-forwarded-proto"] = "http";
  const basePath = base.pathname.replace(/\/$/, "");

  const upstream = http.request(
    {
      agent: ctx.agent,
      protocol: base.protocol,
      hostname: base.hostname,
      port: base.port,
      method: req.method,
      path: basePath + (req.url ?? "/"),
      headers,
      timeout: ctx.upstreamTimeoutMs,
    },
    (upRes) => {
      const headerVersion = upRes.headers["x-version"];
      const version =
        typeof headerVersion === "string" && headerVersion.length > 0 ? headerVersion : configuredVersion;
      const code = upRes.statusCode ?? 502;
      const outHeaders = endToEnd(upRes.headers);
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
    upstream.destroy(new Error(`no answer within ${ctx.upstreamTimeoutMs} ms`));
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
