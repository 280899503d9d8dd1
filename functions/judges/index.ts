/**
 * sfn-rollouts/judges: statistics that compare a candidate with the stable version and decide
 * promote, hold or rollback. Pure code, no AWS SDK: usable in a Lambda, a CLI or a notebook.
 *
 * @module sfn-rollouts/judges
 */

export {
  type SampleSizeInput,
  samplesOneProportion,
  samplesPerSide,
  secondsToSamples,
} from "../../statemachine/sample-size.ts";
export {
  type Admission,
  admitCanary,
  type CanaryObservation,
  type CanaryPolicy,
  type CanaryState,
  type CanaryStep,
  canaryObservationSchema,
  decideWindow,
  defaultCanaryPolicy,
  InvalidObservationError,
  observeWindow,
  parseObservation,
  type RollbackRecord,
  startCanary,
  type WindowDecision,
} from "./canary-gate.ts";
export {
  type Check,
  type CheckInput,
  type CheckResult,
  checkSchema,
  type GuardResult,
  type JudgeReport,
  judge,
  judgeInputSchema,
  runCheck,
} from "./checks.ts";
export {
  analyzeSeries,
  type ComparativeOutcome,
  type ComparativeReading,
  type ComparativeTolerance,
  compareWithStable,
  type Direction,
  formatNumber,
  formatScore,
  type MetricStatus,
  type ScoredMetric,
  type ScoreOutcome,
  type ScoreThresholds,
  type SeriesAnalysisInput,
  type SeriesAnalysisOutcome,
  scoreGate,
} from "./comparative.ts";
export {
  type FastLatencyInput,
  type FastRateInput,
  fastLatencySamples,
  fastRateSamples,
} from "./fast.ts";
export { nearestRank } from "./guards.ts";
export {
  type CumulativeBucket,
  type Histogram,
  histogramFromCumulative,
  histogramLogSummary,
  histogramQuantile,
  histogramRankBucket,
  histogramTotal,
  mannWhitneyHistograms,
} from "./histogram.ts";
export {
  classifyMannWhitney,
  classifyMeanInequality,
  classifyScore,
  type EffectSizeMeasure,
  type GroupScore,
  judgeCanary,
  type KayentaCanaryConfig,
  type KayentaJudgement,
  type KayentaMetricConfig,
  type KayentaMetricResult,
  type MannWhitneyClassification,
  type MannWhitneySettings,
  type MetricClassification,
  type MetricLabel,
  type MetricSeriesPair,
  type MetricTraits,
  mannWhitneyInterval,
  type ScoreLabel,
  type ShiftInterval,
  type WeightedScore,
  weightedSumScore,
} from "./kayenta/index.ts";
export {
  type MannWhitneyResult,
  mannWhitney,
  mannWhitneySorted,
  ratioOfMeans,
  uFromRankSum,
} from "./mann-whitney.ts";
export { normalCdf, normalQuantile, normalSf } from "./normal.ts";
export {
  binomialTestPValue,
  type OneProportionMethod,
  type OneProportionResult,
  oneProportion,
  pValueFromZ,
  type TwoProportionResult,
  twoProportion,
} from "./proportions.ts";
export {
  addLatency,
  emptyLogSummary,
  type LogSummary,
  logLatencyBayesFactor,
  mergeLogSummaries,
  type SequentialLatencyOptions,
  type SequentialLatencyResult,
  sequentialLatency,
  summarizeLatencies,
} from "./sequential-latency.ts";
export {
  logRateBayesFactor,
  type SequentialRateOptions,
  type SequentialResult,
  sequentialRate,
} from "./sequential-rate.ts";
export {
  type AaOptions,
  gaussian,
  type Monitor,
  mulberry32,
  type Prng,
  type SimulationSummary,
  simulateAaRollouts,
} from "./simulate.ts";
export { logBeta, logGamma, regularizedBeta } from "./special.ts";
export type { Alternative, Counts, TestResult } from "./types.ts";
export {
  type Decision,
  decide,
  type EffectStyle,
  type EffectUnit,
  explainCheck,
  type GuardReading,
  type Judgement,
  judgeCheck,
  type Verdict,
  type VerdictInput,
  worseEffect,
} from "./verdict.ts";
