import { RolloutsError } from "../../statemachine/errors.ts";
import type { RolloutItem } from "../store/schema.ts";

/** The Step Functions error name of an abort: every Task state's `Catch` routes it to the Abort state. */
export const ROLLOUT_ABORTED = "RolloutAborted";

/**
 * Thrown by a Lambda that finds `abortRequested` on the rollout item (and sent as the error of
 * `SendTaskFailure` by the abort channel). Its `name` is the Step Functions error name, which is
 * what the ASL's `Catch` matches.
 */
export class RolloutAbortedError extends RolloutsError {
  override readonly name = ROLLOUT_ABORTED;
  readonly reason: string;

  constructor(reason: string, options?: ErrorOptions) {
    super(reason, options);
    this.reason = reason;
  }
}

/**
 * Throws `RolloutAbortedError` if an abort was requested for the execution calling it. Every
 * handler calls it inside its read-modify-write mutation, so an abort that lands between its read
 * and its write is seen on the retry (the conditional write fails, the mutation runs again).
 *
 * `executionArn` scopes the check: an abort aimed at an older execution (a superseded revision)
 * does not stop the newer one. Without it, any pending abort counts.
 */
export function assertNotAborted(
  item: Pick<RolloutItem, "name" | "abortRequested" | "abortReason" | "abortExecutionArn">,
  executionArn?: string,
): void {
  if (!item.abortRequested) return;
  if (
    executionArn !== undefined &&
    item.abortExecutionArn !== null &&
    item.abortExecutionArn !== executionArn
  ) {
    return;
  }
  throw new RolloutAbortedError(item.abortReason ?? `abort requested for rollout ${item.name}`);
}

/** Argo's status message of an aborted rollout, kept until the spec or image changes. */
export function abortedStatusMessage(revision: number | null, reason: string): string {
  const target = revision === null ? "the new revision" : `revision ${revision}`;
  return `${ROLLOUT_ABORTED}: Rollout aborted update to ${target}: ${reason}`;
}

/**
 * A Lambda of an execution that no longer drives the rollout (a newer revision's execution took
 * over). Distinct from `RolloutAborted` so the ASL can end the old execution without running the
 * Abort state, which would move traffic that now belongs to the newer execution.
 */
export class ExecutionSupersededError extends RolloutsError {
  override readonly name = "ExecutionSuperseded";

  constructor(executionArn: string, current: string | null, options?: ErrorOptions) {
    super(`execution ${executionArn} no longer drives the rollout (now: ${current ?? "none"})`, options);
  }
}

/**
 * How the trigger words the abort of an older revision's execution when a newer push supersedes
 * it (`supersededReason(push)`); Abort reads it back (`isSupersedeReason`) to end that execution
 * as superseded rather than as a failed rollout.
 */
const SUPERSEDED_BY = "superseded by a newer revision: ";

export const supersededReason = (newer: string): string => `${SUPERSEDED_BY}${newer}`;

export const isSupersedeReason = (reason: string | null): boolean =>
  reason?.startsWith(SUPERSEDED_BY) === true;

/** Throws `ExecutionSupersededError` unless `executionArn` is the execution recorded on the item. */
export function assertDrives(item: Pick<RolloutItem, "executionArn">, executionArn: string): void {
  if (item.executionArn !== executionArn) throw new ExecutionSupersededError(executionArn, item.executionArn);
}

/**
 * The Step Functions error name of a hold: an Inconclusive background analysis pauses the rollout
 * for a person, as Argo Rollouts does. Every step's Task catches it into that step's `-Held` wait,
 * which `rollouts promote` ends (the step then runs again) and `rollouts abort` fails.
 */
export const PAUSE_REQUESTED = "PauseRequested";

/** Thrown by a step's Lambda that finds a hold for its execution on the rollout item. */
export class PauseRequestedError extends RolloutsError {
  override readonly name = PAUSE_REQUESTED;
}

/** Throws `PauseRequestedError` if a hold was requested for the execution calling it. */
export function assertNotHeld(item: Pick<RolloutItem, "hold">, executionArn: string): void {
  if (item.hold && item.hold.executionArn === executionArn) throw new PauseRequestedError(item.hold.message);
}
