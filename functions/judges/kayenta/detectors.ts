import { mean, percentile, variance } from "./descriptive.ts";

/**
 * Kayenta's outlier detectors: each marks which values of a series are outliers (true), in order.
 */

/** Marks outliers: true where a value is one. */
export type OutlierDetector = (values: ArrayLike<number>) => boolean[];

/**
 * Tukey's fences: values below Q1 − factor·IQR or above Q3 + factor·IQR (factor 1.5 by default).
 * With `reduceSensitivity` (what Kayenta's judge uses) the fences are widened to at least the 1st
 * and 99th percentiles, so a tight series does not lose its honest extremes.
 */
export function iqrDetector(factor = 1.5, reduceSensitivity = false): OutlierDetector {
  if (!(factor > 0)) throw new RangeError(`factor must be greater than zero, got ${factor}`);
  return (values) => {
    const q1 = percentile(values, 25);
    const q3 = percentile(values, 75);
    const iqr = q3 - q1;
    let lowerFence = q1 - factor * iqr;
    let upperFence = q3 + factor * iqr;
    if (reduceSensitivity) {
      lowerFence = Math.min(percentile(values, 1), lowerFence);
      upperFence = Math.max(percentile(values, 99), upperFence);
    }
    return Array.from(values, (x) => x > upperFence || x < lowerFence);
  };
}

/** Values more than k population standard deviations from the mean (k 3 by default). */
export function kSigmaDetector(k = 3): OutlierDetector {
  if (!(k > 0)) throw new RangeError(`k must be greater than zero, got ${k}`);
  return (values) => {
    const m = mean(values);
    const sd = Math.sqrt(variance(values, true));
    return Array.from(values, (x) => Math.abs(x - m) > sd * k);
  };
}
