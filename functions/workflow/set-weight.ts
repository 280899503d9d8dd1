import type { Step } from "../../statemachine/spec.ts";
import { METRICS } from "../config.ts";
import type { RolloutItem } from "../store/schema.ts";
import { TargetConfigurationError } from "../traffic/errors.ts";
import type { TargetState, TrafficTarget, WeightChange } from "../traffic/port.ts";
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
 * The traffic steps: `setWeight`, `setHeaderRoute`, `setMirrorRoute`, `setCanaryScale` and
 * blue/green's `preview`.
 * Weight drift found before a change is recorded and returned instead of overwritten; after a
 * person approves it (`rollouts promote`) the same step runs again and overwrites.
 *
 * The completed step is recorded with its `RolloutStepCompleted` event as a pending side effect:
 * a retry after the state write publishes what is missing and changes nothing twice.
 */
export async function setWeight(deps: WorkflowDeps, payload: StepPayload): Promise<SetWeightResult> {
  const { context, stepIndex } = payload;
  await watchBackground(deps, context); // a background analysis whose firings were lost aborts here
  const item = await drivingItem(deps, context);
  if (isDone(item, context, stepId(stepIndex))) {
    await flush(deps, context);
    return { drift: false, weight: item.weight, message: "already applied" };
  }
  if (payload.step.kind === "experiment" && payload.experiment !== "stop") {
    return startExperiment(deps, payload, item);
  }
  const applied = await applyStep(deps.targetFor(payload.target), payload, item);
  if ("drift" in applied) {
    await recordDrift(deps, payload, applied.drift);
    return { drift: true, weight: item.weight, message: applied.drift.message };
  }
  await recordCompletion(deps, payload, applied);
  deps.metrics.put({ name: METRICS.canaryWeight, value: applied.weight, rollout: context.rollout });
  await flush(deps, context);
  return { drift: false, weight: applied.weight, message: applied.message };
}

/** What a traffic step did on the target: the target's state after it, the weight, in a few words. */
interface Applied {
  next: TargetState;
  weight: number;
  message: string;
}

/** A weight change the target refused to write: someone else changed the weights. */
interface Drifted {
  drift: Extract<WeightChange, { outcome: "drift" }>;
}

/** Carries out the step on the target, from the state recorded on the item. */
async function applyStep(
  router: TrafficTarget,
  payload: StepPayload,
  item: RolloutItem,
): Promise<Applied | Drifted> {
  const { step, stepIndex } = payload;
  const state = item.targetState as TargetState;
  switch (step.kind) {
    case "setWeight":
      return applyWeight(router, payload, item, step.weight);
    case "setHeaderRoute": {
      const change = step.match
        ? await router.setHeaderRoute(state, { name: step.name, match: step.match })
        : await router.removeHeaderRoute(state, step.name);
      return { next: change.state, weight: item.weight, message: change.message };
    }
    case "setMirrorRoute":
      return applyMirrorRoute(router, payload, state, item.weight, step);
    case "setCanaryScale": {
      if (!router.setCanaryScale) {
        throw new TargetConfigurationError(
          `step ${stepIndex + 1}: setCanaryScale is not supported by the ${router.type} target: its candidate scales with the weight`,
        );
      }
      const { kind: _, ...scale } = step;
      const change = await router.setCanaryScale(state, scale);
      return { next: change.state, weight: item.weight, message: change.message };
    }
    case "experiment": {
      const change = await experimentTarget(router, stepIndex).stopExperiment(state);
      return { next: change.state, weight: item.weight, message: change.message };
    }
    case "preview":
      return {
        next: state,
        weight: item.weight,
        message: "preview: the candidate runs with no live traffic",
      };
    default:
      throw new TargetConfigurationError(`step ${stepIndex + 1}: a ${step.kind} step is not a traffic step`);
  }
}

/** A target that runs experiments, or an abort naming the step and the target. */
function experimentTarget(
  router: TrafficTarget,
  stepIndex: number,
): Required<Pick<TrafficTarget, "startExperiment" | "stopExperiment">> {
  if (!router.startExperiment || !router.stopExperiment) {
    throw new TargetConfigurationError(
      `step ${stepIndex + 1}: experiment is not supported by the ${router.type} target: it has no pod template to run next to the rollout`,
    );
  }
  return {
    startExperiment: router.startExperiment.bind(router),
    stopExperiment: router.stopExperiment.bind(router),
  };
}

/**
 * An experiment's start: its ReplicaSets created and the target's state recorded under an id of
 * its own, the step not completed (its stop completes it, after the analysis or the duration).
 */
async function startExperiment(
  deps: WorkflowDeps,
  payload: StepPayload,
  item: RolloutItem,
): Promise<SetWeightResult> {
  const { context, stepIndex, step } = payload;
  if (step.kind !== "experiment") throw new RangeError(`step ${stepIndex + 1} is not an experiment`);
  const id = `${stepId(stepIndex)}-experiment`;
  if (isDone(item, context, id)) {
    await flush(deps, context);
    return { drift: false, weight: item.weight, message: "already started" };
  }
  const target = experimentTarget(deps.targetFor(payload.target), stepIndex);
  const change = await target.startExperiment(item.targetState as TargetState, {
    stepIndex,
    templates: step.templates.map((t) => ({ name: t.name, specRef: t.specRef, replicas: t.replicas ?? 1 })),
  });
  await recordStep(
    deps,
    context,
    (latest, now) =>
      commit(
        withEvent(
          { ...latest, targetState: change.state },
          now,
          "ExperimentCreated",
          change.message,
          stepIndex,
        ),
        context,
        id,
        [],
      ),
    { step: id },
  );
  await flush(deps, context);
  return { drift: false, weight: item.weight, message: change.message };
}

/**
 * A `setWeight` step: drift found is returned unless a person approved overwriting it for this
 * step (or the rollout ignores drift), and the message says when it was overwritten.
 */
async function applyWeight(
  router: TrafficTarget,
  payload: StepPayload,
  item: RolloutItem,
  weight: number,
): Promise<Applied | Drifted> {
  const approved = item.drift !== null && item.drift.step === payload.stepIndex && item.drift.approved;
  const ignore = payload.onDrift === "ignore";
  const state = item.targetState as TargetState;
  let change = await router.setWeight(state, weight, { overwriteDrift: approved || ignore });
  // The weights already are this step's: an earlier attempt of it changed them and failed before
  // recording it (a throttled write, a crash). That is this rollout's own change, not drift.
  if (change.outcome === "drift" && change.weights.canary === weight)
    change = await router.setWeight(state, weight, { overwriteDrift: true });
  if (change.outcome === "drift") return { drift: change };
  return {
    next: change.state,
    weight,
    message: `weight ${weight}%${approved ? " (overwriting the weights changed by someone else, as approved)" : ""}`,
  };
}

/** A `setMirrorRoute` step, refused by a target that cannot mirror requests. */
async function applyMirrorRoute(
  router: TrafficTarget,
  payload: StepPayload,
  state: TargetState,
  weight: number,
  step: Extract<Step, { kind: "setMirrorRoute" }>,
): Promise<Applied> {
  if (!router.setMirrorRoute) {
    throw new TargetConfigurationError(
      `step ${payload.stepIndex + 1}: setMirrorRoute "${step.name}" is not supported by the ${router.type} target: it cannot mirror requests`,
    );
  }
  // Argo: a step with only the name removes the route; a match without a percentage mirrors all of it.
  const percentage = step.percentage ?? (step.match ? 100 : 0);
  const change = await router.setMirrorRoute(state, {
    name: step.name,
    percentage,
    ...(step.match ? { match: step.match } : {}),
  });
  return { next: change.state, weight, message: change.message };
}

/**
 * The drift found, recorded with the target's state as read and a `WeightDrift` event: the
 * workflow pauses, and a person's approval makes the step run again and overwrite it.
 */
async function recordDrift(
  deps: WorkflowDeps,
  payload: StepPayload,
  change: Drifted["drift"],
): Promise<void> {
  const { context, stepIndex } = payload;
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
}

/**
 * The completed step, written once under its id with its `RolloutStepCompleted` event as a
 * pending side effect: the target's state, the weight, the next step, and no drift left.
 */
async function recordCompletion(deps: WorkflowDeps, payload: StepPayload, applied: Applied): Promise<void> {
  const { context, stepIndex } = payload;
  const { next, weight, message } = applied;
  const id = stepId(stepIndex);
  const done = `Rollout step ${stepIndex + 1}/${payload.rollout.stepCount} completed (${message})`;
  const announce = publishEffect(
    context,
    id,
    eventAbout(deps, context, "RolloutStepCompleted", done, stepIndex),
  );
  // Argo's on-scaling-replica-set: a serverless candidate's share changes with its weight.
  const scaled =
    payload.step.kind === "setWeight"
      ? [
          publishEffect(
            context,
            id,
            eventAbout(
              deps,
              context,
              "TrafficWeightUpdated",
              `Traffic weight updated to ${weight}%`,
              stepIndex,
            ),
          ),
        ]
      : [];
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
        [...scaled, announce],
      ),
    { step: id },
  );
}

/** The id of a traffic step's completion: a step completes once per execution. */
const stepId = (stepIndex: number) => `step-${String(stepIndex).padStart(2, "0")}`;
