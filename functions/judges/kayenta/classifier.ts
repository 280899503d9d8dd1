import { cles, meanRatio } from "./effect-sizes.ts";
import { javaGaussian } from "./java-random.ts";
import { classifyMissingData, type MetricClassification, type MetricTraits } from "./labels.ts";
import { mannWhitneyInterval, type ShiftInterval } from "./mann-whitney.ts";
import { addGaussianNoise } from "./preprocessing.ts";

/**
 * Kayenta's Mann-Whitney classifier (the metric classifier of its NetflixACAJudge). A metric is
 * High when the whole confidence interval of the candidate's shift lies above a tolerance band
 * around zero — `tolerance` × |estimate| wide on each side — *and* its effect size reaches the
 * allowed increase; Low is the mirror image. There is no p-value: a difference is real when its
 * interval clears the band, large enough when its effect size says so.
 */

/** How the effect size is measured: the ratio of the means, or the common language effect size. */
export type EffectSizeMeasure = "meanRatio" | "cles";

/** The classifier's settings, with the defaults of Kayenta's judge. */
export interface MannWhitneySettings {
  /** Half-width of the band around zero, as a fraction of |estimate| (0.25). */
  readonly tolerance?: number;
  /** Confidence level of the shift's interval (0.98 in Kayenta's judge). */
  readonly confidence?: number;
  /** `meanRatio` (default) or `cles`. */
  readonly measure?: EffectSizeMeasure;
  /** Effect size a High must reach (meanRatio 1, cles 0.5). */
  readonly allowedIncrease?: number;
  /** Effect size a Low must reach down to (meanRatio 1, cles 0.5). */
  readonly allowedDecrease?: number;
  /** Effect size at which a High of a critical metric fails the canary (meanRatio 1, cles 0.5). */
  readonly criticalIncrease?: number;
  /** Effect size at which a Low of a critical metric fails the canary (meanRatio 1, cles 0.5). */
  readonly criticalDecrease?: number;
  /**
   * Standard normal draws for the noise Kayenta adds to two constant series (N(0, (1e-5 × value)²),
   * so the ranks are not all tied). By default `java.util.Random`'s, with a fixed seed, so the same
   * series always classify alike (Kayenta's generator is unseeded).
   */
  readonly noise?: () => number;
}

/** A Mann-Whitney classification, with the figures it rests on when the test ran. */
export interface MannWhitneyClassification extends MetricClassification {
  /** The shift's interval and estimate (experiment − control); absent when the test did not run. */
  readonly interval?: ShiftInterval;
  /** The effect size in the configured measure; absent when the test did not run. */
  readonly effectSize?: number;
}

/** The default noise seed: any fixed value, so that the same series always classify alike. */
const NOISE_SEED = 20180101;

/** The default of every effect threshold: no change, in the measure's own terms. */
export function neutralEffect(measure: EffectSizeMeasure): number {
  return measure === "cles" ? 0.5 : 1;
}

/**
 * Classifies a metric as Kayenta's judge does, from the control's (stable) and the experiment's
 * (candidate) prepared series. In order: a side without data ({@link classifyMissingData}); the
 * same values on both sides (Pass); a single value overall (Pass); then the Mann-Whitney interval
 * against the tolerance band and the effect size; and for a critical metric, whether the effect
 * reaches the critical threshold. Throws a RangeError on a NaN or infinite value (the judge
 * classifies that metric as `Error`).
 */
export function classifyMannWhitney(
  control: ArrayLike<number>,
  experiment: ArrayLike<number>,
  traits: MetricTraits = {},
  settings: MannWhitneySettings = {},
): MannWhitneyClassification {
  const missing = classifyMissingData(control, experiment, traits);
  if (missing) return missing;
  const name = traits.name ?? "the metric";
  const pass = (reason: string | null): MannWhitneyClassification => ({
    classification: "Pass",
    reason,
    deviation: 1,
    critical: false,
  });
  if (sameValues(control, experiment)) return pass("The Canary and Baseline data are identical");
  if (new Set([...Array.from(control), ...Array.from(experiment)]).size === 1) return pass(null);

  const measure = settings.measure ?? "meanRatio";
  const neutral = neutralEffect(measure);
  const allowedIncrease = settings.allowedIncrease ?? neutral;
  const allowedDecrease = settings.allowedDecrease ?? neutral;
  const tolerance = settings.tolerance ?? 0.25;

  // Two constant series would tie every rank: Kayenta adds a little noise to both.
  const constant = distinctCount(experiment) === 1 && distinctCount(control) === 1;
  const noise = settings.noise ?? javaGaussian(NOISE_SEED);
  const x = constant ? addGaussianNoise(experiment, 0, experiment[0]! * 1e-5, noise) : experiment;
  const y = constant ? addGaussianNoise(control, 0, control[0]! * 1e-5, noise) : control;

  const interval = mannWhitneyInterval(x, y, settings.confidence ?? 0.98);
  const band = tolerance * Math.abs(interval.estimate);
  const deviation = meanRatio(y, x);
  const effectSize = measure === "cles" ? cles(y, x) : deviation;
  // An effect size that cannot be computed (a mean of 0) does not hold a classification back.
  const reaches = (threshold: number, above: boolean) =>
    Number.isNaN(effectSize) || (above ? effectSize >= threshold : effectSize <= threshold);
  const direction = traits.direction ?? "either";
  const high = direction !== "decrease" && interval.lower > band && reaches(allowedIncrease, true);
  const low = !high && direction !== "increase" && interval.upper < -band && reaches(allowedDecrease, false);
  const figures = { interval, effectSize, deviation };
  if (!high && !low) return { classification: "Pass", reason: null, critical: false, ...figures };

  const label = high ? "High" : "Low";
  const critical =
    traits.critical === true &&
    (high
      ? reaches(settings.criticalIncrease ?? neutral, true)
      : reaches(settings.criticalDecrease ?? neutral, false));
  return {
    classification: label,
    reason: critical
      ? `The metric ${name} was classified as ${label} (Critical)`
      : `${name} was classified as ${label}`,
    critical,
    ...figures,
  };
}

function sameValues(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  const sa = Float64Array.from(a).sort();
  const sb = Float64Array.from(b).sort();
  return sa.every((v, i) => v === sb[i]);
}

function distinctCount(values: ArrayLike<number>): number {
  return new Set(Array.from(values)).size;
}
