import { RolloutsError } from "../../statemachine/errors.ts";
/**
 * The alarm port: the state of the CloudWatch alarms a rollout watches, read at each step
 * boundary (the event rule delivers changes between boundaries).
 */

export type AlarmValue = "OK" | "ALARM" | "INSUFFICIENT_DATA";

export interface AlarmState {
  name: string;
  value: AlarmValue;
  /** CloudWatch's `StateReason`: why the alarm is in this state, in words. */
  reason: string;
}

export interface AlarmReader {
  /** The alarms that exist among `names` (a missing one is simply absent from the answer). */
  describe(names: readonly string[]): Promise<AlarmState[]>;
}

/** DescribeAlarms failed (throttled, denied, unreachable): the check could not be made. */
export class AlarmReadError extends RolloutsError {
  override readonly name = "AlarmReadError";
}
