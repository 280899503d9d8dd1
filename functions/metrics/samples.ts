import { z } from "zod";
import { issueLines } from "../../statemachine/problems.ts";
import { MODEL_ROUTER_URL } from "../../statemachine/providers.ts";
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
  schemeProblem,
  snippet,
} from "./http.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";
import type { RequestSigner } from "./prometheus.ts";

/**
 * The samples provider: per-version summaries from the local router (model rollouts compare a
 * candidate with its primary on the same window). The contract is
 * `GET {address}/compare?primary=NAME&candidate=NAME&window=SECONDS` answering a JSON object with a
 * `primary` and a `candidate` summary (any further fields are passed through); the whole object is
 * the condition's `result`, so `result.candidate.feedback_rate >= result.primary.feedback_rate`
 * works. Anything else (non-2xx, not JSON, a summary missing) is an Error measurement.
 *
 * On AWS the router is a Function URL whose auth is `AWS_IAM`: a request to a
 * `*.lambda-url.<region>.on.aws` address, or to any address when the provider says `sigv4`, is
 * signed with SigV4 (service `lambda`; the region from `sigv4.region`, else the address, else
 * `AWS_REGION`) and is not sent on to a redirect; `sigv4: false` sends every read unsigned.
 */
export const CompareResponseSchema = z
  .object({
    primary: z.record(z.string(), z.unknown()),
    candidate: z.record(z.string(), z.unknown()),
  })
  .passthrough();

/**
 * A Lambda Function URL's host: `<url-id>.lambda-url.<region>.on.aws`; the region is group 1. A host
 * that merely contains it (`x.lambda-url.us-east-1.on.aws.evil.example`) is not one.
 */
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z]{2}(?:-[a-z]+)+-\d+)\.on\.aws$/;

/** The region of a Lambda Function URL host, or undefined for any other host. */
export function functionUrlRegion(hostname: string): string | undefined {
  return FUNCTION_URL_HOST.exec(hostname.toLowerCase())?.[1];
}

/** Seconds the router may take to answer: it only summarises what it already holds. */
export const SAMPLES_TIMEOUT_SECONDS = 10;

export class SamplesMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;
  private readonly signerFor: ((region: string) => RequestSigner) | undefined;

  /**
   * The same limits as the web provider: http(s) only, five redirects in one scheme, the body
   * limit. `signerFor` builds the SigV4 signer (service `lambda`) of a region; without it a request
   * that must be signed is an Error measurement saying so.
   */
  constructor(options: HttpOptions & { signerFor?: (region: string) => RequestSigner } = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.signerFor = options.signerFor;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const spec = metric.provider.samples;
    if (!spec) return { ok: false, message: `metric "${metric.name}" has no samples provider` };
    if (spec.address.startsWith(MODEL_ROUTER_URL)) {
      return {
        ok: false,
        message: `samples address ${MODEL_ROUTER_URL} was not filled in: it is the model router's URL, which the RolloutController fills in for a rollout with a model router`,
      };
    }
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
    const headers: Record<string, string> = { accept: "application/json" };
    const hostRegion = functionUrlRegion(url.hostname);
    const sigv4 = spec.sigv4 === false ? undefined : spec.sigv4;
    const signed = spec.sigv4 !== false && (sigv4 !== undefined || hostRegion !== undefined);
    if (signed) {
      const region = sigv4?.region ?? hostRegion ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
      if (!region) return { ok: false, message: "samples sigv4: no region (set sigv4.region or AWS_REGION)" };
      if (!this.signerFor)
        return { ok: false, message: "samples sigv4: signing is not configured in this build" };
      try {
        const request = await this.signerFor(region).sign({
          method: "GET",
          protocol: url.protocol,
          hostname: url.hostname,
          ...(url.port ? { port: Number(url.port) } : {}),
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          headers: { ...headers, host: url.host },
        });
        Object.assign(headers, request.headers);
        delete headers.host;
      } catch (e) {
        return { ok: false, message: `samples sigv4: ${(e as Error).message}` };
      }
    }
    let status: number;
    let text: string;
    try {
      const signal = deadline(SAMPLES_TIMEOUT_SECONDS, ctx.signal);
      // A signed request is valid for its own host only: it is never sent on to a redirect.
      const followed = signed
        ? { response: await this.fetch(url.toString(), { headers, signal, redirect: "manual" }) }
        : await fetchFollowing(this.fetch, url.toString(), { headers, signal });
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
