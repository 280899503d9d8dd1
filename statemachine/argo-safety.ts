import type { Origin } from "./analysis-resolve.ts";
import { zodProblems } from "./analysis-resolve.ts";
import type { KubeObject } from "./argo-schema.ts";
import { parseDuration } from "./duration.ts";
import type { Problem } from "./problems.ts";
import {
  ALARMS_ANNOTATION,
  AlarmsSchema,
  HOOK_POINTS,
  type HookPoint,
  HooksSchema,
  IGNORE_POLL_ALARM_FAILURE_ANNOTATION,
  splitAlarmList,
} from "./safety.ts";
import type { RolloutSpec } from "./spec.ts";

/**
 * The annotations of an Argo `Rollout` that name its hooks: `rollouts.sfn/hook-before-traffic`,
 * `rollouts.sfn/hook-after-traffic`, `rollouts.sfn/hook-after-promotion` (a function ARN each),
 * and `rollouts.sfn/hook-timeout` (a duration, for all three). Argo itself ignores annotations
 * it does not know, so the manifest stays valid for Argo Rollouts.
 */
export const HOOK_ANNOTATIONS: Readonly<Record<HookPoint, string>> = {
  beforeTraffic: "rollouts.sfn/hook-before-traffic",
  afterTraffic: "rollouts.sfn/hook-after-traffic",
  afterPromotion: "rollouts.sfn/hook-after-promotion",
};
export const HOOK_TIMEOUT_ANNOTATION = "rollouts.sfn/hook-timeout";

type Safety = Pick<RolloutSpec, "alarms" | "ignorePollAlarmFailure" | "hooks">;

/** Alarms and hooks from a Rollout's annotations; each bad value is a problem at its annotation. */
export function argoSafety(object: KubeObject, origin: Origin, problems: Problem[]): Safety {
  const annotations = object.metadata?.annotations ?? {};
  const at = (key: string) => `metadata.annotations["${key}"]`;
  const out: Safety = {};
  const alarms = annotations[ALARMS_ANNOTATION];
  if (alarms !== undefined) {
    const parsed = AlarmsSchema.safeParse(splitAlarmList(alarms));
    if (parsed.success) out.alarms = parsed.data;
    else problems.push(...zodProblems(parsed.error, origin, at(ALARMS_ANNOTATION)));
  }
  const ignore = annotations[IGNORE_POLL_ALARM_FAILURE_ANNOTATION];
  if (ignore !== undefined) {
    if (ignore === "true" || ignore === "false") out.ignorePollAlarmFailure = ignore === "true";
    else
      problems.push({
        ...origin,
        path: at(IGNORE_POLL_ALARM_FAILURE_ANNOTATION),
        message: `must be "true" or "false", not "${ignore}"`,
      });
  }
  let timeoutSeconds: number | undefined;
  const timeout = annotations[HOOK_TIMEOUT_ANNOTATION];
  if (timeout !== undefined) {
    const d = parseDuration(timeout);
    if ("error" in d) problems.push({ ...origin, path: at(HOOK_TIMEOUT_ANNOTATION), message: d.error });
    else timeoutSeconds = Math.ceil(d.seconds);
  }
  const hooks: Record<string, unknown> = {};
  for (const point of HOOK_POINTS) {
    const fn = annotations[HOOK_ANNOTATIONS[point]];
    if (fn !== undefined) hooks[point] = { function: fn, ...(timeoutSeconds ? { timeoutSeconds } : {}) };
  }
  if (Object.keys(hooks).length > 0) {
    const parsed = HooksSchema.safeParse(hooks);
    if (parsed.success) out.hooks = parsed.data;
    else
      for (const issue of parsed.error.issues) {
        const point = issue.path[0] as HookPoint;
        const key = issue.path[1] === "timeoutSeconds" ? HOOK_TIMEOUT_ANNOTATION : HOOK_ANNOTATIONS[point];
        problems.push({ ...origin, path: at(key), message: issue.message });
      }
  }
  return out;
}
