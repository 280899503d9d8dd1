import { type MannWhitneyResult, uFromRankSum, withEffects } from "./mann-whitney.ts";
import type { LogSummary } from "./sequential-latency.ts";
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

/**
 * The log-latency summary ({n, mean, m2} of ln(value)) of a histogram, each value at its bucket's
 * geometric middle: what the sequential latency test reads from a Prometheus histogram. The first
 * bucket (from 0) and the +Inf bucket take the log width of their neighbour, and counts are
 * rounded (`increase()` extrapolates). Both versions' buckets are the same metric's, so under "no
 * difference" both summaries are of the same distribution, whatever the buckets' resolution.
 * Throws a RangeError for values at or below 0, which have no logarithm.
 */
export function histogramLogSummary(histogram: Histogram, label = "histogram"): LogSummary {
  const { bounds, counts } = histogram;
  const finite = bounds.filter((b) => Number.isFinite(b));
  const logs: number[] = [];
  for (let i = 0; i < bounds.length; i++) {
    const upper = bounds[i] as number;
    const lower = i === 0 ? 0 : (bounds[i - 1] as number);
    if ((counts[i] ?? 0) > 0 && !(upper > 0)) {
      throw new RangeError(`${label}: values at or below ${upper} have no logarithm: latencies are positive`);
    }
    // The log width of a neighbouring bucket, for the two open-ended ones (ln 2 with only one bound).
    const width = (j: number) => {
      const a = finite[j];
      const b = finite[j + 1];
      return a !== undefined && b !== undefined && a > 0 ? Math.log(b / a) : Math.LN2;
    };
    if (!Number.isFinite(upper)) logs.push(Math.log(lower) + width(finite.length - 2) / 2);
    else if (!(lower > 0)) logs.push(Math.log(upper) - width(0) / 2);
    else logs.push((Math.log(lower) + Math.log(upper)) / 2);
  }
  let n = 0;
  let sum = 0;
  const rounded = counts.map((c) => Math.round(c));
  for (let i = 0; i < rounded.length; i++) {
    const c = rounded[i] as number;
    if (c === 0) continue;
    n += c;
    sum += c * (logs[i] as number);
  }
  if (n === 0) return { n: 0, mean: 0, m2: 0 };
  const mean = sum / n;
  let m2 = 0;
  for (let i = 0; i < rounded.length; i++) {
    const c = rounded[i] as number;
    if (c > 0) m2 += c * ((logs[i] as number) - mean) ** 2;
  }
  return { n, mean, m2 };
}

/**
 * The nearest-rank q-quantile of a histogram as the bounds of the bucket that holds it: the value at
 * rank ceil(q·n) is above `lower` and at most `upper`. Undefined for an empty histogram.
 */
export function histogramRankBucket(
  histogram: Histogram,
  q: number,
): { lower: number; upper: number } | undefined {
  const rounded = histogram.counts.map((c) => Math.round(c));
  const total = rounded.reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * total));
  let below = 0;
  for (let i = 0; i < rounded.length; i++) {
    below += rounded[i] as number;
    if (below >= rank) {
      return {
        lower: i === 0 ? 0 : (histogram.bounds[i - 1] as number),
        upper: histogram.bounds[i] as number,
      };
    }
  }
  return undefined;
}
