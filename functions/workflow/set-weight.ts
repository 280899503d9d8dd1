import { METRICS } from "../config.ts";
import { TargetConfigurationError } from "../traffic/errors.ts";
import type { RouterState } from "../traffic/port.ts";
import { watchBackground } from "./analysis.ts";
import type { WorkflowDeps } from "./deps.ts";
import { drivingItem, publish, recordStep, withEvent } from "./item.ts";
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
 */
export async function setWeight(deps: WorkflowDeps, payload: StepPayload): Promise<SetWeightResult> {
  const { context, step, stepIndex } = payload;
  await watchBackground(deps, context); // a background analysis whose firings were lost aborts here
  const item = await drivingItem(deps, context);
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
    case "setMirrorRoute":
      throw new TargetConfigurationError(
        `step ${stepIndex + 1}: setMirrorRoute "${step.name}" is not supported by the ${router.type} target: it cannot mirror requests`,
      );
    case "preview":
      message = "preview: the candidate runs with no live traffic";
      break;
    default:
      throw new TargetConfigurationError(`step ${stepIndex + 1}: a ${step.kind} step is not a traffic step`);
  }
  const done = `Rollout step ${stepIndex + 1}/${payload.rollout.stepCount} completed (${message})`;
  await recordStep(deps, context, (latest, now) =>
    withEvent(
      { ...latest, targetState: next, weight, stepIndex: stepIndex + 1, drift: null, message: "" },
      now,
      "RolloutStepCompleted",
      done,
      stepIndex,
      message,
    ),
  );
  deps.metrics.put({ name: METRICS.canaryWeight, value: weight, rollout: context.rollout });
  await publish(deps, context, "RolloutStepCompleted", done, stepIndex);
  return { drift: false, weight, message };
}
