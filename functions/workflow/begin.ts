import { EXECUTION_SUPERSEDED } from "../../statemachine/compile.ts";
import { olderReleaseRefusal } from "../../statemachine/waves-order.ts";
import { abortedStatusMessage, ExecutionSupersededError } from "../abort/errors.ts";
import {
  appendEvent,
  NOT_WAITING,
  newRolloutItem,
  type Revision,
  type RolloutItem,
  type RolloutItemInput,
} from "../store/schema.ts";
import { upsert } from "../store/update.ts";
import type { TargetState, TrafficTarget } from "../traffic/port.ts";
import { announceUpdate } from "./announce-update.ts";
import type { WorkflowDeps } from "./deps.ts";
import { startEffects } from "./effects.ts";
import type { BeginPayload, WorkflowContext } from "./payloads.ts";

export interface BeginResult {
  context: WorkflowContext;
  /** Nothing to compare with (the first revision, or the stable revision pushed again): skip the steps. */
  firstRevision: boolean;
}

/** Argo numbers revisions 1, 2, 3…; a digest seen before keeps its number. */
function revisionFor(item: RolloutItem | undefined, input: BeginPayload["input"]["revision"]): Revision {
  const known = [item?.currentRevision, item?.stableRevision, ...(item?.history ?? [])].find(
    (r) => r?.digest === input.digest,
  );
  if (known) return { revision: known.revision, image: input.image, digest: input.digest, tag: input.tag };
  const highest = Math.max(
    0,
    item?.currentRevision?.revision ?? 0,
    item?.stableRevision?.revision ?? 0,
    ...(item?.history ?? []).map((h) => h.revision),
  );
  return { revision: highest + 1, image: input.image, digest: input.digest, tag: input.tag };
}

/**
 * The first state of every execution: takes over the rollout for this execution, numbers the
 * revision, and puts the candidate in place with no traffic. A newer push already accepted by
 * the trigger makes this execution stale: it ends as superseded without touching anything.
 */
export async function begin(deps: WorkflowDeps, payload: BeginPayload): Promise<BeginResult> {
  const { input, executionId } = payload;
  const router = deps.targetFor(payload.target);
  // A target that cannot run this push fails here, before the rollout is recorded as Progressing:
  // Begin's Catch ends the execution without Abort, so a later failure would leave it stuck.
  router.artifactFor(input.revision);
  let takeover: Takeover | undefined;
  const item = await upsert(deps.store, input.rollout, (current) => {
    takeover = takeOver(current, payload, deps.clock.now());
    return takeover.item;
  });
  const revision = takeover?.revision;
  if (!item || !takeover || !revision) throw new Error(`Begin could not record rollout "${input.rollout}"`);
  if (takeover.supersededWait !== null) await endSupersededWait(deps, takeover.supersededWait, executionId);
  try {
    await putCandidateInPlace(deps, router, payload, item, { ...takeover, revision });
  } catch (error) {
    await recordBeginFailure(deps, payload, revision, error as Error);
    throw error;
  }
  const context = contextOf(payload, revision);
  await announceUpdate(deps, payload, context);
  return { context, firstRevision: takeover.firstRevision };
}

/** What taking the rollout over decided: the item to write (null: nothing to write) and what follows. */
interface Takeover {
  item: RolloutItemInput | null;
  /** Null only for a retried Begin whose item lost its revision: Begin then fails. */
  revision: Revision | null;
  /** Nothing to compare with: the steps are skipped. */
  firstRevision: boolean;
  /** The weight the superseded execution's candidate still has, taken back before anything else. */
  previousWeight: number;
  targetState: unknown;
  /** The task token the superseded execution waits on, ended once the takeover is written. */
  supersededWait: string | null;
}

/**
 * The rollout's item as this execution takes it over, from the item as it is (pure: `upsert`
 * calls it again when a conditional write loses a race). A retried Begin finds its own takeover;
 * a stale execution is refused; otherwise the execution takes over from whatever ran before.
 */
function takeOver(current: RolloutItem | undefined, payload: BeginPayload, now: number): Takeover {
  refuseStale(current, payload);
  if (current?.executionArn === payload.executionId) return resumedTakeover(current, payload.input);
  return newTakeover(current, payload, now);
}

/**
 * An execution that may not take the rollout over: a newer push accepted by the trigger, an older
 * release of a region in waves, or an undo of an execution that no longer drives the rollout.
 */
function refuseStale(current: RolloutItem | undefined, payload: BeginPayload): void {
  const { input, executionId } = payload;
  if (current?.trigger && current.trigger.executionName !== input.trigger.executionName) {
    throw new ExecutionSupersededError(executionId, current.executionArn);
  }
  if (current?.executionArn === executionId) return;
  // A region of a release in waves: an older release never takes it from a newer one.
  const older = payload.rollout.pass
    ? olderReleaseRefusal(input.trigger, current?.startedBy ?? null)
    : undefined;
  if (older !== undefined) throw new OlderReleaseError(executionId, older);
  if (input.undoes !== undefined && current?.executionArn !== input.undoes) {
    throw new ExecutionSupersededError(input.undoes, current?.executionArn ?? null);
  }
}

/**
 * A retried Begin: the takeover is recorded (a failed attempt is undone). The weight still on the
 * superseded candidate is the item's until the target's state is written with 0, so a first
 * attempt that died before taking it back has it taken back now.
 */
function resumedTakeover(current: RolloutItem, input: BeginPayload["input"]): Takeover {
  const revision = current.currentRevision;
  return {
    item: current.phase === "Degraded" ? { ...current, phase: "Progressing", message: "" } : null,
    revision,
    firstRevision:
      current.stableRevision === null ||
      current.stableRevision.digest === revision?.digest ||
      (input.rollback === true && current.history.some((h) => h.digest === revision?.digest)),
    previousWeight: current.weight,
    targetState: current.targetState,
    supersededWait: null,
  };
}

/** This execution takes the rollout over from what ran before (or creates it). */
function newTakeover(current: RolloutItem | undefined, payload: BeginPayload, now: number): Takeover {
  const { input, executionId } = payload;
  // The execution taken over may wait on a token (an approval, a pause): it is ended once written.
  const supersededWait = current?.currentTaskToken ?? null;
  // The takeover starts the new execution's effects record afresh: what the superseded one still
  // had pending (its events never published, its Timer requests never made) is discarded, and its
  // `flush` stops at its next write. Those events never go out.
  const base = startEffects(current ?? newRolloutItem(input.rollout, now), executionId);
  const revision = revisionFor(current, input.revision);
  const firstRevision =
    base.stableRevision === null ||
    base.stableRevision.digest === input.revision.digest ||
    (input.rollback === true && base.history.some((h) => h.digest === input.revision.digest));
  // A Healthy rollout's weight is the promoted side's (100): there is no candidate traffic to take back.
  const previousWeight = base.phase === "Healthy" ? 0 : base.weight;
  const item: RolloutItemInput = {
    ...base,
    phase: "Progressing",
    message: firstRevision ? "" : `updating to revision ${revision.revision}`,
    currentRevision: revision,
    stepIndex: 0,
    stepCount: payload.rollout.stepCount,
    strategy: payload.rollout.strategy,
    stepLabels: payload.stepLabels,
    // What the candidate of the superseded execution still receives, until it is taken back.
    weight: previousWeight,
    executionArn: executionId,
    startedBy: {
      eventId: input.trigger.eventId,
      eventTime: input.trigger.eventTime,
      executionName: input.trigger.executionName,
      ...(input.trigger.releasedAt === undefined ? {} : { releasedAt: input.trigger.releasedAt }),
    },
    abortRequested: false,
    abortReason: null,
    abortRequestedAt: null,
    abortExecutionArn: null,
    ...NOT_WAITING,
    events: appendEvent(base.events, {
      at: now,
      type: "RolloutUpdated",
      message: `revision ${revision.revision} (${input.revision.tag ?? input.revision.digest}) started by ${executionId.split(":").at(-1)}`,
    }),
  };
  return { item, revision, firstRevision, previousWeight, targetState: base.targetState, supersededWait };
}

/**
 * The target's side of the takeover: traffic back to the stable side if a superseded candidate
 * still had some, what is in service read, the candidate deployed with no traffic (unless it is
 * the stable revision pushed again), and the target's state recorded with weight 0.
 */
async function putCandidateInPlace(
  deps: WorkflowDeps,
  router: TrafficTarget,
  payload: BeginPayload,
  item: RolloutItem,
  takeover: Takeover & { revision: Revision },
): Promise<void> {
  const { revision, targetState, previousWeight } = takeover;
  if (targetState !== null && previousWeight > 0) {
    // A newer revision took over mid-rollout: traffic goes back to the stable side first.
    await router.setWeight(targetState as TargetState, 0, { overwriteDrift: true });
  }
  let state = (await router.prepare()).state;
  if (item.stableRevision?.digest !== revision.digest) {
    state = await router.deployCandidate(state, router.artifactFor(revision));
  }
  await upsert(deps.store, payload.input.rollout, (current) =>
    current && current.executionArn === payload.executionId
      ? { ...current, targetState: state, weight: 0 }
      : null,
  );
}

/**
 * The workflow has no context to run Abort with yet: why Begin failed is recorded here, so the
 * rollout does not stay Progressing after the execution fails (a retry that succeeds puts it back).
 */
async function recordBeginFailure(
  deps: WorkflowDeps,
  payload: BeginPayload,
  revision: Revision,
  error: Error,
): Promise<void> {
  const reason = `${error.name}: ${error.message}`;
  await upsert(deps.store, payload.input.rollout, (current) =>
    current && current.executionArn === payload.executionId
      ? {
          ...current,
          phase: "Degraded",
          message: abortedStatusMessage(revision.revision, reason),
          events: appendEvent(current.events, { at: deps.clock.now(), type: "BeginFailed", message: reason }),
        }
      : null,
  );
}

/** What every later state of the execution is given about the rollout and its revision. */
function contextOf(payload: BeginPayload, revision: Revision): WorkflowContext {
  return {
    rollout: payload.input.rollout,
    revision: revision.revision,
    image: revision.image,
    digest: revision.digest,
    tag: revision.tag,
    executionArn: payload.executionId,
    ...(payload.rollout.pass ? { pass: payload.rollout.pass } : {}),
    ...(payload.stepNames ? { stepNames: payload.stepNames } : {}),
  };
}

/**
 * Begin of a release older than the one driving this region's rollout (a release in waves): the
 * execution ends superseded, as for any newer takeover, with a message saying which release won.
 */
class OlderReleaseError extends ExecutionSupersededError {
  constructor(executionArn: string, why: string) {
    super(executionArn, null);
    this.message = `execution ${executionArn.split(":").at(-1)}: ${why}`;
  }
}

/**
 * The execution taken over waited on a token nobody would answer any more (its item now names
 * this execution): it is failed with `ExecutionSuperseded`, so that execution ends as superseded
 * instead of waiting for ever (and a wave coordinator waiting on it learns why). A token already
 * used or timed out, or a call that fails, changes nothing for this execution.
 */
async function endSupersededWait(deps: WorkflowDeps, token: string, executionId: string): Promise<void> {
  try {
    await deps.tokens.sendFailure(
      token,
      EXECUTION_SUPERSEDED,
      `A newer revision took over the rollout: ${executionId.split(":").at(-1)}`,
    );
  } catch {
    // The wait stays open; a person can still stop that execution.
  }
}
