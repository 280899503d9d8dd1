import {
  type AnalysisRun,
  AnalysisRunSchema,
  createRun,
  nextTickAt,
  tick,
} from "../../functions/analysis/index.ts";
import type { MetricProvider, ProviderResult } from "../../functions/metrics/port.ts";
import { type Metric, parseRollout } from "../../statemachine/index.ts";
import { judgedRollout } from "./judged-rollout.ts";

/**
 * A judge metric reading request counts of both versions from a stats endpoint, and that
 * endpoint in memory: what the judge's replay tests record and decide again.
 */

/** An AnalysisTemplate `gate` of one judge metric (`errors` by default): its fields and its judge, as YAML. */
export function judgeTemplate(fields: string, judge: string, name = "errors"): string {
  return `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: gate}
spec:
  metrics:
    - name: ${name}
${fields.replace(/^/gm, "      ")}
      provider:
        plugin:
          sfn-rollouts/judge:
${judge.replace(/^/gm, "            ")}
`;
}

/** The judge metric of {@link judgeTemplate} as the loader reads it, in a rollout of its own. */
export function judgeMetric(fields: string, judge: string, name = "errors"): Metric {
  const { spec } = parseRollout([
    { file: "r.yaml", text: judgedRollout() },
    { file: "t.yaml", text: judgeTemplate(fields, judge, name) },
  ]);
  const step = spec.steps[1];
  if (step?.kind !== "analysis") throw new Error("no analysis");
  return step.analysis.templates[0]?.metrics[0] as Metric;
}

/** When {@link driveAnalysis} starts an analysis, in virtual time. */
export const ANALYSIS_START = new Date("2026-01-01T00:00:00.000Z");

/**
 * An analysis of one metric run through `tick` in virtual time until it ends (or `maxTicks`), stored
 * as JSON between ticks as the store keeps it: the round trip must keep it whole, and DynamoDB
 * refuses a map with an empty key.
 */
export async function driveAnalysis(
  metric: Metric,
  provider: MetricProvider,
  maxTicks = 200,
  start = ANALYSIS_START,
): Promise<AnalysisRun> {
  let run = createRun({ templates: [{ name: "gate", kind: "AnalysisTemplate", metrics: [metric] }] }, start);
  for (let i = 0; i < maxTicks; i++) {
    const at = nextTickAt(run);
    if (!at) break;
    run = await tick(run, at, provider);
    const empty = emptyKeys(run);
    if (empty.length > 0) throw new Error(`the run has empty keys at ${empty.join(", ")}`);
    run = AnalysisRunSchema.parse(JSON.parse(JSON.stringify(run)));
  }
  return run;
}

/** Paths of object keys that are empty strings. */
function emptyKeys(value: unknown, path = "$"): string[] {
  if (value === null || typeof value !== "object") return [];
  if (Array.isArray(value)) return value.flatMap((v, i) => emptyKeys(v, `${path}[${i}]`));
  return Object.entries(value).flatMap(([k, v]) => [
    ...(k === "" ? [path] : []),
    ...emptyKeys(v, `${path}.${k}`),
  ]);
}

/** The phases of the first metric's measurements, in order. */
export const phasesOf = (run: AnalysisRun) => run.metricResults[0]?.measurements.map((m) => m.phase) ?? [];

/** Both sides' requests and errors from `/stats?version=V&window=S`. */
export const COUNTS_SIDES = `candidate:
  web: {url: "http://stats/stats?version=v2&window={{judge.elapsedSeconds}}"}
  bad: result.requests - result.ok
  n: result.requests
stable:
  web: {url: "http://stats/stats?version=v1&window={{judge.elapsedSeconds}}"}
  bad: result.requests - result.ok
  n: result.requests`;

/** A version's requests and successes after `elapsed` seconds of the analysis, or `down`: the endpoint fails. */
export type Source = (version: string, elapsed: number) => { requests: number; ok: number } | "down";

/** Candidate (v2) at 10 requests/s, stable (v1) at 30/s, each failing its share of requests. */
export function rates(candidateErrors: number, stableErrors: number): Source {
  return (version, elapsed) => {
    const [rps, errors] = version === "v2" ? [10, candidateErrors] : [30, stableErrors];
    const requests = rps * elapsed;
    return { requests, ok: requests - Math.round(errors * requests) };
  };
}

/** A web provider answering `/stats?version=V&window=S` from a source, counting its calls. */
export function statsWeb(source: Source): MetricProvider & { calls: number } {
  const web = {
    calls: 0,
    async measure(metric: Metric): Promise<ProviderResult> {
      web.calls++;
      const url = new URL(metric.provider.web?.url ?? "");
      const answer = source(url.searchParams.get("version") ?? "", Number(url.searchParams.get("window")));
      if (answer === "down") return { ok: false, message: 'Get "http://stats/": connect ECONNREFUSED' };
      return { ok: true, result: answer, value: JSON.stringify(answer) };
    },
  };
  return web;
}
