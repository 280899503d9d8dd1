import { METRICS } from "../config.ts";
import { TargetConfigurationError } from "../traffic/errors.ts";
import type { RouterState } from "../traffic/port.ts";
import { watchBackground } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { commit, flush, isDone, publishEffect } from "./effects.ts";
import { drivingItem, eventAbout, recordStep, withEvent } from "./item.ts";
import type { StepPayload } from "./payloads.ts";

export interface SetWeightResult {
  /** Someone else changed the weights: the workflow pauses for a person (`paused-drift`). */
  drift: boolean;
  weight: number;
  message: string;
}

/**
 * The traffic steps: `setWeight`, `setHeaderRoute`, `setMirrorRoute` and blue/green's `preview`.
 * Weight drift found before a change is recorded and returned instead of overwritten; after a
 * person approves it (`rollouts promote`) the same step runs again and overwrites.
 *
 * The completed step is recorded with its `RolloutStepCompleted` event as a pending side effect:
 * a retry after the state write publishes what is missing and changes nothing twice.
 */
export async function setWeight(deps: WorkflowDeps, payload: StepPayload): Promise<SetWeightResult> {
  const { context, step, stepIndex } = payload;
  await watchBackground(deps, context); // a background analysis whose firings were lost aborts here
  const item = await drivingItem(deps, context);
  const id = stepId(stepIndex);
  if (isDone(item, context, id)) {
    await flush(deps, context);
    return { drift: false, weight: item.weight, message: "already applied" };
  }
  const router = deps.routerFor(payload.target);
  const state = item.targetState as RouterState;
  let weight = item.weight;
  let message: string;
  let next: RouterState = state;
  switch (step.kind) {
    case "setWeight": {
      const approved = item.drift !== null && item.drift.step === stepIndex && item.drift.approved;
      const ignore = payload.onDrift === "ignore";
      const change = await router.setWeight(state, step.weight, { overwriteDrift: approved || ignore });
      if (change.outcome === "drift") {
        await recordStep(deps, context, (latest, now) =>
          withEvent(
            {
              ...latest,
              targetState: change.state,
              drift: { step: stepIndex, message: change.message, approved: false },
            },
            now,
            "WeightDrift",
            change.message,
            stepIndex,
          ),
        );
        return { drift: true, weight: item.weight, message: change.message };
      }
      next = change.state;
      weight = step.weight;
      message = `weight ${step.weight}%${approved ? " (overwriting the weights changed by someone else, as approved)" : ""}`;
      break;
    }
    case "setHeaderRoute": {
      const change = step.match
        ? await router.setHeaderRoute(state, { name: step.name, match: step.match })
        : await router.removeHeaderRoute(state, step.name);
      next = change.state;
      message = change.message;
      break;
    }
    case "setMirrorRoute": {
      if (!router.setMirrorRoute) {
        throw new TargetConfigurationError(
          `step ${stepIndex + 1}: setMirrorRoute "${step.name}" is not supported by the ${router.type} target: it cannot mirror requests`,
        );
      }
      // Argo: a step with only the name removes the route; a match without a percentage mirrors all of it.
      const percentage = step.percentage ?? (step.match ? 100 : 0);
      const change = await router.setMirrorRoute(state, {
        name: step.name,
        percentage,
        ...(step.match ? { match: step.match } : {}),
      });
      next = change.state;
      message = change.message;
      break;
    }
    case "preview":
      message = "preview: the candidate runs with no live traffic";
      break;
    default:
      throw new TargetConfigurationError(`step ${stepIndex + 1}: a ${step.kind} step is not a traffic step`);
  }
  const done = `Rollout step ${stepIndex + 1}/${payload.rollout.stepCount} completed (${message})`;
  const announce = publishEffect(
    context,
    id,
    eventAbout(deps, context, "RolloutStepCompleted", done, stepIndex),
  );
  await recordStep(
    deps,
    context,
    (latest, now) =>
      commit(
        withEvent(
          { ...latest, targetState: next, weight, stepIndex: stepIndex + 1, drift: null, message: "" },
          now,
          "RolloutStepCompleted",
          done,
          stepIndex,
          message,
        ),
        context,
        id,
        [announce],
      ),
    { step: id },
  );
  deps.metrics.put({ name: METRICS.canaryWeight, value: weight, rollout: context.rollout });
  await flush(deps, context);
  return { drift: false, weight, message };
}

/** The id of a traffic step's completion: a step completes once per execution. */
const stepId = (stepIndex: number) => `step-${String(stepIndex).padStart(2, "0")}`;
