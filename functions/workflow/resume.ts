import { isDeepStrictEqual } from "node:util";
import { lifecycleEvent } from "../events/port.ts";
import { toJson } from "../store/keys.ts";
import type { RolloutItem } from "../store/schema.ts";
import { update } from "../store/update.ts";
import type { TargetState } from "../traffic/port.ts";
import { analysisTick, StoredAnalysisSchema } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { executionName, withEvent } from "./item.ts";
import type { ResumePayload } from "./payloads.ts";

/** Longest the Timer keeps re-trying a scale-down or an abort that waits on the target. */
const MAX_ATTEMPTS = 200;

/**
 * `resume`: the Timer fired. One entry point for every delayed piece of work, whatever woke it
 * (EventBridge Scheduler, the ticker state machine, or the in-process timer): a timed pause ends,
 * an analysis takes its due measurements, an old side is scaled down, an abort continues.
 *
 * Each firing belongs to the execution and revision that scheduled it. When either is no longer
 * the item's current one (a newer revision took over, or the item was rewritten), the firing does
 * nothing and says so with a `RolloutDelayedActionSkipped` event: a scale-down or an abort of an
 * older execution would otherwise act on the newer execution's target state. (A skipped tick
 * still closes its own run, which nothing will wait for any more.)
 */
export async function resume(deps: WorkflowDeps, payload: ResumePayload, key: string): Promise<string> {
  const item = await deps.store.get(payload.rollout);
  const owner = await ownerOf(deps, payload);
  const stale = item ? staleReason(item, owner) : undefined;
  if (stale !== undefined) {
    await skip(deps, payload, owner, key, stale);
    if (payload.kind === "tick") await analysisTick(deps, payload.rollout, payload.runId);
    return `skipped: ${stale}`;
  }
  switch (payload.kind) {
    case "pause": {
      if (!item || item.currentTaskToken !== payload.token) return "pause already ended";
      // Record the end first: once the token is answered the execution's next step runs at once
      // and may clear the wait before this function would, leaving the resumption unrecorded. The
      // token stays on the item until it is answered, so a crash in between is repaired by the
      // retry (which then finds the pause recorded as ended and a used token stale). An abort
      // requested first fails the token: the Abort state records the outcome, not "resumed".
      await update(deps.store, payload.rollout, "latest", (latest) =>
        latest.currentTaskToken === payload.token && latest.waitingFor === "pause" && !latest.abortRequested
          ? withEvent(
              {
                ...latest,
                phase: "Progressing",
                message: "",
                waitingFor: null,
                waitingSince: null,
                pause: null,
              },
              deps.clock.now(),
              "RolloutResumed",
              "pause ended",
              latest.stepIndex,
            )
          : null,
      );
      const delivery = await deps.tokens.sendSuccess(payload.token, { outcome: "continue" });
      await update(deps.store, payload.rollout, "latest", (latest) =>
        latest.currentTaskToken === payload.token && latest.waitingFor === null
          ? { ...latest, currentTaskToken: null }
          : null,
      );
      return delivery.delivered ? "pause ended" : `pause token stale (${delivery.reason})`;
    }
    case "tick": {
      const run = await analysisTick(deps, payload.rollout, payload.runId);
      return run ? `run ${payload.runId}: ${run.phase}` : `run ${payload.runId} not found`;
    }
    case "scale-down": {
      if (!item || item.targetState === null) return "nothing to scale down";
      const readiness = await deps.targetFor(payload.target).scaleDown(item.targetState as TargetState);
      await saveTargetState(deps, payload.rollout, item.version, readiness.state);
      if (!readiness.ready && payload.attempt < MAX_ATTEMPTS) {
        await deps.timer.schedule({
          at: deps.clock.now() + readiness.retryAfterSeconds * 1000,
          key: `${key}.${payload.attempt + 1}`,
          payload: { ...payload, attempt: payload.attempt + 1 },
        });
      }
      return readiness.message;
    }
    case "abort-continue": {
      if (!item || item.targetState === null) return "nothing to abort";
      const readiness = await deps.targetFor(payload.target).abort(item.targetState as TargetState, {
        abortScaleDownDelaySeconds: payload.abortScaleDownDelaySeconds,
      });
      await saveTargetState(deps, payload.rollout, item.version, readiness.state);
      const next = readiness.ready
        ? {
            kind: "scale-down" as const,
            rollout: payload.rollout,
            ...(payload.executionArn !== undefined ? { executionArn: payload.executionArn } : {}),
            ...(payload.revision !== undefined ? { revision: payload.revision } : {}),
            target: payload.target,
            attempt: 0,
          }
        : { ...payload, attempt: payload.attempt + 1 };
      if (payload.attempt < MAX_ATTEMPTS) {
        await deps.timer.schedule({
          at:
            deps.clock.now() +
            (readiness.ready ? payload.abortScaleDownDelaySeconds : readiness.retryAfterSeconds) * 1000,
          key: `${key}.${payload.attempt + 1}`,
          payload: next,
        });
      }
      return readiness.message;
    }
  }
}

/** The execution and revision a firing belongs to, as far as they are known. */
type Owner = Pick<ResumePayload, "executionArn" | "revision">;

/**
 * A firing's owner. A tick scheduled by an earlier release names neither: its run, which records
 * the context it was started in, does.
 */
async function ownerOf(deps: WorkflowDeps, payload: ResumePayload): Promise<Owner> {
  if (payload.kind !== "tick" || payload.executionArn !== undefined) return payload;
  const run = await deps.store.getRun(payload.rollout, payload.runId, StoredAnalysisSchema);
  if (!run) return payload;
  const { executionArn, revision } = run.run.context;
  return { executionArn, revision: payload.revision ?? revision };
}

/**
 * Why a firing no longer applies, or `undefined` when its execution and revision are still the
 * item's current ones. What a firing does not name (one scheduled by an earlier release) is not
 * checked: such a firing does its work as it did then.
 */
export function staleReason(
  item: Pick<RolloutItem, "executionArn" | "currentRevision">,
  owner: Owner,
): string | undefined {
  if (owner.executionArn !== undefined && item.executionArn !== owner.executionArn) {
    const now = item.executionArn === null ? "none" : executionName(item.executionArn);
    const revision = item.currentRevision ? `, revision ${item.currentRevision.revision}` : "";
    return `execution ${executionName(owner.executionArn)} no longer drives the rollout (now ${now}${revision})`;
  }
  const current = item.currentRevision?.revision ?? null;
  if (owner.revision !== undefined && current !== owner.revision) {
    return `revision ${owner.revision} is not the rollout's current revision (${current ?? "none"})`;
  }
  return undefined;
}

/** Announces a skipped firing; its id is the firing's key, so a redelivered firing repeats it. */
async function skip(
  deps: WorkflowDeps,
  payload: ResumePayload,
  owner: Owner,
  key: string,
  reason: string,
): Promise<void> {
  const of = owner.revision !== undefined ? ` of revision ${owner.revision}` : "";
  const by = owner.executionArn !== undefined ? ` (execution ${executionName(owner.executionArn)})` : "";
  await deps.events.publish(
    lifecycleEvent("RolloutDelayedActionSkipped", {
      id: `${key}/skipped`,
      rollout: payload.rollout,
      revision: owner.revision !== undefined ? { revision: owner.revision } : null,
      step: null,
      message: `${payload.kind}${of}${by} skipped: ${reason}`,
      atMs: deps.clock.now(),
    }),
  );
}

/**
 * The target's state after delayed work, written only if nothing else wrote the item meanwhile,
 * and only if it changed (a scale-down that left nothing to record rewrites no item).
 */
async function saveTargetState(
  deps: WorkflowDeps,
  name: string,
  version: number,
  state: unknown,
): Promise<void> {
  await update(deps.store, name, version, (latest) =>
    isDeepStrictEqual(latest.targetState, toJson(state)) ? null : { ...latest, targetState: state },
  ).catch((error: unknown) => {
    // A newer step wrote the item: its target state wins, this delayed work's is dropped.
    if ((error as Error).name !== "ConcurrentUpdateError") throw error;
  });
}
