import { JSONPath } from "jsonpath-plus";
import { goMarshal } from "../../statemachine/expr/go-json.ts";
import type { Metric } from "../../statemachine/spec.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  fetchFollowing,
  type HttpOptions,
  readBody,
  responseShapeProblem,
  snippet,
  unsupportedScheme,
} from "./http.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";

/**
 * The web provider: an HTTP request whose JSON answer, narrowed by `jsonPath`, is the condition's
 * `result` (`result.candidate.feedback_rate`). As in Argo: `method` GET/POST/PUT, `headers`,
 * `body` or `jsonBody` (not with GET), `timeoutSeconds` (default 10), a non-2xx status is an Error,
 * the first jsonPath match is the value, stored as Go's `json.Marshal` writes it (keys sorted,
 * `1e+21`, `<` as `\u003c`), and a URL of another scheme is Go's
 * `Get "ftp://x": unsupported protocol scheme "ftp"`.
 *
 * One deliberate difference: Argo evaluates a body that is not JSON as a plain string, so a proxy's
 * HTML error page or an empty 200 passes a condition like `result != "bad"` (argo-rollouts#4535).
 * Here a body that is not JSON is an Error measurement: a gate must never pass on an answer it
 * could not read.
 *
 * Limits (each an Error measurement that says so): redirects
 * are followed by hand, at most five and never to another scheme; the body is read as a stream
 * and abandoned past `maxBodyBytes` (1 MiB unless `ROLLOUTS_METRIC_MAX_BODY_BYTES` says otherwise).
 */
export class WebMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  constructor(options: HttpOptions = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const web = metric.provider.web;
    if (!web) return { ok: false, message: `metric "${metric.name}" has no web provider` };
    if (web.body !== undefined && web.body !== "" && web.jsonBody !== undefined) {
      return { ok: false, message: "use either Body or JSONBody; both cannot exists for WebMetric payload" };
    }
    const hasBody = (web.body !== undefined && web.body !== "") || web.jsonBody !== undefined;
    if (hasBody && web.method === "GET") {
      return { ok: false, message: "Body/JSONBody can only be used with POST or PUT WebMetric Method types" };
    }
    const headers: Record<string, string> = {};
    for (const h of web.headers) headers[h.key] = h.value;
    let body: string | undefined;
    if (web.jsonBody !== undefined) {
      body = JSON.stringify(web.jsonBody);
      headers["Content-Type"] = "application/json";
    } else if (web.body) {
      body = web.body;
    }
    const refused = unsupportedScheme(web.method, web.url);
    if (refused) return { ok: false, message: refused };
    let status: number;
    let text: string;
    let contentType: string;
    try {
      const followed = await fetchFollowing(this.fetch, web.url, {
        method: web.method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: deadline(web.timeoutSeconds, ctx.signal),
      });
      if ("error" in followed) return { ok: false, message: followed.error };
      const res = followed.response;
      status = res.status;
      contentType = res.headers.get("content-type") ?? "";
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return { ok: false, message: read.error };
      text = read.text;
    } catch (e) {
      return { ok: false, message: describeFetchError(web.method, web.url, e, web.timeoutSeconds) };
    }
    if (status < 200 || status >= 300) {
      return { ok: false, message: `received non 2xx response code: ${status}` };
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      const what = contentType ? ` (${contentType})` : "";
      const shown = snippet(text);
      return {
        ok: false,
        message: `received a body that is not JSON${what}: ${shown === "" ? "<empty>" : JSON.stringify(shown)}`,
      };
    }
    const shape = responseShapeProblem(data);
    if (shape) return { ok: false, message: shape };
    return select(data, web.jsonPath);
  }
}

/** Kubernetes-style `{$.a.b}` / `{.a.b}` to the plain JSONPath `$.a.b` jsonpath-plus reads. */
export function toJsonPath(kube: string | undefined): string {
  let p = (kube ?? "").trim();
  if (p === "") return "$";
  const braces = /^\{([\s\S]*)\}$/.exec(p);
  if (braces) p = (braces[1] ?? "").trim();
  if (p === "" || p === "$") return "$";
  if (p.startsWith(".") || p.startsWith("[")) p = `$${p}`;
  return p;
}

function select(data: unknown, jsonPath: string | undefined): ProviderResult {
  const path = toJsonPath(jsonPath);
  let matches: unknown[];
  try {
    matches = JSONPath({ path, json: data as object, wrap: true }) as unknown[];
  } catch (e) {
    return { ok: false, message: `Could not find JSONPath in body: ${(e as Error).message}` };
  }
  if (!Array.isArray(matches) || matches.length === 0) {
    return { ok: false, message: `Could not find JSONPath in body: ${jsonPath ?? path} is not found` };
  }
  const value = matches[0] === undefined ? null : matches[0];
  return { ok: true, result: value, value: goMarshal(value) };
}
