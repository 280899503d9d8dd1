/**
 * Kayenta's judge (NetflixACAJudge), reimplemented: the Mann-Whitney classifier with its
 * confidence interval, the preprocessing of series, the detectors and effect sizes, and the
 * weighted-sum scorer, every part of it in one place. `sfn-rollouts/judges` exports the judge, the
 * classifiers, the interval and the scorer.
 *
 * @module
 */

export { brentRoot } from "./brent.ts";
export {
  classifyMannWhitney,
  type EffectSizeMeasure,
  type MannWhitneyClassification,
  type MannWhitneySettings,
} from "./classifier.ts";
export { mean, percentile, summarize, variance } from "./descriptive.ts";
export { iqrDetector, kSigmaDetector } from "./detectors.ts";
export { cles, cohenD, meanRatio } from "./effect-sizes.ts";
export { javaGaussian } from "./java-random.ts";
export {
  classifyMetric,
  judgeCanary,
  type KayentaCanaryConfig,
  type KayentaJudgement,
  type KayentaMetricConfig,
  type KayentaMetricResult,
  type MetricSeriesPair,
} from "./judge.ts";
export type { MetricClassification, MetricLabel, MetricTraits } from "./labels.ts";
export { mannWhitneyInterval, type ShiftInterval, wilcoxonDiff } from "./mann-whitney.ts";
export { classifyMeanInequality } from "./mean-inequality.ts";
export { commonsNormalQuantile } from "./normal-quantile.ts";
export { addGaussianNoise, removeNaNs, removeOutliers, replaceNaNs } from "./preprocessing.ts";
export {
  classifyScore,
  type GroupScore,
  roundHalfUp,
  type ScoredClassification,
  type ScoreLabel,
  type WeightedScore,
  weightedSumScore,
} from "./scorer.ts";
