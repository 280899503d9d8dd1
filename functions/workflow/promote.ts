import { METRICS } from "../config.ts";
import { pushHistory } from "../store/schema.ts";
import type { RouterState } from "../traffic/port.ts";
import { terminateBackground } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { drivingItem, publish, recordStep, withEvent } from "./item.ts";
import type { PromotePayload } from "./payloads.ts";

/** The Timer key of a scale-down: one per execution. */
export const scaleDownKey = (rollout: string, executionArn: string, attempt: number) =>
  `${rollout}/${executionArn.split(":").at(-1)}/scale-down-${attempt}`;

/**
 * The last state of a successful execution: the candidate becomes the stable version with all
 * the traffic (no second deployment), background analysis ends, the old side is scaled down after
 * `scaleDownDelaySeconds`, and the rollout is Healthy.
 */
export async function promote(deps: WorkflowDeps, payload: PromotePayload): Promise<{ phase: "Healthy" }> {
  const { context } = payload;
  const item = await drivingItem(deps, context);
  const router = deps.routerFor(payload.target);
  const restaging = item.stableRevision?.digest === context.digest;
  const state = restaging
    ? (item.targetState as RouterState)
    : await router.promote(item.targetState as RouterState, {
        scaleDownDelaySeconds: payload.scaleDownDelaySeconds,
      });
  await terminateBackground(deps, context);
  const revision = item.currentRevision;
  const message = restaging
    ? `revision ${context.revision} is already stable: nothing to do`
    : `Rollout completed: revision ${context.revision} (${context.tag ?? context.digest}) is stable`;
  await recordStep(deps, context, (latest, now) =>
    withEvent(
      {
        ...latest,
        phase: "Healthy",
        message: "",
        targetState: state,
        weight: 100,
        stepIndex: latest.stepCount,
        stableRevision: revision,
        history:
          revision && !restaging ? pushHistory(latest.history, { ...revision, at: now }) : latest.history,
        currentTaskToken: null,
        waitingFor: null,
        waitingSince: null,
        pause: null,
        hold: null,
        drift: null,
      },
      now,
      "RolloutCompleted",
      message,
    ),
  );
  if (!restaging) {
    await deps.timer.schedule({
      at: deps.clock.now() + payload.scaleDownDelaySeconds * 1000,
      key: scaleDownKey(context.rollout, context.executionArn, 0),
      payload: {
        kind: "scale-down",
        rollout: context.rollout,
        executionArn: context.executionArn,
        revision: context.revision,
        target: payload.target ?? null,
        attempt: 0,
      },
    });
  }
  deps.metrics.put({ name: METRICS.canaryWeight, value: 100, rollout: context.rollout });
  deps.metrics.put({ name: METRICS.promotions, value: 1, rollout: context.rollout });
  await publish(deps, context, "RolloutCompleted", message, null);
  return { phase: "Healthy" };
}
