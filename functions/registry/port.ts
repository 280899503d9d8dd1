import { RolloutsError } from "../../statemachine/errors.ts";
/**
 * The model registry port: where a promoted model is recorded as the production one, and a
 * rolled-back candidate is marked with the reason, so the registry, the endpoint and the audit
 * log agree. Called from the workflow's side effects (`functions/workflow/effects.ts`): each
 * call is made once per execution, after the state write that decided it, and again only if it
 * failed.
 */

/** The model a rollout released: a SageMaker model package, and its version (for MLflow). */
export interface ModelRef {
  /** The model package ARN, when the rollout deployed one. */
  readonly modelPackage?: string;
  /** The version number (from the package, or the pushed tag `7` / `v7`), when there is one. */
  readonly version: string | null;
}

export interface ModelRegistry {
  /** Records `model` as the production model; returns what was done, in words. */
  promoted(model: ModelRef): Promise<string>;
  /** Marks `model` as rolled back, with why; returns what was done, in words. */
  rolledBack(model: ModelRef, reason: string): Promise<string>;
}

/** The registry refused a call or could not be reached: the side effect stays pending and is retried. */
export class RegistryError extends RolloutsError {
  override readonly name = "RegistryError";
}
