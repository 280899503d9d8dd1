import { z } from "zod";
import type { ImagePush } from "./event.ts";

/**
 * Which rollout a push starts: the construct writes one route per `addRollout` into the trigger
 * Lambda's environment (as JSON), and the handler validates it with this schema at cold start.
 */
export const TriggerRouteSchema = z.object({
  rollout: z.string().min(1),
  repository: z.string().min(1),
  /**
   * Tag globs (`*` any run of characters, `?` one character), e.g. `["v*", "release-?"]`.
   * Absent: every push of the repository, including pushes by digest only; present: the push
   * must carry a tag matching one of them.
   */
  tags: z.array(z.string().min(1)).min(1).optional(),
  /**
   * A canary gate's rollback cooldown: a push this soon after the rollout rolled back is refused,
   * and after `maxPerHour` rollbacks within an hour pushes are refused until that hour has passed.
   */
  cooldown: z
    .object({ seconds: z.number().int().nonnegative(), maxPerHour: z.number().int().positive() })
    .optional(),
  /** CloudWatch alarm names: one going to ALARM aborts the rollout while it runs. */
  alarms: z.array(z.string().min(1)).optional(),
  /** The rollout's own state machine. */
  stateMachineArn: z
    .string()
    .regex(/^arn:[^:]+:states:[^:]*:[^:]*:stateMachine:.+$/, "must be a state machine ARN"),
});
export type TriggerRoute = z.infer<typeof TriggerRouteSchema>;

export const TriggerRoutesSchema = z.array(TriggerRouteSchema);

/** The routes a push matches, in configuration order (one repository may feed several rollouts). */
export function matchRoutes(
  routes: readonly TriggerRoute[],
  push: Pick<ImagePush, "repository" | "tag">,
): TriggerRoute[] {
  return routes.filter((route) => {
    if (route.repository !== push.repository) return false;
    if (route.tags === undefined) return true;
    const tag = push.tag;
    return tag !== null && route.tags.some((pattern) => globMatches(pattern, tag));
  });
}

/** Whole-string glob match with `*` and `?`; every other character is literal. */
export function globMatches(pattern: string, value: string): boolean {
  const source = pattern
    .split("")
    .map((ch) => (ch === "*" ? ".*" : ch === "?" ? "." : ch.replace(/[.+^${}()|[\]\\/-]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`, "s").test(value);
}
