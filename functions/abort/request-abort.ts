import type { Clock } from "../clock.ts";
import { RolloutNotFoundError } from "../store/errors.ts";
import type { RolloutStore } from "../store/port.ts";
import {
  appendEvent,
  isRunning,
  type RolloutItem,
  type RolloutPhase,
  type WaitingFor,
} from "../store/schema.ts";
import { update } from "../store/update.ts";
import { assertDrives, assertNotAborted, ROLLOUT_ABORTED } from "./errors.ts";
import { type StaleTokenReason, TaskTokenError, type TaskTokens } from "./task-tokens.ts";

/**
 * The abort is recorded on the item but the wait could not be failed (Step Functions did not
 * answer, or the process was stopped). The abort is half done, never lost: every Lambda of the
 * execution refuses to go on, and a second `requestAbort` (another `rollouts abort`) sees the flag
 * and fails the stored token. A `TaskTokenError`, so callers that retry on it still do.
 */
export class AbortIncompleteError extends TaskTokenError {
  override readonly name = "AbortIncompleteError";
  override readonly message: string;

  constructor(name: string, reason: string, waitingFor: WaitingFor | null, cause: TaskTokenError) {
    super("SendTaskFailure", { cause: cause.cause });
    this.message =
      `abort of ${name} recorded (${reason}), but the ${waitingFor ?? "task"} wait was not ended: ${cause.message}; ` +
      `run \`rollouts abort ${name}\` again to finish it`;
  }
}

export interface RequestAbortInput {
  store: RolloutStore;
  /** The task-token port (`SfnTaskTokens` on AWS). */
  sfn: TaskTokens;
  name: string;
  reason: string;
  clock: Clock;
  /**
   * Abort only if this execution still drives the rollout (the trigger superseding an older
   * revision passes the ARN it saw, so it never aborts a newer execution by mistake).
   */
  executionArn?: string;
}

/** What happened, worded for a person (`rollouts abort` prints `message`). */
export type AbortOutcome =
  | { status: "not-found"; message: string }
  | { status: "not-running"; phase: RolloutPhase; message: string }
  /** The execution was waiting on a token and has been sent `RolloutAborted`. */
  | {
      status: "signalled";
      waitingFor: WaitingFor | null;
      alreadyRequested: boolean;
      item: RolloutItem;
      message: string;
    }
  /** No wait in progress: the flag is set and the next Lambda of the execution throws `RolloutAborted`. */
  | { status: "recorded"; alreadyRequested: boolean; item: RolloutItem; message: string }
  /** The stored token is no longer waited on (used, timed out, invalid); the flag is set all the same. */
  | {
      status: "token-stale";
      reason: StaleTokenReason;
      alreadyRequested: boolean;
      item: RolloutItem;
      message: string;
    };

/**
 * The abort channel: the one way anything (the CLI, a failed background analysis, a newer
 * revision) stops a rollout.
 *
 * 1. A conditional write sets `abortRequested` (+ reason, time, and the execution it is aimed at)
 *    on the rollout item. From then on every Lambda of that execution throws `RolloutAborted`
 *    (`assertNotAborted`), so an execution that is between waits stops at its next step.
 * 2. If the execution is waiting on a task token, `SendTaskFailure(token, "RolloutAborted",
 *    reason)` ends the wait now; the Task state's `Catch` goes to the Abort state.
 *
 * Because a handler stores its token with a conditional write that checks `abortRequested` first
 * (`registerTaskToken`), there is no gap: either the abort is written first and the handler
 * refuses to wait, or the token is written first and this function reads it and fails it.
 *
 * Resumable: a repeated request keeps the first reason and fails the stored token again, so a
 * request cut short after step 1 (Step Functions timed out, Ctrl-C) is finished by the next one;
 * its message says it finished an earlier request. Throws only on infrastructure faults
 * (`StoreUnavailableError`, `TaskTokenError`; `AbortIncompleteError` when step 1 is done and
 * step 2 is not), which are safe to retry.
 */
export async function requestAbort(input: RequestAbortInput): Promise<AbortOutcome> {
  const { store, sfn, name, reason, clock } = input;
  const current = await store.get(name);
  if (current === undefined)
    return { status: "not-found", message: `rollout "${name}" not found: nothing to abort` };

  let refusal: AbortOutcome | undefined;
  let alreadyRequested = false;
  let item: RolloutItem;
  try {
    item = await update(store, name, "latest", (latest) => {
      refusal = notRunning(latest, input.executionArn);
      if (refusal !== undefined) return null;
      alreadyRequested = latest.abortRequested && latest.abortExecutionArn === latest.executionArn;
      if (alreadyRequested) return null;
      const now = clock.now();
      return {
        ...latest,
        abortRequested: true,
        abortReason: reason,
        abortRequestedAt: now,
        abortExecutionArn: latest.executionArn,
        events: appendEvent(latest.events, { at: now, type: "AbortRequested", message: reason }),
      };
    });
  } catch (error) {
    if (error instanceof RolloutNotFoundError) {
      return { status: "not-found", message: `rollout "${name}" not found: nothing to abort` };
    }
    throw error;
  }
  if (refusal !== undefined) return refusal;

  const effectiveReason = item.abortReason ?? reason;
  const token = item.currentTaskToken;
  const resumed = `abort of ${name} was already requested (${effectiveReason}): finishing it, `;
  if (token === null) {
    return {
      status: "recorded",
      alreadyRequested,
      item,
      message: alreadyRequested
        ? `${resumed}the execution is not waiting, it stops at its next step`
        : `abort of ${name} recorded (${effectiveReason}); the execution is not waiting, it stops at its next step`,
    };
  }
  let delivery: Awaited<ReturnType<TaskTokens["sendFailure"]>>;
  try {
    delivery = await sfn.sendFailure(token, ROLLOUT_ABORTED, effectiveReason);
  } catch (error) {
    if (error instanceof TaskTokenError) {
      throw new AbortIncompleteError(name, effectiveReason, item.waitingFor, error);
    }
    throw error;
  }
  if (delivery.delivered) {
    return {
      status: "signalled",
      waitingFor: item.waitingFor,
      alreadyRequested,
      item,
      message: alreadyRequested
        ? `${resumed}the execution was waiting on ${item.waitingFor ?? "a task"} and has now been told to abort`
        : `aborting ${name}: the execution was waiting on ${item.waitingFor ?? "a task"} and has been told to abort (${effectiveReason})`,
    };
  }
  return {
    status: "token-stale",
    reason: delivery.reason,
    alreadyRequested,
    item,
    message:
      `abort of ${name} recorded (${effectiveReason}), but the ${item.waitingFor ?? "task"} wait it stored is over ` +
      `(${delivery.reason}); the execution stops at its next step. If the execution has already ended, ` +
      `the status is stale: check it with \`rollouts get ${name}\``,
  };
}

function notRunning(item: RolloutItem, expectedExecutionArn: string | undefined): AbortOutcome | undefined {
  if (!isRunning(item)) {
    return {
      status: "not-running",
      phase: item.phase,
      message: `rollout "${item.name}" is not running (phase ${item.phase}${item.message ? `: ${item.message}` : ""}): nothing to abort`,
    };
  }
  if (expectedExecutionArn !== undefined && item.executionArn !== expectedExecutionArn) {
    return {
      status: "not-running",
      phase: item.phase,
      message: `execution ${expectedExecutionArn} no longer drives rollout "${item.name}": nothing to abort`,
    };
  }
  return undefined;
}

export interface RegisterTaskTokenInput {
  store: RolloutStore;
  name: string;
  executionArn: string;
  token: string;
  waitingFor: WaitingFor;
  clock: Clock;
}

/**
 * The other half of the abort channel: a `.waitForTaskToken` handler stores its token with this,
 * which refuses (throws `RolloutAbortedError`) if an abort for its execution is already recorded,
 * so an abort can never fall between "checked" and "waiting"; and refuses
 * (`ExecutionSupersededError`) if another execution now drives the rollout.
 */
export async function registerTaskToken(input: RegisterTaskTokenInput): Promise<RolloutItem> {
  return update(input.store, input.name, "latest", (latest) => {
    assertDrives(latest, input.executionArn);
    assertNotAborted(latest, input.executionArn);
    return {
      ...latest,
      currentTaskToken: input.token,
      waitingFor: input.waitingFor,
      waitingSince: input.clock.now(),
    };
  });
}
