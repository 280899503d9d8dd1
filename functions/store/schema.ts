import { z } from "zod";

/**
 * The rollout item: everything the workflow's Lambdas, the trigger, the abort channel and the CLI
 * need to know about one rollout, in one DynamoDB item keyed by rollout name. One item per rollout
 * means every change is a single-item conditional write (dynalite, the embedded store, has no
 * transactions) and two rollouts never contend.
 *
 * Fields added later must be `.default(...)`-ed so items written by an older release still parse.
 */

/** Argo Rollouts' rollout phases. */
export const RolloutPhaseSchema = z.enum(["Healthy", "Progressing", "Paused", "Degraded"]);
export type RolloutPhase = z.infer<typeof RolloutPhaseSchema>;

/** Phases in which an execution is driving the rollout (the only ones an abort can stop). */
export const RUNNING_PHASES: readonly RolloutPhase[] = ["Progressing", "Paused"];

/** What a task-token wait is waiting for; the CLI's `promote` behaves differently for each. */
export const WaitingForSchema = z.enum(["pause", "analysis", "approval", "hook"]);
export type WaitingFor = z.infer<typeof WaitingForSchema>;

/** Argo's pause reasons (`status.pauseConditions[].reason`). */
export const PauseReasonSchema = z.enum([
  "CanaryPauseStep",
  "BlueGreenPause",
  "InconclusiveAnalysisRun",
  /** A native spec's `approvalsBetween`. */
  "Approval",
  /** Someone else changed the weights (`paused-drift`). */
  "WeightDrift",
]);
export type PauseReason = z.infer<typeof PauseReasonSchema>;

/**
 * One revision of the workload: Argo numbers revisions 1, 2, 3… and the status message of an
 * aborted rollout names the number; the digest is what was actually deployed.
 */
export const RevisionSchema = z.object({
  revision: z.number().int().positive(),
  /** Full image reference, `<registry>/<repository>@<digest>`. */
  image: z.string().min(1),
  digest: z.string().min(1),
  tag: z.string().min(1).nullable().default(null),
});
export type Revision = z.infer<typeof RevisionSchema>;

/** A revision in the history kept for `undo`, with when it was recorded. */
export const HistoryEntrySchema = RevisionSchema.extend({ at: z.number() });
export type HistoryEntry = z.infer<typeof HistoryEntrySchema>;

/** One line of the rollout's event log, as `rollouts get` prints it. */
export const RolloutEventSchema = z.object({
  /** Epoch ms. */
  at: z.number(),
  /** A lifecycle type (`RolloutStepCompleted`, …) or an internal one (`AbortRequested`, `Triggered`). */
  type: z.string().min(1),
  message: z.string(),
  /** Zero-based step index when the event belongs to a step. */
  step: z.number().int().nonnegative().optional(),
  /**
   * What the step did, in a few words (`weight 25%`, `analysis Successful: …`): what `rollouts get`
   * shows beside the step, so it never has to take the message apart. Absent on events that
   * are not a step's, and on events written before it existed.
   */
  summary: z.string().optional(),
  /**
   * The canary's weight once the write that recorded this event was made: the points of the
   * weight-over-time chart (`rollouts dashboard`, `rollouts report`). Absent on events written
   * outside a workflow step, and on events written before it existed.
   */
  weight: z.number().min(0).max(100).optional(),
});
export type RolloutEvent = z.infer<typeof RolloutEventSchema>;

/** A pause in progress (`status.pauseConditions` in Argo). */
export const PauseInfoSchema = z.object({
  reason: PauseReasonSchema,
  /** Epoch ms when the pause began. */
  startedAt: z.number(),
  /** Epoch ms when the Timer resumes it; null when a person must (`rollouts promote`). */
  until: z.number().nullable(),
});

/**
 * The latest push the trigger accepted for this rollout. It is how the trigger tells a duplicate
 * event from a new one and a late (out-of-order) event from a newer one: see
 * `functions/trigger/decide.ts`.
 */
export const TriggerRecordSchema = z.object({
  repository: z.string().min(1),
  digest: z.string().min(1),
  tag: z.string().nullable(),
  image: z.string().min(1),
  /** The EventBridge event id (redeliveries of one event share it). */
  eventId: z.string().min(1),
  /** The event's `time`, epoch ms: orders pushes even when EventBridge delivers them out of order. */
  eventTime: z.number(),
  /** Incremented on each accepted push; part of the execution name so a digest can be rolled out again. */
  generation: z.number().int().positive(),
  executionName: z.string().min(1),
  /** Epoch ms when the trigger accepted it. */
  acceptedAt: z.number(),
});

/**
 * A side effect a step committed to in its state write: performed after the write, and by a
 * retried handler if the first attempt died before it (`functions/workflow/effects.ts`).
 */
export const SideEffectSchema = z.discriminatedUnion("kind", [
  /** A lifecycle event, built when the state was written (so a retry publishes the same one). */
  z.object({ kind: z.literal("publish"), id: z.string().min(1), event: z.unknown() }),
  /** A Timer request (`{at, key, payload}`). */
  z.object({
    kind: z.literal("schedule"),
    id: z.string().min(1),
    at: z.number(),
    key: z.string().min(1),
    payload: z.unknown(),
  }),
  /** A model registry update (`functions/registry/`): the promoted model, or the rolled-back one. */
  z.object({
    kind: z.literal("registry"),
    id: z.string().min(1),
    action: z.enum(["promoted", "rolled-back"]),
    registry: z.unknown(),
    model: z.object({ modelPackage: z.string().optional(), version: z.string().nullable() }),
    reason: z.string().optional(),
  }),
]);
export type SideEffect = z.infer<typeof SideEffectSchema>;

/** Side effects done and pending, for one execution: Begin starts them afresh. */
export const SideEffectsSchema = z.object({
  executionArn: z.string().nullable(),
  /** Ids of the steps whose state was written and of the side effects performed, newest last, bounded. */
  done: z.array(z.string()),
  pending: z.array(SideEffectSchema),
});
export type SideEffects = z.infer<typeof SideEffectsSchema>;

/** The rollout item as the domain sees it (no `pk`/`sk`: those are the adapter's business). */
export const RolloutItemSchema = z.object({
  name: z.string().min(1),
  phase: RolloutPhaseSchema,
  message: z.string().default(""),
  stableRevision: RevisionSchema.nullable().default(null),
  currentRevision: RevisionSchema.nullable().default(null),
  /** Zero-based index of the step being run (equals `stepCount` once all steps are done). */
  stepIndex: z.number().int().nonnegative().default(0),
  stepCount: z.number().int().nonnegative().default(0),
  /** The strategy of the running spec (recorded by Begin). */
  strategy: z.enum(["canary", "blueGreen"]).nullable().default(null),
  /** What each step of the running spec does, in words, for `rollouts get`. */
  stepLabels: z.array(z.string()).default([]),
  /** Percent of traffic on the canary. */
  weight: z.number().min(0).max(100).default(0),
  /** The task token the execution waits on: the abort channel and `promote` send to it. */
  currentTaskToken: z.string().min(1).nullable().default(null),
  waitingFor: WaitingForSchema.nullable().default(null),
  /** Epoch ms when the current wait began. */
  waitingSince: z.number().nullable().default(null),
  abortRequested: z.boolean().default(false),
  abortReason: z.string().nullable().default(null),
  abortRequestedAt: z.number().nullable().default(null),
  /** The execution the abort was aimed at, so a newer execution does not abort itself. */
  abortExecutionArn: z.string().nullable().default(null),
  /** The execution currently driving the rollout. */
  executionArn: z.string().nullable().default(null),
  /**
   * A hold on the execution: its background analysis ended Inconclusive, so the rollout waits for
   * a person before its next step (`rollouts promote` clears it). See `functions/abort/request-hold.ts`.
   */
  hold: z
    .object({ message: z.string(), at: z.number(), executionArn: z.string().min(1) })
    .nullable()
    .default(null),
  /** Opaque JSON the traffic target keeps between steps (e.g. ALB rule ARNs, previous weights). */
  targetState: z.unknown().default(null),
  pause: PauseInfoSchema.nullable().default(null),
  /**
   * Weights found changed by someone else at a step. `approved` is set by \`rollouts promote\`;
   * the step then runs again and overwrites them (paused-drift).
   */
  drift: z
    .object({ step: z.number().int().nonnegative(), message: z.string(), approved: z.boolean() })
    .nullable()
    .default(null),
  /** Bounded (`MAX_EVENTS`), newest last. */
  events: z.array(RolloutEventSchema).default([]),
  /** Revisions previously made stable, newest last, bounded (`MAX_HISTORY`): what `undo` goes back to. */
  history: z.array(HistoryEntrySchema).default([]),
  trigger: TriggerRecordSchema.nullable().default(null),
  /**
   * Revisions the rollout rolled back (aborted), newest last, bounded (`MAX_ROLLBACKS`): what a
   * canary gate's rollback cooldown, applied by the trigger, reads.
   */
  rollbacks: z.array(z.object({ digest: z.string().min(1), at: z.number() })).default([]),
  /**
   * The push of the release whose execution drives the rollout, as the execution's input named it
   * (recorded by Begin on each takeover). In a release in waves it orders the releases reaching
   * this region (`statemachine/waves-order.ts`): an older one does not take it from a newer one.
   */
  startedBy: z
    .object({
      eventId: z.string().min(1),
      eventTime: z.number(),
      executionName: z.string().min(1),
      /** Epoch ms when a release's coordinator started. */
      releasedAt: z.number().optional(),
    })
    .nullable()
    .default(null),
  /**
   * What the driving execution's steps have done and still have to do after their state writes
   * (schedule a timer, publish an event), so a retried Lambda resumes what is missing and repeats
   * nothing (`functions/workflow/effects.ts`).
   */
  effects: SideEffectsSchema.default({ executionArn: null, done: [], pending: [] }),
  /** Epoch ms of the first write. */
  createdAt: z.number(),
  /** Epoch ms of the last write (stamped by the store). */
  updatedAt: z.number(),
  /** Optimistic lock: every write is conditional on it and increments it. Starts at 1. */
  version: z.number().int().positive(),
});
export type RolloutItem = z.infer<typeof RolloutItemSchema>;

/** What a caller writes: the store owns `version` and `updatedAt`. */
export type RolloutItemInput = Omit<RolloutItem, "version" | "updatedAt"> &
  Partial<Pick<RolloutItem, "version" | "updatedAt">>;

/** The events list keeps the newest 50 (a DynamoDB item is capped at 400 KB). */
export const MAX_EVENTS = 50;
/** Rollbacks kept for the cooldown: more than any hour's worth a sane policy allows. */
export const MAX_ROLLBACKS = 20;
/** Argo's default `revisionHistoryLimit` is 10. */
export const MAX_HISTORY = 10;
/** Event messages longer than this are cut, so one noisy provider cannot fill the item. */
export const MAX_EVENT_MESSAGE = 2_000;

/**
 * An item that waits on nothing: no task token, no pause, no hold, no drift reported. A release
 * that starts, ends or rolls back leaves no wait of the release before it behind.
 */
export const NOT_WAITING = {
  currentTaskToken: null,
  waitingFor: null,
  waitingSince: null,
  pause: null,
  hold: null,
  drift: null,
} as const satisfies Partial<RolloutItemInput>;

/** A fresh item for a rollout that has never run: Healthy with nothing deployed yet. */
export function newRolloutItem(name: string, nowMs: number): RolloutItemInput {
  return RolloutItemSchema.omit({ version: true, updatedAt: true }).parse({
    name,
    phase: "Healthy",
    message: "",
    createdAt: nowMs,
  });
}

/** Appends an event, keeping the newest `limit` (pure: returns a new array). */
export function appendEvent(
  events: readonly RolloutEvent[],
  event: RolloutEvent,
  limit = MAX_EVENTS,
): RolloutEvent[] {
  const message =
    event.message.length > MAX_EVENT_MESSAGE
      ? `${event.message.slice(0, MAX_EVENT_MESSAGE - 1)}…`
      : event.message;
  const summary =
    event.summary !== undefined && event.summary.length > MAX_EVENT_MESSAGE
      ? `${event.summary.slice(0, MAX_EVENT_MESSAGE - 1)}…`
      : event.summary;
  return [...events, { ...event, message, ...(summary === undefined ? {} : { summary }) }].slice(-limit);
}

/** Appends a revision to the history, keeping the newest `limit` (pure). */
export function pushHistory(
  history: readonly HistoryEntry[],
  entry: HistoryEntry,
  limit = MAX_HISTORY,
): HistoryEntry[] {
  return [...history, entry].slice(-limit);
}

/** True when an execution is driving the rollout (Progressing or Paused with an execution recorded). */
export function isRunning(item: Pick<RolloutItem, "phase" | "executionArn">): boolean {
  return item.executionArn !== null && RUNNING_PHASES.includes(item.phase);
}
