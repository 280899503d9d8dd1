import { abortedStatusMessage, assertDrives } from "../abort/errors.ts";
import { METRICS } from "../config.ts";
import { RolloutNotFoundError } from "../store/errors.ts";
import { MAX_ROLLBACKS } from "../store/schema.ts";
import { update } from "../store/update.ts";
import type { RouterState } from "../traffic/port.ts";
import { terminateBackground } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { publish, withEvent } from "./item.ts";
import type { AbortPayload, WorkflowContext } from "./payloads.ts";

/** The Timer key of a continued abort. */
export const abortKey = (rollout: string, executionArn: string, attempt: number) =>
  `${rollout}/${executionArn.split(":").at(-1)}/abort-${attempt}`;

/**
 * Why the rollout aborted, from what the Catch put in `$.error`: the analysis message, the reason
 * given to `rollouts abort`, or the failed Lambda's error message.
 */
export function abortReason(error: AbortPayload["error"], requested: string | null): string {
  if (error.Error === "RolloutAborted" && requested) return requested;
  const cause = error.Cause ?? "";
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown; errorType?: unknown };
    if (typeof parsed.errorMessage === "string") {
      return error.Error === "RolloutAborted"
        ? parsed.errorMessage
        : `${error.Error}: ${parsed.errorMessage}`;
    }
  } catch {
    // Not JSON: a SendTaskFailure cause or the analysis message, used as it is.
  }
  if (error.Error === "AnalysisRunFailed" || error.Error === "RolloutAborted") return cause || error.Error;
  return cause ? `${error.Error}: ${cause}` : error.Error;
}

/**
 * The Abort state: traffic back to the stable version (unless `onFailure: stop`), background
 * analysis ended, the candidate scaled down after `abortScaleDownDelaySeconds`, and the rollout
 * Degraded with Argo's message, which stays until a new revision arrives. An execution that no
 * longer drives the rollout throws `ExecutionSuperseded` and touches nothing.
 */
export async function abort(
  deps: WorkflowDeps,
  payload: AbortPayload,
): Promise<{ phase: "Degraded"; message: string }> {
  const { context } = payload;
  const item = await deps.store.get(context.rollout);
  if (!item) throw new RolloutNotFoundError(context.rollout);
  assertDrives(item, context.executionArn);
  const reason = abortReason(payload.error, item.abortReason);
  const message = abortedStatusMessage(context.revision, reason);
  let state = item.targetState as RouterState;
  let pending: number | undefined;
  if (payload.onFailure === "rollback") {
    const readiness = await deps.routerFor(payload.target).abort(state, {
      abortScaleDownDelaySeconds: payload.abortScaleDownDelaySeconds,
    });
    state = readiness.state;
    if (!readiness.ready) pending = readiness.retryAfterSeconds;
  }
  await terminateBackground(deps, context);
  const stopped = payload.onFailure === "stop" ? " (onFailure: stop: the weights are left as they were)" : "";
  await update(deps.store, context.rollout, "latest", (latest) => {
    assertDrives(latest, context.executionArn);
    const now = deps.clock.now();
    return withEvent(
      {
        ...latest,
        phase: "Degraded",
        message: `${message}${stopped}`,
        targetState: state,
        weight: payload.onFailure === "rollback" ? 0 : latest.weight,
        currentTaskToken: null,
        waitingFor: null,
        waitingSince: null,
        pause: null,
        hold: null,
        drift: null,
        abortRequested: false,
        abortExecutionArn: null,
        rollbacks: [...latest.rollbacks, { digest: context.digest, at: now }].slice(-MAX_ROLLBACKS),
      },
      now,
      "RolloutAborted",
      `${message}${stopped}`,
    );
  });
  if (pending !== undefined) {
    await deps.timer.schedule({
      at: deps.clock.now() + pending * 1000,
      key: abortKey(context.rollout, context.executionArn, 1),
      payload: {
        kind: "abort-continue",
        rollout: context.rollout,
        executionArn: context.executionArn,
        revision: context.revision,
        target: payload.target ?? null,
        abortScaleDownDelaySeconds: payload.abortScaleDownDelaySeconds,
        attempt: 1,
      },
    });
  } else if (payload.onFailure === "rollback") {
    await scheduleScaleDown(deps, context, payload.target, payload.abortScaleDownDelaySeconds);
  }
  if (payload.onFailure === "rollback")
    deps.metrics.put({ name: METRICS.canaryWeight, value: 0, rollout: context.rollout });
  deps.metrics.put({ name: METRICS.aborts, value: 1, rollout: context.rollout });
  await publish(deps, context, "RolloutAborted", message, null);
  return { phase: "Degraded", message };
}

/** Schedules the aborted candidate's scale-down, for this execution and revision only. */
export async function scheduleScaleDown(
  deps: WorkflowDeps,
  context: WorkflowContext,
  target: unknown,
  delaySeconds: number,
): Promise<void> {
  const { rollout, executionArn, revision } = context;
  await deps.timer.schedule({
    at: deps.clock.now() + delaySeconds * 1000,
    key: `${rollout}/${executionArn.split(":").at(-1)}/abort-scale-down`,
    payload: { kind: "scale-down", rollout, executionArn, revision, target: target ?? null, attempt: 0 },
  });
}
