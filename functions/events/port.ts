import { z } from "zod";
import { RolloutsError } from "../../statemachine/errors.ts";
import { ESCAPED_FIELDS, escapedDetail, MARKUP_FORMATS } from "../../statemachine/notification-markup.ts";
import { GateFiguresSchema } from "../analysis/types.ts";

export { EVENT_SOURCE } from "../config.ts";

/** The lifecycle events (EventBridge `detail-type`s) teams can route to Slack or a pager. */
export const LifecycleEventTypeSchema = z.enum([
  /** A new revision started (Argo's `on-rollout-updated`). */
  "RolloutUpdated",
  "RolloutStepCompleted",
  /** The candidate's traffic weight was set (`on-scaling-replica-set`: no ReplicaSet scales here). */
  "TrafficWeightUpdated",
  /** An analysis run started (`on-analysis-run-running`). */
  "AnalysisRunRunning",
  /** An analysis run ended in Error (`on-analysis-run-error`). */
  "AnalysisRunError",
  /** A custom trigger of the notification ConfigMap whose `when` held (`detail.trigger`, `detail.condition`). */
  "NotificationTriggered",
  "RolloutPaused",
  "AnalysisRunFailed",
  "RolloutAborted",
  "RolloutCompleted",
  /** A push the trigger refused (a canary gate's rollback cooldown). */
  "RolloutPushRefused",
  /**
   * A Timer firing (a scale-down, a continued abort, a pause's end, an analysis tick) that did
   * nothing because the execution or revision that scheduled it no longer drives the rollout.
   */
  "RolloutDelayedActionSkipped",
]);
export type LifecycleEventType = z.infer<typeof LifecycleEventTypeSchema>;

/**
 * The event `detail`. Flat and stable: it is a public contract (people write EventBridge patterns
 * and Slack templates against it), so fields are only ever added.
 */
export const LifecycleDetailSchema = z.object({
  /**
   * Deterministic: the same announcement gets the same id however often a retried handler
   * publishes it (EventBridge does not deduplicate; consumers can, on this id).
   */
  id: z.string().min(1).optional(),
  rollout: z.string().min(1),
  /** Argo's revision number; null before the first revision is recorded. */
  revision: z.number().int().positive().nullable(),
  /** The revision's image and digest, when known. */
  image: z.string().nullable().default(null),
  digest: z.string().nullable().default(null),
  /** Zero-based step index; null for events not tied to a step (completed, aborted before a step). */
  step: z.number().int().nonnegative().nullable(),
  message: z.string(),
  /** ISO 8601 UTC. */
  at: z.string(),
  /** The judges' latest decisions with their figures, on events about an analysis with judges. */
  gates: z.array(GateFiguresSchema.extend({ metric: z.string() })).optional(),
  /** The pass of a release in waves (`eu`): the same step in each region is told apart by it. */
  pass: z.string().min(1).optional(),
  /** The step named with its pass (`traffic@25@eu`), on a pass's events tied to a step. */
  stepName: z.string().min(1).optional(),
  /** On `NotificationTriggered`: the custom trigger, and the index of its condition that held. */
  trigger: z.string().min(1).optional(),
  condition: z.number().int().nonnegative().optional(),
  /**
   * The fields anyone but the operator may have written (the message, the image, …) escaped for
   * each chat format (`escaped.slack.message`): what notification templates put in, so a value
   * cannot become a mention or a link (statemachine/notification-markup.ts).
   */
  escaped: z
    .record(z.enum(MARKUP_FORMATS), z.partialRecord(z.enum(ESCAPED_FIELDS), z.string().nullable()))
    .optional(),
});
export type LifecycleDetail = z.infer<typeof LifecycleDetailSchema>;

export interface LifecycleEvent {
  type: LifecycleEventType;
  detail: LifecycleDetail;
}

/**
 * The lifecycle event port. Handlers publish after their state write succeeded, so an event
 * never announces a change the store refused.
 */
export interface EventPublisher {
  publish(events: LifecycleEvent | readonly LifecycleEvent[]): Promise<void>;
}

/** EventBridge refused some entries (`FailedEntryCount > 0`) or the call failed. */
export class EventPublishError extends RolloutsError {
  override readonly name = "EventPublishError";
  /** `type: ErrorCode ErrorMessage` for each refused entry. */
  readonly failures: readonly string[];

  constructor(failures: readonly string[], options?: ErrorOptions) {
    super(
      `EventBridge did not accept ${failures.length} lifecycle event(s): ${failures.join("; ")}`,
      options,
    );
    this.failures = failures;
  }
}

/** Messages are cut to this length: EventBridge entries are capped at 256 KB and nobody reads more. */
export const MAX_DETAIL_MESSAGE = 4_000;

/**
 * Builds a lifecycle event from what a handler knows, so every handler fills the detail the
 * same way.
 */
export function lifecycleEvent(
  type: LifecycleEventType,
  input: {
    /** Deterministic id of the announcement (see `LifecycleDetail.id`). */
    id?: string;
    rollout: string;
    revision?: { revision: number; image?: string | null; digest?: string | null } | null;
    step?: number | null;
    message: string;
    atMs: number;
    gates?: LifecycleDetail["gates"];
    pass?: string;
    stepName?: string;
  },
): LifecycleEvent {
  const message =
    input.message.length > MAX_DETAIL_MESSAGE
      ? `${input.message.slice(0, MAX_DETAIL_MESSAGE - 1)}…`
      : input.message;
  const text = {
    ...(input.id !== undefined ? { id: input.id } : {}),
    rollout: input.rollout,
    image: input.revision?.image ?? null,
    digest: input.revision?.digest ?? null,
    message,
  };
  return {
    type,
    detail: LifecycleDetailSchema.parse({
      ...text,
      revision: input.revision?.revision ?? null,
      step: input.step ?? null,
      at: new Date(input.atMs).toISOString(),
      ...(input.gates && input.gates.length > 0 ? { gates: input.gates } : {}),
      ...(input.pass ? { pass: input.pass } : {}),
      ...(input.stepName ? { stepName: input.stepName } : {}),
      escaped: escapedDetail(text),
    }),
  };
}
