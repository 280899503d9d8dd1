import { z } from "zod";
import type { AnalysisSpec } from "../../statemachine/spec.ts";
import { PauseRequestedError } from "../abort/errors.ts";
import { requestAbort } from "../abort/request-abort.ts";
import { requestHold } from "../abort/request-hold.ts";
import { gatesOf } from "../analysis/judge.ts";
import {
  createRun,
  measurementsRecorded,
  measurementsTaken,
  nextTickAt,
  terminate,
  tick,
} from "../analysis/run.ts";
import { type AnalysisRun, AnalysisRunSchema, isCompleted } from "../analysis/types.ts";
import { METRICS } from "../config.ts";
import { ConcurrentUpdateError } from "../store/errors.ts";
import type { StoredRun } from "../store/port.ts";
import { isRunning } from "../store/schema.ts";
import type { WorkflowDeps } from "./deps.ts";
import { tokenId } from "./effects.ts";
import { drivingItem, executionName, publish, recordStep, withEventOnce } from "./item.ts";
import type { StartAnalysisPayload, WorkflowContext } from "./payloads.ts";
import { WorkflowContextSchema } from "./payloads.ts";
import { resolveRuntimeArgs, versionLabel } from "./runtime-args.ts";

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
 * Idempotent: a retried invocation finds its run, makes it answer the token it was given, and
 * schedules its next tick again (the same key: a no-op when the first attempt got that far).
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
  // Refuse before creating anything: an aborted or superseded execution must not leave a run
  // behind that stays Pending forever.
  const driving = await drivingItem(deps, context);
  analysis = resolveRuntimeArgs(analysis, {
    latest: versionLabel(context),
    stable: versionLabel(driving.stableRevision),
    digest: context.digest,
  });
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
  // The start is recorded once per run and token: a retry after the write adds no second event.
  const withStart = withEventOnce(context, `analysis-${runId}-${tokenId(token)}`);
  try {
    await recordStep(
      deps,
      context,
      (latest, at) =>
        withStart(
          {
            ...latest,
            ...(token
              ? {
                  currentTaskToken: token,
                  waitingFor: "analysis" as const,
                  waitingSince: at,
                  phase: "Progressing" as const,
                  // The step being run: only set-weight advanced it, so it lagged behind analysis steps.
                  stepIndex,
                }
              : {}),
          },
          at,
          "AnalysisRunStarted",
          `${label} ${runId} started: ${templates.join(", ")}`,
          stepIndex,
        ),
      { hold: "refuse" },
    );
  } catch (error) {
    // An abort landed between the check and the write: close the run it will never wait for.
    // (A hold keeps it: the step runs again after a person's promote and resumes this run.)
    if (created && !(error instanceof PauseRequestedError)) await terminateRun(deps, context.rollout, runId);
    throw error;
  }
  const current = await deps.store.getRun(context.rollout, runId, StoredAnalysisSchema);
  if (!current) return { runId };
  if (created) {
    await advance(deps, current, runId);
    return { runId };
  }
  // A retried invocation: the first one may have died before scheduling the first tick (or
  // before answering), and Step Functions may have handed this attempt a new token.
  const adopted = await adoptToken(deps, current, runId, token);
  if (isCompleted(adopted.run.run.phase)) {
    if (!adopted.run.answered) await finish(deps, adopted.run, runId, adopted.version);
  } else {
    await scheduleNext(deps, adopted.run, runId, new Date(deps.clock.now()));
  }
  return { runId };
}

/** Makes the stored run answer `token`, the one the execution waits on now. */
async function adoptToken(
  deps: WorkflowDeps,
  current: StoredRun<StoredAnalysis>,
  runId: string,
  token: string | null,
): Promise<StoredRun<StoredAnalysis>> {
  let latest = current;
  for (let attempt = 0; attempt < 5; attempt++) {
    if (token === null || latest.run.token === token) return latest;
    // The execution waits on this token now (a retried invocation, or the step running again
    // after a hold): an answer given to the old one must be given again.
    const adopted = { ...latest.run, token, answered: false };
    try {
      const saved = await deps.store.saveRun(latest.rollout, runId, adopted, latest.version);
      return { ...latest, run: adopted, version: saved.version };
    } catch (error) {
      if (!(error instanceof ConcurrentUpdateError)) throw error;
      const reread = await deps.store.getRun(latest.rollout, runId, StoredAnalysisSchema);
      if (!reread) return latest;
      latest = reread;
    }
  }
  return latest;
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
  // An abort that already ran leaves abortRequested false and the same execution, but the rollout
  // is Degraded then: without the phase check the run kept measuring and answering after it.
  const orphaned =
    !item || item.executionArn !== context.executionArn || item.abortRequested || !isRunning(item);
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
    const seq = n ? measurementsRecorded(n) : 0;
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
  await scheduleNext(deps, next, runId, now);
  return next;
}

/** Schedules the run's next due tick; the key is the due time, so scheduling it again is a no-op. */
async function scheduleNext(
  deps: WorkflowDeps,
  stored: StoredAnalysis,
  runId: string,
  now: Date,
): Promise<void> {
  const at = nextTickAt(stored.run);
  if (!at) return;
  await deps.timer.schedule({
    at: Math.max(at.getTime(), now.getTime()),
    key: tickKey(stored.context.rollout, runId, at.getTime()),
    payload: {
      kind: "tick",
      rollout: stored.context.rollout,
      executionArn: stored.context.executionArn,
      revision: stored.context.revision,
      runId,
    },
  });
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
  // The phase is recorded once per run and token: a retried delivery adds no second event.
  const withAnswer = withEventOnce(context, `answer-${runId}-${tokenId(stored.token)}`);
  if (item && item.executionArn === context.executionArn) {
    await recordStep(deps, context, (latest, at) => ({
      ...withAnswer(
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
    if (failed) {
      const gates = gatesOf(run);
      await publish(
        deps,
        context,
        "AnalysisRunFailed",
        `${label} ${run.phase}: ${message}`,
        stepIndex,
        gates,
      );
    }
  }
  if (stored.token) {
    await deps.tokens.sendSuccess(stored.token, { phase: run.phase, message, runId });
  } else if (run.phase === "Inconclusive") {
    // As Argo Rollouts does: an Inconclusive background analysis pauses the rollout for a person.
    await requestHold({
      store: deps.store,
      sfn: deps.tokens,
      name: context.rollout,
      executionArn: context.executionArn,
      message: `background analysis ${runId} Inconclusive${message ? `: ${message}` : ""}`,
      clock: deps.clock,
    });
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
export function terminateBackground(deps: WorkflowDeps, context: WorkflowContext): Promise<void> {
  return terminateRun(deps, context.rollout, runIdFor(context, 0, true));
}

/** Ends a run that nothing will wait for; a no-op when it is absent or already completed. */
async function terminateRun(deps: WorkflowDeps, rollout: string, runId: string): Promise<void> {
  const current = await deps.store.getRun(rollout, runId, StoredAnalysisSchema);
  if (!current || isCompleted(current.run.run.phase)) return;
  const run = terminate(current.run.run, new Date(deps.clock.now()));
  try {
    await deps.store.saveRun(rollout, runId, { ...current.run, run }, current.version);
  } catch (error) {
    if (!(error instanceof ConcurrentUpdateError)) throw error;
  }
}
