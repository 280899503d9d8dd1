import { update } from "../store/update.ts";
import type { RouterState } from "../traffic/port.ts";
import { analysisTick } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { withEvent } from "./item.ts";
import type { ResumePayload } from "./payloads.ts";

/** Longest the Timer keeps re-trying a scale-down or an abort that waits on the target. */
const MAX_ATTEMPTS = 200;

/**
 * `resume`: the Timer fired. One entry point for every delayed piece of work, whatever woke it
 * (EventBridge Scheduler, the ticker state machine, or the in-process timer): a timed pause ends,
 * an analysis takes its due measurements, an old side is scaled down, an abort continues.
 */
export async function resume(deps: WorkflowDeps, payload: ResumePayload, key: string): Promise<string> {
  switch (payload.kind) {
    case "pause": {
      const item = await deps.store.get(payload.rollout);
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
      const item = await deps.store.get(payload.rollout);
      if (!item || item.targetState === null) return "nothing to scale down";
      const readiness = await deps.routerFor(payload.target).scaleDown(item.targetState as RouterState);
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
      const item = await deps.store.get(payload.rollout);
      if (!item || item.targetState === null) return "nothing to abort";
      const readiness = await deps.routerFor(payload.target).abort(item.targetState as RouterState, {
        abortScaleDownDelaySeconds: payload.abortScaleDownDelaySeconds,
      });
      await saveTargetState(deps, payload.rollout, item.version, readiness.state);
      const next = readiness.ready
        ? { kind: "scale-down" as const, rollout: payload.rollout, target: payload.target, attempt: 0 }
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

/** The target's state after delayed work, written only if nothing else wrote the item meanwhile. */
async function saveTargetState(
  deps: WorkflowDeps,
  name: string,
  version: number,
  state: unknown,
): Promise<void> {
  await update(deps.store, name, version, (latest) => ({ ...latest, targetState: state })).catch(
    (error: unknown) => {
      // A newer step wrote the item: its target state wins, this delayed work's is dropped.
      if ((error as Error).name !== "ConcurrentUpdateError") throw error;
    },
  );
}
