import type { MetricLabel } from "./labels.ts";

/**
 * Kayenta's weighted-sum scorer. Each group's score is the share of its metrics that passed,
 * counting only Pass, High, Low and NodataFailMetric (a `Nodata` or `Error` metric drops out of
 * its group, and a group left with nothing counts as 100). The summary is the groups' scores
 * weighted by `groupWeights` (percentages; the groups without a weight share what is left of 100
 * equally), rounded half up to 2 decimals. Two rules override it with 0: a critical metric that
 * did not pass, and half or more of the metrics without data.
 */

/** A metric's classification as the scorer reads it. */
export interface ScoredClassification {
  readonly name: string;
  readonly classification: MetricLabel;
  readonly groups: readonly string[];
  readonly critical: boolean;
  readonly reason: string | null;
}

/** One group's score. */
export interface GroupScore {
  readonly name: string;
  /** Share of the counted metrics that passed, 0–100 (0 with none counted). */
  readonly score: number;
  /** No metric of the group was counted: the summary takes it as 100. */
  readonly noData: boolean;
  readonly labelCounts: Partial<Record<MetricLabel, number>>;
  readonly numMetrics: number;
}

/** The summary score, its groups and, when a rule set it to 0, why. */
export interface WeightedScore {
  readonly groupScores: GroupScore[];
  readonly summaryScore: number;
  readonly numMetrics: number;
  readonly reason: string | null;
}

/** Half or more of the metrics without data fail the canary. */
const NODATA_THRESHOLD = 50;

/** The labels a group's score counts: a Nodata or Error metric says nothing about the canary. */
const COUNTED: readonly MetricLabel[] = ["Pass", "High", "Low", "NodataFailMetric"];

function groupScore(name: string, labels: MetricLabel[]): GroupScore {
  const labelCounts: Partial<Record<MetricLabel, number>> = {};
  for (const label of labels) labelCounts[label] = (labelCounts[label] ?? 0) + 1;
  const counted = COUNTED.reduce((sum, label) => sum + (labelCounts[label] ?? 0), 0);
  const noData = counted === 0;
  const score = noData ? 0 : ((labelCounts.Pass ?? 0) / counted) * 100;
  return { name, score, noData, labelCounts, numMetrics: labels.length };
}

/**
 * `x` rounded half up (away from zero) to `scale` decimals of its shortest decimal form, as
 * Commons Math's `Precision.round` rounds Kayenta's score: 94.995 is 95, 94.994999 is 94.99.
 */
export function roundHalfUp(x: number, scale: number): number {
  if (!Number.isFinite(x)) return x;
  const [mantissa, exponentText] = String(Math.abs(x)).split("e");
  const exponent = Number(exponentText ?? 0);
  const [whole = "", fraction = ""] = mantissa!.split(".");
  // All the digits, and where the decimal point falls among them.
  let digits = whole + fraction;
  let point = whole.length + exponent;
  if (point < 0) {
    digits = "0".repeat(-point) + digits;
    point = 0;
  }
  if (digits.length < point) digits += "0".repeat(point - digits.length);
  const kept = digits.slice(0, point + scale).padEnd(point + scale, "0");
  const next = digits.charCodeAt(point + scale) || 48;
  let units = BigInt(kept === "" ? "0" : kept);
  if (next >= 53) units += 1n; // the next digit is 5 or more
  const rounded = Number(units) / 10 ** scale;
  return x < 0 ? -rounded : rounded;
}

/**
 * The weighted-sum score of classified metrics (muted metrics already left out), with the groups'
 * scores, as Kayenta's `WeightedSumScorer` computes it.
 */
export function weightedSumScore(
  results: readonly ScoredClassification[],
  groupWeights: Readonly<Record<string, number>> = {},
): WeightedScore {
  const byGroup = new Map<string, MetricLabel[]>();
  for (const result of results) {
    for (const group of result.groups) {
      const labels = byGroup.get(group) ?? [];
      labels.push(result.classification);
      byGroup.set(group, labels);
    }
  }
  const groupScores = [...byGroup].map(([name, labels]) => groupScore(name, labels));
  const numMetrics = results.length;

  const criticalFailure = results.find((r) => r.critical && r.classification !== "Pass");
  if (criticalFailure) {
    return { groupScores, summaryScore: 0, numMetrics, reason: `Canary Failed: ${criticalFailure.reason}` };
  }
  const nodata = results.filter((r) => r.classification === "Nodata").length;
  if ((nodata / numMetrics) * 100 >= NODATA_THRESHOLD) {
    const reason = `Canary Failed: ${NODATA_THRESHOLD}% or more metrics returned NODATA`;
    return { groupScores, summaryScore: 0, numMetrics, reason };
  }

  const weighted = Object.values(groupWeights).reduce((sum, w) => sum + w, 0);
  const unweighted = groupScores.filter((g) => !Object.hasOwn(groupWeights, g.name)).length;
  const shared = unweighted > 0 ? (100 - weighted) / unweighted : 0;
  let summary = 0;
  for (const group of groupScores) {
    const effective = group.noData ? 100 : group.score;
    const weight = Object.hasOwn(groupWeights, group.name) ? groupWeights[group.name]! : shared;
    summary += effective * (weight / 100);
  }
  return { groupScores, summaryScore: roundHalfUp(summary, 2), numMetrics, reason: null };
}

/** Kayenta's score classification: Pass from `pass` up, Marginal from `marginal` up, else Fail. */
export type ScoreLabel = "Pass" | "Marginal" | "Fail";

/** Classifies a summary score against the thresholds, as Kayenta's `ThresholdScoreClassifier` does. */
export function classifyScore(score: number, thresholds: { pass: number; marginal: number }): ScoreLabel {
  if (score >= thresholds.pass) return "Pass";
  if (score >= thresholds.marginal) return "Marginal";
  return "Fail";
}
