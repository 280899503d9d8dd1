/**
 * Descriptive statistics as Kayenta computes them with Apache Commons Math: two-pass means and
 * variances (the second pass corrects the rounding of the first), and percentiles by the R-7
 * estimate (linear interpolation between order statistics, R's and numpy's default).
 */

/** What Kayenta reports of each side of a metric (`min`, `max`, `mean`, `std`, `count`); all 0 for no data. */
export interface SeriesSummary {
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  /** Sample standard deviation (n − 1); 0 for a single value. */
  readonly std: number;
  readonly count: number;
}

/** The mean, corrected by the mean of the residuals as Commons Math's `Mean` does; NaN for no values. */
export function mean(values: ArrayLike<number>): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += values[i]!;
  const first = sum / n;
  let correction = 0;
  for (let i = 0; i < n; i++) correction += values[i]! - first;
  return first + correction / n;
}

/**
 * The variance about the mean, two-pass with Commons Math's correction term: the sample variance
 * (n − 1) by default, the population variance (n) with `population`. 0 for one value, NaN for none.
 */
export function variance(values: ArrayLike<number>, population = false): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  if (n === 1) return 0;
  const m = mean(values);
  let squares = 0;
  let deviations = 0;
  for (let i = 0; i < n; i++) {
    const d = values[i]! - m;
    squares += d * d;
    deviations += d;
  }
  return (squares - (deviations * deviations) / n) / (population ? n : n - 1);
}

/**
 * The `p`th percentile (0 < p ≤ 100) by the R-7 estimate: position 1 + (n − 1)·p/100 in the
 * sorted values, interpolated linearly. NaN for no values.
 */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  const n = values.length;
  if (n === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const quantile = p / 100;
  const position = quantile === 1 ? n : 1 + (n - 1) * quantile;
  if (position < 1) return sorted[0]!;
  if (position >= n) return sorted[n - 1]!;
  const whole = Math.floor(position);
  const fraction = position - whole;
  const lower = sorted[whole - 1]!;
  const upper = sorted[whole]!;
  return lower + fraction * (upper - lower);
}

/** Kayenta's summary of one side of a metric, as its judge reports it beside the classification. */
export function summarize(values: ArrayLike<number>): SeriesSummary {
  const count = values.length;
  if (count === 0) return { min: 0, max: 0, mean: 0, std: 0, count: 0 };
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < count; i++) {
    min = Math.min(min, values[i]!);
    max = Math.max(max, values[i]!);
  }
  return { min, max, mean: mean(values), std: Math.sqrt(variance(values)), count };
}
