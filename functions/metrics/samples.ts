import { z } from "zod";
import { issueLines } from "../../statemachine/problems.ts";
import type { Metric } from "../../statemachine/spec.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  fetchFollowing,
  readBody,
  responseShapeProblem,
  schemeProblem,
  snippet,
} from "./http.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";

/**
 * The samples provider: per-version summaries from the local router (model rollouts compare a
 * candidate with its primary on the same window). The contract is
 * `GET {address}/compare?primary=NAME&candidate=NAME&window=SECONDS` answering a JSON object with a
 * `primary` and a `candidate` summary (any further fields are passed through); the whole object is
 * the condition's `result`, so `result.candidate.feedback_rate >= result.primary.feedback_rate`
 * works. Anything else (non-2xx, not JSON, a summary missing) is an Error measurement.
 */
export const CompareResponseSchema = z
  .object({
    primary: z.record(z.string(), z.unknown()),
    candidate: z.record(z.string(), z.unknown()),
  })
  .passthrough();

/** Seconds the router may take to answer: it only summarises what it already holds. */
export const SAMPLES_TIMEOUT_SECONDS = 10;

export class SamplesMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  /** The same limits as the web provider: http(s) only, five redirects in one scheme, the body limit. */
  constructor(options: { fetch?: Fetch; maxBodyBytes?: number } = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const spec = metric.provider.samples;
    if (!spec) return { ok: false, message: `metric "${metric.name}" has no samples provider` };
    let url: URL;
    try {
      url = new URL(`${spec.address.replace(/\/+$/, "")}/compare`);
    } catch {
      return { ok: false, message: `samples address is not a URL: ${spec.address}` };
    }
    const refused = schemeProblem(url.toString());
    if (refused) return { ok: false, message: `samples address: ${refused}` };
    url.searchParams.set("primary", spec.primary);
    url.searchParams.set("candidate", spec.candidate);
    url.searchParams.set("window", String(spec.window));
    let status: number;
    let text: string;
    try {
      const followed = await fetchFollowing(this.fetch, url.toString(), {
        headers: { accept: "application/json" },
        signal: deadline(SAMPLES_TIMEOUT_SECONDS, ctx.signal),
      });
      if ("error" in followed) return { ok: false, message: followed.error };
      status = followed.response.status;
      const read = await readBody(followed.response, this.maxBodyBytes);
      if ("error" in read) return { ok: false, message: read.error };
      text = read.text;
    } catch (e) {
      return { ok: false, message: describeFetchError("GET", url.toString(), e, SAMPLES_TIMEOUT_SECONDS) };
    }
    if (status < 200 || status >= 300) {
      const detail = snippet(text);
      return {
        ok: false,
        message: `received non 2xx response code: ${status}${detail ? `: ${detail}` : ""}`,
      };
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return { ok: false, message: `received a body that is not JSON: ${JSON.stringify(snippet(text))}` };
    }
    const shape = responseShapeProblem(data);
    if (shape) return { ok: false, message: shape };
    const parsed = CompareResponseSchema.safeParse(data);
    if (!parsed.success) {
      return { ok: false, message: `compare response: ${issueLines(parsed.error, "body")[0] ?? "invalid"}` };
    }
    return { ok: true, result: parsed.data, value: JSON.stringify(parsed.data) };
  }
}
