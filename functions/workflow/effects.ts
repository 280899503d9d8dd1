import { createHash } from "node:crypto";
import { LifecycleDetailSchema, type LifecycleEvent, LifecycleEventTypeSchema } from "../events/port.ts";
import { modelOf, RegistrySettingsSchema, registryOf } from "../registry/settings.ts";
import type { RolloutItem, RolloutItemInput, SideEffect, SideEffects } from "../store/schema.ts";
import { update } from "../store/update.ts";
import type { ScheduleRequest } from "../timer/port.ts";
import type { WorkflowDeps } from "./deps.ts";
import type { WorkflowContext } from "./payloads.ts";

/**
 * Side effects that survive Lambda retries. A step writes its state and, in the same conditional
 * write, what it still has to do afterwards (schedule a timer, publish an event) under the step's
 * id; then it performs each of those and marks it done. A retried invocation finds its step's id
 * done and only performs what is still pending, so a crash between the write and a side effect
 * is repaired, and nothing is done twice: no second event, no second rollback, no lost
 * scale-down. Events carry a deterministic id (`LifecycleDetail.id`), so the rare repeat (the
 * event was delivered, the answer lost) is recognisable as the same announcement.
 */

/** Done ids kept per execution: enough for every step of the longest spec, bounded for the item's size. */
export const MAX_DONE = 200;

const fresh = (executionArn: string): SideEffects => ({ executionArn, done: [], pending: [] });

/** The execution's record: the item's when it belongs to `executionArn`, an empty one otherwise. */
function recordOf(item: Pick<RolloutItem, "effects">, executionArn: string): SideEffects {
  return item.effects.executionArn === executionArn ? item.effects : fresh(executionArn);
}

/** A short, stable id for a task token (tokens are long): part of the id of a wait. */
export function tokenId(token: string | null): string {
  return token === null ? "none" : createHash("sha256").update(token).digest("hex").slice(0, 12);
}

/** Whether the step `id` of the execution in `context` already wrote its state. */
export function isDone(item: Pick<RolloutItem, "effects">, context: WorkflowContext, id: string): boolean {
  return recordOf(item, context.executionArn).done.includes(id);
}

/** The done ids of the execution in `context` that start with `prefix`. */
export function doneUnder(
  item: Pick<RolloutItem, "effects">,
  context: WorkflowContext,
  prefix: string,
): string[] {
  return recordOf(item, context.executionArn).done.filter((id) => id.startsWith(prefix));
}

/** A lifecycle event to publish after the state write; the event's id derives from the step's. */
export function publishEffect(context: WorkflowContext, step: string, event: LifecycleEvent): SideEffect {
  const id = `${step}/${event.type}`;
  return {
    kind: "publish",
    id,
    event: { ...event, detail: { ...event.detail, id: `${executionName(context)}/${id}` } },
  };
}

/** A Timer request to make after the state write. */
export function scheduleEffect(step: string, request: ScheduleRequest): SideEffect {
  return { kind: "schedule", id: `${step}/schedule/${request.key}`, ...request };
}

/**
 * The registry update of a release's outcome, when the target names a registry (none otherwise):
 * the promoted model recorded as production, or the rolled-back candidate marked with `reason`.
 */
export function registryEffects(
  step: string,
  target: unknown,
  context: Pick<WorkflowContext, "image" | "tag">,
  outcome: { action: "promoted" } | { action: "rolled-back"; reason: string },
): SideEffect[] {
  const registry = registryOf(target);
  if (!registry) return [];
  return [
    {
      kind: "registry",
      id: `${step}/registry/${outcome.action}`,
      action: outcome.action,
      registry,
      model: modelOf(context),
      ...(outcome.action === "rolled-back" ? { reason: outcome.reason } : {}),
    },
  ];
}

/**
 * Inside a state write: marks the step `id` done for the execution and queues its side effects
 * (Begin's takeover starts a new execution's record, dropping what an older one left).
 */
export function commit(
  item: RolloutItemInput,
  context: WorkflowContext,
  id: string,
  effects: readonly SideEffect[],
): RolloutItemInput {
  const record = recordOf(item as RolloutItem, context.executionArn);
  const known = new Set([...record.done, ...record.pending.map((e) => e.id)]);
  return {
    ...item,
    effects: {
      executionArn: context.executionArn,
      done: [...record.done.filter((d) => d !== id), id].slice(-MAX_DONE),
      pending: [...record.pending, ...effects.filter((e) => !known.has(e.id))],
    },
  };
}

/** Begin's takeover: the execution's record starts empty. */
export function startEffects(item: RolloutItemInput, executionArn: string): RolloutItemInput {
  return { ...item, effects: fresh(executionArn) };
}

/**
 * Performs the execution's pending side effects in order, each marked done (and dropped from
 * `pending`) by its own write once it succeeded. A failure throws after the earlier ones were
 * recorded, so the retry starts where this attempt stopped. Once a newer execution took the
 * rollout over, the rest is not this execution's to do any more: it stops.
 */
export async function flush(deps: WorkflowDeps, context: WorkflowContext): Promise<void> {
  const item = await deps.store.get(context.rollout);
  if (!item || !owns(item, context)) return;
  for (const effect of item.effects.pending) {
    await perform(deps, effect);
    const latest = await update(deps.store, context.rollout, "latest", (latest) => {
      if (!owns(latest, context)) return null;
      return {
        ...latest,
        effects: {
          ...latest.effects,
          done: [...latest.effects.done, effect.id].slice(-MAX_DONE),
          pending: latest.effects.pending.filter((e) => e.id !== effect.id),
        },
      };
    });
    if (!owns(latest, context)) return;
  }
}

/** Whether the execution in `context` still drives the rollout and holds its effects record. */
function owns(item: Pick<RolloutItem, "executionArn" | "effects">, context: WorkflowContext): boolean {
  return item.executionArn === context.executionArn && item.effects.executionArn === context.executionArn;
}

async function perform(deps: WorkflowDeps, effect: SideEffect): Promise<void> {
  if (effect.kind === "registry") {
    if (!deps.registryFor) throw new Error(`no model registry is configured for ${effect.id}`);
    const registry = deps.registryFor(RegistrySettingsSchema.parse(effect.registry));
    if (effect.action === "promoted") await registry.promoted(effect.model);
    else await registry.rolledBack(effect.model, effect.reason ?? "rolled back");
    return;
  }
  if (effect.kind === "schedule") {
    await deps.timer.schedule({ at: effect.at, key: effect.key, payload: effect.payload });
    return;
  }
  const raw = effect.event as { type?: unknown; detail?: unknown };
  await deps.events.publish({
    type: LifecycleEventTypeSchema.parse(raw.type),
    detail: LifecycleDetailSchema.parse(raw.detail),
  });
}

/**
 * Publishes an event once per execution, outside a step's state write (a decision reached by
 * delayed work): its id derives from what it says, and is recorded as done once it was published.
 */
export async function publishOnce(
  deps: WorkflowDeps,
  context: WorkflowContext,
  event: LifecycleEvent,
): Promise<void> {
  const digest = createHash("sha256").update(event.detail.message).digest("hex").slice(0, 12);
  const id = `event/${event.type}/${event.detail.step ?? "-"}/${digest}`;
  const item = await deps.store.get(context.rollout);
  if (item && isDone(item, context, id)) return;
  await deps.events.publish({ ...event, detail: { ...event.detail, id: `${executionName(context)}/${id}` } });
  await update(deps.store, context.rollout, "latest", (latest) =>
    latest.effects.executionArn === context.executionArn
      ? {
          ...latest,
          effects: { ...latest.effects, done: [...latest.effects.done, id].slice(-MAX_DONE) },
        }
      : null,
  );
}

const executionName = (context: WorkflowContext) =>
  context.executionArn.split(":").at(-1) ?? context.executionArn;
