import { type MannWhitneyResult, uFromRankSum, withEffects } from "./mann-whitney.ts";
import type { Alternative } from "./types.ts";

/**
 * Histograms as Prometheus keeps them, and the rank test on their buckets. A rank test needs only
 * the order of the values, and every value in one bucket is "between the same two bounds": the
 * buckets are runs of tied values, so Mann-Whitney U with average ranks for ties and the
 * tie-corrected variance runs on bucket counts exactly as it runs on raw samples that were
 * rounded to their bucket. A Prometheus histogram is therefore enough for a latency judge.
 */

/** One Prometheus bucket: the upper bound `le` and the cumulative count of values ≤ `le`. */
export interface CumulativeBucket {
  readonly le: number;
  readonly count: number;
}

/** Bucket upper bounds (ascending, the last may be +Inf) and the count in each bucket. */
export interface Histogram {
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
}

/**
 * Per-bucket counts from cumulative buckets in any order. Counts from `increase()` are
 * extrapolated and may dip between neighbouring buckets; like Prometheus' `histogram_quantile`,
 * each cumulative count is raised to the largest one below it, so no bucket is negative.
 */
export function histogramFromCumulative(
  buckets: readonly CumulativeBucket[],
  label = "histogram",
): Histogram {
  if (buckets.length === 0) throw new RangeError(`${label} has no buckets`);
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const bounds: number[] = [];
  const counts: number[] = [];
  let previous = 0;
  for (const [i, bucket] of sorted.entries()) {
    if (Number.isNaN(bucket.le) || bucket.le === Number.NEGATIVE_INFINITY) {
      throw new RangeError(`${label}: bucket bound ${bucket.le} is not a number`);
    }
    if (i > 0 && bucket.le === sorted[i - 1]?.le)
      throw new RangeError(`${label}: bucket le=${bucket.le} appears twice`);
    if (!(Number.isFinite(bucket.count) && bucket.count >= 0)) {
      throw new RangeError(`${label}: bucket le=${bucket.le} has count ${bucket.count}`);
    }
    const cumulative = Math.max(previous, bucket.count);
    bounds.push(bucket.le);
    counts.push(cumulative - previous);
    previous = cumulative;
  }
  return { bounds, counts };
}

/** Total number of values in a histogram. */
export function histogramTotal(histogram: Histogram): number {
  let total = 0;
  for (const c of histogram.counts) total += c;
  return total;
}

/**
 * The q-quantile as Prometheus' `histogram_quantile` computes it: linear interpolation inside the
 * bucket that holds the rank, the first bucket starting at 0 (when its bound is positive), and the
 * bound of the last finite bucket when the rank falls in the +Inf bucket. NaN for an empty histogram.
 */
export function histogramQuantile(histogram: Histogram, q: number): number {
  const total = histogramTotal(histogram);
  if (!(total > 0)) return Number.NaN;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < histogram.counts.length; i++) {
    const count = histogram.counts[i] ?? 0;
    const upper = histogram.bounds[i] ?? Number.POSITIVE_INFINITY;
    if (below + count >= rank && count > 0) {
      if (upper === Number.POSITIVE_INFINITY) return histogram.bounds[i - 1] ?? Number.NaN;
      const lower = i === 0 ? Math.min(0, upper) : (histogram.bounds[i - 1] ?? 0);
      return lower + (upper - lower) * ((rank - below) / count);
    }
    below += count;
  }
  return histogram.bounds.findLast((b) => Number.isFinite(b)) ?? Number.NaN;
}

/** The mean with every value at its bucket's middle (the +Inf bucket at the last finite bound). */
function approximateMean(histogram: Histogram): number {
  let sum = 0;
  let total = 0;
  for (let i = 0; i < histogram.counts.length; i++) {
    const count = histogram.counts[i] ?? 0;
    const upper = histogram.bounds[i] ?? Number.POSITIVE_INFINITY;
    const lower = i === 0 ? Math.min(0, upper) : (histogram.bounds[i - 1] ?? 0);
    const middle = Number.isFinite(upper) ? (lower + upper) / 2 : lower;
    sum += count * middle;
    total += count;
  }
  return total > 0 ? sum / total : Number.NaN;
}

/**
 * Mann-Whitney U of the candidate's histogram against the primary's, the buckets being runs of
 * ties: the same U, z and p as `scipy.stats.mannwhitneyu(..., method="asymptotic")` on samples
 * that take each bucket's index as their value. Both histograms must have the same bounds (the
 * same metric of two versions). `effect` is the difference of the interpolated medians, in the
 * bounds' unit; the means behind `meanRatio` take each value at its bucket's middle.
 */
export function mannWhitneyHistograms(
  candidate: Histogram,
  primary: Histogram,
  alternative: Alternative = "greater",
): MannWhitneyResult {
  const { bounds } = candidate;
  if (
    bounds.length !== primary.bounds.length ||
    bounds.some((b, i) => b !== primary.bounds[i]) ||
    candidate.counts.length !== bounds.length ||
    primary.counts.length !== bounds.length
  ) {
    throw new RangeError(
      `the two histograms have different buckets (candidate le=${bounds.join(",")}, primary le=${primary.bounds.join(",")})`,
    );
  }
  const n1 = histogramTotal(candidate);
  const n2 = histogramTotal(primary);
  if (!(n1 > 0 && n2 > 0)) {
    throw new RangeError("the Mann-Whitney U test needs at least one value on each side");
  }
  let seen = 0;
  let rankSumX = 0;
  let tieTerm = 0;
  for (let i = 0; i < bounds.length; i++) {
    const countX = candidate.counts[i] ?? 0;
    const t = countX + (primary.counts[i] ?? 0);
    if (t === 0) continue;
    rankSumX += countX * (seen + (t + 1) / 2);
    seen += t;
    if (t > 1) tieTerm += t * t * t - t;
  }
  return withEffects(uFromRankSum(n1, n2, rankSumX, tieTerm, alternative), {
    medianCandidate: histogramQuantile(candidate, 0.5),
    medianPrimary: histogramQuantile(primary, 0.5),
    meanCandidate: approximateMean(candidate),
    meanPrimary: approximateMean(primary),
  });
}
