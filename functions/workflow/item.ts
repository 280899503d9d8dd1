import { assertDrives, assertNotAborted, assertNotHeld } from "../abort/errors.ts";
import type { LifecycleDetail, LifecycleEvent, LifecycleEventType } from "../events/port.ts";
import { lifecycleEvent } from "../events/port.ts";
import { RolloutNotFoundError } from "../store/errors.ts";
import { appendEvent, type RolloutItem, type RolloutItemInput } from "../store/schema.ts";
import { update } from "../store/update.ts";
import type { WorkflowDeps } from "./deps.ts";
import { commit, isDone, publishOnce } from "./effects.ts";
import type { WorkflowContext } from "./payloads.ts";

/** Whether a hold on the execution stops this call (`refuse`: a step starting) or not (`allow`). */
interface HoldPolicy {
  hold?: "refuse" | "allow";
}

/** How a step writes: its hold policy, and the id its write is recorded under (see `recordStep`). */
interface StepWrite extends HoldPolicy {
  step?: string;
}

/**
 * Reads the rollout item for a step of an execution, refusing (by throwing the errors the ASL
 * catches) when another execution drives the rollout, an abort was requested for this one, or —
 * for a step that starts — a hold (`PauseRequested`: the step waits for a person first).
 */
export async function drivingItem(
  deps: WorkflowDeps,
  context: WorkflowContext,
  options: HoldPolicy = {},
): Promise<RolloutItem> {
  const item = await deps.store.get(context.rollout);
  if (!item) throw new RolloutNotFoundError(context.rollout);
  assertDrives(item, context.executionArn);
  assertNotAborted(item, context.executionArn);
  if ((options.hold ?? "refuse") === "refuse") assertNotHeld(item, context.executionArn);
  return item;
}

/**
 * Writes what a step did, with the same refusals checked again inside the conditional write, so
 * an abort or a newer execution landing between the read and the write is never overwritten. A
 * write that starts a wait passes `hold: "refuse"`, so a hold cannot fall between check and wait.
 * With `step`, a write already recorded under that id for the execution is not written again: a
 * conditional write that DynamoDB applied but whose answer was lost is sent again by the SDK,
 * fails its condition, and the re-read finds the step done. `mutate` may return `null` too.
 */
export function recordStep(
  deps: WorkflowDeps,
  context: WorkflowContext,
  mutate: (item: RolloutItem, now: number) => RolloutItemInput | null,
  options: StepWrite = {},
): Promise<RolloutItem> {
  return update(deps.store, context.rollout, "latest", (latest) => {
    assertDrives(latest, context.executionArn);
    assertNotAborted(latest, context.executionArn);
    if (options.hold === "refuse") assertNotHeld(latest, context.executionArn);
    if (options.step !== undefined && isDone(latest, context, options.step)) return null;
    const next = mutate(latest, deps.clock.now());
    // A hook answers its token itself, so nothing of ours saw the answer: the execution running
    // this step is the sign its wait is over, unless the step starts another hook's wait.
    if (next === null || latest.waitingFor !== "hook" || next.waitingFor !== "hook") return next;
    return { ...next, currentTaskToken: null, waitingFor: null, waitingSince: null };
  });
}

/**
 * Appends an item event (what `rollouts get` shows); `summary`: the step's outcome in a few words.
 * The event carries the item's weight as written, so the events are also the weight's history.
 */
export function withEvent(
  item: RolloutItemInput,
  now: number,
  type: string,
  message: string,
  step?: number | null,
  summary?: string,
): RolloutItemInput {
  return {
    ...item,
    events: appendEvent(item.events, {
      at: now,
      type,
      message,
      ...(step != null ? { step } : {}),
      ...(summary !== undefined ? { summary } : {}),
      weight: item.weight,
    }),
  };
}

/**
 * `withEvent` for a write a retried handler repeats: the item event is appended once per
 * execution under `id` (recorded as done in the same write); a repeat adds nothing.
 */
export function withEventOnce(context: WorkflowContext, id: string): typeof withEvent {
  return (item, ...event) =>
    isDone(item, context, id) ? item : commit(withEvent(item, ...event), context, id, []);
}

/** A lifecycle event about the revision in `context`, as of now. */
export function eventAbout(
  deps: WorkflowDeps,
  context: WorkflowContext,
  type: LifecycleEventType,
  message: string,
  step: number | null,
  gates?: LifecycleDetail["gates"],
): LifecycleEvent {
  return lifecycleEvent(type, {
    rollout: context.rollout,
    revision: { revision: context.revision, image: context.image, digest: context.digest },
    step,
    message,
    atMs: deps.clock.now(),
    ...(gates ? { gates } : {}),
    ...(context.pass ? { pass: context.pass } : {}),
    ...(step != null && context.stepNames?.[step] ? { stepName: context.stepNames[step] } : {}),
  });
}

/**
 * Publishes a lifecycle event about the revision in `context`, after the state write succeeded,
 * once per execution: a retried handler that already published it does not publish it again.
 */
export function publish(
  deps: WorkflowDeps,
  context: WorkflowContext,
  type: LifecycleEventType,
  message: string,
  step: number | null,
  gates?: LifecycleDetail["gates"],
): Promise<void> {
  return publishOnce(deps, context, eventAbout(deps, context, type, message, step, gates));
}

/** The execution's name: the last segment of its ARN; unique per rollout and revision attempt. */
export function executionName(executionArn: string): string {
  return executionArn.split(":").at(-1) ?? executionArn;
}
