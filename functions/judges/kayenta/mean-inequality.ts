import { mean } from "./descriptive.ts";
import type { MetricClassification, MetricTraits } from "./labels.ts";

/**
 * Kayenta's mean-inequality classifier, which it keeps for benchmarking the Mann-Whitney one:
 * High whenever the experiment's mean is above the control's (Low below), with no test and no
 * tolerance. Every difference fails it, so it is a floor to compare against, never a judge.
 */
export function classifyMeanInequality(
  control: ArrayLike<number>,
  experiment: ArrayLike<number>,
  traits: MetricTraits = {},
): MetricClassification {
  const critical = traits.critical === true;
  if (experiment.length === 0 || control.length === 0) {
    if (traits.nanStrategy === "replace") {
      return { classification: "Pass", reason: null, deviation: 1, critical: false };
    }
    if (traits.mustHaveData === true && !critical) {
      return { classification: "NodataFailMetric", reason: null, deviation: 1, critical: false };
    }
    return { classification: "Nodata", reason: null, deviation: 0, critical };
  }
  const e = mean(experiment);
  const c = mean(control);
  const direction = traits.direction ?? "either";
  if (direction !== "decrease" && e > c) {
    return {
      classification: "High",
      reason: "The Canary mean was greater than the Baseline mean",
      deviation: e / c,
      critical,
    };
  }
  if (direction !== "increase" && e < c) {
    return {
      classification: "Low",
      reason: "The Canary mean was less than the Baseline mean",
      deviation: e / c,
      critical,
    };
  }
  return { classification: "Pass", reason: null, deviation: 1, critical: false };
}
