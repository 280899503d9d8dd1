import { iqrDetector, type OutlierDetector } from "./detectors.ts";

/**
 * What Kayenta's judge does to a series before it classifies it: NaN points (a 0/0 rate in a quiet
 * interval, a gap) removed or replaced by 0, then, if asked, outliers removed.
 */

/** `remove` (Kayenta's default) drops NaN points; `replace` counts them as 0 (a count that saw nothing). */
export type NanStrategy = "remove" | "replace";

/** `keep` (Kayenta's default) or `remove` the points outside the IQR fences. */
export type OutlierStrategy = "keep" | "remove";

/** A series without its NaN points. */
export function removeNaNs(values: ArrayLike<number>): number[] {
  return Array.from(values).filter((x) => !Number.isNaN(x));
}

/** A series with its NaN points replaced by `replacement` (0 by default). */
export function replaceNaNs(values: ArrayLike<number>, replacement = 0): number[] {
  return Array.from(values, (x) => (Number.isNaN(x) ? replacement : x));
}

/** A series without the points `detector` marks as outliers, in order. */
export function removeOutliers(values: ArrayLike<number>, detector: OutlierDetector): number[] {
  const outliers = detector(values);
  return Array.from(values).filter((_, i) => !outliers[i]);
}

/**
 * A series plus independent normal noise N(mean, stdev²), from `normal`'s standard normal draws
 * (Kayenta's are `java.util.Random`'s: `javaGaussian`).
 */
export function addGaussianNoise(
  values: ArrayLike<number>,
  mean: number,
  stdev: number,
  normal: () => number,
): number[] {
  return Array.from(values, (x) => x + (normal() * stdev + mean));
}

/** How one metric's series are prepared (Kayenta's `nanStrategy` and `outliers`). */
export interface Preprocessing {
  readonly nanStrategy?: NanStrategy;
  readonly outliers?: { readonly strategy?: OutlierStrategy; readonly outlierFactor?: number };
}

/**
 * One side of a metric as Kayenta's judge prepares it: NaN points removed or replaced, then, with
 * `outliers.strategy: remove`, the points outside the IQR fences (`outlierFactor` 3 by default,
 * widened to the 1st and 99th percentiles) removed.
 */
export function prepareSeries(values: ArrayLike<number>, options: Preprocessing = {}): number[] {
  const cleaned = options.nanStrategy === "replace" ? replaceNaNs(values) : removeNaNs(values);
  if (options.outliers?.strategy !== "remove") return cleaned;
  return removeOutliers(cleaned, iqrDetector(options.outliers.outlierFactor ?? 3, true));
}
