import { supersededReason } from "../abort/errors.ts";
import { type AbortOutcome, requestAbort } from "../abort/request-abort.ts";
import type { TaskTokens } from "../abort/task-tokens.ts";
import type { Clock } from "../clock.ts";
import type { EventPublisher } from "../events/port.ts";
import { lifecycleEvent } from "../events/port.ts";
import { admitCanary, defaultCanaryPolicy } from "../judges/canary-gate.ts";
import { ConcurrentUpdateError } from "../store/errors.ts";
import type { RolloutStore } from "../store/port.ts";
import {
  appendEvent,
  isRunning,
  newRolloutItem,
  type RolloutItem,
  type RolloutItemInput,
} from "../store/schema.ts";
import { decideTrigger, describe, type RolloutExecutionInput, type TriggerDecision } from "./decide.ts";
import { type ImagePush, parseEcrEvent } from "./event.ts";
import type { Executions } from "./executions.ts";
import { isModelPackageEvent, parseModelPackageEvent } from "./model-package.ts";
import { matchRoutes, type TriggerRoute } from "./routes.ts";

export interface TriggerDeps {
  store: RolloutStore;
  /** Starts executions (`SfnExecutions` around an `SFNClient`). */
  executions: Executions;
  /** Fails the older execution's task token when a newer revision supersedes it (`SfnTaskTokens`). */
  tokens: TaskTokens;
  clock: Clock;
  routes: readonly TriggerRoute[];
  /** Lifecycle events (a push refused by a rollback cooldown). */
  events?: EventPublisher;
  /** Attempts when another trigger writes the same rollout item concurrently. Default 5. */
  maxAttempts?: number;
}

export type RolloutTriggerOutcome =
  | {
      rollout: string;
      outcome: "started";
      executionName: string;
      executionArn: string;
      /** Set when a running older revision was aborted through the abort channel. */
      superseded?: AbortOutcome;
      message: string;
    }
  | { rollout: string; outcome: "duplicate"; executionName: string; message: string }
  | { rollout: string; outcome: "refused"; message: string }
  | { rollout: string; outcome: "stale"; message: string };

export type TriggerResult =
  | { kind: "ignored"; reason: string }
  | { kind: "handled"; push: ImagePush; rollouts: RolloutTriggerOutcome[] };

/**
 * What the `trigger` Lambda does with an `ECR Image Action` event: validate it, find the rollouts
 * whose repository/tag filter it matches, and for each one:
 *
 * 1. decide from the rollout item whether the push is new, a duplicate or stale (`decideTrigger`);
 * 2. for a new push, record it on the item (`trigger`, generation + 1) with a conditional write —
 *    two concurrent events for one rollout serialise here, and the loser re-decides;
 * 3. if an older revision's execution is running, abort it through the abort channel (reason
 *    "superseded by …"), aimed at that execution only;
 * 4. `StartExecution` with the deterministic name; `ExecutionAlreadyExists` means an earlier
 *    delivery already started it, which is success (nothing new is started).
 *
 * A crash after step 2 is repaired by the redelivery: the push is then a duplicate whose
 * execution Begin has not recorded, so step 4 is re-issued with the same name.
 * Infrastructure faults throw (the Lambda is retried; every step is idempotent).
 */
export async function startRollout(deps: TriggerDeps, event: unknown): Promise<TriggerResult> {
  // An approved model package starts a model's rollout as a push starts a service's.
  const parsed = isModelPackageEvent(event) ? parseModelPackageEvent(event) : parseEcrEvent(event);
  if (parsed.kind === "ignored") return parsed;
  const push = parsed.push;
  const routes = matchRoutes(deps.routes, push);
  if (routes.length === 0) {
    return {
      kind: "ignored",
      reason: `no rollout is triggered by ${push.repository}:${push.tag ?? "(untagged)"}`,
    };
  }
  const rollouts: RolloutTriggerOutcome[] = [];
  for (const route of routes) rollouts.push(await triggerOne(deps, route, push));
  return { kind: "handled", push, rollouts };
}

/**
 * One rollout's trigger: decides from the item, then records the push (or its refusal) with a
 * conditional write; a write that loses to another trigger reads the item and decides again.
 */
async function triggerOne(
  deps: TriggerDeps,
  route: TriggerRoute,
  push: ImagePush,
): Promise<RolloutTriggerOutcome> {
  const name = route.rollout;
  const attempts = Math.max(1, deps.maxAttempts ?? 5);
  let lastConflict: ConcurrentUpdateError | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const current = await deps.store.get(name);
    const decision = decideTrigger(current, push, name, deps.clock.now());

    if (decision.kind === "stale") return { rollout: name, outcome: "stale", message: decision.message };

    if (decision.kind === "duplicate") return startInterrupted(deps, route, push, current, decision);

    const now = deps.clock.now();
    const refusal = route.cooldown && current ? cooldownRefusal(current, route.cooldown, now) : undefined;
    const outcome =
      refusal && current
        ? await refusePush(deps, route, current, push, refusal, now)
        : await acceptPush(deps, route, push, current, decision, now);
    if (!(outcome instanceof ConcurrentUpdateError)) return outcome;
    lastConflict = outcome;
  }
  throw lastConflict ?? new ConcurrentUpdateError(`rollout "${name}"`, null);
}

/**
 * A push already accepted: nothing new starts, unless the trigger that accepted it was
 * interrupted before its execution started, which is then started with the same name.
 */
async function startInterrupted(
  deps: TriggerDeps,
  route: TriggerRoute,
  push: ImagePush,
  current: RolloutItem | undefined,
  decision: Extract<TriggerDecision, { kind: "duplicate" }>,
): Promise<RolloutTriggerOutcome> {
  const name = route.rollout;
  const message = `${describe(push)} is already the latest push for ${name} (execution ${decision.executionName}): nothing started`;
  if (!decision.needsStart || current?.trigger == null) {
    return { rollout: name, outcome: "duplicate", executionName: decision.executionName, message };
  }
  const accepted = current.trigger;
  const started = await deps.executions.start({
    stateMachineArn: route.stateMachineArn,
    name: decision.executionName,
    input: executionInput(name, accepted, accepted),
  });
  if (started.status === "already-exists") {
    return { rollout: name, outcome: "duplicate", executionName: decision.executionName, message };
  }
  return {
    rollout: name,
    outcome: "started",
    executionName: decision.executionName,
    executionArn: started.executionArn,
    message: `started ${decision.executionName} for ${describe(accepted)} (recovering an interrupted trigger)`,
  };
}

/**
 * A push the rollback cooldown refuses: recorded on the item as a `PushRefused` event, then
 * announced; the conflict when another trigger wrote the item first.
 */
async function refusePush(
  deps: TriggerDeps,
  route: TriggerRoute,
  current: RolloutItem,
  push: ImagePush,
  refusal: string,
  now: number,
): Promise<RolloutTriggerOutcome | ConcurrentUpdateError> {
  const message = `push of ${describe(push)} refused: ${refusal}`;
  const conflict = await saveUnlessConflict(
    deps.store,
    { ...current, events: appendEvent(current.events, { at: now, type: "PushRefused", message }) },
    current.version,
  );
  if (conflict) return conflict;
  await deps.events?.publish(
    lifecycleEvent("RolloutPushRefused", {
      rollout: route.rollout,
      revision: current.currentRevision,
      message,
      atMs: now,
    }),
  );
  return { rollout: route.rollout, outcome: "refused", message };
}

/**
 * A new push: recorded on the item as its trigger, then the older revision's execution aborted
 * and the new one started; the conflict when another trigger wrote the item first.
 */
async function acceptPush(
  deps: TriggerDeps,
  route: TriggerRoute,
  push: ImagePush,
  current: RolloutItem | undefined,
  decision: Extract<TriggerDecision, { kind: "start" }>,
  now: number,
): Promise<RolloutTriggerOutcome | ConcurrentUpdateError> {
  const name = route.rollout;
  const base = current ?? newRolloutItem(name, now);
  const trigger = {
    repository: push.repository,
    digest: push.digest,
    tag: push.tag,
    image: push.image,
    eventId: push.eventId,
    eventTime: push.eventTime,
    generation: decision.generation,
    executionName: decision.executionName,
    acceptedAt: now,
  };
  const conflict = await saveUnlessConflict(
    deps.store,
    {
      ...base,
      trigger,
      events: appendEvent(base.events, {
        at: now,
        type: "Triggered",
        message: `push of ${describe(push)} starts ${decision.executionName}`,
      }),
    },
    current?.version ?? null,
  );
  if (conflict) return conflict;

  const superseded = current !== undefined ? await supersede(deps, current, push) : undefined;
  const started = await deps.executions.start({
    stateMachineArn: route.stateMachineArn,
    name: decision.executionName,
    input: executionInput(name, push, trigger),
  });
  return {
    rollout: name,
    outcome: "started",
    executionName: decision.executionName,
    executionArn: started.executionArn,
    ...(superseded === undefined ? {} : { superseded }),
    message:
      `${started.status === "started" ? "started" : "already started"} ${decision.executionName} for ${describe(push)}` +
      (superseded === undefined ? "" : `; older revision: ${superseded.message}`),
  };
}

/** Saves the item if its version is still `expected`; the conflict, not thrown, when it is not. */
async function saveUnlessConflict(
  store: RolloutStore,
  item: RolloutItemInput,
  expected: number | null,
): Promise<ConcurrentUpdateError | undefined> {
  try {
    await store.save(item, expected);
    return undefined;
  } catch (error) {
    if (error instanceof ConcurrentUpdateError) return error;
    throw error;
  }
}

/**
 * Why a push may not start a rollout that rolled back recently (the canary gate's admission: a
 * cooldown after a rollback stops a borderline release from flapping, and too many rollbacks in an
 * hour are a hard stop until the hour has passed), or undefined when it may.
 */
function cooldownRefusal(
  item: RolloutItem,
  cooldown: NonNullable<TriggerRoute["cooldown"]>,
  now: number,
): string | undefined {
  const admission = admitCanary(
    { fingerprint: item.name, verdict: "PASS" },
    item.rollbacks.map((r) => ({ fingerprint: item.name, at: r.at })),
    now,
    {
      ...defaultCanaryPolicy,
      rollbackCooldownSeconds: cooldown.seconds,
      maxRollbacksPerHour: cooldown.maxPerHour,
    },
  );
  if (admission.admitted) return undefined;
  if (!admission.escalate) return `the rollout ${admission.reason} (rollback cooldown ${cooldown.seconds} s)`;
  const lastHour = item.rollbacks.filter((r) => r.at <= now && now - r.at < 3_600_000);
  const until = Math.min(...lastHour.map((r) => r.at)) + 3_600_000;
  return `${lastHour.length} rollbacks in the last hour (maxPerHour ${cooldown.maxPerHour}): pushes are refused until ${new Date(until).toISOString()}`;
}

/** Aborts the running execution of an older revision, if there is one (aimed at that execution only). */
async function supersede(
  deps: TriggerDeps,
  current: RolloutItem,
  push: ImagePush,
): Promise<AbortOutcome | undefined> {
  if (!isRunning(current) || current.executionArn === null) return undefined;
  return requestAbort({
    store: deps.store,
    sfn: deps.tokens,
    name: current.name,
    reason: supersededReason(describe(push)),
    clock: deps.clock,
    executionArn: current.executionArn,
  });
}

function executionInput(
  rollout: string,
  push: Pick<ImagePush, "repository" | "image" | "digest" | "tag">,
  trigger: RolloutExecutionInput["trigger"],
): RolloutExecutionInput {
  return {
    rollout,
    revision: { repository: push.repository, image: push.image, digest: push.digest, tag: push.tag },
    trigger: {
      eventId: trigger.eventId,
      eventTime: trigger.eventTime,
      generation: trigger.generation,
      executionName: trigger.executionName,
    },
  };
}
