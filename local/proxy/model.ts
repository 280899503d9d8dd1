import type http from "node:http";
import type { ModelRouterConfigInput } from "../../functions/router/config.ts";
import { type ModelRouter, ROUTE_HEADER, VERSION_HEADER } from "../../functions/router/router.ts";
import type { ProxyConfig } from "./config.ts";
import type { ForwardContext } from "./forward.ts";
import { chooseSide } from "./forward.ts";

/** The largest request body the model path buffers: a Lambda's synchronous payload limit. */
export const MAX_MODEL_BODY = 6 * 1024 * 1024;

/** True when requests go through the model router rather than the streaming forward. */
export function modelMode(config: ProxyConfig): boolean {
  return config.model !== null || config.mirrorPercent > 0;
}

/** The model router's configuration for the proxy's: the stable and canary upstreams are the versions. */
export function toModelConfig(config: ProxyConfig): ModelRouterConfigInput {
  const model = config.model;
  return {
    primary: { name: config.stableVersion, url: config.stable },
    candidate: config.canary === null ? null : { name: config.canaryVersion, url: config.canary },
    weight: config.weight,
    // Without model settings (a plain setMirrorRoute), the split stays the proxy's exact one.
    sticky: model?.sticky ?? false,
    ...(model?.salt !== undefined ? { salt: model.salt } : {}),
    ...(model ? { key: model.key, compare: model.compare } : {}),
    mirrorPercent: config.mirrorPercent,
    mirrorMatch: config.mirrorMatch,
  };
}

/**
 * Answers one request through the model router: the testers header and header routes still send a
 * request to the candidate, everything else is the router's cohort (or the exact split); the answer
 * is recorded in the proxy's metrics under the version that gave it. `POST /feedback` is the
 * router's feedback endpoint.
 */
export async function modelForward(
  ctx: ForwardContext,
  router: ModelRouter,
  current: ProxyConfig,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const started = process.hrtime.bigint();
  let body: string;
  try {
    body = await readBody(req);
  } catch (error) {
    send(
      res,
      413,
      { "content-type": "application/json" },
      `${JSON.stringify({ error: (error as Error).message })}\n`,
    );
    return;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers[name] = value;
    else if (Array.isArray(value)) headers[name] = value.join(", ");
  }
  const request = { method: req.method ?? "GET", url: req.url ?? "/", headers, body };
  if (request.method === "POST" && request.url.split("?")[0] === "/feedback") {
    const answer = await router.feedback(body);
    send(res, answer.status, answer.headers, answer.body);
    return;
  }
  const { side, route } = chooseSide(ctx.state, current, req, false);
  const answer = await router.route(request, side === "canary" ? "candidate" : undefined);
  const version = answer.headers[VERSION_HEADER] ?? current.stableVersion;
  ctx.metrics.record(version, answer.status, Number(process.hrtime.bigint() - started) / 1e9);
  send(
    res,
    answer.status,
    {
      ...answer.headers,
      "x-proxy-upstream": answer.headers[ROUTE_HEADER] === "candidate" ? "canary" : "stable",
      "x-proxy-route":
        side === "canary"
          ? route
          : current.model?.sticky === false || current.model === null
            ? "weight"
            : "cohort",
    },
    answer.body,
  );
}

function send(res: http.ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, { ...headers, "content-length": String(Buffer.byteLength(body)) });
  res.end(body);
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_MODEL_BODY) throw new Error(`request body larger than ${MAX_MODEL_BODY} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}
