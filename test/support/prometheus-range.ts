import { type Recorded, startServer } from "./http-server.ts";

/**
 * A local server speaking Prometheus' range query API (`/api/v1/query_range`) as Prometheus does:
 * the parameters from the form body (POST) or the URL (GET), `start` and `end` as seconds since
 * the epoch (or RFC 3339), `step` as seconds (or a duration such as `1m`), Prometheus' `bad_data`
 * answers (HTTP 400) for what it refuses, and a matrix of the series `evaluate` gives at every
 * step from `start` to `end`, timestamps in seconds and values as strings. Other paths answer 404.
 */

/** One series' labels and its value at an instant (seconds since the epoch); undefined: no sample. */
export type RangeSeries = { metric: Record<string, string>; at: (seconds: number) => number | undefined };

export interface PrometheusRangeServer {
  url: string;
  requests: Recorded[];
  /** The parameters of every range query, as Prometheus read them. */
  queries: Array<{ query: string; start: number; end: number; step: number }>;
  close(): Promise<void>;
}

function badData(message: string): { status: number; body: string } {
  return { status: 400, body: JSON.stringify({ status: "error", errorType: "bad_data", error: message }) };
}

/** Prometheus' `parseTime`: float seconds or RFC 3339. */
function parseTime(s: string): number | undefined {
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Number(s);
  const ms = Date.parse(s);
  return /^\d{4}-\d\d-\d\dT/.test(s) && !Number.isNaN(ms) ? ms / 1000 : undefined;
}

const UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

/** Prometheus' `parseDuration`: float seconds or a Prometheus duration (`1m`, `1h30m`). */
function parseStep(s: string): number | undefined {
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Number(s);
  if (!/^(\d+(ms|s|m|h|d|w|y))+$/.test(s)) return undefined;
  let total = 0;
  for (const m of s.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g))
    total += Number(m[1]) * (UNITS[m[2] as string] as number);
  return total;
}

/** Prometheus' sample value strings. */
function sampleString(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(v);
}

function answer(
  req: Recorded,
  evaluate: (query: string) => RangeSeries[],
  queries: PrometheusRangeServer["queries"],
): { status: number; body: string } {
  const url = new URL(req.url, "http://prometheus");
  if (url.pathname !== "/api/v1/query_range") return { status: 404, body: "404 page not found\n" };
  const params = req.method === "POST" ? new URLSearchParams(req.body) : url.searchParams;
  const start = parseTime(params.get("start") ?? "");
  if (start === undefined) {
    return badData(
      `invalid parameter "start": cannot parse "${params.get("start") ?? ""}" to a valid timestamp`,
    );
  }
  const end = parseTime(params.get("end") ?? "");
  if (end === undefined) {
    return badData(`invalid parameter "end": cannot parse "${params.get("end") ?? ""}" to a valid timestamp`);
  }
  if (end < start) return badData(`invalid parameter "end": end timestamp must not be before start time`);
  const step = parseStep(params.get("step") ?? "");
  if (step === undefined) {
    return badData(
      `invalid parameter "step": cannot parse "${params.get("step") ?? ""}" to a valid duration`,
    );
  }
  if (step <= 0) {
    return badData(
      `invalid parameter "step": zero or negative query resolution step widths are not accepted. Try a positive integer`,
    );
  }
  if ((end - start) / step > 11000) {
    return badData(
      "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
    );
  }
  const query = params.get("query") ?? "";
  queries.push({ query, start, end, step });
  // Prometheus steps in whole milliseconds from start while the instant is not after end.
  const startMs = Math.round(start * 1000);
  const endMs = Math.round(end * 1000);
  const stepMs = Math.round(step * 1000);
  const result = evaluate(query).flatMap((series) => {
    const values: Array<[number, string]> = [];
    for (let t = startMs; t <= endMs; t += stepMs) {
      const v = series.at(t / 1000);
      if (v !== undefined) values.push([t / 1000, sampleString(v)]);
    }
    return values.length > 0 ? [{ metric: series.metric, values }] : [];
  });
  return { status: 200, body: JSON.stringify({ status: "success", data: { resultType: "matrix", result } }) };
}

/** Starts the server; `evaluate` gives the series a query selects. */
export async function startPrometheusRange(
  evaluate: (query: string) => RangeSeries[],
): Promise<PrometheusRangeServer> {
  const queries: PrometheusRangeServer["queries"] = [];
  const server = await startServer((req, res) => {
    const { status, body } = answer(req, evaluate, queries);
    res.writeHead(status, { "content-type": status === 404 ? "text/plain" : "application/json" }).end(body);
  });
  return { ...server, queries };
}
