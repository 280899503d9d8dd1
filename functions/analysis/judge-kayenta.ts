import type { JudgeSpecOf } from "../../statemachine/spec.ts";
import {
  formatNumber,
  judgeCanary,
  type KayentaMetricResult,
  type MetricSeriesPair,
} from "../judges/index.ts";
import type { JudgeReadings } from "../metrics/judge-readings.ts";
import type { GateFigures } from "./types.ts";

/**
 * A `kayenta` judge's look: every metric's two series read, Kayenta's judge run over them, and its
 * score turned into a decision the way Kayenta's own canary analysis turns a judgement into one
 * (kayenta-standalone-canary-analysis, MonitorCanaryTask and GenerateCanaryAnalysisResultTask):
 *
 * - a score **not above `marginal`** at any look rolls back (a critical failure, or half the metrics
 *   without data, scores 0);
 * - above it, a look before the last holds;
 * - at the last look, a score from `pass` up promotes; between `marginal` and `pass` the run is
 *   Inconclusive and a person decides (Kayenta fails the analysis there; a rollout pauses instead,
 *   as every judge of this project does when it cannot decide at the end).
 *
 * A reading that failed (the provider down, an answer that is not a series) holds the look: Kayenta
 * scores only what it could read, and a score without one of its metrics is not Kayenta's score.
 */

/** What the look decided, in the shape of any judge's check outcome. */
export interface KayentaLook {
  status: "pass" | "fail" | "hold" | "inconclusive";
  verdict: string;
  reason: string;
  figures: Partial<GateFigures>;
}

const SIDES = { candidate: "the candidate's", stable: "the stable version's" } as const;

/** A series' points; NaN where a point has no value (NaN, ±Inf, null), which the metric's `nanStrategy` handles. */
function seriesOf(readings: JudgeReadings, metric: string, side: keyof typeof SIDES): number[] | string {
  const value = readings[`${metric}/${side}.value`];
  if (!value) return `metric ${metric}: ${SIDES[side]} series is missing`;
  if (!value.ok) return `metric ${metric}: ${SIDES[side]} series failed: ${value.message}`;
  if (!Array.isArray(value.value))
    return `metric ${metric}: ${SIDES[side]} reading is not a series of points`;
  const points: number[] = [];
  for (const x of value.value) {
    const n = typeof x === "string" ? Number(x) : x;
    if (n === null || (typeof n === "number" && !Number.isFinite(n))) points.push(Number.NaN);
    else if (typeof n === "number") points.push(n);
    else
      return `metric ${metric}: ${SIDES[side]} series has a point that is not a number: ${JSON.stringify(x)}`;
  }
  return points;
}

/** One metric's line: its classification and the figures it rests on. */
function describeMetric(m: KayentaMetricResult, confidence: number): string {
  const label = `${m.classification}${m.critical ? " (critical)" : ""}`;
  const points = `${m.experiment.count} and ${m.control.count} points`;
  if (m.interval === undefined) {
    return `metric ${m.name}: ${label}${m.reason ? `: ${m.reason}` : ""} (${points})`;
  }
  const { lower, upper, estimate } = m.interval;
  const shift = `${estimate >= 0 ? "+" : ""}${formatNumber(estimate)}`;
  return (
    `metric ${m.name}: ${label}: candidate ${formatNumber(m.experiment.mean)}, stable ${formatNumber(m.control.mean)} ` +
    `(means of ${points}), ratio ${formatNumber(m.deviation)}, ` +
    `shift ${shift} in [${formatNumber(lower)}, ${formatNumber(upper)}] (${formatNumber(confidence * 100)}%)`
  );
}

/** The look's decision from Kayenta's judgement of the series read so far. */
export function kayentaLook(
  spec: JudgeSpecOf<"kayenta">,
  readings: JudgeReadings,
  final: boolean,
): KayentaLook {
  const series: Record<string, MetricSeriesPair> = {};
  for (const metric of spec.metrics) {
    const experiment = seriesOf(readings, metric.name, "candidate");
    const control = seriesOf(readings, metric.name, "stable");
    for (const side of [experiment, control]) {
      if (typeof side === "string")
        return { status: "hold", verdict: "INSUFFICIENT", reason: side, figures: {} };
    }
    series[metric.name] = { experiment: experiment as number[], control: control as number[] };
  }
  const judgement = judgeCanary(spec, series);
  const lines = judgement.metrics.map((m) => describeMetric(m, spec.confidence));
  const figures: Partial<GateFigures> = {
    score: judgement.score,
    metrics: judgement.metrics.map((m, i) => ({
      name: m.name,
      status: `${m.classification}${m.critical ? " (critical)" : ""}${m.muted ? " (muted)" : ""}`,
      message: lines[i]!,
    })),
  };
  const failing = judgement.metrics
    .map((m, i) => (m.classification === "Pass" || m.muted ? undefined : lines[i]))
    .filter((line) => line !== undefined);
  const score = `score ${judgement.score}`;
  const thresholds = `pass ${spec.pass}, marginal ${spec.marginal}`;
  const why = [...(judgement.reason ? [judgement.reason] : []), ...failing].join("; ");
  if (judgement.score <= spec.marginal) {
    return {
      status: "fail",
      verdict: judgement.classification,
      reason: `${score} is not above marginal ${spec.marginal}${why ? `: ${why}` : ""}`,
      figures,
    };
  }
  const graded = `${score} (${judgement.classification}; ${thresholds})`;
  if (!final) return { status: "hold", verdict: judgement.classification, reason: graded, figures };
  if (judgement.score >= spec.pass)
    return { status: "pass", verdict: judgement.classification, reason: graded, figures };
  return {
    status: "inconclusive",
    verdict: judgement.classification,
    reason: `${score} < pass ${spec.pass} at the end of the analysis${why ? `: ${why}` : ""}`,
    figures,
  };
}
