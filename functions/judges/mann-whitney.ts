import { normalSf } from "./normal.ts";
import { type Alternative, assertFiniteSamples, type TestResult } from "./types.ts";

/** Mann-Whitney U with the effect sizes a rollout decision needs beside the p-value. */
export interface MannWhitneyResult extends TestResult {
  /** U of the candidate (scipy's `statistic`): the number of (candidate, primary) pairs the candidate wins, ties count ½. */
  readonly statistic: number;
  readonly z: number;
  /** median(candidate) − median(primary): "ranks are higher" says nothing about how much slower. */
  readonly effect: number;
  readonly medianCandidate: number;
  readonly medianPrimary: number;
  /** mean(candidate) / mean(primary), for ratio tolerances (Kayenta, the comparative gates' maxRatio). Infinity when the primary's mean is 0 and the candidate's is not. */
  readonly meanRatio: number;
  readonly meanCandidate: number;
  readonly meanPrimary: number;
}

function sortedCopy(values: ArrayLike<number>): Float64Array {
  // set() copies typed arrays natively; Float64Array.from would walk an iterator, 10× slower.
  const copy = new Float64Array(values.length);
  copy.set(values);
  copy.sort();
  return copy;
}

function assertSortedFinite(values: Float64Array, label: string): void {
  for (let i = 0; i < values.length; i++) {
    if (!Number.isFinite(values[i]!)) throw new RangeError(`${label}[${i}] is not a finite number`);
    if (i > 0 && values[i]! < values[i - 1]!) throw new RangeError(`${label} is not sorted at index ${i}`);
  }
}

function medianOfSorted(sorted: Float64Array): number {
  const n = sorted.length;
  const mid = n >> 1;
  return n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function mean(values: Float64Array): number {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i]!;
  return sum / values.length;
}

/** Ratio of two means that treats 0/0 as "no difference" rather than NaN. */
export function ratioOfMeans(candidate: number, primary: number): number {
  if (primary === 0) return candidate === 0 ? 1 : candidate > 0 ? Number.POSITIVE_INFINITY : -Infinity;
  return candidate / primary;
}

/**
 * Mann-Whitney U test of the candidate against the primary, normal approximation with average
 * ranks for ties, tie-corrected variance and continuity correction: the same U, z and p as
 * `scipy.stats.mannwhitneyu(candidate, primary, alternative, method="asymptotic")`. Latency is
 * skewed and heavy-tailed, so a rank test is the honest comparison; it sorts each side once and
 * merges, O(n log n), so 100,000 samples per side take milliseconds, not minutes.
 *
 * `z` is the statistic scipy feeds to the normal tail: for `greater` from U, for `less` from
 * n1·n2 − U, for `two-sided` from the larger of the two (so a positive z is evidence for the
 * alternative). When every value is identical the variance is zero: z = 0, p = 1 ("no
 * evidence"), where scipy returns NaN.
 */
export function mannWhitney(
  candidate: ArrayLike<number>,
  primary: ArrayLike<number>,
  alternative: Alternative = "greater",
): MannWhitneyResult {
  const n1 = candidate.length;
  const n2 = primary.length;
  if (n1 === 0 || n2 === 0) {
    throw new RangeError("the Mann-Whitney U test needs at least one value on each side");
  }
  assertFiniteSamples(candidate, "candidate");
  assertFiniteSamples(primary, "primary");
  return mannWhitneySorted(sortedCopy(candidate), sortedCopy(primary), alternative);
}

/**
 * {@link mannWhitney} on sides that are already sorted ascending (checked), for a caller that
 * keeps its window sorted as samples arrive (a controller, the benchmark's simulator): each look
 * then costs one O(n) merge instead of two sorts. Same numbers as {@link mannWhitney}.
 */
export function mannWhitneySorted(
  x: Float64Array,
  y: Float64Array,
  alternative: Alternative = "greater",
): MannWhitneyResult {
  const n1 = x.length;
  const n2 = y.length;
  if (n1 === 0 || n2 === 0) {
    throw new RangeError("the Mann-Whitney U test needs at least one value on each side");
  }
  assertSortedFinite(x, "candidate");
  assertSortedFinite(y, "primary");

  // Merge the two sorted sides; every run of equal values gets the average of its ranks.
  let i = 0;
  let j = 0;
  let seen = 0; // values ranked so far
  let rankSumX = 0;
  let tieTerm = 0;
  while (i < n1 || j < n2) {
    const xi = i < n1 ? x[i]! : Number.POSITIVE_INFINITY;
    const yj = j < n2 ? y[j]! : Number.POSITIVE_INFINITY;
    const value = Math.min(xi, yj);
    let countX = 0;
    while (i < n1 && x[i] === value) {
      i++;
      countX++;
    }
    let countY = 0;
    while (j < n2 && y[j] === value) {
      j++;
      countY++;
    }
    const t = countX + countY;
    rankSumX += countX * (seen + (t + 1) / 2);
    seen += t;
    if (t > 1) tieTerm += t * t * t - t;
  }

  return withEffects(uFromRankSum(n1, n2, rankSumX, tieTerm, alternative), {
    medianCandidate: medianOfSorted(x),
    medianPrimary: medianOfSorted(y),
    meanCandidate: mean(x),
    meanPrimary: mean(y),
  });
}

/** A Mann-Whitney result: the test's figures and the effect sizes a decision reads beside them. */
export function withEffects(
  test: { statistic: number; z: number; pValue: number },
  sides: { medianCandidate: number; medianPrimary: number; meanCandidate: number; meanPrimary: number },
): MannWhitneyResult {
  return {
    ...test,
    effect: sides.medianCandidate - sides.medianPrimary,
    ...sides,
    meanRatio: ratioOfMeans(sides.meanCandidate, sides.meanPrimary),
  };
}

/**
 * U, z and p from the candidate's rank sum (average ranks for ties) and the tie term Σ(t³ − t):
 * the part of the test shared by raw samples and by histogram buckets, where every bucket is one
 * run of tied values. Sizes may be fractional (bucket counts from Prometheus' `increase()`).
 */
export function uFromRankSum(
  n1: number,
  n2: number,
  rankSumX: number,
  tieTerm: number,
  alternative: Alternative,
): { statistic: number; z: number; pValue: number } {
  const u1 = rankSumX - (n1 * (n1 + 1)) / 2;
  const u2 = n1 * n2 - u1;
  const n = n1 + n2;
  const variance = n > 1 ? ((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1))) : 0;
  const u = alternative === "greater" ? u1 : alternative === "less" ? u2 : Math.max(u1, u2);
  let z = 0;
  let pValue = 1;
  if (variance > 0) {
    z = (u - (n1 * n2) / 2 - 0.5) / Math.sqrt(variance);
    pValue = Math.min(1, (alternative === "two-sided" ? 2 : 1) * normalSf(z));
  }
  return { statistic: u1, z, pValue };
}
