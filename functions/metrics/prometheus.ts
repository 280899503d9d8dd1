import { evaluateTime, goDuration } from "../../statemachine/conditions.ts";
import type { Metric, PrometheusProvider as PrometheusSpec } from "../../statemachine/spec.ts";
import { encodeQuery, type GoValues, setValue } from "./go-url.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  readBody,
  responseShapeProblem,
  snippet,
} from "./http.ts";
import { insecureFetch } from "./insecure-fetch.ts";
import { formatFloat, type MeasureContext, type MetricProvider, type ProviderResult } from "./port.ts";

/**
 * The Prometheus provider: an instant query against the HTTP API (`/api/v1/query`), or with
 * `rangeQuery` a range query (`/api/v1/query_range`) from `start` to `end` (expressions evaluated
 * at the measurement's time) every `step`, converted as Argo converts it: a vector becomes a list
 * of floats (`result[0]`), a scalar a number, a matrix (what a range query answers) the flattened
 * list of its samples, series after series; NaN and ±Inf are kept (a 0/0 ratio is NaN, and a
 * condition may test it with `isNaN`). Failures are measurements: the server's `errorType: error`
 * text, or the HTTP status, or the network error.
 */

/** Signs a request for Amazon Managed Service for Prometheus (SigV4, service `aps`). */
export interface RequestSigner {
  sign(request: SignableRequest): Promise<SignableRequest>;
}

/** The request shape `@smithy/signature-v4` signs. */
export interface SignableRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string>;
  headers: Record<string, string>;
  body?: string;
}

export interface PrometheusProviderOptions {
  fetch?: Fetch;
  /** The client of `insecure: true` metrics on https (default: certificates not verified). */
  insecureFetch?: Fetch;
  /**
   * Builds the signer for a metric's `authentication.sigv4` (the composition root uses
   * `@smithy/signature-v4` with the default credential chain). Without it, sigv4 metrics fail
   * with an Error measurement saying so.
   */
  signerFor?: (sigv4: NonNullable<NonNullable<PrometheusSpec["authentication"]>["sigv4"]>) => RequestSigner;
  /**
   * `POST` (default, like Prometheus' Go client, falling back to GET on 405/501) or `GET`.
   * POST keeps long queries out of URL length limits and access logs.
   */
  method?: "GET" | "POST";
  /**
   * The Prometheus a metric with no `address` queries (the controller's `prometheus` prop), and
   * the SigV4 region to sign it with when it is an Amazon Managed Prometheus workspace.
   */
  defaultAddress?: { url: string; sigv4Region?: string };
  /** Most bytes of a response body read (`ROLLOUTS_METRIC_MAX_BODY_BYTES`); more is an Error measurement. */
  maxBodyBytes?: number;
}

interface PromResponse {
  status?: string;
  errorType?: string;
  error?: string;
  warnings?: string[];
  data?: { resultType?: string; result?: unknown };
}

/**
 * The data-plane endpoints of Amazon Managed Service for Prometheus, the only hosts a query is
 * signed for: `aps-workspaces.<region>.amazonaws.com` (IPv4), `aps-workspaces.<region>.api.aws`
 * (dual-stack), their FIPS forms `aps-workspaces-fips.<region>...`, and the China partition's
 * `amazonaws.com.cn` and `api.amazonwebservices.com.cn`. A host that merely contains the word
 * (`aps-workspaces.evil.example`, `aps-workspaces.us-east-1.amazonaws.com.evil.example`) never
 * gets the caller's credentials' signature.
 */
const AMP_HOST =
  /^aps-workspaces(?:-fips)?\.[a-z]{2}(?:-[a-z]+)+-\d+\.(?:amazonaws\.com|api\.aws|amazonaws\.com\.cn|api\.amazonwebservices\.com\.cn)$/;

/** True for an Amazon Managed Service for Prometheus query endpoint (a URL's `hostname`). */
export function isAmpHost(hostname: string): boolean {
  return AMP_HOST.test(hostname.toLowerCase());
}

/** Prometheus' sample value strings: `"0.5"`, `"NaN"`, `"+Inf"`, `"-Inf"`. */
export function parseSampleValue(s: unknown): number {
  if (s === "+Inf" || s === "Inf") return Number.POSITIVE_INFINITY;
  if (s === "-Inf") return Number.NEGATIVE_INFINITY;
  if (s === "NaN") return Number.NaN;
  if (typeof s !== "string")
    throw new Error(`bad_response: sample value is not a string: ${JSON.stringify(s)}`);
  const n = Number(s);
  if (Number.isNaN(n)) throw new Error(`bad_response: invalid sample value ${JSON.stringify(s)}`);
  return n;
}

function sampleOf(pair: unknown): number {
  if (!Array.isArray(pair) || pair.length !== 2) throw new Error("bad_response: malformed sample");
  return parseSampleValue(pair[1]);
}

/** A sample's label set; anything that is not a string map is no labels. */
function labelsOf(metric: unknown): Record<string, string> {
  if (metric === null || typeof metric !== "object" || Array.isArray(metric)) return {};
  return Object.fromEntries(
    Object.entries(metric as Record<string, unknown>).filter(
      (e): e is [string, string] => typeof e[1] === "string",
    ),
  );
}

/** Converts `data` of a successful query the way Argo's `processResponse` does. */
export function convertQueryData(data: PromResponse["data"]): ProviderResult {
  const type = data?.resultType;
  const result = data?.result;
  try {
    if (type === "scalar") {
      const v = sampleOf(result);
      return { ok: true, result: v, resultType: "float64", value: formatFloat(v) };
    }
    if (type === "vector" && Array.isArray(result)) {
      const values = result.map((s) => sampleOf((s as { value?: unknown })?.value));
      const series = result.map((s, i) => ({
        labels: labelsOf((s as { metric?: unknown })?.metric),
        value: values[i] as number,
      }));
      return {
        ok: true,
        result: values,
        resultType: "float64s",
        value: `[${values.map(formatFloat).join(",")}]`,
        series,
      };
    }
    if (type === "matrix" && Array.isArray(result)) {
      const values = result.flatMap((s) => {
        const vs = (s as { values?: unknown })?.values;
        return Array.isArray(vs) ? vs.map(sampleOf) : [];
      });
      return {
        ok: true,
        result: values,
        resultType: "float64s",
        value: `[${values.map(formatFloat).join(",")}]`,
      };
    }
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  }
  return { ok: false, message: "Prometheus metric type not supported" };
}

/** The adapter; one instance serves every Prometheus metric. */
export class PrometheusMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly insecureFetch: Fetch;
  private readonly signerFor: PrometheusProviderOptions["signerFor"];
  private readonly method: "GET" | "POST";
  private readonly defaultAddress: PrometheusProviderOptions["defaultAddress"];
  private readonly maxBodyBytes: number;

  constructor(options: PrometheusProviderOptions = {}) {
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.insecureFetch = options.insecureFetch ?? insecureFetch;
    this.signerFor = options.signerFor;
    this.method = options.method ?? "POST";
    this.defaultAddress = options.defaultAddress;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const given = metric.provider.prometheus;
    if (!given) return { ok: false, message: `metric "${metric.name}" has no prometheus provider` };
    let spec = given;
    if (spec.address === "") {
      const fallback = this.defaultAddress;
      if (!fallback?.url) {
        return {
          ok: false,
          message: `metric "${metric.name}" names no prometheus address and the controller has no default (its prometheus prop)`,
        };
      }
      spec = {
        ...spec,
        address: fallback.url,
        ...(fallback.sigv4Region && !spec.authentication
          ? { authentication: { sigv4: { region: fallback.sigv4Region } } }
          : {}),
      };
    }
    let base: URL;
    try {
      base = new URL(spec.address);
      if (!/^https?:$/.test(base.protocol)) throw new Error("scheme");
    } catch {
      return { ok: false, message: "prometheus address is not is url format" };
    }
    const params: GoValues = new Map();
    setValue(params, "query", spec.query);
    if (spec.rangeQuery) {
      const range = rangeParams(spec.rangeQuery, ctx.now);
      if ("message" in range) return { ok: false, message: range.message };
      for (const [k, v] of Object.entries(range)) setValue(params, k, v);
    }
    const endpoint = spec.rangeQuery ? "query_range" : "query";
    const url = new URL(`${base.pathname.replace(/\/+$/, "")}/api/v1/${endpoint}`, base);
    const signal = deadline(spec.timeout, ctx.signal);
    let response = await this.send(this.method, url, params, spec, signal);
    if (
      this.method === "POST" &&
      "status" in response &&
      (response.status === 405 || response.status === 501)
    ) {
      response = await this.send("GET", url, params, spec, signal);
    }
    if (!("status" in response)) return response;
    return interpret(response.status, response.text);
  }

  private async send(
    method: "GET" | "POST",
    url: URL,
    params: GoValues,
    spec: PrometheusSpec,
    signal: AbortSignal,
  ): Promise<{ status: number; text: string } | { ok: false; message: string }> {
    const headers: Record<string, string> = { accept: "application/json" };
    for (const h of spec.headers) headers[h.key] = h.value;
    let body: string | undefined;
    const target = new URL(url);
    // Encoded as Go's `url.Values` (keys sorted), in a form body or the URL, as the Go client does.
    const encoded = encodeQuery(params);
    if (method === "POST") {
      body = encoded;
      headers["content-type"] = "application/x-www-form-urlencoded";
    } else {
      target.search = encoded;
    }
    const sigv4 = spec.authentication?.sigv4;
    // As Argo, only Amazon Managed Prometheus workspaces are signed, but only their exact hosts.
    if (sigv4 && isAmpHost(target.hostname)) {
      if (!this.signerFor) return { ok: false, message: "sigv4 signing is not configured in this build" };
      try {
        const signed = await this.signerFor(sigv4).sign({
          method,
          protocol: target.protocol,
          hostname: target.hostname,
          ...(target.port ? { port: Number(target.port) } : {}),
          path: target.pathname,
          query: Object.fromEntries(target.searchParams),
          headers: { ...headers, host: target.host },
          ...(body !== undefined ? { body } : {}),
        });
        Object.assign(headers, signed.headers);
        delete headers.host;
      } catch (e) {
        return { ok: false, message: `sigv4: ${(e as Error).message}` };
      }
    }
    try {
      // As Argo's insecure transport: the certificate of an https address is not verified.
      const fetcher = spec.insecure && target.protocol === "https:" ? this.insecureFetch : this.fetch;
      const res = await fetcher(target.toString(), { method, headers, body, signal });
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return { ok: false, message: read.error };
      return { status: res.status, text: read.text };
    } catch (e) {
      return { ok: false, message: describeFetchError(method, target.toString(), e, spec.timeout) };
    }
  }
}

/**
 * A range query's `start`, `end` and `step` parameters, as Argo reads them (`executeQuery`) and
 * Prometheus' Go client prints them (`QueryRange`): times as seconds since the epoch with their
 * fraction (`1692000000.5`), the step in seconds (`60`). An unreadable field is Argo's error.
 */
function rangeParams(
  range: NonNullable<PrometheusSpec["rangeQuery"]>,
  now: Date,
): { start: string; end: string; step: string } | { message: string } {
  let start: bigint;
  let end: bigint;
  let step: bigint;
  try {
    start = evaluateTime(range.start, { now });
  } catch (e) {
    return { message: `failed to parse rangeQuery.start as time: ${(e as Error).message}` };
  }
  try {
    end = evaluateTime(range.end, { now });
  } catch (e) {
    return { message: `failed to parse rangeQuery.end as time: ${(e as Error).message}` };
  }
  try {
    step = goDuration(range.step);
  } catch (e) {
    return { message: `failed to parse rangeQuery.step as duration: ${(e as Error).message}` };
  }
  return { start: goSeconds(start, true), end: goSeconds(end, true), step: goSeconds(step, false) };
}

const NS_PER_SECOND = 1_000_000_000n;

/**
 * Nanoseconds as Go prints seconds with `strconv.FormatFloat(x, 'f', -1, 64)`: a time's
 * `float64(t.Unix()) + float64(t.Nanosecond())/1e9` (seconds floored), a duration's `Seconds()`
 * (truncated toward zero).
 */
function goSeconds(ns: bigint, time: boolean): string {
  let sec = ns / NS_PER_SECOND;
  let frac = ns % NS_PER_SECOND;
  if (time && frac < 0n) {
    sec -= 1n;
    frac += NS_PER_SECOND;
  }
  return formatFloat(Number(sec) + Number(frac) / 1e9);
}

/**
 * Reads a query response as Prometheus' Go client does: 400/422/503 carry an API error body;
 * other non-2xx statuses are `client_error`/`server_error`; `status: error` wins.
 */
export function interpret(status: number, text: string): ProviderResult {
  const apiError = status === 400 || status === 422 || status === 503;
  if (Math.floor(status / 100) !== 2 && !apiError) {
    const kind = Math.floor(status / 100);
    const type = kind === 4 ? "client_error" : kind === 5 ? "server_error" : "bad_response";
    const what = kind === 4 ? "client error" : kind === 5 ? "server error" : "bad response code";
    const detail = snippet(text);
    return { ok: false, message: `${type}: ${what}: ${status}${detail ? `: ${detail}` : ""}` };
  }
  let parsed: PromResponse;
  try {
    parsed = JSON.parse(text) as PromResponse;
  } catch (e) {
    return { ok: false, message: `bad_response: ${(e as Error).message}` };
  }
  const shape = responseShapeProblem(parsed);
  if (shape) return { ok: false, message: `bad_response: ${shape}` };
  if (parsed.status === "error") {
    return { ok: false, message: `${parsed.errorType ?? "unknown"}: ${parsed.error ?? ""}` };
  }
  if (apiError) return { ok: false, message: "bad_response: inconsistent body for response code" };
  const out = convertQueryData(parsed.data);
  if (out.ok && parsed.warnings?.length) {
    out.metadata = { warnings: parsed.warnings.map((w) => `"${w}"`).join(", ") };
  }
  return out;
}
