import { z } from "zod";
import { EXECUTION_DIGEST_HEX, EXECUTION_NAME_MAX } from "../../statemachine/names.ts";
import type { RolloutItem } from "../store/schema.ts";
import type { ImagePush } from "./event.ts";

/**
 * The input of a rollout's execution, built by the trigger. The Begin handler parses it with this
 * schema; the revision number is assigned by Begin (it knows the history), not here.
 */
export const RolloutExecutionInputSchema = z.object({
  rollout: z.string().min(1),
  revision: z.object({
    repository: z.string().min(1),
    image: z.string().min(1),
    digest: z.string().min(1),
    tag: z.string().nullable(),
  }),
  trigger: z.object({
    eventId: z.string().min(1),
    /** Epoch ms of the push (or its event's ISO 8601 `time`, as a wave coordinator's push rule gives it). */
    eventTime: z.union([z.number(), z.iso.datetime().transform((time) => Date.parse(time))]),
    generation: z.number().int().positive(),
    executionName: z.string().min(1),
    /**
     * A release in waves: when its coordinator started (`$$.Execution.StartTime`, ISO 8601, or
     * epoch ms). Orders two releases pushed in the same second (`statemachine/waves-order.ts`).
     */
    releasedAt: z.union([z.number(), z.iso.datetime().transform((time) => Date.parse(time))]).optional(),
  }),
  /**
   * A release in waves returning this rollout to a revision it had before (`rollback-all`): when
   * the revision is in the rollout's history, Begin skips the steps, as Argo Rollouts does for a
   * rollback within its rollbackWindow.
   */
  rollback: z.boolean().optional(),
  /**
   * With `rollback`: the execution of the release this rollback undoes. The rollback is refused
   * (`ExecutionSuperseded`) when another execution has taken the rollout over since — a newer
   * release owns it, and an older one must not roll it back.
   */
  undoes: z.string().min(1).optional(),
});
export type RolloutExecutionInput = z.infer<typeof RolloutExecutionInputSchema>;

/** Step Functions execution names: 1–80 characters; we use only `[A-Za-z0-9_-]`. */
export { EXECUTION_NAME_MAX };

/**
 * The execution name of a push: `<rollout>-<first 24 hex of the digest>-g<generation>`. A rollout
 * name within the spec's limit (`ROLLOUT_NAME_MAX`) stays whole up to generation 999,999; the
 * rollout part is cut only past that (or for names the spec never allowed).
 * Deterministic, so a duplicate delivery of the event computes the same name and its
 * `StartExecution` hits `ExecutionAlreadyExists` (starts nothing). The generation (incremented
 * for each accepted push, stored on the rollout item) is what lets the same digest be rolled out
 * again later (re-tagging an old image to roll back): Step Functions never reuses a Standard
 * execution name within 90 days, so a name of rollout + digest alone would silently refuse it.
 * Each rollout has its own state machine, so the rollout part is only for people reading it.
 */
export function executionName(rollout: string, digest: string, generation: number): string {
  const hex = (digest.split(":").pop() ?? digest).replace(/[^A-Za-z0-9]/g, "").slice(0, EXECUTION_DIGEST_HEX);
  const suffix = `-${hex}-g${generation}`;
  const slug = rollout
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, EXECUTION_NAME_MAX - suffix.length)
    .replace(/-+$/g, "");
  return `${slug || "rollout"}${suffix}`;
}

/**
 * How long after accepting a push a duplicate may still re-issue its `StartExecution` (crash
 * recovery). EventBridge retries delivery for up to 24 h; past that, a duplicate is only a
 * duplicate (the execution name may have left Step Functions' 90-day memory by then).
 */
export const RECOVERY_WINDOW_MS = 24 * 60 * 60 * 1000;

export type TriggerDecision =
  /** A new push: record it (generation + 1) and start an execution. */
  | { kind: "start"; generation: number; executionName: string }
  /**
   * The latest accepted push already has this digest (a redelivered event, or the same image
   * pushed under another tag). `needsStart` is true while Begin has not recorded that execution:
   * the trigger may have crashed between recording the push and starting it, so `StartExecution`
   * is re-issued with the same name (a no-op if it did start), within `RECOVERY_WINDOW_MS`.
   */
  | { kind: "duplicate"; executionName: string; needsStart: boolean }
  /** An older push delivered after a newer one was accepted: ignored. */
  | { kind: "stale"; message: string };

/**
 * Decides what a push means for a rollout, from the latest push the trigger accepted (pure).
 *
 * Out-of-order delivery: EventBridge does not guarantee order, so pushes are ordered by the
 * event's own `time`. A push older than the accepted one is stale and ignored: the newest image
 * wins, whatever order the events arrive in. Times have one-second resolution; two different
 * digests pushed within the same second are taken in delivery order (the later delivery wins).
 */
export function decideTrigger(
  item: RolloutItem | undefined,
  push: ImagePush,
  rollout: string,
  nowMs: number,
): TriggerDecision {
  const accepted = item?.trigger ?? null;
  if (accepted === null)
    return { kind: "start", generation: 1, executionName: executionName(rollout, push.digest, 1) };
  if (accepted.digest === push.digest) {
    const recorded = item?.executionArn?.endsWith(`:${accepted.executionName}`) ?? false;
    const recent = nowMs - accepted.acceptedAt < RECOVERY_WINDOW_MS;
    return { kind: "duplicate", executionName: accepted.executionName, needsStart: !recorded && recent };
  }
  if (push.eventTime < accepted.eventTime) {
    return {
      kind: "stale",
      message:
        `push of ${describe(push)} at ${new Date(push.eventTime).toISOString()} is older than the accepted ` +
        `push of ${describe(accepted)} at ${new Date(accepted.eventTime).toISOString()}: ignored`,
    };
  }
  const generation = accepted.generation + 1;
  return { kind: "start", generation, executionName: executionName(rollout, push.digest, generation) };
}

/** `tag@sha256:abcdef123456` (short digest) for messages. */
export function describe(push: { tag: string | null; digest: string }): string {
  const short = push.digest.length > 19 ? push.digest.slice(0, 19) : push.digest;
  return push.tag === null ? short : `${push.tag}@${short}`;
}
