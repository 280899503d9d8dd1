import { MAX_DEPTH } from "../../statemachine/limits.ts";

/**
 * HTTP plumbing shared by the HTTP metric adapters. `fetch` is their client: it is injected so
 * tests and the local runtime can wrap it, and a failure to reach the server becomes the same
 * sentence Go's net/http writes, which Argo users know from their AnalysisRuns.
 */

/** The part of `fetch` the adapters use. */
export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

/** Go's method spelling in client errors: `Get "http://..."`. */
function goMethod(method: string): string {
  return method.charAt(0).toUpperCase() + method.slice(1).toLowerCase();
}

/** A signal that fires after `seconds` or when the caller's signal fires. */
export function deadline(seconds: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(Math.max(1, Math.round(seconds * 1000)));
  return signal ? AbortSignal.any([timeout, signal]) : timeout;
}

/** `Get "url": connect ECONNREFUSED ...` / `...: context deadline exceeded (timeout 10s)`. */
export function describeFetchError(
  method: string,
  url: string,
  error: unknown,
  timeoutSeconds: number,
): string {
  const prefix = `${goMethod(method)} "${url}"`;
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError") {
    return `${prefix}: context deadline exceeded (Client.Timeout exceeded after ${timeoutSeconds}s)`;
  }
  if (e?.name === "AbortError") return `${prefix}: context canceled`;
  const cause = e?.cause?.message ?? e?.message ?? String(error);
  return `${prefix}: ${cause}`;
}

/** Reads a body as text, at most `limit` characters, for error messages. */
export function snippet(text: string, limit = 200): string {
  const t = text.trim().replace(/\s+/g, " ");
  return t.length > limit ? `${t.slice(0, limit)}...` : t;
}

/** The default most bytes of a provider's response body that are read: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** How an HTTP provider reaches its server: the fetch it calls (default the global one) and the largest answer it reads (default {@link DEFAULT_MAX_BODY_BYTES}). */
export interface HttpOptions {
  fetch?: Fetch;
  maxBodyBytes?: number;
}

/** Redirects a web or samples request follows before it is an Error measurement. */
export const MAX_REDIRECTS = 5;

/**
 * The body limit from the environment (`ROLLOUTS_METRIC_MAX_BODY_BYTES`, bytes), or the default.
 * A value that is not a whole number of bytes is a configuration error, thrown with its name.
 */
export function maxBodyBytesFrom(value: string | undefined, name = "ROLLOUTS_METRIC_MAX_BODY_BYTES"): number {
  if (value === undefined || value.trim() === "") return DEFAULT_MAX_BODY_BYTES;
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new Error(`${name} must be a whole number of bytes >= 1, got ${JSON.stringify(value)}`);
  }
  return n;
}

/**
 * Reads a response body as UTF-8 text, at most `maxBytes` of it: the stream is read chunk by
 * chunk and cancelled at the limit (or at once when `content-length` already says more), so a
 * huge or endless answer costs no more memory than the limit.
 */
export async function readBody(
  res: Response,
  maxBytes: number,
): Promise<{ text: string } | { error: string }> {
  const tooLarge = {
    error: `the response body is larger than ${maxBytes.toLocaleString("en-US")} bytes, the most a measurement reads (ROLLOUTS_METRIC_MAX_BODY_BYTES): narrow the query or the endpoint's answer, or raise the limit`,
  };
  const declared = Number(res.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    return tooLarge;
  }
  if (!res.body) return { text: "" };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      return tooLarge;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { text: new TextDecoder("utf-8").decode(bytes) };
}

/** Why a URL cannot be requested by a provider (only `http:` and `https:`), or undefined. */
export function schemeProblem(url: string): string | undefined {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return `${JSON.stringify(url)} is not a URL`;
  }
  return protocol === "http:" || protocol === "https:"
    ? undefined
    : `only http and https URLs are read, not ${protocol} (${JSON.stringify(url)})`;
}

/**
 * Go's net/http refusal of a URL whose scheme is not http or https, as the web provider's
 * measurement says it in Argo: `Get "ftp://x": unsupported protocol scheme "ftp"`. Undefined for
 * an http(s) URL; a URL that does not parse is {@link schemeProblem}'s.
 */
export function unsupportedScheme(method: string, url: string): string | undefined {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return schemeProblem(url);
  }
  if (protocol === "http:" || protocol === "https:") return undefined;
  return `${goMethod(method)} ${JSON.stringify(url)}: unsupported protocol scheme ${JSON.stringify(protocol.slice(0, -1))}`;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers a redirect to another origin must not carry (as `fetch` drops them itself). */
const CREDENTIAL_HEADERS = ["authorization", "cookie", "proxy-authorization"];

/**
 * `fetch` that follows redirects itself (`redirect: "manual"`): at most `MAX_REDIRECTS`, only to
 * the scheme of the first URL (an https request is never continued over http, and nothing is
 * ever fetched from another scheme), with fetch's own rules for the method (303, and 301/302
 * after a POST, become a GET without a body) and without credentials on another origin.
 * Returns the final response, or why the chain was refused.
 */
export async function fetchFollowing(
  fetcher: Fetch,
  url: string,
  init: RequestInit & { headers?: Record<string, string> },
): Promise<{ response: Response; url: string } | { error: string }> {
  let current = new URL(url);
  const scheme = current.protocol;
  let method = (init.method ?? "GET").toUpperCase();
  let body = init.body;
  let headers: Record<string, string> = { ...(init.headers ?? {}) };
  for (let hop = 0; ; hop++) {
    const response = await fetcher(current.toString(), {
      ...init,
      method,
      headers,
      body,
      redirect: "manual",
    });
    const location = response.headers.get("location");
    if (!REDIRECTS.has(response.status) || location === null) return { response, url: current.toString() };
    await response.body?.cancel().catch(() => {});
    if (hop >= MAX_REDIRECTS) {
      return {
        error: `stopped after ${MAX_REDIRECTS} redirects (the last to ${JSON.stringify(location)}): give the final URL`,
      };
    }
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      return { error: `redirected to ${JSON.stringify(location)}, which is not a URL` };
    }
    if (next.protocol !== scheme) {
      return {
        error: `redirected from ${scheme} to ${next.protocol} (${JSON.stringify(next.toString())}): redirects are followed only within the URL's own scheme; give the final URL`,
      };
    }
    if (
      response.status === 303 ||
      ((response.status === 301 || response.status === 302) && method === "POST")
    ) {
      if (method !== "HEAD") method = "GET";
      body = undefined;
      headers = Object.fromEntries(
        Object.entries(headers).filter(([k]) => k.toLowerCase() !== "content-type"),
      );
    }
    if (next.origin !== current.origin) {
      headers = Object.fromEntries(
        Object.entries(headers).filter(([k]) => !CREDENTIAL_HEADERS.includes(k.toLowerCase())),
      );
    }
    current = next;
  }
}

/** Levels of arrays and objects a provider's JSON answer may have: the spec's own nesting limit. */
export const MAX_RESPONSE_DEPTH = MAX_DEPTH;

/**
 * Why a parsed JSON answer cannot be used, or undefined: deeper than {@link MAX_RESPONSE_DEPTH}
 * levels, where selecting in it, printing it or evaluating a condition on it would exhaust the
 * stack. Measured with an explicit stack, so the check itself cannot.
 */
export function responseShapeProblem(value: unknown): string | undefined {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop() as { node: unknown; depth: number };
    if (node === null || typeof node !== "object") continue;
    if (depth + 1 > MAX_RESPONSE_DEPTH) {
      return `the response is nested more than ${MAX_RESPONSE_DEPTH} levels deep: a metric's answer needs far fewer`;
    }
    for (const child of Object.values(node)) stack.push({ node: child, depth: depth + 1 });
  }
  return undefined;
}
