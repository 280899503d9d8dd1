import { goParseFloat, goParseInt } from "../../statemachine/expr/builtins.ts";
import { goJSONSyntaxError } from "../../statemachine/expr/json.ts";
import type { Metric } from "../../statemachine/spec.ts";
import { goFixed, goUrlError, goV } from "./go-fmt.ts";
import { fieldTypeError, goField, goJsonKind, isObject } from "./go-json.ts";
import { encodeQuery, parseQuery, setValue } from "./go-url.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  deadline,
  describeFetchError,
  type Fetch,
  type HttpOptions,
  readBody,
} from "./http.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";

/**
 * The Graphite provider, as Argo's `metricproviders/graphite` reads Graphite's render API: one GET
 * of `{address}/render?{query}&format=json` (the query's whitespace removed, its parameters
 * re-encoded and sorted as Go's `url.Values` does, `format=json` set), with a 10 s timeout.
 *
 * The answer is a list of targets; the first target's datapoints are read (`[value, timestamp]`,
 * each a number, a numeric string or null). `result` is the list of its non-null values, in order
 * (a `[]float64`: `result[len(result)-1]` is the latest point with data), and the value prints as
 * Argo prints it, each with `%f`: `[10.000000,12.500000]`. No target, or a target without
 * datapoints, is an Error (`no values found`); a target whose points are all null is an empty
 * `result`. A status of 400 or more is an Error with the body (`error response: …`); an answer of
 * the wrong shape is an Error with Go's decoding message.
 */
export class GraphiteMetricProvider implements MetricProvider {
  private readonly fetch: Fetch;
  private readonly maxBodyBytes: number;

  constructor(options: HttpOptions = {}) {
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const g = metric.provider.graphite;
    if (!g) return { ok: false, message: `metric "${metric.name}" has no graphite provider` };
    const url = renderUrl(g.address, g.query);
    if ("error" in url) return { ok: false, message: url.error };
    let status: number;
    let text: string;
    try {
      const res = await this.fetch(url.url, {
        method: "GET",
        headers: { "User-Agent": USER_AGENT },
        signal: deadline(GRAPHITE_TIMEOUT_SECONDS, ctx.signal),
      });
      status = res.status;
      const read = await readBody(res, this.maxBodyBytes);
      if ("error" in read) return { ok: false, message: read.error };
      text = read.text;
    } catch (e) {
      return { ok: false, message: describeFetchError("GET", url.url, e, GRAPHITE_TIMEOUT_SECONDS) };
    }
    if (status >= 400) return { ok: false, message: `error response: ${text}` };
    const points = decodeRender(text);
    if ("error" in points) return { ok: false, message: points.error };
    if (points.values.length === 0) return { ok: false, message: "no values found" };
    const values = points.values.filter((v): v is number => v !== null);
    return {
      ok: true,
      result: values,
      resultType: "float64s",
      value: `[${values.map((v) => goFixed(v, 6)).join(",")}]`,
    };
  }
}

/** Argo's Graphite client timeout. */
export const GRAPHITE_TIMEOUT_SECONDS = 10;

const USER_AGENT = "sfn-rollouts (graphite provider)";

/**
 * The render URL Argo's client builds: `./render?{query}` parsed as Go's `url.Parse` parses it
 * (a `#` starts a fragment, whose escapes must be valid), its query re-encoded with
 * `format=json`, the path joined to the address's.
 */
export function renderUrl(address: string, query: string): { url: string } | { error: string } {
  const raw = `./render?${query.replace(/[\t\n\f\r ]+/g, "")}`;
  if ([...raw].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    return { error: goUrlError("parse", raw, "net/url: invalid control character in URL") };
  }
  const hash = raw.indexOf("#");
  const beforeFragment = hash < 0 ? raw : raw.slice(0, hash);
  if (hash >= 0) {
    const fragment = raw.slice(hash + 1);
    for (let i = fragment.indexOf("%"); i >= 0; i = fragment.indexOf("%", i + 1)) {
      if (!/^[0-9A-Fa-f]{2}$/.test(fragment.slice(i + 1, i + 3))) {
        return {
          error: goUrlError("parse", raw, `invalid URL escape ${JSON.stringify(fragment.slice(i, i + 3))}`),
        };
      }
      i += 2;
    }
  }
  const values = parseQuery(beforeFragment.slice(beforeFragment.indexOf("?") + 1));
  setValue(values, "format", "json");
  let base: URL;
  try {
    base = new URL(address);
  } catch {
    return { error: `Graphite address ${address} is not a valid URL` };
  }
  const path = base.pathname.replace(/\/+$/, "");
  base.pathname = `${path}/render`;
  base.search = "";
  base.hash = "";
  return { url: `${base.toString()}?${encodeQuery(values)}` };
}

/**
 * Go's decoding of a render answer into Argo's `graphiteResponse` (`[]{target, datapoints}`), the
 * first target's values (null for a point without one), or Go's error. Type errors of fields are
 * kept and reported after the whole answer is read, a datapoint's own error stops at once, as
 * `encoding/json` does.
 */
export function decodeRender(text: string): { values: Array<number | null> } | { error: string } {
  const syntax = goJSONSyntaxError(text);
  if (syntax) return { error: syntax };
  const root: unknown = JSON.parse(text);
  if (root === null) return { values: [] };
  if (!Array.isArray(root)) {
    return {
      error: `json: cannot unmarshal ${goJsonKind(root)} into Go value of type graphite.graphiteResponse`,
    };
  }
  let saved: string | undefined;
  const targets: Array<Array<number | null>> = [];
  for (const target of root) {
    const values: Array<number | null> = [];
    targets.push(values);
    if (target === null) continue;
    if (!isObject(target)) {
      saved ??= `json: cannot unmarshal ${goJsonKind(target)} into Go value of type graphite.graphiteTargetResp`;
      continue;
    }
    const name = goField(target, "target");
    if (name !== undefined && name !== null && typeof name !== "string") {
      saved ??= fieldTypeError(goJsonKind(name), "graphiteTargetResp", "target", "string");
    }
    const datapoints = goField(target, "datapoints");
    if (datapoints === undefined || datapoints === null) continue;
    if (!Array.isArray(datapoints)) {
      saved ??= fieldTypeError(
        goJsonKind(datapoints),
        "graphiteTargetResp",
        "datapoints",
        "[]graphite.dataPoint",
      );
      continue;
    }
    for (const point of datapoints) {
      const decoded = decodePoint(point);
      if ("error" in decoded) return decoded;
      values.push(decoded.value);
    }
  }
  if (saved) return { error: saved };
  return { values: targets[0] ?? [] };
}

/** Argo's `dataPoint.UnmarshalJSON`: `[value, timestamp]`, each a number, a numeric string or null. */
function decodePoint(point: unknown): { value: number | null } | { error: string } {
  if (point !== null && !Array.isArray(point)) {
    return {
      error: fieldTypeError(goJsonKind(point), "graphiteTargetResp", "datapoints", "[]interface {}"),
    };
  }
  const v = point ?? [];
  if (v.length !== 2) return { error: `error unmarshaling data point: ${goV(v)}` };
  const [raw, time] = v;
  let value: number | null = null;
  if (typeof raw === "number") value = raw;
  else if (typeof raw === "string") {
    const parsed = goParseFloat(raw);
    if ("error" in parsed) return parsed;
    value = parsed.value;
  } else if (raw !== null) return { error: `error unmarshaling value: ${goV(raw)}` };
  if (typeof time === "string") {
    const parsed = goParseInt(time);
    if ("error" in parsed) return parsed;
  } else if (time !== null && typeof time !== "number") {
    // Argo's message names the value here, not the timestamp.
    return { error: `error unmarshaling timestamp: ${goV(raw)}` };
  }
  return { value };
}
