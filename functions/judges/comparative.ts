import { type NanStrategy, removeNaNs, replaceNaNs } from "./kayenta/preprocessing.ts";
import { roundHalfUp } from "./kayenta/scorer.ts";
import { mannWhitney, ratioOfMeans } from "./mann-whitney.ts";

/** The comparative gate's `direction`: which change of the metric counts as worse. */
export type Direction = "increase" | "decrease" | "either";

/** A metric's status in a gate reading. `inconclusive` is "not green" and never "passed". */
export type MetricStatus = "pass" | "fail" | "inconclusive";

/** Tolerances of a comparative metric (`compare: stable`). */
export interface ComparativeTolerance {
  /** What counts as worse (default `increase`). */
  readonly direction?: Direction;
  /** Maximum candidate/stable ratio tolerated when an increase is worse (default 1). */
  readonly maxRatio?: number;
  /** Minimum candidate/stable ratio tolerated when a decrease is worse (default 1). */
  readonly minRatio?: number;
  /** Maximum difference in the worse direction (candidate − stable for an increase, stable − candidate for a decrease). */
  readonly maxDelta?: number;
}

/** One reading of a comparative threshold gate, for candidate and stable at the same time. */
export interface ComparativeReading extends ComparativeTolerance {
  readonly name: string;
  readonly candidate: number;
  readonly stable: number;
  /** Requests the candidate served in the window (from `samplesQuery`). */
  readonly samples?: number;
  /** Below this many samples the check is not green (default 0: not checked). */
  readonly minSamples?: number;
}

/** Outcome of one comparative metric, with the numbers a red gate lists. */
export interface ComparativeOutcome {
  readonly name: string;
  readonly status: MetricStatus;
  readonly candidate: number;
  readonly stable: number;
  /** candidate / stable; 1 when both are 0, ±Infinity when only the stable value is 0. */
  readonly ratio: number;
  /** candidate − stable. */
  readonly delta: number;
  readonly message: string;
}

function increaseIsWorse(direction: Direction): boolean {
  return direction === "increase" || direction === "either";
}

function decreaseIsWorse(direction: Direction): boolean {
  return direction === "decrease" || direction === "either";
}

/** Formats numbers as the gate messages show them: short, with +Inf for a ratio over zero. */
export function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  if (Number.isNaN(value)) return "NaN";
  if (value !== 0 && (Math.abs(value) < 1e-3 || Math.abs(value) >= 1e6)) {
    // Two-digit exponents, as Python and the seed's messages print them: p=9.3e-05.
    return value.toExponential(1).replace(/e([+-])(\d)$/, (_, sign, digit) => `e${sign}0${digit}`);
  }
  return String(Number(value.toPrecision(4)));
}

/** Lists which tolerances a candidate/stable pair breaks; empty when none. */
/**
 * The tolerances a reading goes beyond. `inclusive`: reaching a tolerance is already beyond it, as
 * Kayenta compares an effect size with `allowedIncrease` (≥) — the series analysis, where the seed
 * says "beyond the tolerated ratio" and is silent on the boundary; a threshold on one reading keeps
 * `maxRatio` a maximum (a ratio equal to it passes).
 */
function breaches(
  candidate: number,
  stable: number,
  tolerance: ComparativeTolerance,
  inclusive = false,
): string[] {
  const direction = tolerance.direction ?? "increase";
  const ratio = ratioOfMeans(candidate, stable);
  const delta = candidate - stable;
  const above = (x: number, limit: number) => (inclusive ? x >= limit : x > limit);
  const [gt, lt] = inclusive ? [">=", "<="] : [">", "<"];
  const found: string[] = [];
  if (increaseIsWorse(direction)) {
    const maxRatio = tolerance.maxRatio ?? 1;
    if (above(ratio, maxRatio))
      found.push(`ratio ${formatNumber(ratio)} ${gt} maxRatio ${formatNumber(maxRatio)}`);
    if (tolerance.maxDelta !== undefined && above(delta, tolerance.maxDelta)) {
      found.push(`delta ${formatNumber(delta)} ${gt} maxDelta ${formatNumber(tolerance.maxDelta)}`);
    }
  }
  if (decreaseIsWorse(direction)) {
    const minRatio = tolerance.minRatio ?? 1;
    if (above(minRatio, ratio))
      found.push(`ratio ${formatNumber(ratio)} ${lt} minRatio ${formatNumber(minRatio)}`);
    if (tolerance.maxDelta !== undefined && above(-delta, tolerance.maxDelta)) {
      found.push(
        `delta ${formatNumber(delta)} ${inclusive ? "at or below" : "below"} -maxDelta ${formatNumber(-tolerance.maxDelta)}`,
      );
    }
  }
  return found;
}

/**
 * The comparative threshold gate: the same query evaluated for the candidate and the
 * stable version in the same window, judged by ratio and difference, so a busy hour or a slow
 * dependency that moves both does not fail the step. A gate that saw fewer than `minSamples`
 * requests is inconclusive, never green: a gate that sees no traffic cannot say a release is
 * healthy.
 */
export function compareWithStable(reading: ComparativeReading): ComparativeOutcome {
  const { name, candidate, stable } = reading;
  const ratio = ratioOfMeans(candidate, stable);
  const delta = candidate - stable;
  const base = { name, candidate, stable, ratio, delta };
  const minSamples = reading.minSamples ?? 0;
  if (!Number.isFinite(candidate) || !Number.isFinite(stable)) {
    return { ...base, status: "inconclusive", message: `metric ${name}: no value for one version` };
  }
  if (minSamples > 0 && (reading.samples === undefined || reading.samples < minSamples)) {
    return {
      ...base,
      status: "inconclusive",
      message: `metric ${name}: ${reading.samples ?? 0} samples < minSamples ${minSamples}`,
    };
  }
  const found = breaches(candidate, stable, reading);
  const values = `candidate ${formatNumber(candidate)}, stable ${formatNumber(stable)}`;
  if (found.length > 0) {
    return { ...base, status: "fail", message: `metric ${name}: ${values}: ${found.join(", ")}` };
  }
  return { ...base, status: "pass", message: `metric ${name}: ${values}: ratio ${formatNumber(ratio)}` };
}

/** The `analysis: mann-whitney` metric: two series and what the analysis tolerates. */
export interface SeriesAnalysisInput extends ComparativeTolerance {
  readonly name: string;
  /** The candidate's points over the step (or lookback), one per `step`; NaN for a point without value. */
  readonly candidate: ArrayLike<number>;
  readonly stable: ArrayLike<number>;
  /** NaN points removed (default, as Kayenta) or counted as 0 (a count that saw nothing in that step). */
  readonly nanStrategy?: NanStrategy;
  /** Significance level (default 0.05). */
  readonly alpha?: number;
  /** Fewer points on either side: inconclusive (default 5). */
  readonly minPoints?: number;
}

/** Outcome of a Mann-Whitney series analysis. */
export interface SeriesAnalysisOutcome extends ComparativeOutcome {
  readonly pValue: number | null;
  readonly pointsCandidate: number;
  readonly pointsStable: number;
  /** A version had no point at all (after NaN points were removed): a critical metric fails on it. */
  readonly noData: boolean;
}

/**
 * Kayenta-style judgement of a metric as percentage rollouts run it: the candidate's and the stable's
 * series over the step, compared with the two-sided Mann-Whitney U test. The metric fails only
 * when the difference is significant (p < alpha) *and* the ratio of the means goes the worse way
 * beyond the tolerated ratio (`maxRatio` 1.2 tolerates +20% even when significant). The message
 * of a failure lists means, ratio and p-value, e.g.
 * `metric errors: candidate 0.2761, stable 0 (means of 11 and 11 points): ratio +Inf, p=9.3e-05 < 0.05`.
 */
export function analyzeSeries(input: SeriesAnalysisInput): SeriesAnalysisOutcome {
  const alpha = input.alpha ?? 0.05;
  const minPoints = input.minPoints ?? 5;
  const prepare = input.nanStrategy === "replace" ? replaceNaNs : removeNaNs;
  const candidatePoints = prepare(input.candidate);
  const stablePoints = prepare(input.stable);
  const nc = candidatePoints.length;
  const ns = stablePoints.length;
  const noData = nc === 0 || ns === 0;
  const base = { name: input.name, pointsCandidate: nc, pointsStable: ns, noData };
  if (nc < Math.max(1, minPoints) || ns < Math.max(1, minPoints)) {
    return {
      ...base,
      status: "inconclusive",
      candidate: Number.NaN,
      stable: Number.NaN,
      ratio: Number.NaN,
      delta: Number.NaN,
      pValue: null,
      message: noData
        ? `metric ${input.name}: no data (${nc} and ${ns} points)`
        : `metric ${input.name}: ${nc} and ${ns} points < minPoints ${minPoints}`,
    };
  }
  const test = mannWhitney(candidatePoints, stablePoints, "two-sided");
  const candidate = test.meanCandidate;
  const stable = test.meanPrimary;
  const ratio = test.meanRatio;
  const found = breaches(candidate, stable, input, true);
  const significant = test.pValue < alpha;
  const status: MetricStatus = significant && found.length > 0 ? "fail" : "pass";
  const message =
    `metric ${input.name}: candidate ${formatNumber(candidate)}, stable ${formatNumber(stable)} ` +
    `(means of ${nc} and ${ns} points): ratio ${formatNumber(ratio)}, ` +
    `p=${formatNumber(test.pValue)} ${significant ? "<" : ">="} ${alpha}` +
    (found.length > 0 && !significant ? ` (${found.join(", ")}, not significant)` : "") +
    (found.length === 0 && significant ? " (within tolerance)" : "");
  return {
    ...base,
    status,
    candidate,
    stable,
    ratio,
    delta: candidate - stable,
    pValue: test.pValue,
    message,
  };
}

/** A metric's contribution to the score. */
export interface ScoredMetric {
  readonly name: string;
  readonly status: MetricStatus;
  /** Weight in the score (default 1). */
  readonly weight?: number;
  /** A failed critical metric makes the gate red whatever the score. */
  readonly critical?: boolean;
  /** A version had no data: for a critical metric, a failure (as Kayenta's critical Nodata). */
  readonly noData?: boolean;
  readonly message?: string;
}

/** Score thresholds, 0–100 (`analysis: {pass: 95, marginal: 75}`). */
export interface ScoreThresholds {
  readonly pass?: number;
  readonly marginal?: number;
}

/** A gate reading's score and colour. */
export interface ScoreOutcome {
  /**
   * Weighted share of the non-inconclusive metrics that passed, 0–100, rounded half up to 2
   * decimals as Kayenta rounds its score (the thresholds compare this value); 0 when a critical
   * metric failed; null when every metric was inconclusive.
   */
  readonly score: number | null;
  readonly green: boolean;
  /** `pass` ≥ pass threshold, `marginal` ≥ marginal threshold, else `fail` (also when a critical metric failed or nothing was conclusive). */
  readonly grade: "pass" | "marginal" | "fail";
  /** Why the gate is red, one line per reason (empty when green). */
  readonly reasons: string[];
  /** A critical metric failed or had no data: red whatever the score. */
  readonly criticalFailed: boolean;
}

/** A score as the gate compares it: the 2-decimal value itself, never rounded further for display. */
export function formatScore(score: number): string {
  return String(score);
}

/**
 * The score: the weighted share of the non-inconclusive metrics that passed, rounded half up to 2
 * decimals as Kayenta rounds its score, and compared after rounding. During the bake a reading is
 * green from `marginal` up; the final reading must reach `pass` and have no inconclusive metric,
 * because a step that ended without data cannot say the release is healthy. A `critical` metric
 * that failed, or that had no data, is red on its own and scores 0, as Kayenta's scorer zeroes a
 * critical failure.
 */
export function scoreGate(
  metrics: readonly ScoredMetric[],
  thresholds: ScoreThresholds = {},
  finalReading = false,
): ScoreOutcome {
  const pass = thresholds.pass ?? 95;
  const marginal = thresholds.marginal ?? 75;
  let total = 0;
  let passed = 0;
  const reasons: string[] = [];
  const failsCritically = (m: ScoredMetric) =>
    m.critical === true && (m.status === "fail" || m.noData === true);
  for (const metric of metrics) {
    const weight = metric.weight ?? 1;
    if (!(weight >= 0)) throw new RangeError(`metric ${metric.name}: weight must be >= 0, got ${weight}`);
    if (failsCritically(metric) && metric.status !== "fail") {
      reasons.push(`critical ${metric.message ?? `metric ${metric.name} has no data`}`);
      continue;
    }
    if (metric.status === "inconclusive") {
      if (finalReading)
        reasons.push(metric.message ?? `metric ${metric.name} is inconclusive at the end of the bake`);
      continue;
    }
    total += weight;
    if (metric.status === "pass") passed += weight;
    else {
      const detail = metric.message ?? `metric ${metric.name} failed`;
      reasons.push(metric.critical ? `critical ${detail}` : detail);
    }
  }
  const criticalFailed = metrics.some(failsCritically);
  const score = criticalFailed ? 0 : total > 0 ? roundHalfUp((100 * passed) / total, 2) : null;
  const grade =
    score === null || criticalFailed
      ? "fail"
      : score >= pass
        ? "pass"
        : score >= marginal
          ? "marginal"
          : "fail";
  const noInconclusive = metrics.every((m) => m.status !== "inconclusive");
  const green =
    score !== null &&
    !criticalFailed &&
    (finalReading ? grade === "pass" && noInconclusive : grade !== "fail");
  if (score === null) reasons.push("no metric was conclusive");
  else if (!criticalFailed) {
    const needed = finalReading ? pass : marginal;
    if (score < needed)
      reasons.unshift(`score ${formatScore(score)} < ${finalReading ? "pass" : "marginal"} ${needed}`);
  }
  return { score, green, grade, reasons: green ? [] : reasons, criticalFailed };
}
