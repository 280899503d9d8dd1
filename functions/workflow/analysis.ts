import { z } from "zod";
import type { AnalysisSpec } from "../../statemachine/spec.ts";
import { requestAbort } from "../abort/request-abort.ts";
import { createRun, measurementsTaken, nextTickAt, terminate, tick } from "../analysis/run.ts";
import { type AnalysisRun, AnalysisRunSchema, isCompleted } from "../analysis/types.ts";
import { METRICS } from "../config.ts";
import { ConcurrentUpdateError } from "../store/errors.ts";
import type { StoredRun } from "../store/port.ts";
import type { WorkflowDeps } from "./deps.ts";
import { executionName, publish, recordStep, withEvent } from "./item.ts";
import type { StartAnalysisPayload, WorkflowContext } from "./payloads.ts";
import { WorkflowContextSchema } from "./payloads.ts";

/** Measurements are kept a week after they are taken (DynamoDB TTL). */
export const MEASUREMENT_TTL_SECONDS = 7 * 24 * 3600;

/**
 * An analysis run as stored: the engine's run value plus what the workflow needs to finish it —
 * the task token to answer (none for background analysis), the execution it belongs to, and the
 * number of the next tick (timer keys must be unique per firing).
 */
export const StoredAnalysisSchema = z.object({
  run: AnalysisRunSchema,
  context: WorkflowContextSchema,
  stepIndex: z.number().int().nonnegative(),
  background: z.boolean(),
  token: z.string().nullable(),
  tick: z.number().int().nonnegative(),
  /** Template names, for display. */
  templates: z.array(z.string()),
  /** The terminal phase was delivered (token answered or abort requested); until then a retry delivers it. */
  answered: z.boolean().default(false),
});
export type StoredAnalysis = z.infer<typeof StoredAnalysisSchema>;

/** One run per analysis step of an execution, and one background run per execution. */
export function runIdFor(context: WorkflowContext, stepIndex: number, background: boolean): string {
  return `${executionName(context.executionArn)}.${background ? "background" : `step${String(stepIndex).padStart(2, "0")}`}`;
}

/**
 * A tick's Timer key names the time it is due, not a counter: a duplicated firing (Scheduler and
 * the ticker deliver at least once) computes the same next due time, so it schedules the same key
 * (a no-op) instead of starting a second chain of ticks that would then run forever in parallel.
 */
const tickKey = (rollout: string, runId: string, dueMs: number) => `${rollout}/${runId}/tick-${dueMs}`;

/**
 * `start-analysis`: creates the run, stores the token it must answer and schedules its first tick.
 * Idempotent: a retried invocation finds its run and does not create or schedule it twice.
 */
export async function startAnalysis(
  deps: WorkflowDeps,
  payload: StartAnalysisPayload,
): Promise<{ runId: string }> {
  const { context, stepIndex } = payload;
  const background = "background" in payload;
  let analysis: AnalysisSpec;
  if ("background" in payload) analysis = payload.analysis;
  else if (payload.step.kind === "analysis") analysis = payload.step.analysis;
  else throw new RangeError(`step ${stepIndex + 1}: a ${payload.step.kind} step is not an analysis`);
  const token = "taskToken" in payload ? payload.taskToken : null;
  const runId = runIdFor(context, stepIndex, background);
  const now = deps.clock.now();
  const templates = analysis.templates.map((t) => t.name);
  const stored: StoredAnalysis = {
    run: createRun(analysis, new Date(now)),
    context,
    stepIndex,
    background,
    token,
    tick: 0,
    templates,
    answered: false,
  };
  let created = true;
  try {
    await deps.store.saveRun(context.rollout, runId, stored, null);
  } catch (error) {
    if (!(error instanceof ConcurrentUpdateError)) throw error;
    created = false;
  }
  const label = background ? "background analysis" : `analysis (step ${stepIndex + 1})`;
  await recordStep(deps, context, (latest, at) =>
    withEvent(
      {
        ...latest,
        ...(token
          ? {
              currentTaskToken: token,
              waitingFor: "analysis" as const,
              waitingSince: at,
              // The step being run: only set-weight advanced it, so it lagged behind analysis steps.
              stepIndex,
              phase: "Progressing" as const,
            }
          : {}),
      },
      at,
      "AnalysisRunStarted",
      `${label} ${runId} started: ${templates.join(", ")}`,
      stepIndex,
    ),
  );
  if (!created) return { runId };
  const current = await deps.store.getRun(context.rollout, runId, StoredAnalysisSchema);
  if (current) await advance(deps, current, runId);
  return { runId };
}

/** `analysis-tick`: the Timer fired for a run; take the due measurements and decide. */
export async function analysisTick(
  deps: WorkflowDeps,
  rollout: string,
  runId: string,
): Promise<AnalysisRun | undefined> {
  const current = await deps.store.getRun(rollout, runId, StoredAnalysisSchema);
  if (!current) return undefined;
  if (isCompleted(current.run.run.phase)) {
    // A firing after the run ended: deliver the result if an earlier attempt could not.
    if (!current.run.answered) await finish(deps, current.run, runId, current.version);
    return current.run.run;
  }
  return (await advance(deps, current, runId))?.run;
}

/**
 * Takes the measurements that are due, stores the run, then either answers the token (a
 * terminal phase) or schedules the next tick. The run's version makes a duplicated timer firing
 * harmless: the loser's conditional write fails and it stops.
 */
async function advance(
  deps: WorkflowDeps,
  current: StoredRun<StoredAnalysis>,
  runId: string,
): Promise<StoredAnalysis | undefined> {
  const stored = current.run;
  const { context } = stored;
  const item = await deps.store.get(context.rollout);
  const now = new Date(deps.clock.now());
  // The execution moved on (aborted, superseded, promoted): close the run, take nothing more.
  const orphaned = !item || item.executionArn !== context.executionArn || item.abortRequested;
  const before = stored.run;
  const after = orphaned ? terminate(before, now) : await tick(before, now, deps.providers);
  const next: StoredAnalysis = { ...stored, run: after, tick: stored.tick + 1 };
  let saved: StoredRun;
  try {
    saved = await deps.store.saveRun(context.rollout, runId, next, current.version);
  } catch (error) {
    if (error instanceof ConcurrentUpdateError) return undefined;
    throw error;
  }
  for (const { metric, measurement } of measurementsTaken(before, after)) {
    const n = after.metricResults.find((r) => r.name === metric);
    const seq = n ? n.successful + n.failed + n.inconclusive + n.error : 0;
    await deps.store.putMeasurement({
      rollout: context.rollout,
      runId,
      measurementId: `${metric}#${String(seq).padStart(6, "0")}`,
      value: { metric, ...measurement },
      at: Date.parse(measurement.finishedAt),
      ttlSeconds: MEASUREMENT_TTL_SECONDS,
    });
    deps.metrics.put({
      name: METRICS.measurements,
      value: 1,
      rollout: context.rollout,
      dimensions: { Phase: measurement.phase },
    });
  }
  if (isCompleted(after.phase)) {
    deps.metrics.put({
      name: METRICS.analysisRuns,
      value: 1,
      rollout: context.rollout,
      dimensions: { Phase: after.phase },
    });
    if (orphaned) return next;
    await finish(deps, next, runId, saved.version);
    return next;
  }
  const at = nextTickAt(after);
  if (at) {
    await deps.timer.schedule({
      at: Math.max(at.getTime(), now.getTime()),
      key: tickKey(context.rollout, runId, at.getTime()),
      payload: { kind: "tick", rollout: context.rollout, runId },
    });
  }
  return next;
}

/**
 * Delivers a terminal phase: answers the analysis step's token, or, for a failed background
 * analysis, aborts the rollout through the abort channel; then marks the run answered.
 */
async function finish(
  deps: WorkflowDeps,
  stored: StoredAnalysis,
  runId: string,
  version: number,
): Promise<void> {
  const { run, context, stepIndex } = stored;
  const message = run.message ?? "";
  const failed = run.phase === "Failed" || run.phase === "Error";
  const label = stored.background ? "background analysis" : `analysis (step ${stepIndex + 1})`;
  const item = await deps.store.get(context.rollout);
  if (item && item.executionArn === context.executionArn) {
    await recordStep(deps, context, (latest, at) => ({
      ...withEvent(
        latest,
        at,
        failed ? "AnalysisRunFailed" : `AnalysisRun${run.phase}`,
        `${label} ${runId} ${run.phase}${message ? `: ${message}` : ""}`,
        stepIndex,
      ),
      ...(stored.token && latest.currentTaskToken === stored.token
        ? { currentTaskToken: null, waitingFor: null, waitingSince: null }
        : {}),
    })).catch((error: unknown) => {
      // An abort already requested still lets the token be answered (the wait then fails over to Abort).
      if ((error as Error).name !== "RolloutAborted") throw error;
    });
    if (failed)
      await publish(deps, context, "AnalysisRunFailed", `${label} ${run.phase}: ${message}`, stepIndex);
  }
  if (stored.token) {
    await deps.tokens.sendSuccess(stored.token, { phase: run.phase, message, runId });
  } else if (failed) {
    await requestAbort({
      store: deps.store,
      sfn: deps.tokens,
      name: context.rollout,
      reason: message,
      clock: deps.clock,
      executionArn: context.executionArn,
    });
  }
  try {
    await deps.store.saveRun(context.rollout, runId, { ...stored, answered: true }, version);
  } catch (error) {
    if (!(error instanceof ConcurrentUpdateError)) throw error;
  }
}

/** Ends an execution's background run (at promotion or abort); a no-op when there is none. */
export async function terminateBackground(deps: WorkflowDeps, context: WorkflowContext): Promise<void> {
  const runId = runIdFor(context, 0, true);
  const current = await deps.store.getRun(context.rollout, runId, StoredAnalysisSchema);
  if (!current || isCompleted(current.run.run.phase)) return;
  const run = terminate(current.run.run, new Date(deps.clock.now()));
  try {
    await deps.store.saveRun(context.rollout, runId, { ...current.run, run }, current.version);
  } catch (error) {
    if (!(error instanceof ConcurrentUpdateError)) throw error;
  }
}
