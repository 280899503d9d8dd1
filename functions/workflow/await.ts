import { createHash } from "node:crypto";
import { formatDuration } from "../../statemachine/duration.ts";
import { gatesOf } from "../analysis/judge.ts";
import type { PauseReason } from "../store/schema.ts";
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
  const { context, step, stepIndex, taskToken } = payload;
  await watchBackground(deps, context); // a background analysis whose firings were lost aborts here
  let reason: PauseReason;
  let message: string;
  let until: number | null = null;
  let waitingFor: "pause" | "approval" = "approval";
  const now = deps.clock.now();
  if (step.kind === "approval") {
    reason = step.reason === "paused-drift" ? "WeightDrift" : "InconclusiveAnalysisRun";
    message =
      step.reason === "Inconclusive"
        ? `InconclusiveAnalysisRun: ${payload.message ?? "the analysis was inconclusive"}; rollouts promote to continue, rollouts abort to stop`
        : step.reason === "held"
          ? "InconclusiveAnalysisRun: the background analysis was inconclusive; rollouts promote to continue, rollouts abort to stop"
          : "paused-drift: the weights were changed by someone else; rollouts promote to overwrite them, rollouts abort to go back to stable";
  } else if (step.kind === "pause") {
    reason = step.reason;
    waitingFor = step.reason === "Approval" ? "approval" : "pause";
    if (step.duration !== undefined) {
      until = now + step.duration * 1000;
      message = `${reason}: paused for ${formatDuration(step.duration)}`;
    } else {
      message = `${reason}: waiting for rollouts promote`;
    }
  } else {
    throw new RangeError(`step ${stepIndex + 1}: a ${step.kind} step is not a wait`);
  }
  // The wait of this token is recorded once; a retry only performs what is still pending.
  const id = `await-${String(stepIndex).padStart(2, "0")}-${tokenHash(taskToken)}`;
  const current = await drivingItem(deps, context, { hold: "allow" });
  if (isDone(current, context, id)) {
    await flush(deps, context);
    return {};
  }
  // The Task retried with a new token while this very wait is recorded (same execution, step and
  // reason, its token not yet answered): the wait goes on under the new token, ending when it would
  // have, and is not announced again.
  const replacing =
    current.effects.executionArn === context.executionArn &&
    current.phase === "Paused" &&
    current.currentTaskToken !== null &&
    current.stepIndex === stepIndex &&
    current.pause?.reason === reason;
  if (replacing && until !== null) until = current.pause?.until ?? until;
  // An inconclusive analysis pauses with its judges' figures, so whoever decides sees them.
  const run =
    step.kind === "approval" && step.reason === "Inconclusive"
      ? await deps.store.getRun(context.rollout, runIdFor(context, stepIndex, false), StoredAnalysisSchema)
      : undefined;
  const gates = run ? gatesOf(run.run.run) : undefined;
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
      const detail =
        step.kind === "approval" && step.reason === "paused-drift"
          ? latest.drift?.message
          : step.kind === "approval" && step.reason === "held"
            ? latest.hold?.message
            : undefined;
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
  await flush(deps, context);
  return {};
}
