import { z } from "zod";
import { CarriedEvidenceSchema, MetricSchema } from "../../statemachine/spec.ts";

/**
 * The AnalysisRun as a plain JSON value. It is stored in DynamoDB between ticks, so it holds
 * everything the next tick needs (the metrics themselves, ISO timestamps, counters) and nothing a
 * JSON round trip would lose. Field names are Argo's (`status.metricResults[]`), so a user who
 * knows `kubectl get analysisrun -o json` can read it.
 */

/** Argo's AnalysisPhase. */
export const AnalysisPhaseSchema = z.enum([
  "Pending",
  "Running",
  "Successful",
  "Failed",
  "Error",
  "Inconclusive",
]);
export type AnalysisPhase = z.infer<typeof AnalysisPhaseSchema>;

/**
 * Phases a measurement ends in; never Pending. `Running` is either a judge's look that decided
 * nothing yet (a hold: too few samples, no evidence either way, a reading that failed), which
 * counts towards `count` and towards no limit, and the metric goes on; or a provider's measurement
 * still being taken (Kayenta's canary execution), which has a `resumeAt`, counts towards nothing
 * and is resumed at that time, as Argo's Running measurement is.
 */
export const MeasurementPhaseSchema = z.enum(["Successful", "Failed", "Error", "Inconclusive", "Running"]);
export type MeasurementPhase = z.infer<typeof MeasurementPhaseSchema>;

/** A JSON number that may not be finite: JSON (and DynamoDB) keep only finite numbers, so the rest is null. */
const figure = z.number().nullable();

/** One version's side of a judge decision. */
export const GateSideSchema = z
  .object({
    /** Samples (requests, latencies, points) the reading held; null when the reading failed. */
    n: figure,
    /** The side's value in the test's terms: a rate, a median, a mean, a p95. */
    value: figure,
  })
  .strict();

/**
 * A judge's decision at one look, with the figures it rests on: what `rollouts get` shows per gate,
 * what the lifecycle events and the abort message carry.
 */
export const GateFiguresSchema = z
  .object({
    test: z.string(),
    decision: z.enum(["promote", "hold", "rollback"]),
    /** The test's verdict: PASS, FAIL, SUSPECT, INSUFFICIENT, or a gate's pass / fail / inconclusive. */
    verdict: z.string(),
    /** The decision in words, with the numbers. */
    reason: z.string(),
    statistic: figure.default(null),
    z: figure.default(null),
    bayesFactor: figure.default(null),
    pValue: figure.default(null),
    /** Candidate minus stable, in the metric's unit (a ratio − 1 for latency); positive is not always worse. */
    effect: figure.default(null),
    direction: z.string().optional(),
    alpha: z.number().optional(),
    minEffect: z.number().optional(),
    /**
     * The gate's place in the rollout's error budget: the budget, the gate's share of it, and the
     * analyses the share is spread over (a fixed-horizon test's alpha is share / decisions).
     */
    budget: z
      .object({ rollout: z.number(), share: z.number(), decisions: z.number().int().positive() })
      .strict()
      .optional(),
    /** The planned sample size per side of a fixed-horizon test. */
    horizon: z.number().optional(),
    candidate: GateSideSchema.optional(),
    stable: GateSideSchema.optional(),
    /** A score's value (0–100) and each metric's status. */
    score: figure.optional(),
    metrics: z
      .array(z.object({ name: z.string(), status: z.string(), message: z.string() }).strict())
      .optional(),
    /** 1 for the first look. */
    look: z.number().int().positive(),
  })
  .strict();
export type GateFigures = z.infer<typeof GateFiguresSchema>;

/**
 * What a judge keeps between looks, on its metric result: the sufficient statistics of the last
 * reading (counts, or n / mean / m2 of log latency — never raw samples, so the item stays bounded
 * however long the analysis runs), the sequential tests' always-valid p-value so far, the last
 * decision's figures.
 */
export const JudgeStateSchema = z
  .object({
    looks: z.number().int().nonnegative(),
    /** The smallest always-valid p-value so far (a sequential judge): it can only go down. */
    pValue: z.number().nullable().default(null),
    /** The same for a score's sequential metrics, by metric name. */
    metricPValues: z.record(z.string(), z.number()).default({}),
    stats: z.record(z.string(), z.record(z.string(), z.number().nullable())).default({}),
    /** A sequential gate's evidence so far: what the rollout's next analysis of the gate carries on. */
    evidence: CarriedEvidenceSchema.optional(),
    last: GateFiguresSchema.optional(),
  })
  .strict();
export type JudgeState = z.infer<typeof JudgeStateSchema>;

/**
 * One reading of a judge's look as it was read: the expression's value (and a Prometheus
 * vector's labelled samples), or why it failed. JSON, as the store keeps it.
 */
export const RecordedReadingSchema = z.union([
  z
    .object({
      ok: z.literal(true),
      value: z.unknown(),
      /** A sample's value; null where it was not finite (NaN, ±Inf: JSON has no such number). */
      series: z
        .array(z.object({ labels: z.record(z.string(), z.string()), value: z.number().nullable() }))
        .optional(),
    })
    .strict(),
  z.object({ ok: z.literal(false), message: z.string() }).strict(),
]);

/**
 * What a judge read at one look, kept with its measurement so the look can be decided again
 * (`rollouts replay`): every reading by key (`candidate.bad`, `<metric>/stable.value`), or the
 * reason the judge's reader failed as a whole.
 */
export const RecordedReadingsSchema = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), values: z.record(z.string(), RecordedReadingSchema) }).strict(),
  z.object({ ok: z.literal(false), message: z.string() }).strict(),
]);
export type RecordedReadings = z.infer<typeof RecordedReadingsSchema>;

export const MeasurementSchema = z
  .object({
    phase: MeasurementPhaseSchema,
    /** Display form of the result, as Argo prints it: `[0.5]` for a vector. */
    value: z.string().optional(),
    message: z.string().optional(),
    startedAt: z.string(),
    /** When it completed; for a measurement still running, when it was last started or resumed. */
    finishedAt: z.string(),
    /**
     * Set while a provider's measurement is still running (Argo's `resumeAt`): when the next tick
     * resumes it with its `metadata`. Absent once it completes.
     */
    resumeAt: z.string().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    /** A judge's decision at this look. */
    judge: GateFiguresSchema.optional(),
    /**
     * What a judge read at this look (bounded: `bounds.ts`); absent on plain metrics, on looks
     * recorded before readings were kept, and when cut (`truncated.readings`).
     */
    readings: RecordedReadingsSchema.optional(),
    /**
     * Fields cut to keep the measurement within its bound (`bounds.ts`), each with its original
     * size in bytes: `{value: 1048576}`. The cut text ends with `… [truncated: N bytes]`.
     */
    truncated: z.record(z.string(), z.number().int().nonnegative()).optional(),
  })
  .strict();
export type Measurement = z.infer<typeof MeasurementSchema>;

export const MetricResultSchema = z
  .object({
    name: z.string(),
    phase: AnalysisPhaseSchema,
    message: z.string().optional(),
    dryRun: z.boolean(),
    /** Measurements that reached a verdict (errors excluded): what `count` is compared with. */
    count: z.number().int(),
    successful: z.number().int(),
    failed: z.number().int(),
    inconclusive: z.number().int(),
    error: z.number().int(),
    /** A judge's looks that held (Running measurements). */
    held: z.number().int().default(0),
    consecutiveError: z.number().int(),
    consecutiveSuccess: z.number().int(),
    /** The last `measurementRetention` measurements (bounded: `bounds.ts`); the counters keep counting. */
    measurements: z.array(MeasurementSchema),
    metadata: z.record(z.string(), z.string()).optional(),
    /** A judge's state between looks. */
    judge: JudgeStateSchema.optional(),
  })
  .strict();
export type MetricResult = z.infer<typeof MetricResultSchema>;

export const RunSummarySchema = z
  .object({
    count: z.number().int(),
    successful: z.number().int(),
    failed: z.number().int(),
    inconclusive: z.number().int(),
    error: z.number().int(),
  })
  .strict();
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const AnalysisRunSchema = z
  .object({
    /** Every metric of every template, in template order. */
    metrics: z.array(MetricSchema),
    phase: AnalysisPhaseSchema,
    message: z.string().optional(),
    /** Set by {@link terminate}: no new measurements, running metrics end Successful. */
    terminate: z.boolean(),
    startedAt: z.string(),
    completedAt: z.string().optional(),
    /** Only metrics that took at least one measurement have a result, as in Argo. */
    metricResults: z.array(MetricResultSchema),
    runSummary: RunSummarySchema.optional(),
    dryRunSummary: RunSummarySchema.optional(),
  })
  .strict();
export type AnalysisRun = z.infer<typeof AnalysisRunSchema>;

/** Completed phases: a run or metric in one of these never changes again. */
export function isCompleted(phase: AnalysisPhase): boolean {
  return phase === "Successful" || phase === "Failed" || phase === "Error" || phase === "Inconclusive";
}
