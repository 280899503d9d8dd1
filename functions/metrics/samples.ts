import { z } from "zod";
import type { Metric } from "../../statemachine/spec.ts";
import { deadline, describeFetchError, type Fetch, snippet } from "./http.ts";
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

  constructor(options: { fetch?: Fetch } = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
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
    url.searchParams.set("primary", spec.primary);
    url.searchParams.set("candidate", spec.candidate);
    url.searchParams.set("window", String(spec.window));
    let status: number;
    let text: string;
    try {
      const res = await this.fetch(url.toString(), {
        headers: { accept: "application/json" },
        signal: deadline(SAMPLES_TIMEOUT_SECONDS, ctx.signal),
      });
      status = res.status;
      text = await res.text();
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
    const parsed = CompareResponseSchema.safeParse(data);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      return {
        ok: false,
        message: `compare response: ${first?.path.join(".") || "body"}: ${first?.message ?? "invalid"}`,
      };
    }
    return { ok: true, result: parsed.data, value: JSON.stringify(parsed.data) };
  }
}
