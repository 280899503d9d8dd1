import { RolloutsError } from "../../statemachine/errors.ts";
/**
 * Infrastructure faults of traffic targets. Each has a stable `name` because the state machine's
 * `Retry`/`Catch` match on the error name a Lambda throws; `cause` keeps the SDK error for the
 * logs. Weight drift is not here: it is an outcome (`WeightChange`), not a fault.
 */

/** Base class, so callers can catch every target fault at once. */
export class TrafficTargetError extends RolloutsError {
  override readonly name: string = "TrafficTargetError";
}

/**
 * The candidate (or a stable side being restored) did not become ready: the deployment failed, or
 * its progress deadline passed. Thrown instead of waiting forever.
 */
export class TargetNotReadyError extends TrafficTargetError {
  override readonly name = "TargetNotReadyError";
}

/**
 * The ALB listener or rule changed (rules, conditions, actions, target groups, stickiness) since
 * this rollout read it: the write was refused so that someone else's change is not clobbered.
 */
export class ListenerChangedError extends TrafficTargetError {
  override readonly name = "ListenerChangedError";
}

/**
 * The Lambda function or alias changed concurrently (its `RevisionId` or code hash no longer
 * matches what this rollout read): the conditional update was refused.
 */
export class AliasChangedError extends TrafficTargetError {
  override readonly name = "AliasChangedError";
}

/**
 * The settings do not match what exists on AWS (a target group missing from the forward action,
 * no container with that name, a service that does not exist): a person must fix the settings.
 */
export class TargetConfigurationError extends TrafficTargetError {
  override readonly name = "TargetConfigurationError";
}

/**
 * The stored router state is invalid for this call (written by another target type, corrupted,
 * or a call out of order such as traffic to a candidate that is not ready).
 */
export class TargetStateError extends TrafficTargetError {
  override readonly name = "TargetStateError";
}
