import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * What keeps a local HTTP endpoint that changes things (the proxy's admin API, the AWS façade
 * that runs Lambdas) out of reach of a web page the developer happens to have open. A page can
 * send requests to 127.0.0.1 without asking: a form or a `fetch` with a "simple" body
 * (`text/plain`, a form encoding) goes out without a CORS preflight, and the server acts on it
 * even though the page never reads the answer. And a page whose name is made to resolve to
 * 127.0.0.1 (DNS rebinding) is, to the browser, of the same origin as the endpoint: it may read
 * every answer. Three checks close that:
 *
 * - the request must name the endpoint in its `Host` header: `127.0.0.1:PORT`, `localhost:PORT`,
 *   `[::1]:PORT` or a name the endpoint is configured to be reached by; a rebinding page's
 *   requests carry its own name and are refused with 403;
 * - the request must not come from another origin: an `Origin` header that is not the endpoint's
 *   own, or `Sec-Fetch-Site: cross-site` / `same-site` (what browsers send for such requests), is
 *   refused with 403;
 * - a body must be of a JSON type the endpoint speaks (`application/json`, the AWS JSON types),
 *   which a browser only sends after a preflight that these endpoints never answer: anything
 *   else is refused with 415.
 *
 * Programs (the SDK, `fetch` in Node.js, curl) send neither header, so they pass.
 */

/** Why a request was refused: the status and a message for the JSON error body. */
export interface Refusal {
  status: 403 | 415;
  message: string;
}

/**
 * A refusal when the request comes from a browser page of another origin than `ownOrigin`
 * (`http://127.0.0.1:PORT`), `undefined` when it may go on.
 */
export function crossOriginRefusal(request: IncomingMessage, ownOrigin: string): Refusal | undefined {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== ownOrigin) {
    return {
      status: 403,
      message: `cross-origin request refused: Origin ${origin} is not ${ownOrigin}`,
    };
  }
  const site = request.headers["sec-fetch-site"]?.toLowerCase();
  if (site === "cross-site" || site === "same-site") {
    return { status: 403, message: `cross-origin request refused: Sec-Fetch-Site is ${site}` };
  }
  return undefined;
}

/** The names every local endpoint answers to, whatever else it is reached by. */
const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"] as const;

/**
 * The `host:port` values a listener on `port` answers to: the loopback names, then `names` (the
 * names it is configured to be reached by, e.g. `host.docker.internal` from a container, or the
 * address it binds when that is not a wildcard). An IPv6 address is bracketed.
 */
export function ownHosts(port: number, names: readonly string[] = []): string[] {
  const all: string[] = [...LOOPBACK_NAMES];
  for (const name of names) {
    if (name === "" || name === "0.0.0.0" || name === "::") continue;
    const shown = name.includes(":") && !name.startsWith("[") ? `[${name}]` : name;
    if (!all.includes(shown.toLowerCase())) all.push(shown.toLowerCase());
  }
  return all.map((name) => `${name}:${port}`);
}

/**
 * A refusal when the request's `Host` header is not one of `allowed` (from {@link ownHosts};
 * compared without regard to case), `undefined` when it is. This is what stops DNS rebinding: a
 * page at `http://rebind.example:PORT` that resolves to 127.0.0.1 sends `Host: rebind.example:PORT`.
 */
export function hostRefusal(request: IncomingMessage, allowed: readonly string[]): Refusal | undefined {
  const host = request.headers.host;
  if (host !== undefined && allowed.includes(host.toLowerCase())) return undefined;
  const list =
    allowed.length > 1
      ? `${allowed.slice(0, -1).join(", ")} or ${allowed[allowed.length - 1]}`
      : allowed.join("");
  return {
    status: 403,
    message: `request refused: Host ${host ?? "(none)"} is not this listener (${list})`,
  };
}

/**
 * A refusal when the request's body is not of one of `allowed` media types (parameters such as
 * `charset` are ignored); `undefined` when it is. Call it for requests that carry a body.
 */
export function contentTypeRefusal(
  request: IncomingMessage,
  allowed: readonly string[],
): Refusal | undefined {
  const type = mediaType(request.headers["content-type"]);
  if (type !== undefined && allowed.includes(type)) return undefined;
  return {
    status: 415,
    message: `Content-Type must be ${allowed.join(" or ")}, got ${type ?? "none"}`,
  };
}

/** `application/json; charset=utf-8` → `application/json`; `undefined` without a header. */
export function mediaType(header: string | undefined): string | undefined {
  const type = header?.split(";")[0]?.trim().toLowerCase();
  return type ? type : undefined;
}

/** Whether a request carries a body (a length above 0, or a chunked one). */
export function hasBody(request: IncomingMessage): boolean {
  const length = request.headers["content-length"];
  if (length !== undefined) return Number(length) > 0;
  return request.headers["transfer-encoding"] !== undefined;
}

/** Answers a refusal as `{"error": message}`. */
export function sendRefusal(response: ServerResponse, refusal: Refusal): void {
  const text = `${JSON.stringify({ error: refusal.message })}\n`;
  response.writeHead(refusal.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}
