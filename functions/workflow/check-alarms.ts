import { RolloutsError } from "../../statemachine/errors.ts";
import { RolloutAbortedError } from "../abort/errors.ts";
import { alarmAbortReason, alarmVerdict, missingAlarmsMessage } from "../alarms/check.ts";
import { AlarmReadError } from "../alarms/port.ts";
import type { WorkflowDeps } from "./deps.ts";
import { drivingItem } from "./item.ts";
import type { CheckAlarmsPayload } from "./payloads.ts";

/** An alarm check that could not be made, or named an alarm CloudWatch does not have. */
export class AlarmCheckError extends RolloutsError {
  override readonly name = "AlarmCheckFailed";
}

/**
 * A step boundary: before each step (and before Promote) the rollout's alarms are read. One in
 * ALARM stops the rollout before the next step, with the alarm's name and reason
 * (`RolloutAborted`, which the Task catches into Abort). A missing alarm or a failed read is an
 * error too (`AlarmCheckFailed`, retried by the Task, then Abort), as CodeDeploy does with
 * `ignorePollAlarmFailure: false`; with `ignorePollAlarmFailure` the step goes on and the answer
 * says what could not be checked.
 */
export async function checkAlarms(
  deps: WorkflowDeps,
  payload: CheckAlarmsPayload,
): Promise<{ checked: number; unchecked: string[] }> {
  const { context, alarms, ignorePollAlarmFailure } = payload;
  await drivingItem(deps, context, { hold: "allow" });
  if (!deps.alarms) throw new AlarmCheckError("no alarm reader is configured for this function");
  let states: Awaited<ReturnType<NonNullable<WorkflowDeps["alarms"]>["describe"]>>;
  try {
    states = await deps.alarms.describe(alarms);
  } catch (error) {
    if (!(error instanceof AlarmReadError)) throw error;
    if (ignorePollAlarmFailure) return { checked: 0, unchecked: [...alarms] };
    throw new AlarmCheckError(error.message, { cause: error });
  }
  const verdict = alarmVerdict(alarms, states);
  if (verdict.firing)
    throw new RolloutAbortedError(alarmAbortReason(verdict.firing.name, verdict.firing.reason));
  if (verdict.missing.length > 0 && !ignorePollAlarmFailure) {
    throw new AlarmCheckError(missingAlarmsMessage(verdict.missing));
  }
  return { checked: alarms.length - verdict.missing.length, unchecked: verdict.missing };
}
