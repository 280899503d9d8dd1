import type { AlarmState } from "./port.ts";

/** What an alarm check found: the first alarm firing, and the names CloudWatch does not know. */
export interface AlarmVerdict {
  firing: AlarmState | undefined;
  missing: string[];
}

/** Pure: the states CloudWatch gave for `names`, judged in the order the rollout lists them. */
export function alarmVerdict(names: readonly string[], states: readonly AlarmState[]): AlarmVerdict {
  const byName = new Map(states.map((s) => [s.name, s]));
  const firing = names.map((n) => byName.get(n)).find((s) => s?.value === "ALARM");
  return { firing, missing: names.filter((n) => !byName.has(n)) };
}

/** The abort reason of an alarm in ALARM: its name and CloudWatch's reason. */
export function alarmAbortReason(name: string, reason: string): string {
  return `CloudWatch alarm "${name}" is in ALARM${reason ? `: ${reason}` : ""}`;
}

/** A missing alarm, worded for a person (the check fails unless `ignorePollAlarmFailure`). */
export function missingAlarmsMessage(missing: readonly string[]): string {
  const list = missing.map((n) => `"${n}"`).join(", ");
  return `CloudWatch alarm${missing.length > 1 ? "s" : ""} ${list} not found: a rollout cannot be guarded by an alarm that does not exist (create it, fix the name, or set ignorePollAlarmFailure)`;
}
