import { alarmNameOf } from "../../statemachine/safety.ts";
import { type AbortOutcome, requestAbort } from "../abort/request-abort.ts";
import type { TaskTokens } from "../abort/task-tokens.ts";
import type { Clock } from "../clock.ts";
import type { RolloutStore } from "../store/port.ts";
import { alarmAbortReason } from "./check.ts";
import { AlarmStateChangeSchema, alarmNamesOf } from "./event.ts";

/** Which alarms each rollout watches (the construct writes them into the trigger's routes). */
export interface AlarmRoute {
  rollout: string;
  alarms?: readonly string[];
}

export interface OnAlarmDeps {
  store: RolloutStore;
  tokens: TaskTokens;
  clock: Clock;
  routes: readonly AlarmRoute[];
}

export type OnAlarmResult =
  | { status: "ignored"; reason: string }
  | {
      status: "handled";
      alarm: string;
      rollouts: Array<{ rollout: string; outcome: AbortOutcome["status"]; message: string }>;
    };

/**
 * The alarm rule's target: an alarm that goes to ALARM aborts, through the abort channel, every
 * running rollout that watches it, with the alarm's name and CloudWatch's reason as the abort
 * reason. A rollout that is not running (Healthy, Degraded) is left alone: the alarm guards a
 * rollout while its steps run. Event-driven: the wait the execution is in (a pause, an analysis,
 * a hook) ends at once.
 */
export async function abortOnAlarm(deps: OnAlarmDeps, event: unknown): Promise<OnAlarmResult> {
  const parsed = AlarmStateChangeSchema.safeParse(event);
  if (!parsed.success) return { status: "ignored", reason: "not a CloudWatch Alarm State Change event" };
  const change = parsed.data;
  if (change.detail.state.value !== "ALARM") {
    return {
      status: "ignored",
      reason: `alarm ${change.detail.alarmName} went to ${change.detail.state.value}`,
    };
  }
  const names = alarmNamesOf(change);
  const reason = alarmAbortReason(change.detail.alarmName, change.detail.state.reason);
  const rollouts: Extract<OnAlarmResult, { status: "handled" }>["rollouts"] = [];
  for (const route of deps.routes) {
    if (!(route.alarms ?? []).some((a) => names.has(alarmNameOf(a)))) continue;
    const outcome = await requestAbort({ ...deps, sfn: deps.tokens, name: route.rollout, reason });
    rollouts.push({ rollout: route.rollout, outcome: outcome.status, message: outcome.message });
  }
  return { status: "handled", alarm: change.detail.alarmName, rollouts };
}
