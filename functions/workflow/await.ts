import { createHash } from "node:crypto";
import { formatDuration } from "../../statemachine/duration.ts";
import { type GateSummary, gatesOf } from "../analysis/judge-look.ts";
import type { PauseReason, RolloutItem } from "../store/schema.ts";
import { runIdFor, StoredAnalysisSchema, watchBackground } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { commit, flush, isDone, publishEffect, scheduleEffect } from "./effects.ts";
import { drivingItem, eventAbout, recordStep, withEvent } from "./item.ts";
import type { AwaitPayload } from "./payloads.ts";

/**
 * The Timer key of a timed pause: unique per execution, step and wait. A step that waits again
 * (after a hold, with a new token) needs a new firing: the old one, still pending, answers the
 * old token, and scheduling its key again would be a no-op.
 */
export function pauseKey(rollout: string, executionArn: string, stepIndex: number, token: string): string {
  return `${rollout}/${executionArn.split(":").at(-1)}/pause-${stepIndex}-${tokenHash(token)}`;
}

const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex").slice(0, 12);

/**
 * Every wait for a person or for time: a pause step (with or without a duration), an approval
 * between native steps, an Inconclusive analysis, and weight drift. It stores the task token in
 * the same conditional write that refuses an aborted or superseded execution (so an abort can
 * never fall between "checked" and "waiting"), then, for a timed pause, asks the Timer to resume.
 */
export async function awaitStep(deps: WorkflowDeps, payload: AwaitPayload): Promise<Record<string, never>> {
  const { context, stepIndex, taskToken } = payload;
  await watchBackground(deps, context); // a background analysis whose firings were lost aborts here
  const wait = waitOf(payload, deps.clock.now());
  // The wait of this token is recorded once; a retry only performs what is still pending.
  const id = `await-${String(stepIndex).padStart(2, "0")}-${tokenHash(taskToken)}`;
  const current = await drivingItem(deps, context, { hold: "allow" });
  if (isDone(current, context, id)) {
    await flush(deps, context);
    return {};
  }
  const replacing = replacesWait(current, payload, wait.reason);
  const until = replacing && wait.until !== null ? (current.pause?.until ?? wait.until) : wait.until;
  const gates = await inconclusiveGates(deps, payload);
  await recordWait(deps, payload, { ...wait, until }, { id, replacing, gates });
  await flush(deps, context);
  return {};
}

/** What the step waits for: the pause's reason, its message, when a timed pause ends, who ends it. */
interface Wait {
  reason: PauseReason;
  message: string;
  /** When a timed pause resumes by itself; null: a person ends the wait. */
  until: number | null;
  waitingFor: "pause" | "approval";
}

/** How the wait is recorded: under its id, replacing the same wait's token, with the judges' figures. */
interface WaitWrite {
  id: string;
  replacing: boolean;
  gates: GateSummary[] | undefined;
}

/**
 * The wait a step asks for: an approval (an Inconclusive analysis, a held background analysis,
 * weight drift) or a pause step, timed from `now` when it has a duration; any other step is refused.
 */
function waitOf(payload: AwaitPayload, now: number): Wait {
  const { step, stepIndex } = payload;
  if (step.kind === "approval") {
    return {
      reason: step.reason === "paused-drift" ? "WeightDrift" : "InconclusiveAnalysisRun",
      message:
        step.reason === "Inconclusive"
          ? `InconclusiveAnalysisRun: ${payload.message ?? "the analysis was inconclusive"}; rollouts promote to continue, rollouts abort to stop`
          : step.reason === "held"
            ? "InconclusiveAnalysisRun: the background analysis was inconclusive; rollouts promote to continue, rollouts abort to stop"
            : "paused-drift: the weights were changed by someone else; rollouts promote to overwrite them, rollouts abort to go back to stable",
      until: null,
      waitingFor: "approval",
    };
  }
  if (step.kind === "pause") {
    const { reason, duration } = step;
    return {
      reason,
      message:
        duration !== undefined
          ? `${reason}: paused for ${formatDuration(duration)}`
          : `${reason}: waiting for rollouts promote`,
      until: duration !== undefined ? now + duration * 1000 : null,
      waitingFor: reason === "Approval" ? "approval" : "pause",
    };
  }
  if (step.kind === "experiment") {
    // Argo's experiment without analyses runs for its duration, or until it is terminated.
    const { duration } = step;
    return {
      reason: "CanaryPauseStep",
      message:
        duration !== undefined
          ? `experiment: its ReplicaSets run for ${formatDuration(duration)}`
          : "experiment: its ReplicaSets run until rollouts promote",
      until: duration !== undefined ? now + duration * 1000 : null,
      waitingFor: "pause",
    };
  }
  throw new RangeError(`step ${stepIndex + 1}: a ${step.kind} step is not a wait`);
}

/**
 * The Task retried with a new token while this very wait is recorded (same execution, step and
 * reason, its token not yet answered): the wait goes on under the new token, ending when it would
 * have, and is not announced again.
 */
function replacesWait(current: RolloutItem, payload: AwaitPayload, reason: PauseReason): boolean {
  return (
    current.effects.executionArn === payload.context.executionArn &&
    current.phase === "Paused" &&
    current.currentTaskToken !== null &&
    current.stepIndex === payload.stepIndex &&
    current.pause?.reason === reason
  );
}

/** An inconclusive analysis pauses with its judges' figures, so whoever decides sees them. */
async function inconclusiveGates(
  deps: WorkflowDeps,
  payload: AwaitPayload,
): Promise<GateSummary[] | undefined> {
  const { context, step, stepIndex } = payload;
  const run =
    step.kind === "approval" && step.reason === "Inconclusive"
      ? await deps.store.getRun(context.rollout, runIdFor(context, stepIndex, false), StoredAnalysisSchema)
      : undefined;
  return run ? gatesOf(run.run.run) : undefined;
}

/**
 * Records the wait and its token in the write that refuses an aborted or superseded execution,
 * with the Timer's firing of a timed pause and its `RolloutPaused` event as pending side effects;
 * a replaced token is only swapped (and its firing scheduled under the new token's key).
 */
async function recordWait(
  deps: WorkflowDeps,
  payload: AwaitPayload,
  wait: Wait,
  write: WaitWrite,
): Promise<void> {
  const { context, step, stepIndex, taskToken } = payload;
  const { id, replacing, gates } = write;
  const { reason, message, until, waitingFor } = wait;
  const timer =
    until === null
      ? []
      : [
          scheduleEffect(id, {
            at: until,
            key: pauseKey(context.rollout, context.executionArn, stepIndex, taskToken),
            payload: {
              kind: "pause",
              rollout: context.rollout,
              executionArn: context.executionArn,
              revision: context.revision,
              token: taskToken,
            },
          }),
        ];
  await recordStep(
    deps,
    context,
    (latest, at) => {
      if (replacing) return commit({ ...latest, currentTaskToken: taskToken }, context, id, timer);
      const detail = waitDetail(payload, latest);
      const full = detail ? `${message} (${detail})` : message;
      const paused = eventAbout(deps, context, "RolloutPaused", full, stepIndex, gates);
      return commit(
        withEvent(
          {
            ...latest,
            phase: "Paused",
            message: full,
            // The step being waited at (a pause or analysis step does not pass through set-weight).
            stepIndex,
            currentTaskToken: taskToken,
            waitingFor,
            waitingSince: at,
            pause: { reason, startedAt: at, until },
          },
          at,
          "RolloutPaused",
          full,
          stepIndex,
        ),
        context,
        id,
        [...timer, publishEffect(context, id, paused)],
      );
    },
    // A pause starting while a hold is recorded waits for the person instead (its -Held state).
    { hold: step.kind === "approval" ? "allow" : "refuse", step: id },
  );
}

/** What the drift or the hold that stopped the rollout said, appended to an approval's message. */
function waitDetail(payload: AwaitPayload, latest: RolloutItem): string | undefined {
  const { step } = payload;
  if (step.kind !== "approval") return undefined;
  if (step.reason === "paused-drift") return latest.drift?.message;
  if (step.reason === "held") return latest.hold?.message;
  return undefined;
}
