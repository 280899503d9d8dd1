import { z } from "zod";
import { ProviderSchema } from "./providers.ts";

/**
 * A judge, as the normalized spec holds it: a metric whose measurement reads the candidate and
 * the stable version through the ordinary providers and decides promote / hold / rollback with a
 * statistical test (the judges library). Both input forms produce this: the Argo metric plugin
 * entry `provider: {plugin: {"sfn-rollouts/judge": {...}}}` and the native `health` block. Every
 * default is applied when the spec is loaded, so what runs is what `rollouts plan` shows.
 */

/** The tests a judge runs. */
export const JUDGE_TESTS = [
  "two-proportion",
  "one-proportion",
  "mann-whitney",
  "sequential-rate",
  "sequential-latency",
  "comparative",
  "score",
  "canary-gate",
  "kayenta",
] as const;
export type JudgeTest = (typeof JUDGE_TESTS)[number];

/** The tests whose decision is final only at a planned sample size (one look: alpha holds). */
export const FIXED_HORIZON_TESTS: readonly JudgeTest[] = ["two-proportion", "one-proportion", "mann-whitney"];
/** The tests that stay honest however often they look. */
export const SEQUENTIAL_TESTS: readonly JudgeTest[] = ["sequential-rate", "sequential-latency"];

/**
 * What a reading of one version is: `counts` ({bad, n}), latency `samples`, Prometheus-style
 * `histogram` buckets, a log-latency `summary` ({n, mean, m2} of ln latency), one `value`, or a
 * `series` of points over the step.
 */
export const JudgeDataSchema = z.enum(["counts", "samples", "histogram", "summary", "value", "series"]);
export type JudgeData = z.infer<typeof JudgeDataSchema>;

/** One value a judge reads of a version: a provider call and an expression over its result. */
export const ReadingSchema = z
  .object({
    provider: ProviderSchema,
    /** The condition language over the provider's `result`; absent: the result itself. */
    expression: z.string().min(1).optional(),
    /**
     * Read the window since the analysis started (CloudWatch's `interval` becomes the elapsed
     * time); queries of other providers say so with `{{judge.elapsed}}`.
     */
    sinceStart: z.boolean().default(false),
  })
  .strict();
export type Reading = z.infer<typeof ReadingSchema>;

/**
 * How a judge reads one version: named readings. Counts need `bad` and `n`; every other kind reads
 * `value` (a comparative gate may add `n`, the requests behind it); the canary gate reads `p95`,
 * `errorRate` and `n` of the candidate and `p95` of the stable version.
 */
export const JudgeSideSchema = z.record(z.string(), ReadingSchema);
export type JudgeSide = z.infer<typeof JudgeSideSchema>;

/** Which change of the metric is worse: `increase` (latency, errors), `decrease` (throughput), `either`. */
export const DirectionSchema = z.enum(["increase", "decrease", "either"]);
export type JudgeDirection = z.infer<typeof DirectionSchema>;

/**
 * A statistical gate's place in the rollout's error budget (`error-budget.ts`), settled once the
 * whole rollout is read: which gate it is, its share of the rollout's false-rollback budget, and
 * how many decisions that share is spread over.
 */
export const GateBudgetSchema = z
  .object({
    /** The rollout's budget: the chance of rolling back an identical release, over all its gates. */
    rollout: z.number().gt(0).lt(1),
    /** The gate's name in the budget: its metric's, `background/NAME` in the background analysis. */
    gate: z.string().min(1),
    /** The gate's share of the budget over the whole rollout. */
    share: z.number().gt(0).lt(1),
    /** Analyses the gate decides in: a fixed-horizon test spends share / decisions at each. */
    decisions: z.number().int().positive(),
    /** The metric gave its own alpha: kept as written, and counted against the budget. */
    given: z.boolean(),
    /** A sequential test's evidence from the analyses of these earlier steps (from 0) carries on. */
    carriedFrom: z.array(z.number().int().nonnegative()),
  })
  .strict();
export type GateBudget = z.infer<typeof GateBudgetSchema>;

/** Running summary of ln(latency) of one side: n, mean, and the sum of squared deviations. */
const LogSummarySchema = z
  .object({ n: z.number().int().nonnegative(), mean: z.number(), m2: z.number().nonnegative() })
  .strict();

/**
 * What earlier analyses of the same rollout left a sequential gate: filled in when its analysis
 * starts, from the last look of the gate's previous analysis (`budget.carriedFrom`). A count gate
 * carries the product of the earlier analyses' Bayes factors (each analysis is a test martingale of
 * its own, started at 1); a latency gate pools the earlier summaries with its own, one test over
 * one longer stream.
 */
export const CarriedEvidenceSchema = z
  .object({
    /** Earlier analyses that contributed. */
    analyses: z.number().int().positive(),
    /** The always-valid p-value they ended with. */
    pValue: z.number().min(0).max(1),
    /** Samples per side they read. */
    n: z
      .object({ candidate: z.number().int().nonnegative(), stable: z.number().int().nonnegative() })
      .strict(),
    /** sequential-rate: the sum of their final ln Bayes factors. */
    logBayesFactor: z.number().optional(),
    /** sequential-latency: the pooled summaries of ln(latency). */
    candidate: LogSummarySchema.optional(),
    stable: LogSummarySchema.optional(),
  })
  .strict();
export type CarriedEvidence = z.infer<typeof CarriedEvidenceSchema>;

/**
 * The regression a sequential gate must catch at once, which sets its minimum sample when the spec
 * gives none (`fastRateSamples`, `fastLatencySamples`): counts, `ratio` × the stable version's
 * `baseline` rate; latency, `ratio` times slower with ln(latency) spread `sigma`.
 */
export const FastEffectSchema = z
  .object({
    ratio: z.number().gt(1),
    baseline: z.number().gt(0).lt(1).optional(),
    sigma: z.number().positive().optional(),
  })
  .strict();
export type FastEffect = z.infer<typeof FastEffectSchema>;

/** Latency guards' unit: what the readings' values are in. */
export const LatencyUnitSchema = z.enum(["ms", "s"]);

const statistical = {
  /** Significance level of one decision (the budget's share, or the metric's own). */
  alpha: z.number().gt(0).lt(1),
  direction: DirectionSchema,
  /** The smallest worsening worth acting on, in the metric's unit (0: any significant worsening). */
  minEffect: z.number().min(0),
  /** Fewer samples than this on either side: hold, whatever the numbers say. */
  minSamples: z.number().int().min(0),
  candidate: JudgeSideSchema,
  stable: JudgeSideSchema,
  /** Absent outside a rollout (a library user's spec, a score's metric): the test runs at `alpha`. */
  budget: GateBudgetSchema.optional(),
};

/** An absolute ceiling on the candidate's bad-event rate: a service-level objective, whatever the stable version does. */
const maxBadRate = z.number().gt(0).lt(1).optional();
/** An absolute ceiling on the candidate's nearest-rank p95 latency, in milliseconds, with the unit the readings are in. */
const latencyGuard = {
  maxP95Ms: z.number().positive().optional(),
  unit: LatencyUnitSchema.optional(),
};

/** What a bad event is called in messages (`errors`), for the count tests. */
const label = z.string().min(1).max(40);

const TwoProportionSchema = z
  .object({
    test: z.literal("two-proportion"),
    ...statistical,
    data: z.literal("counts"),
    label,
    /** The planned sample size per side: the test decides at the first look that reaches it. */
    horizon: z.number().int().positive(),
    /** The spec gave `samples`: the horizon is not planned again when the gate's alpha changes. */
    samplesGiven: z.literal(true).optional(),
    power: z.number().gt(0).lt(1),
    /** The stable version's expected rate and the worsening to detect with `power`: what the horizon was computed from. */
    baseline: z.number().gt(0).lt(1).optional(),
    detect: z.number().gt(0).lt(1).optional(),
    maxBadRate,
  })
  .strict();

const OneProportionSchema = z
  .object({
    test: z.literal("one-proportion"),
    alpha: statistical.alpha,
    direction: statistical.direction,
    minEffect: statistical.minEffect,
    minSamples: statistical.minSamples,
    candidate: JudgeSideSchema,
    budget: statistical.budget,
    data: z.literal("counts"),
    label,
    /** The rate the candidate is tested against (a shadow's disagreement limit). */
    limit: z.number().gt(0).lt(1),
    method: z.enum(["normal", "exact"]),
    horizon: z.number().int().positive(),
    samplesGiven: z.literal(true).optional(),
    power: z.number().gt(0).lt(1),
    /** The rise above the limit to detect with `power`: what the horizon was computed from. */
    detect: z.number().gt(0).lt(1).optional(),
  })
  .strict();

const MannWhitneySchema = z
  .object({
    test: z.literal("mann-whitney"),
    ...statistical,
    data: z.enum(["samples", "histogram"]),
    horizon: z.number().int().positive(),
    ...latencyGuard,
  })
  .strict();

const SequentialRateSchema = z
  .object({
    test: z.literal("sequential-rate"),
    ...statistical,
    data: z.literal("counts"),
    label,
    /** The candidate's share of the traffic; absent: its share of the requests counted. */
    allocation: z.number().gt(0).lt(1).optional(),
    concentration: z.number().positive(),
    /** Promote at the first look with this many samples per side and no evidence of harm. */
    maxSamples: z.number().int().positive().optional(),
    /** Present when `minSamples` was derived from it (the spec gave no minSamples). */
    fast: FastEffectSchema.optional(),
    carried: CarriedEvidenceSchema.optional(),
    maxBadRate,
  })
  .strict();

const SequentialLatencySchema = z
  .object({
    test: z.literal("sequential-latency"),
    ...statistical,
    data: z.enum(["samples", "histogram", "summary"]),
    g: z.number().positive(),
    maxSamples: z.number().int().positive().optional(),
    fast: FastEffectSchema.optional(),
    carried: CarriedEvidenceSchema.optional(),
    ...latencyGuard,
  })
  .strict();

const ComparativeSchema = z
  .object({
    test: z.literal("comparative"),
    /** Used by the `series` analysis (two-sided Mann-Whitney); a `value` reading has no test. */
    alpha: statistical.alpha,
    direction: statistical.direction,
    /** With a candidate `n` reading: fewer requests than this is inconclusive (default 0: not checked). */
    minSamples: statistical.minSamples,
    candidate: JudgeSideSchema,
    stable: JudgeSideSchema,
    data: z.enum(["value", "series"]),
    maxRatio: z.number().positive().optional(),
    minRatio: z.number().positive().optional(),
    maxDelta: z.number().min(0).optional(),
    /** Fewer points on either side of a series: inconclusive. */
    minPoints: z.number().int().positive(),
    /** A series' NaN points: removed (absent: the default, as Kayenta) or counted as 0. */
    nanStrategy: z.enum(["remove", "replace"]).optional(),
  })
  .strict();

/** The judges a score combines, each a whole judge of its own. */
export const JudgeCheckSchema = z.discriminatedUnion("test", [
  TwoProportionSchema,
  OneProportionSchema,
  MannWhitneySchema,
  SequentialRateSchema,
  SequentialLatencySchema,
  ComparativeSchema,
]);
export type JudgeCheck = z.infer<typeof JudgeCheckSchema>;

export const ScoredCheckSchema = z
  .object({
    name: z.string().min(1),
    weight: z.number().min(0),
    /** A failed critical metric makes the gate red whatever the score. */
    critical: z.boolean(),
    check: JudgeCheckSchema,
  })
  .strict();
export type ScoredCheck = z.infer<typeof ScoredCheckSchema>;

const ScoreSchema = z
  .object({
    test: z.literal("score"),
    metrics: z.array(ScoredCheckSchema).min(1),
    /** The final reading must reach this score (0–100) with no inconclusive metric. */
    pass: z.number().min(0).max(100),
    /** Readings during the bake are green from this score up. */
    marginal: z.number().min(0).max(100),
  })
  .strict();

const CanaryGateSchema = z
  .object({
    test: z.literal("canary-gate"),
    candidate: JudgeSideSchema,
    stable: JudgeSideSchema,
    p95BudgetRatio: z.number().positive(),
    errorRateCeiling: z.number().gt(0).max(1),
    minSampleCount: z.number().int().min(0),
    /** Clean windows at 100% before the rollout completes (a consecutive-success streak there). */
    fullRolloutDwell: z.number().int().positive(),
    /** A push of the same image this soon after a rollback is refused by the trigger. */
    rollbackCooldownSeconds: z.number().int().min(0),
    maxRollbacksPerHour: z.number().int().positive(),
    /** The candidate's fingerprint: the digest of the pushed image, filled in when the analysis starts. */
    fingerprint: z.string(),
  })
  .strict();

/**
 * A metric of a `kayenta` judge: Kayenta's per-metric canary settings (its
 * `analysisConfigurations.canary`, flattened) and the series it reads of each version.
 */
const KayentaMetricSchema = z
  .object({
    name: z.string().min(1),
    /** The groups it counts in (by default, a group of its own named after it). */
    groups: z.array(z.string().min(1)).min(1),
    direction: DirectionSchema,
    nanStrategy: z.enum(["remove", "replace"]),
    outliers: z
      .object({ strategy: z.enum(["keep", "remove"]), outlierFactor: z.number().positive() })
      .strict(),
    effectSize: z
      .object({
        measure: z.enum(["meanRatio", "cles"]),
        allowedIncrease: z.number().nonnegative(),
        allowedDecrease: z.number().nonnegative(),
        criticalIncrease: z.number().nonnegative(),
        criticalDecrease: z.number().nonnegative(),
      })
      .strict(),
    critical: z.boolean(),
    mustHaveData: z.boolean(),
    /** Classified and shown, left out of the score. */
    muted: z.boolean(),
    candidate: JudgeSideSchema,
    stable: JudgeSideSchema,
  })
  .strict();
export type KayentaMetric = z.infer<typeof KayentaMetricSchema>;

/** Kayenta's judge over a whole canary config: every metric classified, the groups scored by weight. */
const KayentaSchema = z
  .object({
    test: z.literal("kayenta"),
    metrics: z.array(KayentaMetricSchema).min(1),
    /** Percentages of the score by group; groups without one share what is left of 100. */
    groupWeights: z.record(z.string(), z.number().min(0)),
    pass: z.number().min(0).max(100),
    marginal: z.number().min(0).max(100),
    /** The classifier's band around no change, as a fraction of the estimated shift. */
    tolerance: z.number().positive(),
    /** The confidence level of the shift's interval. */
    confidence: z.number().gt(0).lt(1),
  })
  .strict();

export const JudgeSpecSchema = z.discriminatedUnion("test", [
  TwoProportionSchema,
  OneProportionSchema,
  MannWhitneySchema,
  SequentialRateSchema,
  SequentialLatencySchema,
  ComparativeSchema,
  ScoreSchema,
  CanaryGateSchema,
  KayentaSchema,
]);
export type JudgeSpec = z.infer<typeof JudgeSpecSchema>;
export type JudgeSpecOf<T extends JudgeTest> = Extract<JudgeSpec, { test: T }>;

/**
 * Every provider a metric provider reads through: itself, or each reading of a judge (and of a
 * score's metrics). What the construct grants IAM for (a judge reading CloudWatch needs
 * `cloudwatch:GetMetricData` like a CloudWatch metric does).
 */
export function providersRead(
  provider: { judge?: JudgeSpec } & Record<string, unknown>,
): Array<Reading["provider"]> {
  const judge = provider.judge;
  if (!judge) return [provider as Reading["provider"]];
  const sides = (s: { candidate?: JudgeSide; stable?: JudgeSide }) =>
    [...Object.values(s.candidate ?? {}), ...Object.values(s.stable ?? {})].map((r) => r.provider);
  if (judge.test === "score") return judge.metrics.flatMap((m) => sides(m.check));
  if (judge.test === "kayenta") return judge.metrics.flatMap(sides);
  return sides(judge);
}
