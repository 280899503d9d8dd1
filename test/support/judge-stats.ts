import type { MetricProvider, ProviderResult } from "../../functions/metrics/port.ts";
import { type Metric, parseRollout } from "../../statemachine/index.ts";
import { judgedRollout } from "./judged-rollout.ts";

/**
 * A judge metric reading request counts of both versions from a stats endpoint, and that
 * endpoint in memory: what the judge's replay tests record and decide again.
 */

/** An AnalysisTemplate `gate` of one judge metric `errors`: its fields and its judge, as YAML. */
export function judgeTemplate(fields: string, judge: string): string {
  return `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: gate}
spec:
  metrics:
    - name: errors
${fields.replace(/^/gm, "      ")}
      provider:
        plugin:
          sfn-rollouts/judge:
${judge.replace(/^/gm, "            ")}
`;
}

/** The judge metric of {@link judgeTemplate} as the loader reads it. */
export function judgeMetric(fields: string, judge: string): Metric {
  const { spec } = parseRollout([
    { file: "r.yaml", text: judgedRollout() },
    { file: "t.yaml", text: judgeTemplate(fields, judge) },
  ]);
  const step = spec.steps[1];
  if (step?.kind !== "analysis") throw new Error("no analysis");
  return step.analysis.templates[0]?.metrics[0] as Metric;
}

/** Both sides' requests and errors from `/stats?version=V&window=S`. */
export const COUNTS_SIDES = `candidate:
  web: {url: "http://stats/stats?version=v2&window={{judge.elapsedSeconds}}"}
  bad: result.requests - result.ok
  n: result.requests
stable:
  web: {url: "http://stats/stats?version=v1&window={{judge.elapsedSeconds}}"}
  bad: result.requests - result.ok
  n: result.requests`;

/** A version's requests and successes after `elapsed` seconds of the analysis. */
export type Source = (version: string, elapsed: number) => { requests: number; ok: number };

/** Candidate (v2) at 10 requests/s, stable (v1) at 30/s, each failing its share of requests. */
export function rates(candidateErrors: number, stableErrors: number): Source {
  return (version, elapsed) => {
    const [rps, errors] = version === "v2" ? [10, candidateErrors] : [30, stableErrors];
    const requests = rps * elapsed;
    return { requests, ok: requests - Math.round(errors * requests) };
  };
}

/** A web provider answering `/stats?version=V&window=S` from a source. */
export function statsWeb(source: Source): MetricProvider {
  return {
    async measure(metric: Metric): Promise<ProviderResult> {
      const url = new URL(metric.provider.web?.url ?? "");
      const answer = source(url.searchParams.get("version") ?? "", Number(url.searchParams.get("window")));
      return { ok: true, result: answer, value: JSON.stringify(answer) };
    },
  };
}
