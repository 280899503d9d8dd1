import { STATUS_CODES } from "node:http";
import { goJSONSyntaxError } from "../../statemachine/expr/json.ts";
import { floatToInt } from "../../statemachine/expr/values.ts";
import type { Metric } from "../../statemachine/spec.ts";
import { goFixed } from "./go-fmt.ts";
import { fieldTypeError, goField, goJsonKind, isObject } from "./go-json.ts";
import { queryEscape } from "./go-url.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  type HttpOptions,
  readBody,
} from "./http.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";
import type { ProfileSecretOptions } from "./secrets.ts";

/**
 * The Wavefront provider, as Argo's `metricproviders/wavefront/wavefront.go` queries through
 * go-wavefront: one GET of `https://{address}/api/v2/chart/api` with the query at one instant,
 * the measurement's time (`s` and `e` both that time in epoch milliseconds, `p=1` point,
 * `g=s`, `i=true` so that series whose only points lie outside that instant are returned), and
 * `Authorization: Bearer {token}`.
 *
 * From each series the point closest to the measurement's time is taken (the earlier one on a
 * tie); one series gives `result` as a number, printed with `%.2f` (`10.00`), several a list
 * (`[10.00,11.00]`). `metadata.timestamps` and `metadata.drift` are the chosen points' times and
 * their distance from the measurement's time, in seconds; `metadata.warnings` is Wavefront's. No
 * series is an Error (`No TimeSeries found in response from Wavefront`).
 *
 * The token comes from the controller's Wavefront secret in Secrets Manager, the JSON of Argo's
 * `wavefront-api-tokens` Kubernetes Secret: a token by Wavefront address.
 */
export class WavefrontMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  constructor(
    private readonly options: HttpOptions & Pick<ProfileSecretOptions, "secrets" | "secretId"> = {},
  ) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const wf = metric.provider.wavefront;
    if (!wf) return { ok: false, message: `metric "${metric.name}" has no wavefront provider` };
    const token = await this.token(wf.address, ctx);
    if ("error" in token) return { ok: false, message: token.error };
    const seconds = Math.floor(ctx.now.getTime() / 1000);
    const url = chartUrl(wf.address, wf.query, seconds);
    let status: number;
    let statusText: string;
    let text: string;
    try {
      const res = await this.fetch(url, {
        method: "GET",
        headers: {
          Authorization: `Bearer ${token.token}`,
          Accept: "application/json",
          "User-Agent": USER_AGENT,
        },
        redirect: "manual",
        signal: deadline(WAVEFRONT_TIMEOUT_SECONDS, ctx.signal),
      });
      status = res.status;
      // Go's `resp.Status`: the code and its reason phrase.
      statusText = res.statusText || (STATUS_CODES[status] ?? "");
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return { ok: false, message: read.error };
      text = read.text;
    } catch (e) {
      return { ok: false, message: describeFetchError("GET", url, e, WAVEFRONT_TIMEOUT_SECONDS) };
    }
    if (status !== 200) return { ok: false, message: `server returned ${status} ${statusText}\n${text}\n` };
    const decoded = decodeChart(text);
    if ("error" in decoded) return { ok: false, message: decoded.error };
    return processResponse(decoded, seconds);
  }

  /** Argo's `NewWavefrontAPI`: the token the secret holds under the metric's address. */
  private async token(address: string, ctx: MeasureContext): Promise<{ token: string } | { error: string }> {
    if (!this.options.secretId || !this.options.secrets) {
      return {
        error:
          "API token not found: the controller has no Wavefront secret (RolloutController's metricSecrets.wavefront; ROLLOUTS_WAVEFRONT_SECRET for rollouts analyze)",
      };
    }
    const secret = await this.options.secrets.read(this.options.secretId, ctx.now, ctx.signal);
    if ("error" in secret) return secret;
    const token = Object.hasOwn(secret.values, address) ? secret.values[address] : undefined;
    return token === undefined ? { error: "API token not found" } : { token };
  }
}

/** The most a query may take here (go-wavefront sets no timeout; a measurement must end). */
export const WAVEFRONT_TIMEOUT_SECONDS = 30;

const USER_AGENT = "sfn-rollouts (wavefront provider)";

/**
 * go-wavefront's chart request for Argo's query parameters, encoded as Go's `url.Values` does
 * (sorted; every boolean parameter is sent, `false` ones too).
 */
export function chartUrl(address: string, query: string, seconds: number): string {
  const ms = String(seconds * 1000);
  const params: Array<[string, string]> = [
    ["autoEvents", "false"],
    ["e", ms],
    ["g", "s"],
    ["i", "true"],
    ["includeObsoleteMetrics", "false"],
    ["listmode", "false"],
    ["p", "1"],
    ["q", query],
    ["s", ms],
    ["strict", "false"],
  ];
  return `https://${address}/api/v2/chart/api?${params.map(([k, v]) => `${k}=${queryEscape(v)}`).join("&")}`;
}

/** A chart answer: its series' points and Wavefront's warnings. */
export interface ChartAnswer {
  series: number[][][];
  warnings: string;
}

/**
 * Go's decoding of a chart answer into go-wavefront's `QueryResponse` (a null value in a point is
 * 0, Go's zero value), or Go's error for the fields Argo reads.
 */
export function decodeChart(text: string): ChartAnswer | { error: string } {
  const syntax = goJSONSyntaxError(text);
  if (syntax) return { error: syntax };
  const root: unknown = JSON.parse(text);
  if (root === null) return { series: [], warnings: "" };
  if (!isObject(root)) {
    return {
      error: `json: cannot unmarshal ${goJsonKind(root)} into Go value of type struct { *wavefront.Alias }`,
    };
  }
  const warnings = goField(root, "warnings");
  if (warnings !== undefined && warnings !== null && typeof warnings !== "string") {
    return { error: fieldTypeError(goJsonKind(warnings), "", "warnings", "string") };
  }
  const list = goField(root, "timeseries");
  const series: number[][][] = [];
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list)) {
      return { error: fieldTypeError(goJsonKind(list), "", "timeseries", "[]wavefront.TimeSeries") };
    }
    for (const s of list) {
      if (s !== null && !isObject(s)) {
        return { error: fieldTypeError(goJsonKind(s), "", "timeseries", "wavefront.TimeSeries") };
      }
      const data = s === null ? null : goField(s, "data");
      const points: number[][] = [];
      if (data !== undefined && data !== null) {
        if (!Array.isArray(data)) {
          return {
            error: fieldTypeError(goJsonKind(data), "TimeSeries", "timeseries.data", "[]wavefront.DataPoint"),
          };
        }
        for (const p of data) {
          if (p !== null && !Array.isArray(p)) {
            return {
              error: fieldTypeError(goJsonKind(p), "TimeSeries", "timeseries.data", "wavefront.DataPoint"),
            };
          }
          const point: number[] = [];
          for (const x of p ?? []) {
            if (x !== null && typeof x !== "number") {
              return { error: fieldTypeError(goJsonKind(x), "TimeSeries", "timeseries.data", "float64") };
            }
            point.push(x ?? 0);
          }
          points.push(point);
        }
      }
      series.push(points);
    }
  }
  return { series, warnings: typeof warnings === "string" ? warnings : "" };
}

/**
 * Argo's `findDataPointValue`: the value of the point closest to the measurement's time (the
 * first of equally close ones), its time and its drift in whole seconds. No point: 0, with Go's
 * conversion of an infinite drift.
 */
export function closestPoint(
  points: number[][],
  seconds: number,
): { value: number; epoch: bigint; drift: bigint } | { error: string } {
  let value = 0;
  let time = 0;
  let delta = Number.POSITIVE_INFINITY;
  for (const p of points) {
    if (p.length < 2) return { error: `a Wavefront data point is not [timestamp, value]: [${p.join(" ")}]` };
    const d = (p[0] as number) - seconds;
    if (Math.abs(d) < Math.abs(delta)) {
      value = p[1] as number;
      time = p[0] as number;
      delta = d;
    }
  }
  return { value, epoch: floatToInt(time), drift: floatToInt(delta) };
}

/** Argo's `processResponse`: one series is a number, several a list, none an Error. */
export function processResponse(answer: ChartAnswer, seconds: number): ProviderResult {
  const metadata: Record<string, string> = answer.warnings !== "" ? { warnings: answer.warnings } : {};
  if (answer.series.length === 0) {
    return { ok: false, message: "No TimeSeries found in response from Wavefront", metadata };
  }
  const chosen: Array<{ value: number; epoch: bigint; drift: bigint }> = [];
  for (const points of answer.series) {
    const c = closestPoint(points, seconds);
    if ("error" in c) return { ok: false, message: c.error, metadata };
    chosen.push(c);
  }
  if (chosen.length === 1) {
    const [c] = chosen as [(typeof chosen)[number]];
    return {
      ok: true,
      result: c.value,
      resultType: "float64",
      value: goFixed(c.value, 2),
      metadata: { ...metadata, timestamps: String(c.epoch), drift: String(c.drift) },
    };
  }
  const list = (f: (c: (typeof chosen)[number]) => string) => `[${chosen.map(f).join(",")}]`;
  return {
    ok: true,
    result: chosen.map((c) => c.value),
    resultType: "float64s",
    value: list((c) => goFixed(c.value, 2)),
    metadata: { ...metadata, timestamps: list((c) => String(c.epoch)), drift: list((c) => String(c.drift)) },
  };
}
