import { z } from "zod";
import { CustomTriggersSchema } from "../../statemachine/notification-object.ts";
import { AnalysisSpecSchema, HOOK_POINTS, StepSchema } from "../../statemachine/spec.ts";
import { RolloutExecutionInputSchema } from "../trigger/decide.ts";

/**
 * The payloads the compiled workflow sends to each Lambda (see `statemachine/compile.ts`): they
 * are external input, so every handler parses its own with these schemas.
 */

/** What Begin returns and every later Task receives as `context`. */
export const WorkflowContextSchema = z.object({
  rollout: z.string().min(1),
  /** Argo's revision number of the candidate. */
  revision: z.number().int().positive(),
  image: z.string().min(1),
  digest: z.string().min(1),
  tag: z.string().nullable(),
  executionArn: z.string().min(1),
  /** The pass of a release in waves this execution runs (`eu`), which its lifecycle events carry. */
  pass: z.string().min(1).optional(),
  /** A pass's step names (`traffic@25@eu`), one per step, which its lifecycle events carry. */
  stepNames: z.array(z.string()).optional(),
});
export type WorkflowContext = z.infer<typeof WorkflowContextSchema>;

/** The static description of the rollout the compiler embeds in every Task. */
export const RolloutRefSchema = z.object({
  name: z.string().min(1),
  /** The spec's revision (hash of the pod template), not Argo's revision number. */
  revision: z.string(),
  strategy: z.enum(["canary", "blueGreen"]),
  stepCount: z.number().int().nonnegative(),
  /** The pass of a release in waves (`eu`), when the rollout is one. */
  pass: z.string().min(1).optional(),
});

export const BeginPayloadSchema = z.object({
  input: RolloutExecutionInputSchema,
  executionId: z.string().min(1),
  rollout: RolloutRefSchema,
  /** What each step does, in words (`setWeight: 25`, `analysis: success-rate`). */
  stepLabels: z.array(z.string()).default([]),
  /** A pass's step names (`traffic@25@eu`), for its lifecycle events. */
  stepNames: z.array(z.string()).optional(),
  /** The notification ConfigMap's custom triggers, evaluated for the new revision. */
  customTriggers: CustomTriggersSchema.optional(),
  target: z.unknown().optional(),
});
export type BeginPayload = z.infer<typeof BeginPayloadSchema>;

const Base = z.object({
  context: WorkflowContextSchema,
  rollout: RolloutRefSchema,
  target: z.unknown().optional(),
});

/** setWeight, setHeaderRoute, setMirrorRoute and preview steps. */
export const StepPayloadSchema = Base.extend({
  stepIndex: z.number().int().nonnegative(),
  step: StepSchema,
  /** `ignore`: weights changed by someone else are overwritten instead of pausing (native `onDrift`). */
  onDrift: z.enum(["pause", "ignore"]).optional(),
  /** An `experiment` step's two Tasks: `start` creates its ReplicaSets, `stop` deletes them and completes the step. */
  experiment: z.enum(["start", "stop"]).optional(),
});
export type StepPayload = z.infer<typeof StepPayloadSchema>;

/** Readiness polls: after the candidate starts (`stepIndex` null) and after weight changes. */
export const CheckReadyPayloadSchema = Base.extend({
  stepIndex: z.number().int().nonnegative().nullable(),
});
export type CheckReadyPayload = z.infer<typeof CheckReadyPayloadSchema>;

/** The waits that are not steps of the spec: a person decides. */
export const ApprovalStepSchema = z.object({
  kind: z.literal("approval"),
  /** Inconclusive: the step's analysis; paused-drift: weights changed; held: the background analysis was Inconclusive. */
  reason: z.enum(["Inconclusive", "paused-drift", "held"]),
});

export const AwaitPayloadSchema = Base.extend({
  stepIndex: z.number().int().nonnegative(),
  step: z.union([StepSchema, ApprovalStepSchema]),
  taskToken: z.string().min(1),
  /** The analysis message, for an Inconclusive approval. */
  message: z.string().optional(),
});
export type AwaitPayload = z.infer<typeof AwaitPayloadSchema>;

export const StartAnalysisPayloadSchema = z.union([
  Base.extend({
    stepIndex: z.number().int().nonnegative(),
    step: StepSchema,
    taskToken: z.string().min(1),
  }),
  Base.extend({
    stepIndex: z.number().int().nonnegative(),
    background: z.literal(true),
    analysis: AnalysisSpecSchema,
  }),
]);
export type StartAnalysisPayload = z.infer<typeof StartAnalysisPayloadSchema>;

/** A step boundary's alarm check (alarm names, not ARNs). */
export const CheckAlarmsPayloadSchema = Base.extend({
  stepIndex: z.number().int().nonnegative(),
  alarms: z.array(z.string().min(1)).min(1),
  ignorePollAlarmFailure: z.boolean().default(false),
});
export type CheckAlarmsPayload = z.infer<typeof CheckAlarmsPayloadSchema>;

/** A lifecycle hook's wait: the hook, where it runs, and the token its function answers. */
export const HookPayloadSchema = Base.extend({
  stepIndex: z.number().int().nonnegative().nullable(),
  hook: z.object({
    point: z.enum(HOOK_POINTS),
    function: z.string().min(1),
    timeoutSeconds: z.number().int().positive(),
    heartbeatSeconds: z.number().int().positive().optional(),
  }),
  taskToken: z.string().min(1),
});
export type HookPayload = z.infer<typeof HookPayloadSchema>;

export const PromotePayloadSchema = Base.extend({
  scaleDownDelaySeconds: z.number().int().nonnegative(),
});
export type PromotePayload = z.infer<typeof PromotePayloadSchema>;

export const AbortPayloadSchema = Base.extend({
  /** What the Catch (or the failed analysis' Pass state) put in `$.error`. */
  error: z.object({ Error: z.string(), Cause: z.string().optional() }).loose(),
  onFailure: z.enum(["rollback", "stop"]),
  abortScaleDownDelaySeconds: z.number().int().nonnegative(),
});
export type AbortPayload = z.infer<typeof AbortPayloadSchema>;

/**
 * The execution and revision a delayed action belongs to. A firing is delivered long after it
 * was scheduled; by then a newer execution may drive the rollout (or the same execution may have
 * moved on), so `resume` does the work only while both are still the item's current ones.
 *
 * Both are optional: firings scheduled by an earlier release, still pending across an upgrade,
 * carry no revision, and a tick, a scale-down or a continued abort carried no execution either.
 * `resume` checks what such a firing does carry (and, for a tick, its run's execution). A pause
 * has always named its execution: it still must.
 */
const DelayedOwner = {
  /** The execution that scheduled the action. */
  executionArn: z.string().min(1).optional(),
  /** Argo's revision number of that execution's candidate. */
  revision: z.number().int().positive().optional(),
};

/** What a Timer firing carries: every delayed piece of work of a rollout. */
export const ResumePayloadSchema = z.discriminatedUnion("kind", [
  /** A timed pause is over: send its token. */
  z.object({
    kind: z.literal("pause"),
    rollout: z.string(),
    ...DelayedOwner,
    executionArn: z.string().min(1),
    token: z.string(),
  }),
  /** An analysis run has measurements due. */
  z.object({ kind: z.literal("tick"), rollout: z.string(), ...DelayedOwner, runId: z.string() }),
  /** The replaced (or aborted) side may be scaled down now, or later. */
  z.object({
    kind: z.literal("scale-down"),
    rollout: z.string(),
    ...DelayedOwner,
    target: z.unknown(),
    attempt: z.number().int(),
  }),
  /** An abort that had to bring the old side back first: try again. */
  z.object({
    kind: z.literal("abort-continue"),
    rollout: z.string(),
    ...DelayedOwner,
    target: z.unknown(),
    abortScaleDownDelaySeconds: z.number().int().nonnegative(),
    attempt: z.number().int(),
  }),
]);
export type ResumePayload = z.infer<typeof ResumePayloadSchema>;
