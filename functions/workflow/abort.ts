import {
  abortedStatusMessage,
  assertDrives,
  ExecutionSupersededError,
  isSupersedeReason,
  ROLLOUT_ABORTED,
} from "../abort/errors.ts";
import { METRICS } from "../config.ts";
import { RolloutNotFoundError } from "../store/errors.ts";
import { MAX_ROLLBACKS, NOT_WAITING, type RolloutItem, type SideEffect } from "../store/schema.ts";
import { update } from "../store/update.ts";
import type { TargetState } from "../traffic/port.ts";
import { terminateBackground } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { commit, flush, isDone, publishEffect, registryEffects, scheduleEffect } from "./effects.ts";
import { eventAbout, withEvent } from "./item.ts";
import type { AbortPayload, WorkflowContext } from "./payloads.ts";

/** The Timer key of a continued abort. */
export const abortKey = (rollout: string, executionArn: string, attempt: number) =>
  `${rollout}/${executionArn.split(":").at(-1)}/abort-${attempt}`;

/**
 * Why the rollout aborted, from what the Catch put in `$.error`: the analysis message, the reason
 * given to `rollouts abort`, or the failed Lambda's error message.
 */
export function abortReason(error: AbortPayload["error"], requested: string | null): string {
  if (error.Error === "RolloutAborted" && requested) return requested;
  const cause = error.Cause ?? "";
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown; errorType?: unknown };
    if (typeof parsed.errorMessage === "string") {
      return error.Error === "RolloutAborted"
        ? parsed.errorMessage
        : `${error.Error}: ${parsed.errorMessage}`;
    }
  } catch {
    // Not JSON: a SendTaskFailure cause or the analysis message, used as it is.
  }
  // An analysis' message and a hook's (worded by the workflow, naming the hook) stand as they are.
  if (error.Error === "AnalysisRunFailed" || error.Error === "RolloutAborted" || error.Error === "HookFailed")
    return cause || error.Error;
  return cause ? `${error.Error}: ${cause}` : error.Error;
}

/**
 * The Abort state: traffic back to the stable version (unless `onFailure: stop`), background
 * analysis ended, the candidate scaled down after `abortScaleDownDelaySeconds`, and the rollout
 * Degraded with Argo's message, which stays until a new revision arrives. An execution that no
 * longer drives the rollout throws `ExecutionSuperseded` and touches nothing. The state write
 * records the continuation or scale-down and the `RolloutAborted` event as pending side effects:
 * a retry performs what is missing and records no second rollback (the cooldown counts them).
 */
export async function abort(
  deps: WorkflowDeps,
  payload: AbortPayload,
): Promise<{ phase: "Degraded" | "Healthy"; message: string }> {
  const { context } = payload;
  const item = await deps.store.get(context.rollout);
  if (!item) throw new RolloutNotFoundError(context.rollout);
  assertDrives(item, context.executionArn);
  if (isDone(item, context, PROMOTED)) {
    // Promote wrote Healthy and only its side effects (the old side's scale-down, the event)
    // failed past its retries: the release stands, nothing is rolled back or counted as a
    // rollback; what is pending is tried again here, and a failure leaves it pending.
    await flush(deps, context);
    return {
      phase: "Healthy",
      message: `revision ${context.revision} was promoted before the abort: nothing was rolled back`,
    };
  }
  const reason = abortReason(payload.error, item.abortReason);
  const message = abortedStatusMessage(context.revision, reason);
  const superseded = supersededWhileDriving(item, payload, context);
  if (isDone(item, context, STEP)) {
    // A retry: the abort is recorded; only its pending side effects may be missing.
    await flush(deps, context);
    if (superseded) throw superseded;
    return { phase: "Degraded", message };
  }
  const rolledBack = await rollBack(deps, payload, item.targetState as TargetState);
  await terminateBackground(deps, context);
  // A supersede is not a failed release: as when the newer Begin comes first, nothing announces
  // an abort, records a rollback (a canary gate's cooldown counts them) or tags the candidate.
  const outcome: AbortOutcome = { reason, message, failed: superseded === undefined };
  const effects = abortEffects(deps, payload, outcome, rolledBack.pending);
  await recordAbort(deps, payload, rolledBack.state, abortStatus(payload, outcome), effects);
  if (payload.onFailure === "rollback")
    deps.metrics.put({ name: METRICS.canaryWeight, value: 0, rollout: context.rollout });
  if (outcome.failed) deps.metrics.put({ name: METRICS.aborts, value: 1, rollout: context.rollout });
  await flush(deps, context);
  if (superseded) throw superseded;
  return { phase: "Degraded", message };
}

/** Why the execution aborted, Argo's message for it, and whether it is a failed release (not a supersede). */
interface AbortOutcome {
  reason: string;
  message: string;
  failed: boolean;
}

/** What Abort writes on the item: the phase, its message, and the event that says so. */
interface AbortStatus {
  phase: "Degraded" | "Progressing";
  message: string;
  event: "RolloutAborted" | "RolloutSuperseded";
  failed: boolean;
}

/**
 * Traffic back to the stable version, unless `onFailure: stop` leaves the weights as they are:
 * the target's state after it, and the seconds to wait when the stable side must come back first.
 */
async function rollBack(
  deps: WorkflowDeps,
  payload: AbortPayload,
  state: TargetState,
): Promise<{ state: TargetState; pending: number | undefined }> {
  if (payload.onFailure !== "rollback") return { state, pending: undefined };
  const readiness = await deps.targetFor(payload.target).abort(state, {
    abortScaleDownDelaySeconds: payload.abortScaleDownDelaySeconds,
  });
  return { state: readiness.state, pending: readiness.ready ? undefined : readiness.retryAfterSeconds };
}

/**
 * What the abort leaves to do once written: the abort's continuation while the stable side comes
 * back (or the candidate's scale-down after a rollback), and for a failed release its
 * `RolloutAborted` event and, after a rollback, the registry's record of it.
 */
function abortEffects(
  deps: WorkflowDeps,
  payload: AbortPayload,
  outcome: AbortOutcome,
  pending: number | undefined,
): SideEffect[] {
  const { context } = payload;
  const { failed, message, reason } = outcome;
  return [
    ...(pending !== undefined
      ? [continueEffect(deps, payload, pending)]
      : payload.onFailure === "rollback"
        ? [scaleDownEffect(deps, context, payload.target, payload.abortScaleDownDelaySeconds)]
        : []),
    ...(failed
      ? [publishEffect(context, STEP, eventAbout(deps, context, "RolloutAborted", message, null))]
      : []),
    ...(failed && payload.onFailure === "rollback"
      ? registryEffects(STEP, payload.target, context, { action: "rolled-back", reason })
      : []),
  ];
}

/** The abort continued by the Timer once the stable side had `pending` seconds to come back. */
function continueEffect(deps: WorkflowDeps, payload: AbortPayload, pending: number): SideEffect {
  const { context } = payload;
  return scheduleEffect(STEP, {
    at: deps.clock.now() + pending * 1000,
    key: abortKey(context.rollout, context.executionArn, 1),
    payload: {
      kind: "abort-continue",
      rollout: context.rollout,
      executionArn: context.executionArn,
      revision: context.revision,
      target: payload.target ?? null,
      abortScaleDownDelaySeconds: payload.abortScaleDownDelaySeconds,
      attempt: 1,
    },
  });
}

/**
 * A failed release is Degraded with Argo's message (and why the weights stayed, for `onFailure:
 * stop`); a superseded one stays Progressing until the newer revision begins, saying so.
 */
function abortStatus(payload: AbortPayload, outcome: AbortOutcome): AbortStatus {
  const { context } = payload;
  const stopped = payload.onFailure === "stop" ? " (onFailure: stop: the weights are left as they were)" : "";
  return outcome.failed
    ? { phase: "Degraded", message: `${outcome.message}${stopped}`, event: "RolloutAborted", failed: true }
    : {
        phase: "Progressing",
        message: `revision ${context.revision} was ${outcome.reason}: ${payload.onFailure === "rollback" ? "its traffic is back on the stable version" : "its weights are left as they were (onFailure: stop)"} until that revision begins`,
        event: "RolloutSuperseded",
        failed: false,
      };
}

/**
 * The abort's state write, once under its id with its side effects: no wait, hold or drift left,
 * the weight 0 after a rollback, and a failed release counted among the rollbacks (the cooldown).
 */
async function recordAbort(
  deps: WorkflowDeps,
  payload: AbortPayload,
  state: TargetState,
  status: AbortStatus,
  effects: SideEffect[],
): Promise<void> {
  const { context } = payload;
  await update(deps.store, context.rollout, "latest", (latest) => {
    assertDrives(latest, context.executionArn);
    // A write that landed but whose answer was lost (the SDK sent it again): no second rollback.
    if (isDone(latest, context, STEP)) return null;
    const now = deps.clock.now();
    return commit(
      withEvent(
        {
          ...latest,
          phase: status.phase,
          message: status.message,
          targetState: state,
          weight: payload.onFailure === "rollback" ? 0 : latest.weight,
          ...NOT_WAITING,
          abortRequested: false,
          abortExecutionArn: null,
          rollbacks: status.failed
            ? [...latest.rollbacks, { digest: context.digest, at: now }].slice(-MAX_ROLLBACKS)
            : latest.rollbacks,
        },
        now,
        status.event,
        status.message,
      ),
      context,
      STEP,
      effects,
    );
  });
}

/**
 * The end of an execution that a newer push stopped while it still drove the rollout: the trigger
 * records the push, then fails this execution's wait with the supersede's reason; when this Abort
 * runs before the newer execution's Begin has taken over, it rolls back as any abort does (the
 * newer execution may never start), and then ends the execution as superseded, not as a failed
 * rollout, as it would had Begin come first. An execution stopped by its own failure (an analysis,
 * a hook, a step's error) ends aborted even if a newer push arrives meanwhile.
 */
function supersededWhileDriving(
  item: Pick<RolloutItem, "abortReason" | "trigger">,
  payload: AbortPayload,
  context: WorkflowContext,
): ExecutionSupersededError | undefined {
  const own = context.executionArn.split(":").at(-1);
  const newer = item.trigger?.executionName;
  if (payload.error.Error !== ROLLOUT_ABORTED || !isSupersedeReason(item.abortReason)) return undefined;
  if (newer === undefined || newer === own) return undefined;
  const error = new ExecutionSupersededError(context.executionArn, newer);
  error.message = `execution ${context.executionArn} was ${item.abortReason}; its abort put the traffic back before ${newer} took over`;
  return error;
}

/** The id under which Abort records its state write and its side effects. */
const STEP = "abort";
/** Promote's id (`promote.ts`): once written, the execution's release stands. */
const PROMOTED = "promote";

/** The aborted candidate's scale-down, for this execution and revision only. */
function scaleDownEffect(
  deps: WorkflowDeps,
  context: WorkflowContext,
  target: unknown,
  delaySeconds: number,
): SideEffect {
  const { rollout, executionArn, revision } = context;
  return scheduleEffect(STEP, {
    at: deps.clock.now() + delaySeconds * 1000,
    key: `${rollout}/${executionArn.split(":").at(-1)}/abort-scale-down`,
    payload: { kind: "scale-down", rollout, executionArn, revision, target: target ?? null, attempt: 0 },
  });
}
