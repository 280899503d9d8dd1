import { EXECUTION_SUPERSEDED } from "../../statemachine/compile.ts";
import { olderReleaseRefusal } from "../../statemachine/waves-order.ts";
import { abortedStatusMessage, ExecutionSupersededError } from "../abort/errors.ts";
import { MODEL_PACKAGE_ARN } from "../registry/settings.ts";
import { appendEvent, newRolloutItem, type Revision, type RolloutItem } from "../store/schema.ts";
import { upsert } from "../store/update.ts";
import type { CandidateArtifact, RouterState } from "../traffic/port.ts";
import { TargetSettingsSchema } from "../traffic/settings.ts";
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
 * What the candidate runs, for the target: an image for ECS and Lambda image functions; for the
 * local proxy, the upstream URL its settings map the image tag (or digest) to.
 */
export function artifactFor(settings: unknown, revision: Revision): CandidateArtifact {
  const parsed = TargetSettingsSchema.safeParse(settings);
  const version = revision.tag ?? revision.digest;
  if (parsed.success && parsed.data.type === "local-proxy") {
    const upstreams = parsed.data.upstreams;
    const upstream = upstreams?.[revision.tag ?? ""] ?? upstreams?.[revision.digest] ?? upstreams?.["*"];
    if (!upstream) {
      throw new RangeError(
        `the local proxy target has no upstream for image tag "${revision.tag}" or digest "${revision.digest}": add it to upstreams (or a "*" upstream for any other image)`,
      );
    }
    return { upstream, version };
  }
  // A version approved in the Model Registry (the trigger's model package events).
  if (MODEL_PACKAGE_ARN.test(revision.image)) return { modelPackage: revision.image, version };
  return { image: revision.image, version };
}

/**
 * The first state of every execution: takes over the rollout for this execution, numbers the
 * revision, and puts the candidate in place with no traffic. A newer push already accepted by
 * the trigger makes this execution stale: it ends as superseded without touching anything.
 */
export async function begin(deps: WorkflowDeps, payload: BeginPayload): Promise<BeginResult> {
  const { input, executionId } = payload;
  const name = input.rollout;
  // A target that cannot run this image fails here, before the rollout is recorded as Progressing:
  // Begin's Catch ends the execution without Abort, so a later failure would leave it stuck.
  artifactFor(payload.target, { revision: 1, ...input.revision });
  let revision: Revision | undefined;
  let firstRevision = false;
  let previousWeight = 0;
  let targetState: unknown = null;
  let supersededWait: string | null = null;
  const item = await upsert(deps.store, name, (current) => {
    const now = deps.clock.now();
    if (current?.trigger && current.trigger.executionName !== input.trigger.executionName) {
      throw new ExecutionSupersededError(executionId, current.executionArn);
    }
    if (current?.executionArn === executionId) {
      // A retried Begin: the takeover is recorded (a failed attempt is undone). The weight still on
      // the superseded candidate is the item's until the target's state is written with 0 below,
      // so a first attempt that died before taking it back has it taken back now.
      revision = current.currentRevision ?? undefined;
      firstRevision =
        current.stableRevision === null ||
        current.stableRevision.digest === revision?.digest ||
        (input.rollback === true && current.history.some((h) => h.digest === revision?.digest));
      targetState = current.targetState;
      previousWeight = current.weight;
      return current.phase === "Degraded" ? { ...current, phase: "Progressing", message: "" } : null;
    }
    // A region of a release in waves: an older release never takes it from a newer one.
    const older = payload.rollout.pass
      ? olderReleaseRefusal(input.trigger, current?.startedBy ?? null)
      : undefined;
    if (older !== undefined) throw new OlderReleaseError(executionId, older);
    if (input.undoes !== undefined && current?.executionArn !== input.undoes) {
      throw new ExecutionSupersededError(input.undoes, current?.executionArn ?? null);
    }
    // The execution taken over may wait on a token (an approval, a pause): it is ended below.
    supersededWait = current?.executionArn !== executionId ? (current?.currentTaskToken ?? null) : null;
    // The takeover starts the new execution's effects record afresh: what the superseded one still
    // had pending (its events never published, its Timer requests never made) is discarded, and its
    // `flush` stops at its next write. Those events never go out.
    const base = startEffects(current ?? newRolloutItem(name, now), executionId);
    revision = revisionFor(current, input.revision);
    firstRevision =
      base.stableRevision === null ||
      base.stableRevision.digest === input.revision.digest ||
      (input.rollback === true && base.history.some((h) => h.digest === input.revision.digest));
    // A Healthy rollout's weight is the promoted side's (100): there is no candidate traffic to take back.
    previousWeight = base.phase === "Healthy" ? 0 : base.weight;
    targetState = base.targetState;
    return {
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
      currentTaskToken: null,
      waitingFor: null,
      waitingSince: null,
      pause: null,
      hold: null,
      drift: null,
      events: appendEvent(base.events, {
        at: now,
        type: "RolloutUpdated",
        message: `revision ${revision.revision} (${input.revision.tag ?? input.revision.digest}) started by ${executionId.split(":").at(-1)}`,
      }),
    };
  });
  if (!item || !revision) throw new Error(`Begin could not record rollout "${name}"`);
  if (supersededWait !== null) await endSupersededWait(deps, supersededWait, executionId);
  const context: WorkflowContext = {
    rollout: name,
    revision: revision.revision,
    image: revision.image,
    digest: revision.digest,
    tag: revision.tag,
    executionArn: executionId,
    ...(payload.rollout.pass ? { pass: payload.rollout.pass } : {}),
    ...(payload.stepNames ? { stepNames: payload.stepNames } : {}),
  };
  try {
    const router = deps.routerFor(payload.target);
    if (targetState !== null && previousWeight > 0) {
      // A newer revision took over mid-rollout: traffic goes back to the stable side first.
      await router.setWeight(targetState as RouterState, 0, { overwriteDrift: true });
    }
    let state = (await router.prepare()).state;
    const sameAsStable = item.stableRevision?.digest === revision.digest;
    if (!sameAsStable) state = await router.deployCandidate(state, artifactFor(payload.target, revision));
    await upsert(deps.store, name, (current) =>
      current && current.executionArn === executionId ? { ...current, targetState: state, weight: 0 } : null,
    );
  } catch (error) {
    // The workflow has no context to run Abort with yet: record why here, so the rollout does not
    // stay Progressing after the execution fails (a retry that succeeds puts it back).
    const reason = `${(error as Error).name}: ${(error as Error).message}`;
    await upsert(deps.store, name, (current) =>
      current && current.executionArn === executionId
        ? {
            ...current,
            phase: "Degraded",
            message: abortedStatusMessage(revision?.revision ?? null, reason),
            events: appendEvent(current.events, {
              at: deps.clock.now(),
              type: "BeginFailed",
              message: reason,
            }),
          }
        : null,
    );
    throw error;
  }
  return { context, firstRevision };
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
