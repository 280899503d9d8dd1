import type { Direction } from "../comparative.ts";
import { classifyMannWhitney, type EffectSizeMeasure, type MannWhitneyClassification } from "./classifier.ts";
import { type SeriesSummary, summarize } from "./descriptive.ts";
import { type Preprocessing, prepareSeries } from "./preprocessing.ts";
import { classifyScore, type GroupScore, type ScoreLabel, weightedSumScore } from "./scorer.ts";

/**
 * Kayenta's NetflixACAJudge: every metric of a canary config prepared (NaN points, outliers),
 * classified by the Mann-Whitney classifier, and the classifications scored by group into one
 * score from 0 to 100, classified Pass, Marginal or Fail against the config's thresholds.
 */

/** A metric of the canary config: Kayenta's `analysisConfigurations.canary` fields, flattened. */
export interface KayentaMetricConfig extends Preprocessing {
  readonly name: string;
  /** The groups the metric counts in (it may count in several, or none). */
  readonly groups?: readonly string[];
  /** Which change fails the metric; Kayenta's default is `either`. */
  readonly direction?: Direction;
  /** A High or Low beyond the critical effect size, or no data, fails the canary with a score of 0. */
  readonly critical?: boolean;
  /** No data fails the metric in its group (`NodataFailMetric`) instead of leaving it out. */
  readonly mustHaveData?: boolean;
  /** Classified and reported, left out of the score. */
  readonly muted?: boolean;
  readonly effectSize?: {
    readonly measure?: EffectSizeMeasure;
    readonly allowedIncrease?: number;
    readonly allowedDecrease?: number;
    readonly criticalIncrease?: number;
    readonly criticalDecrease?: number;
  };
}

/** A canary config: its metrics, the groups' weights and the score thresholds. */
export interface KayentaCanaryConfig {
  readonly metrics: readonly KayentaMetricConfig[];
  /** Percentages by group; the groups without one share what is left of 100. */
  readonly groupWeights?: Readonly<Record<string, number>>;
  readonly pass: number;
  readonly marginal: number;
  /** The classifier's band around zero, as a fraction of |estimate| (Kayenta's judge: 0.25). */
  readonly tolerance?: number;
  /** The confidence level of the shift's interval (Kayenta's judge: 0.98). */
  readonly confidence?: number;
}

/** The two series of a metric: the candidate's (experiment) and the stable version's (control), NaN for a point without value. */
export interface MetricSeriesPair {
  readonly experiment: ArrayLike<number>;
  readonly control: ArrayLike<number>;
}

/** A metric's result: its classification and the summaries of its prepared series. */
export interface KayentaMetricResult extends MannWhitneyClassification {
  readonly name: string;
  readonly groups: readonly string[];
  readonly muted: boolean;
  readonly experiment: SeriesSummary;
  readonly control: SeriesSummary;
}

/** The judge's result for one canary interval. */
export interface KayentaJudgement {
  /** 0–100, rounded half up to 2 decimals. */
  readonly score: number;
  readonly classification: ScoreLabel;
  /** Why a rule set the score to 0 (a critical failure, too many metrics without data); null otherwise. */
  readonly reason: string | null;
  readonly groupScores: GroupScore[];
  readonly metrics: KayentaMetricResult[];
}

/** Classifies one metric: its series prepared, then the Mann-Whitney classifier; `Error` if it cannot run. */
export function classifyMetric(
  config: KayentaMetricConfig,
  pair: MetricSeriesPair,
  settings: Pick<KayentaCanaryConfig, "tolerance" | "confidence"> = {},
): KayentaMetricResult {
  const experiment = prepareSeries(pair.experiment, config);
  const control = prepareSeries(pair.control, config);
  const base = {
    name: config.name,
    groups: config.groups ?? [],
    muted: config.muted === true,
    experiment: summarize(experiment),
    control: summarize(control),
  };
  try {
    const classification = classifyMannWhitney(
      control,
      experiment,
      {
        name: config.name,
        direction: config.direction ?? "either",
        nanStrategy: config.nanStrategy ?? "remove",
        critical: config.critical === true,
        mustHaveData: config.mustHaveData === true,
      },
      { ...config.effectSize, ...settings },
    );
    return { ...base, ...classification };
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    return {
      ...base,
      classification: "Error",
      reason: "Metric Classification Failed",
      deviation: Number.NaN,
      critical: false,
    };
  }
}

/**
 * Judges one canary interval: every metric of `config` classified from its series in `series`
 * (by metric name), then the unmuted ones scored. Throws a RangeError when a metric has no series.
 */
export function judgeCanary(
  config: KayentaCanaryConfig,
  series: Readonly<Record<string, MetricSeriesPair>>,
): KayentaJudgement {
  const settings = {
    ...(config.tolerance !== undefined ? { tolerance: config.tolerance } : {}),
    ...(config.confidence !== undefined ? { confidence: config.confidence } : {}),
  };
  const metrics = config.metrics.map((metric) => {
    const pair = Object.hasOwn(series, metric.name) ? series[metric.name] : undefined;
    if (!pair) throw new RangeError(`no series for metric ${metric.name}`);
    return classifyMetric(metric, pair, settings);
  });
  const scored = weightedSumScore(
    metrics.filter((m) => !m.muted),
    config.groupWeights,
  );
  return {
    score: scored.summaryScore,
    classification: classifyScore(scored.summaryScore, config),
    reason: scored.reason,
    groupScores: scored.groupScores,
    metrics,
  };
}
