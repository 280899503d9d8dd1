import { z } from "zod";
import { formatDuration } from "./duration.ts";
import { LIMIT_MESSAGES, MAX_WAIT_SECONDS } from "./limits.ts";

/**
 * What stops a rollout besides its analyses: CloudWatch alarms the team already has (CodeDeploy's
 * alarm rollback), and lifecycle hooks, Lambda functions that answer with a verdict (CodeDeploy's
 * BeforeAllowTraffic / AfterAllowTraffic, Argo's pre/post-promotion Job, Flagger's webhooks).
 */

/** CloudWatch's alarm name: 1–255 characters, no control characters. */
const ALARM_NAME = /^[^\p{Cc}]{1,255}$/u;
/** `arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>`. */
const ALARM_ARN = /^arn:aws[a-z-]*:cloudwatch:([a-z0-9-]+):(\d{12}):alarm:(.+)$/;

/** DescribeAlarms takes at most 100 names in one call: one call per boundary check. */
export const MAX_ALARMS = 100;

/** An alarm's name, or the name inside its ARN. */
export function alarmNameOf(ref: string): string {
  return ALARM_ARN.exec(ref)?.[3] ?? ref;
}

/** The region and account of an alarm ARN, or undefined for a plain name. */
export function alarmArnParts(ref: string): { region: string; account: string } | undefined {
  const m = ALARM_ARN.exec(ref);
  return m ? { region: m[1] as string, account: m[2] as string } : undefined;
}

export const AlarmRefSchema = z
  .string()
  .refine((ref) => (ref.startsWith("arn:") ? ALARM_ARN.test(ref) : ALARM_NAME.test(ref)), {
    error: (issue) =>
      String(issue.input).startsWith("arn:")
        ? `"${String(issue.input)}" is not a CloudWatch alarm ARN (arn:aws:cloudwatch:REGION:ACCOUNT:alarm:NAME)`
        : "an alarm name is 1 to 255 characters without control characters",
  });

/** The alarms a rollout watches: names or ARNs, each at most once. */
export const AlarmsSchema = z
  .array(AlarmRefSchema)
  .min(1, "give at least one alarm, or leave alarms out")
  .max(MAX_ALARMS, `at most ${MAX_ALARMS} alarms (DescribeAlarms reads 100 names in one call)`)
  .refine((refs) => new Set(refs.map(alarmNameOf)).size === refs.length, {
    message: "an alarm is named twice",
  });

/** A Lambda function ARN (unqualified, a version or an alias); a hook names the function it runs. */
const FUNCTION_ARN =
  /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{1,128})?$/;

/** Ten minutes: CodeDeploy gives a lifecycle hook an hour; a rollout waits for a test, not a release. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 600;

export const HookSchema = z
  .object({
    /** The function's ARN. */
    function: z
      .string()
      .regex(FUNCTION_ARN, "must be a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME)"),
    /** Seconds the workflow waits for the hook's verdict before it aborts. */
    timeoutSeconds: z
      .number()
      .int()
      .positive()
      .max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait)
      .default(DEFAULT_HOOK_TIMEOUT_SECONDS),
    /** Seconds between heartbeats the hook must send (SendTaskHeartbeat); absent: none required. */
    heartbeatSeconds: z.number().int().positive().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait).optional(),
  })
  .strict()
  .refine((h) => h.heartbeatSeconds === undefined || h.heartbeatSeconds < h.timeoutSeconds, {
    message: "heartbeatSeconds must be less than timeoutSeconds",
    path: ["heartbeatSeconds"],
  });

/** Where a hook runs in the workflow. */
export const HOOK_POINTS = ["beforeTraffic", "afterTraffic", "afterPromotion"] as const;
export type HookPoint = (typeof HOOK_POINTS)[number];

export const HooksSchema = z
  .object({
    /** Once the candidate is ready, before the first step moves any traffic to it. */
    beforeTraffic: HookSchema.optional(),
    /** After every weight change that gives the candidate traffic, before the next step. */
    afterTraffic: HookSchema.optional(),
    /** After the last step, with all traffic on the candidate, before the release is final. */
    afterPromotion: HookSchema.optional(),
  })
  .strict();

export type Hook = z.infer<typeof HookSchema>;
export type Hooks = z.infer<typeof HooksSchema>;

/**
 * The annotation that gives an Argo `Rollout` its alarms: names or ARNs separated by commas or
 * new lines (`rollouts.sfn/alarms: "shop-5xx, shop-latency-p99"`); spaces around each are dropped.
 */
export const ALARMS_ANNOTATION = "rollouts.sfn/alarms";
/** `"true"`: a missing alarm or a failed DescribeAlarms does not stop the rollout. */
export const IGNORE_POLL_ALARM_FAILURE_ANNOTATION = "rollouts.sfn/ignore-poll-alarm-failure";

/** What guards a rollout besides its analyses, one line each: what `rollouts plan` prints. */
export function describeGuards(spec: {
  alarms?: readonly string[] | undefined;
  ignorePollAlarmFailure?: boolean | undefined;
  hooks?: Hooks | undefined;
}): string[] {
  const lines: string[] = [];
  if (spec.alarms && spec.alarms.length > 0) {
    lines.push(
      `alarms: ${spec.alarms.map(alarmNameOf).join(", ")}: one going to ALARM aborts the running step at once; checked before every step and Promote; a missing alarm ${spec.ignorePollAlarmFailure ? "is skipped (ignorePollAlarmFailure)" : "aborts"}`,
    );
  }
  const where: Record<HookPoint, string> = {
    beforeTraffic: "before any traffic moves",
    afterTraffic: "after every weight change",
    afterPromotion: "after the last step, before Promote",
  };
  for (const point of HOOK_POINTS) {
    const hook = spec.hooks?.[point];
    if (!hook) continue;
    const heartbeat = hook.heartbeatSeconds
      ? `, a heartbeat every ${formatDuration(hook.heartbeatSeconds)}`
      : "";
    lines.push(
      `hook ${point}: ${hook.function} ${where[point]}, verdict within ${formatDuration(hook.timeoutSeconds)}${heartbeat}`,
    );
  }
  return lines;
}

/** The names in an alarms annotation. */
export function splitAlarmList(value: string): string[] {
  return value
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
