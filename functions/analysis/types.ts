import { z } from "zod";
import { MetricSchema } from "../../statemachine/spec.ts";

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

/** Phases a measurement ends in: measurements complete within one tick, so never Pending/Running. */
export const MeasurementPhaseSchema = z.enum(["Successful", "Failed", "Error", "Inconclusive"]);
export type MeasurementPhase = z.infer<typeof MeasurementPhaseSchema>;

export const MeasurementSchema = z
  .object({
    phase: MeasurementPhaseSchema,
    /** Display form of the result, as Argo prints it: `[0.5]` for a vector. */
    value: z.string().optional(),
    message: z.string().optional(),
    startedAt: z.string(),
    finishedAt: z.string(),
    metadata: z.record(z.string(), z.string()).optional(),
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
    consecutiveError: z.number().int(),
    consecutiveSuccess: z.number().int(),
    /** The last `measurementRetention` measurements; the counters above keep counting. */
    measurements: z.array(MeasurementSchema),
    metadata: z.record(z.string(), z.string()).optional(),
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
