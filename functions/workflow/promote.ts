import { METRICS } from "../config.ts";
import { NOT_WAITING, pushHistory, type RolloutItem } from "../store/schema.ts";
import type { TargetState } from "../traffic/port.ts";
import { terminateBackground, watchBackground } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { commit, flush, isDone, publishEffect, registryEffects, scheduleEffect } from "./effects.ts";
import { drivingItem, eventAbout, recordStep, withEvent } from "./item.ts";
import type { PromotePayload } from "./payloads.ts";

/** The Timer key of a scale-down: one per execution. */
export const scaleDownKey = (rollout: string, executionArn: string, attempt: number) =>
  `${rollout}/${executionArn.split(":").at(-1)}/scale-down-${attempt}`;

/** The id under which Promote records its state write and its side effects. */
const STEP = "promote";

/**
 * The last state of a successful execution: the candidate becomes the stable version with all
 * the traffic (no second deployment), background analysis ends, the old side is scaled down after
 * `scaleDownDelaySeconds`, and the rollout is Healthy. The state write records the scale-down and
 * the `RolloutCompleted` event as this execution's pending side effects, so a retry after a crash
 * in between performs what is missing instead of finding the revision "already stable".
 */
export async function promote(
  deps: WorkflowDeps,
  payload: PromotePayload,
): Promise<{ phase: "Healthy"; previous: PreviousRevision | null }> {
  const { context } = payload;
  await watchBackground(deps, context); // a stale background analysis aborts, never promoted
  const item = await drivingItem(deps, context);
  const previous = previousStable(item, context.digest);
  if (!isDone(item, context, STEP)) {
    const router = deps.targetFor(payload.target);
    const restaging = item.stableRevision?.digest === context.digest;
    const state = restaging
      ? (item.targetState as TargetState)
      : await router.promote(item.targetState as TargetState, {
          scaleDownDelaySeconds: payload.scaleDownDelaySeconds,
        });
    await terminateBackground(deps, context);
    const revision = item.currentRevision;
    const message = restaging
      ? `revision ${context.revision} is already stable: nothing to do`
      : `Rollout completed: revision ${context.revision} (${context.tag ?? context.digest}) is stable`;
    const effects = [
      ...(restaging
        ? []
        : [
            scheduleEffect(STEP, {
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
            }),
          ]),
      publishEffect(context, STEP, eventAbout(deps, context, "RolloutCompleted", message, null)),
      ...(restaging ? [] : registryEffects(STEP, payload.target, context, { action: "promoted" })),
    ];
    await recordStep(
      deps,
      context,
      (latest, now) =>
        commit(
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
                revision && !restaging
                  ? pushHistory(latest.history, { ...revision, at: now })
                  : latest.history,
              ...NOT_WAITING,
            },
            now,
            "RolloutCompleted",
            message,
          ),
          context,
          STEP,
          effects,
        ),
      { step: STEP },
    );
    deps.metrics.put({ name: METRICS.canaryWeight, value: 100, rollout: context.rollout });
    deps.metrics.put({ name: METRICS.promotions, value: 1, rollout: context.rollout });
  }
  await flush(deps, context);
  return { phase: "Healthy", previous };
}

/** What a release in waves returns a promoted pass to: the image it had before (`rollback-all`). */
export interface PreviousRevision {
  image: string;
  digest: string;
  tag: string | null;
}

/**
 * The revision stable before this one: the stable revision (before Promote's write), else the
 * newest of the history that is not the candidate (a retried Promote, after its write). Null on a
 * rollout's first revision.
 */
function previousStable(item: RolloutItem, digest: string): PreviousRevision | null {
  const stable = item.stableRevision;
  const found =
    stable && stable.digest !== digest
      ? stable
      : [...item.history].reverse().find((h) => h.digest !== digest);
  return found ? { image: found.image, digest: found.digest, tag: found.tag } : null;
}
