import { z } from "zod";
import { type AnalysisSpec, AnalysisSpecSchema } from "../../statemachine/spec.ts";
import { ExecutionSupersededError, RolloutAbortedError } from "../abort/errors.ts";
import { requestAbort } from "../abort/request-abort.ts";
import { requestHold } from "../abort/request-hold.ts";
import { MAX_MESSAGE_BYTES, measurementItem, shrinkToFit, truncateText } from "../analysis/bounds.ts";
import { withCarriedEvidence } from "../analysis/carry.ts";
import { gatesOf } from "../analysis/judge-look.ts";
import {
  createRun,
  endRunning,
  endsWithRunning,
  measurementsRecorded,
  measurementsTaken,
  nextTickAt,
  recordStoreFailure,
  type TickContext,
  terminateRunning,
  tickTaking,
  unstorableRun,
} from "../analysis/run.ts";
import { type AnalysisRun, AnalysisRunSchema, isCompleted } from "../analysis/types.ts";
import { expireStale, staleness, WATCHDOG_GRACE_SECONDS } from "../analysis/watchdog.ts";
import { METRICS } from "../config.ts";
import { ConcurrentUpdateError, isPermanentWriteError } from "../store/errors.ts";
import type { StoredRun } from "../store/port.ts";
import { isRunning, type Revision } from "../store/schema.ts";
import { MAX_ITEM_BYTES, runItemBytes } from "../store/size.ts";
import type { TargetState, TrafficTarget } from "../traffic/port.ts";
import type { WorkflowDeps } from "./deps.ts";
import { tokenId } from "./effects.ts";
import { drivingItem, executionName, publish, recordStep, withEventOnce } from "./item.ts";
import { judgePoints } from "./metrics.ts";
import type { StartAnalysisPayload, WorkflowContext } from "./payloads.ts";
import { WorkflowContextSchema } from "./payloads.ts";
import { InvalidVersionValueError, resolveRuntimeArgs, versionLabel } from "./runtime-args.ts";

/** Measurements are kept a week after they are taken (DynamoDB TTL). */
export const MEASUREMENT_TTL_SECONDS = 7 * 24 * 3600;

/**
 * Runs are kept 30 days after their last write, or after their next due measurement when that is
 * later (DynamoDB TTL): a run that is still measuring is written at every measurement, so it
 * never expires while it runs, and a finished one outlives the measurements it summarizes.
 */
export const RUN_TTL_SECONDS = 30 * 24 * 3600;

/**
 * Bytes kept free under DynamoDB's 400 KB when fitting a run into its item: the size is computed
 * as DynamoDB computes it, with every number at its largest, and this covers any difference.
 */
const ITEM_MARGIN_BYTES = 1024;

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
  /** The rollout's target settings, for an analysis with Jobs (created in the target's cluster). */
  target: z.unknown().optional(),
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
  const spec = analysisOf(payload);
  const token = "taskToken" in payload ? payload.taskToken : null;
  const runId = runIdFor(context, stepIndex, background);
  // The next step's analysis does not start while the background analysis has silently stopped.
  if (!background) await watchBackground(deps, context);
  // Refuse before creating anything: an aborted or superseded execution must not leave a run
  // behind that stays Pending forever.
  const driving = await drivingItem(deps, context);
  const analysis = withExperimentValues(
    await analysisToRun(deps, context, spec, driving.stableRevision, background),
    () => deps.targetFor(payload.target),
    driving.targetState as TargetState,
    stepIndex,
  );
  const now = deps.clock.now();
  const stored: StoredAnalysis = {
    run: createRun(analysis, new Date(now)),
    context,
    stepIndex,
    background,
    token,
    tick: 0,
    templates: analysis.templates.map((t) => t.name),
    ...(payload.target === undefined ? {} : { target: payload.target }),
    answered: false,
  };
  const created = await createStored(deps, runId, stored, now);
  await recordStart(deps, stored, runId, created);
  // Argo's on-analysis-run-running; published once per execution and run.
  await publish(
    deps,
    context,
    "AnalysisRunRunning",
    `${stored.background ? "background analysis" : "analysis"} ${runId} running: ${stored.templates.join(", ")}`,
    stored.stepIndex,
  );
  const current = await deps.store.getRun(context.rollout, runId, StoredAnalysisSchema);
  if (!current) return { runId };
  if (created) {
    await advance(deps, current, runId);
    return { runId };
  }
  await resumeRetried(deps, current, runId, token);
  return { runId };
}

/**
 * An experiment's analysis with Argo's `{{templates.<name>.podTemplateHash}}` filled in from the
 * ReplicaSets the target made (a hash is letters and digits, nothing else goes into a query);
 * one the target does not know is an error naming it.
 */
function withExperimentValues(
  analysis: AnalysisSpec,
  target: () => TrafficTarget,
  state: TargetState,
  stepIndex: number,
): AnalysisSpec {
  const text = JSON.stringify(analysis);
  if (!TEMPLATE_HASH_TEXT.test(text)) return analysis;
  const values = target().experimentValues?.(state) ?? {};
  const filled = text.replace(new RegExp(TEMPLATE_HASH_TEXT.source, "g"), (whole, name: string) => {
    const value = values[`templates.${name}.podTemplateHash`];
    if (value === undefined || !/^[a-z0-9]+$/.test(value)) {
      throw new InvalidVersionValueError(
        `step ${stepIndex + 1}: ${whole} has no value: no ReplicaSet of experiment template "${name}" is running`,
      );
    }
    return value;
  });
  return AnalysisSpecSchema.parse(JSON.parse(filled));
}

const TEMPLATE_HASH_TEXT = /\{\{\s*templates\.([a-z0-9-]+)\.podTemplateHash\s*\}\}/;

/** The analysis a `start-analysis` runs: the background one, or the step's; any other step is refused. */
function analysisOf(payload: StartAnalysisPayload): AnalysisSpec {
  if ("background" in payload) return payload.analysis;
  if (payload.step.kind === "analysis") return payload.step.analysis;
  throw new RangeError(`step ${payload.stepIndex + 1}: a ${payload.step.kind} step is not an analysis`);
}

/**
 * The analysis with its runtime arguments resolved (the candidate's and the stable revision's
 * versions, the digest); a step's sequential gate goes on from the evidence its earlier analyses
 * of this execution left.
 */
async function analysisToRun(
  deps: WorkflowDeps,
  context: WorkflowContext,
  spec: AnalysisSpec,
  stable: Revision | null,
  background: boolean,
): Promise<AnalysisSpec> {
  const analysis = resolveRuntimeArgs(spec, {
    latest: versionLabel(context),
    stable: versionLabel(stable),
    digest: context.digest,
  });
  if (background) return analysis;
  return withCarriedEvidence(
    analysis,
    async (step) =>
      (await deps.store.getRun(context.rollout, runIdFor(context, step, false), StoredAnalysisSchema))?.run
        .run,
  );
}

/**
 * Creates the run; false when it exists already (a retried invocation). An analysis alone past
 * the item limit is stored as a run ended in Error, answered like any other.
 */
async function createStored(
  deps: WorkflowDeps,
  runId: string,
  stored: StoredAnalysis,
  now: number,
): Promise<boolean> {
  const { rollout } = stored.context;
  try {
    await saveStored(deps, rollout, runId, stored, null);
  } catch (error) {
    if (error instanceof ConcurrentUpdateError) return false;
    if (!isPermanentWriteError(error)) throw error;
    // The analysis alone is past the item limit: the run ends in Error, answered like any other.
    const ended = unstorableRun(stored.run, new Date(now), unstorableMessage(error));
    await saveStored(deps, rollout, runId, { ...stored, run: ended }, null);
  }
  return true;
}

/**
 * Records the start with its `AnalysisRunStarted` event, once per run and token, and for a step
 * the token the execution now waits on. An abort landing between the check and the write closes
 * the run this call created, which nothing would wait for.
 */
async function recordStart(
  deps: WorkflowDeps,
  stored: StoredAnalysis,
  runId: string,
  created: boolean,
): Promise<void> {
  const { context, stepIndex, background, token, templates } = stored;
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
          `${background ? "background analysis" : "analysis"} started: ${templates.join(", ")}`,
        ),
      { hold: "refuse" },
    );
  } catch (error) {
    // An abort or a newer push landed between the check and the write: close the run the
    // execution will never wait for. Any other failure (a throttled write, say) is retried by the
    // Task, and the retry resumes this run: terminated here, it would end Successful ("Run
    // Terminated") without a measurement and promote whatever it was to judge. A hold keeps it
    // too: the step runs again after a person's promote and resumes this run.
    const ends = error instanceof RolloutAbortedError || error instanceof ExecutionSupersededError;
    if (created && ends) await terminateRun(deps, context.rollout, runId);
    throw error;
  }
}

/**
 * A retried invocation: the first one may have died before scheduling the first tick (or
 * before answering), and Step Functions may have handed this attempt a new token.
 */
async function resumeRetried(
  deps: WorkflowDeps,
  current: StoredRun<StoredAnalysis>,
  runId: string,
  token: string | null,
): Promise<void> {
  const adopted = await adoptToken(deps, current, runId, token);
  if (isCompleted(adopted.run.run.phase)) {
    if (!adopted.run.answered) await finish(deps, adopted.run, runId, adopted.version);
  } else {
    await scheduleNext(deps, adopted.run, runId, new Date(deps.clock.now()));
  }
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
      const { saved } = await saveStored(deps, latest.rollout, runId, adopted, latest.version);
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
  // While a step's analysis runs, its ticks watch the background analysis too (nothing else reads it then).
  if (!stored.background) await watchBackground(deps, context);
  const item = await deps.store.get(context.rollout);
  const now = new Date(deps.clock.now());
  // The execution moved on (aborted, superseded, promoted): close the run, take nothing more.
  // An abort that already ran leaves abortRequested false and the same execution, but the rollout
  // is Degraded then: without the phase check the run kept measuring and answering after it.
  const orphaned =
    !item || item.executionArn !== context.executionArn || item.abortRequested || !isRunning(item);
  const before = stored.run;
  const where = whereOf(stored, runId);
  const taken = orphaned ? undefined : await tickTaking(before, now, deps.providers, where);
  // A run that ends (orphaned, or a metric decided it) ends what it still runs: Argo's Terminate
  // deletes a running measurement's Job.
  const after = !taken
    ? await terminateRunning(before, now, deps.providers, where)
    : endsWithRunning(taken.run)
      ? await endRunning(taken.run, now, deps.providers, where)
      : taken.run;
  let next: StoredAnalysis = { ...stored, run: after, tick: stored.tick + 1 };
  let saved: StoredRun;
  try {
    ({ stored: next, saved } = await saveStored(deps, context.rollout, runId, next, current.version));
  } catch (error) {
    if (error instanceof ConcurrentUpdateError) return undefined;
    if (!isPermanentWriteError(error)) throw error;
    // Rethrowing would fail every retry the same way and end the tick chain: record it instead.
    const refused = await saveRefused(deps, current, runId, after, orphaned, error);
    if (!refused) return undefined;
    ({ stored: next, saved } = refused);
  }
  for (const { metric, measurement } of measurementsTaken(before, next.run)) {
    const n = next.run.metricResults.find((r) => r.name === metric);
    const seq = n ? measurementsRecorded(n) : 0;
    await deps.store
      .putMeasurement({
        rollout: context.rollout,
        runId,
        measurementId: `${metric}#${String(seq).padStart(6, "0")}`,
        // Its own item keeps a judge's readings that the run's copy had no room for.
        value: { metric, ...measurementItem(measurement, taken?.readings.get(metric)) },
        at: Date.parse(measurement.finishedAt),
        ttlSeconds: MEASUREMENT_TTL_SECONDS,
      })
      .catch((error: unknown) => {
        // The run holds the measurement already; a copy the store refuses must not end the chain.
        if (!isPermanentWriteError(error)) throw error;
      });
    deps.metrics.put({
      name: METRICS.measurements,
      value: 1,
      rollout: context.rollout,
      dimensions: { Phase: measurement.phase },
    });
    for (const point of judgePoints(context.rollout, metric, measurement.judge)) deps.metrics.put(point);
  }
  if (isCompleted(next.run.phase)) {
    deps.metrics.put({
      name: METRICS.analysisRuns,
      value: 1,
      rollout: context.rollout,
      dimensions: { Phase: next.run.phase },
    });
    if (orphaned) return next;
    await finish(deps, next, runId, saved.version);
    return next;
  }
  await scheduleNext(deps, next, runId, now);
  return next;
}

/**
 * Saves a run with its TTL, within the item limit: when its measurements would not fit (a run of
 * many metrics, whose spec and results leave less room than the retention bound assumes), the
 * oldest are dropped first, each metric keeping its last. Returns what was saved.
 */
async function saveStored(
  deps: WorkflowDeps,
  rollout: string,
  runId: string,
  stored: StoredAnalysis,
  expectedVersion: number | null,
): Promise<{ stored: StoredAnalysis; saved: StoredRun }> {
  const fits = (run: AnalysisRun) =>
    runItemBytes(rollout, runId, { ...stored, run }) <= MAX_ITEM_BYTES - ITEM_MARGIN_BYTES;
  const run = shrinkToFit(stored.run, fits);
  const value = run === stored.run ? stored : { ...stored, run };
  const due = nextTickAt(run)?.getTime() ?? 0;
  const expiresAt = Math.floor(Math.max(deps.clock.now(), due) / 1000) + RUN_TTL_SECONDS;
  const saved = await deps.store.saveRun(rollout, runId, value, expectedVersion, { expiresAt });
  return { stored: value, saved };
}

const unstorableMessage = (error: Error) =>
  truncateText(`the analysis run cannot be stored: ${error.message}`, MAX_MESSAGE_BYTES).text;

/**
 * The store refused a tick's run for good (too large, or refused for another reason retrying
 * cannot fix). The measurements of that tick become Error measurements saying why, on the run as
 * last saved, so the tick chain goes on and `consecutiveErrorLimit` applies as it does to a
 * provider's errors. If even that cannot be saved (the analysis's spec alone is past the limit),
 * the run ends in Error without its spec. Undefined when another writer won meanwhile.
 */
async function saveRefused(
  deps: WorkflowDeps,
  current: StoredRun<StoredAnalysis>,
  runId: string,
  after: AnalysisRun,
  orphaned: boolean,
  error: Error,
): Promise<{ stored: StoredAnalysis; saved: StoredRun } | undefined> {
  const { rollout } = current.run.context;
  const before = current.run.run;
  const now = new Date(deps.clock.now());
  const measured = [...new Set(measurementsTaken(before, after).map((m) => m.metric))];
  const message = truncateText(
    `the analysis run could not be stored, so this measurement is an Error: ${error.message}`,
    MAX_MESSAGE_BYTES,
  ).text;
  const attempts: AnalysisRun[] = orphaned ? [] : [recordStoreFailure(before, measured, now, message)];
  attempts.push(unstorableRun(before, now, unstorableMessage(error)));
  let last: Error = error;
  for (const run of attempts) {
    try {
      return await saveStored(
        deps,
        rollout,
        runId,
        { ...current.run, run, tick: current.run.tick + 1 },
        current.version,
      );
    } catch (again) {
      if (again instanceof ConcurrentUpdateError) return undefined;
      if (!isPermanentWriteError(again)) throw again;
      last = again;
    }
  }
  throw last;
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
        `${stored.background ? "background analysis" : "analysis"} ${run.phase}${message ? `: ${message}` : ""}`,
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
        // Argo tells an analysis run in Error from a failed one (on-analysis-run-error).
        run.phase === "Error" ? "AnalysisRunError" : "AnalysisRunFailed",
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
    await saveStored(deps, context.rollout, runId, { ...stored, answered: true }, version);
  } catch (error) {
    if (!(error instanceof ConcurrentUpdateError)) throw error;
  }
}

/** Ends an execution's background run (at promotion or abort); a no-op when there is none. */
export function terminateBackground(deps: WorkflowDeps, context: WorkflowContext): Promise<void> {
  return terminateRun(deps, context.rollout, runIdFor(context, 0, true));
}

/** What the providers of a stored run are told: its id, and the target its Jobs run on. */
function whereOf(stored: StoredAnalysis, runId: string): TickContext {
  return { runId, ...(stored.target === undefined ? {} : { target: stored.target }) };
}

/**
 * Ends a run that nothing will wait for; a no-op when it is absent or already completed. A stale
 * run (its timer firings were lost) ends in Error, never Successful.
 */
async function terminateRun(deps: WorkflowDeps, rollout: string, runId: string): Promise<void> {
  const current = await deps.store.getRun(rollout, runId, StoredAnalysisSchema);
  if (!current || isCompleted(current.run.run.phase)) return;
  const now = new Date(deps.clock.now());
  const run = staleness(current.run.run, now)
    ? expireStale(current.run.run, now)
    : await terminateRunning(current.run.run, now, deps.providers, whereOf(current.run, runId));
  try {
    await saveStored(deps, rollout, runId, { ...current.run, run }, current.version);
  } catch (error) {
    if (!(error instanceof ConcurrentUpdateError)) throw error;
  }
}

/**
 * The watchdog (`functions/analysis/watchdog.ts`) applied to a stored run: a run whose timer
 * firings were lost — no measurement for `max(3 intervals, interval + 27 minutes)` — ends in
 * Error, and its outcome is delivered as a tick's would be (a step's token is answered; a
 * background analysis aborts the rollout). A run that ended but whose outcome was never
 * delivered (the firing that would have retried it was lost too) is delivered. Returns true when
 * it ended or delivered something.
 */
export async function watchRun(deps: WorkflowDeps, rollout: string, runId: string): Promise<boolean> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = await deps.store.getRun(rollout, runId, StoredAnalysisSchema);
    if (!current) return false;
    if (isCompleted(current.run.run.phase)) {
      // Left to the tick that ended it while its own retries may still deliver.
      const endedAt = Date.parse(current.run.run.completedAt ?? current.run.run.startedAt);
      if (current.run.answered || deps.clock.now() - endedAt <= WATCHDOG_GRACE_SECONDS * 1000) return false;
      await finish(deps, current.run, runId, current.version);
      return true;
    }
    const expired = expireStale(current.run.run, new Date(deps.clock.now()));
    if (expired === current.run.run) return false;
    let ended: { stored: StoredAnalysis; saved: StoredRun };
    try {
      ended = await saveStored(deps, rollout, runId, { ...current.run, run: expired }, current.version);
    } catch (error) {
      // A tick landed meanwhile: look again (it is not stale then).
      if (!(error instanceof ConcurrentUpdateError)) throw error;
      continue;
    }
    deps.metrics.put({ name: METRICS.analysisRuns, value: 1, rollout, dimensions: { Phase: "Error" } });
    await finish(deps, ended.stored, runId, ended.saved.version);
    return true;
  }
  return false;
}

/**
 * The watchdog on the execution's background analysis, which nothing waits for: every step that
 * reads the rollout applies it (set-weight, await, the next analysis's start, a step analysis's
 * ticks, promote), so a background analysis whose firings were lost aborts the rollout at the
 * next step instead of being marked Successful at promotion. A no-op without a background run.
 */
export function watchBackground(deps: WorkflowDeps, context: WorkflowContext): Promise<boolean> {
  return watchRun(deps, context.rollout, runIdFor(context, 0, true));
}
