import type { Clock } from "../clock.ts";
import type { RolloutStore } from "../store/port.ts";
import { appendEvent, isRunning } from "../store/schema.ts";
import { update } from "../store/update.ts";
import { PAUSE_REQUESTED } from "./errors.ts";
import type { TaskTokens } from "./task-tokens.ts";

/**
 * The hold channel, the abort channel's gentler twin: it stops a rollout where it is and waits for
 * a person, without moving traffic back. An Inconclusive background analysis uses it (Argo
 * Rollouts pauses a rollout on one).
 *
 * 1. A conditional write records `hold` for the execution that drives the rollout. From then on the
 *    execution's step Lambdas throw `PauseRequested`, which each step's Task catches into its
 *    `-Held` wait (a person's approval).
 * 2. If the execution waits on a pause or a step's analysis, `SendTaskFailure(token,
 *    "PauseRequested")` ends that wait now, into the same `-Held` wait; the step runs again after
 *    `rollouts promote` (an analysis step resumes its own run). A wait that is already a person's
 *    (an approval) is left alone: that person decides for both.
 *
 * Idempotent: a second request keeps the first message. Returns false when nothing was held (the
 * rollout is not running that execution any more).
 */
export async function requestHold(input: {
  store: RolloutStore;
  sfn: TaskTokens;
  name: string;
  executionArn: string;
  message: string;
  clock: Clock;
}): Promise<boolean> {
  let held = false;
  const item = await update(input.store, input.name, "latest", (latest) => {
    if (!isRunning(latest) || latest.executionArn !== input.executionArn || latest.abortRequested)
      return null;
    held = true;
    if (latest.hold?.executionArn === input.executionArn) return null;
    const now = input.clock.now();
    return {
      ...latest,
      hold: { message: input.message, at: now, executionArn: input.executionArn },
      events: appendEvent(latest.events, { at: now, type: "PauseRequested", message: input.message }),
    };
  });
  if (!held) return false;
  if (item.currentTaskToken && (item.waitingFor === "pause" || item.waitingFor === "analysis")) {
    await input.sfn.sendFailure(item.currentTaskToken, PAUSE_REQUESTED, input.message);
  }
  return true;
}
