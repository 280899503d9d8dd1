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
