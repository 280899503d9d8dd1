import { DEFINITION_MAX_CHARS, MAX_STEPS } from "./limits.ts";
import type { Problem } from "./problems.ts";

type Where = Omit<Problem, "message" | "path">;

/** The problem of a rollout of `count` steps, or undefined within {@link MAX_STEPS}. */
export function stepsProblem(count: number, where: Where, path: string): Problem | undefined {
  if (count <= MAX_STEPS) return undefined;
  return {
    ...where,
    path,
    message: `${count.toLocaleString("en-US")} steps, more than the ${MAX_STEPS.toLocaleString("en-US")} a definition can hold: each step adds at least 1,100 characters to the state machine definition, and Step Functions takes at most ${DEFINITION_MAX_CHARS.toLocaleString("en-US")}; use fewer steps`,
  };
}

/**
 * The steps a document writes, counted before they are read (each may resolve templates): an
 * Argo Rollout's `spec.strategy.canary.steps`, a native spec's `steps`.
 */
export function writtenStepsProblem(value: unknown, where: Where): Problem | undefined {
  const v = value as { steps?: unknown; spec?: { strategy?: { canary?: { steps?: unknown } } } } | null;
  const argo = v?.spec?.strategy?.canary?.steps;
  if (Array.isArray(argo)) return stepsProblem(argo.length, where, "spec.strategy.canary.steps");
  if (Array.isArray(v?.steps)) return stepsProblem(v.steps.length, where, "steps");
  return undefined;
}
