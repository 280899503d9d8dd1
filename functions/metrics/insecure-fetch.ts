import { request } from "node:https";
import { Readable } from "node:stream";
import type { Fetch } from "./http.ts";

/**
 * `fetch` over HTTPS that does not verify the server's certificate, as Argo's `insecure: true`
 * (Go's `InsecureSkipVerify`): for a Prometheus behind a self-signed or private-CA certificate.
 * Only `https:` URLs are read; anything else is refused, never sent in the clear by mistake.
 */
export const insecureFetch: Fetch = (input, init = {}) =>
  new Promise<Response>((resolve, reject) => {
    const url = new URL(input);
    if (url.protocol !== "https:") {
      reject(new TypeError(`insecure fetch reads https URLs only, not ${url.protocol}`));
      return;
    }
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const req = request(
      url,
      { method: init.method ?? "GET", headers, rejectUnauthorized: false, signal: init.signal ?? undefined },
      (res) => {
        const out = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(", ") : v);
        }
        const status = res.statusCode ?? 0;
        const empty = status === 204 || status === 304;
        if (empty) res.resume();
        resolve(
          new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
            status,
            headers: out,
          }),
        );
      },
    );
    req.on("error", (e) => reject(e.name === "AbortError" ? e : new TypeError("fetch failed", { cause: e })));
    if (typeof init.body === "string") req.end(init.body);
    else req.end();
  });
