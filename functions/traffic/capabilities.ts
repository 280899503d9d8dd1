import type { RolloutSpec } from "../../statemachine/spec.ts";
import type { TargetType } from "./port.ts";

/**
 * What each target can do beyond weights, decided when a spec is compiled for it (`rollouts
 * compile --target`, `addRollout`) so that a spec the target cannot run is refused before it is
 * deployed, never halfway through a rollout.
 *
 * Mirroring needs something that copies requests: SageMaker's shadow variants, or the local
 * proxy's model router. An ALB forward action and a Lambda alias only split traffic.
 */
const MIRRORS: Readonly<Record<TargetType, boolean>> = {
  "alb-ecs": false,
  "lambda-alias": false,
  "local-proxy": true,
  sagemaker: true,
};

/** The targets that can run `setMirrorRoute` steps. */
export const MIRRORING_TARGETS = (Object.keys(MIRRORS) as TargetType[]).filter((t) => MIRRORS[t]);

/**
 * The steps of `spec` that the target of type `type` cannot run, one line each naming the step
 * (none: it can run them all). An unknown type is left to the settings' own validation.
 */
export function targetSpecProblems(type: unknown, spec: RolloutSpec): string[] {
  if (typeof type !== "string" || !(type in MIRRORS) || MIRRORS[type as TargetType]) return [];
  const problems: string[] = [];
  spec.steps.forEach((step, i) => {
    if (step.kind === "setMirrorRoute") {
      problems.push(
        `step ${i + 1}: setMirrorRoute "${step.name}": the ${type} target cannot mirror requests ` +
          `(targets that can: ${MIRRORING_TARGETS.join(", ")})`,
      );
    }
  });
  return problems;
}
