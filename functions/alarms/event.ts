import { z } from "zod";
import { alarmNameOf } from "../../statemachine/safety.ts";

/** The source and detail-type of the event CloudWatch puts on the default bus. */
export const ALARM_EVENT = { source: "aws.cloudwatch", detailType: "CloudWatch Alarm State Change" } as const;

/** The fields of a `CloudWatch Alarm State Change` event the abort reads (others are ignored). */
export const AlarmStateChangeSchema = z.object({
  source: z.literal(ALARM_EVENT.source),
  "detail-type": z.literal(ALARM_EVENT.detailType),
  resources: z.array(z.string()).default([]),
  detail: z.object({
    alarmName: z.string().min(1),
    state: z.object({ value: z.string(), reason: z.string().default("") }),
  }),
});
export type AlarmStateChange = z.infer<typeof AlarmStateChangeSchema>;

/** True for an event CloudWatch sends when an alarm changes state. */
export function isAlarmEvent(event: unknown): boolean {
  const e = event as { source?: unknown; "detail-type"?: unknown } | null;
  return e?.source === ALARM_EVENT.source && e?.["detail-type"] === ALARM_EVENT.detailType;
}

/** The alarm names an event is about: its `alarmName`, and the name in each alarm ARN it lists. */
export function alarmNamesOf(event: AlarmStateChange): Set<string> {
  return new Set([event.detail.alarmName, ...event.resources.map(alarmNameOf)]);
}
