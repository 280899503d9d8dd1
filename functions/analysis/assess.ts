import type { Metric } from "../../statemachine/spec.ts";
import {
  type AnalysisPhase,
  type AnalysisRun,
  isCompleted,
  type Measurement,
  type MetricResult,
  type RunSummary,
} from "./types.ts";

/**
 * Assessment, transcribed from Argo Rollouts' `analysis/analysis.go`: when a metric is done, how it
 * ends, and how the metrics decide the run. Kept apart from scheduling so table tests can drive it
 * with hand-made counters.
 */

/** True for a provider's measurement that is still running (it has a time to be resumed at). */
export function isInFlight(measurement: Pick<Measurement, "resumeAt"> | undefined): boolean {
  return measurement?.resumeAt !== undefined;
}

/** Best to worst, as Argo's `analysisStatusOrder`: the worst metric decides the run. */
export const PHASE_ORDER: readonly AnalysisPhase[] = [
  "Successful",
  "Running",
  "Pending",
  "Inconclusive",
  "Error",
  "Failed",
];

/** True when `next` is strictly worse than `current`. */
export function isWorse(current: AnalysisPhase, next: AnalysisPhase): boolean {
  return PHASE_ORDER.indexOf(next) > PHASE_ORDER.indexOf(current);
}

/**
 * Argo's `EffectiveCount`: how many measurements end the metric. No count and no interval is one
 * measurement; an interval without a count never ends by itself (background analysis).
 */
export function effectiveCount(metric: Pick<Metric, "count" | "interval">): number | undefined {
  if (metric.count === undefined || metric.count === 0) {
    return metric.interval === undefined ? 1 : undefined;
  }
  return metric.count;
}

type Counters = Pick<MetricResult, "failed" | "inconclusive" | "consecutiveError">;

/** The limits check, with Argo's messages (`failed (1) > failureLimit (0)`); later checks win. */
export function assessLimits(
  metric: Pick<Metric, "failureLimit" | "inconclusiveLimit" | "consecutiveErrorLimit">,
  result: Counters,
): { phase: AnalysisPhase; message: string } | undefined {
  let out: { phase: AnalysisPhase; message: string } | undefined;
  if (metric.failureLimit >= 0 && result.failed > metric.failureLimit) {
    out = { phase: "Failed", message: `failed (${result.failed}) > failureLimit (${metric.failureLimit})` };
  }
  if (result.inconclusive > metric.inconclusiveLimit) {
    out = {
      phase: "Inconclusive",
      message: `inconclusive (${result.inconclusive}) > inconclusiveLimit (${metric.inconclusiveLimit})`,
    };
  }
  if (result.consecutiveError > metric.consecutiveErrorLimit) {
    out = {
      phase: "Error",
      message: `consecutiveErrors (${result.consecutiveError}) > consecutiveErrorLimit (${metric.consecutiveErrorLimit})`,
    };
  }
  return out;
}

/** A metric's phase from its counters and last measurement (Argo's `assessMetricStatus`). */
export function assessMetric(metric: Metric, result: MetricResult, terminating: boolean): AnalysisPhase {
  if (isCompleted(result.phase)) return result.phase;
  if (result.measurements.length === 0) return terminating ? "Successful" : "Pending";
  // A measurement still in flight: the metric runs on, even while the run terminates (Argo).
  if (isInFlight(result.measurements.at(-1))) return "Running";
  const limits = assessLimits(metric, result);
  if (limits) return limits.phase;
  const streak = metric.consecutiveSuccessLimit;
  if (streak > 0 && result.consecutiveSuccess >= streak) return "Successful";
  const count = effectiveCount(metric);
  if (count !== undefined && result.count >= count) {
    const failureApplicable = metric.failureLimit >= 0;
    const successApplicable = streak > 0;
    // Both set: reaching count without the streak is Inconclusive while failureLimit holds.
    if (failureApplicable && successApplicable) return "Inconclusive";
    if (successApplicable) return "Failed";
    return "Successful";
  }
  return terminating ? "Successful" : "Running";
}

/** Argo's `IsTerminating`: an explicit terminate, or a decisive (non-dry-run) metric that ended badly. */
export function isTerminating(run: AnalysisRun): boolean {
  if (run.terminate) return true;
  return run.metricResults.some(
    (r) => !r.dryRun && (r.phase === "Failed" || r.phase === "Error" || r.phase === "Inconclusive"),
  );
}

function emptySummary(): RunSummary {
  return { count: 0, successful: 0, failed: 0, inconclusive: 0, error: 0 };
}

function tally(summary: RunSummary, phase: AnalysisPhase | undefined): void {
  if (phase === "Error") summary.error++;
  else if (phase === "Failed") summary.failed++;
  else if (phase === "Inconclusive") summary.inconclusive++;
  else summary.successful++;
}

/**
 * One pass of Argo's `assessRunStatus`: updates every metric's phase and message in place and
 * returns the run's phase and message. The run is Running until every metric is complete, unless
 * it is terminating, in which case the worst completed metric (or Successful) decides.
 */
function assessOnce(run: AnalysisRun): { phase: AnalysisPhase; message: string } {
  const terminating = isTerminating(run);
  let worstPhase: AnalysisPhase | undefined;
  let worstMessage = run.terminate ? "Run Terminated" : "";
  let everythingCompleted = true;
  const runSummary = emptySummary();
  const dryRunSummary = emptySummary();
  for (const metric of run.metrics) {
    if (metric.dryRun) dryRunSummary.count++;
    else runSummary.count++;
    const result = run.metricResults.find((r) => r.name === metric.name);
    if (!result) {
      everythingCompleted = false;
      continue;
    }
    const phase = assessMetric(metric, result, terminating);
    if (phase !== result.phase) {
      const last = result.measurements.at(-1);
      if (last) result.message = last.message;
      result.phase = phase;
    }
    if (!isCompleted(phase)) {
      everythingCompleted = false;
      continue;
    }
    const limits = assessLimits(metric, result);
    if (!metric.dryRun) {
      // A judge says which gate decided and on what figures, in its own sentence.
      const judged = metric.provider.judge && result.message ? result.message : undefined;
      if (worstPhase === undefined || isWorse(worstPhase, phase)) {
        worstPhase = phase;
        if (judged) worstMessage = judged;
        else if (limits) {
          worstMessage = `Metric "${metric.name}" assessed ${phase} due to ${limits.message}`;
          if (result.message) worstMessage += `: "Error Message: ${result.message}"`;
        }
      } else if (judged && phase === worstPhase && !worstMessage) {
        worstMessage = judged;
      }
      tally(runSummary, limits?.phase);
    } else {
      worstPhase ??= "Successful";
      if (limits) result.message = `Metric assessed ${phase} due to ${limits.message}`;
      tally(dryRunSummary, limits?.phase);
    }
  }
  run.runSummary = runSummary;
  run.dryRunSummary = dryRunSummary;
  worstMessage = worstMessage.trim();
  if (terminating) return { phase: worstPhase ?? "Successful", message: worstMessage };
  if (!everythingCompleted || worstPhase === undefined) return { phase: "Running", message: "" };
  return { phase: worstPhase, message: worstMessage };
}

/**
 * Assesses the run in place. Argo reaches the final state over two reconciles when one metric ends
 * badly (the next pass sees the run terminating and closes the still-running metrics as
 * Successful); a tick is one call here, so the pass repeats until nothing changes.
 */
export function assessRun(run: AnalysisRun, now: Date): void {
  if (isCompleted(run.phase)) return;
  for (let pass = 0; pass < 3; pass++) {
    const wasTerminating = isTerminating(run);
    const { phase, message } = assessOnce(run);
    if (phase !== run.phase) {
      run.phase = phase;
      run.message = message || undefined;
      if (isCompleted(phase)) run.completedAt ??= now.toISOString();
    }
    if (isCompleted(run.phase) || isTerminating(run) === wasTerminating) return;
  }
}
