/**
 * The `TrafficTarget` port: the one interface every traffic target (ALB + ECS slots, a Lambda
 * alias, Kubernetes, a SageMaker endpoint, a target plugin) implements, and the only thing the
 * workflow's handlers know about targets.
 *
 * Why it looks like this:
 * - Lambdas must not block for minutes, so nothing here waits: long operations are split into a
 *   "start" call and a `checkReadiness` call that a Step Functions Wait loop polls, and each
 *   deadline is enforced by comparing an injected clock with a deadline recorded in the state.
 * - Adapters are stateless apart from their SDK clients. Everything a target must remember
 *   between calls (which slot is stable, the published version, the rules snapshot, the pending
 *   scale-down) lives in a JSON-serializable {@link TargetState} that the caller stores on the
 *   rollout item and hands back on the next call. Adapters validate it with zod on the way in,
 *   because it comes back from DynamoDB.
 * - Weight drift is data, not an exception: `setWeight` returns a `drift` outcome that the
 *   handler turns into a pause with message `paused-drift`; it never overwrites what someone
 *   else set unless told to.
 * - Infrastructure faults throw the named errors of `./errors.ts`, which the ASL matches by name.
 */

/** The project's clock port: deadlines and delays are computed from an injected clock. */
export type { Clock } from "../clock.ts";

/** A JSON value: what DynamoDB (through the document client) and Step Functions round-trip. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * The target's memory between calls, owned by the caller (stored on the rollout item). Opaque to
 * the handler; each adapter parses it with its own schema and rejects a state written by another
 * target type.
 */
export type TargetState = { readonly type: TargetType } & Record<string, unknown>;

/** The kinds of target this package drives. */
export type TargetType = "alb-ecs" | "lambda-alias" | "kubernetes" | "sagemaker" | "plugin";

/**
 * What was pushed: the artifact the candidate runs. ECS and Lambda image functions take an
 * `image` (an ECR URI, ideally pinned by digest, `repo@sha256:…`); Lambda zip functions take an
 * S3 object; a target plugin gets the pushed image and decides what it runs.
 */
export type CandidateArtifact =
  | { readonly image: string; readonly version?: string }
  | {
      readonly s3Bucket?: string;
      readonly s3Key: string;
      readonly s3ObjectVersion?: string;
      readonly version?: string;
    }
  /** A SageMaker model package (a version in the Model Registry), by ARN. */
  | { readonly modelPackage: string; readonly version?: string };

/** What was pushed, as the trigger read it: an image URI (or a model package's ARN), its digest and tag. */
export interface Pushed {
  readonly image: string;
  readonly digest: string;
  readonly tag: string | null;
}

/** The result of reading what is in service before changing anything (`traffic:prepare`). */
export interface Prepared {
  readonly state: TargetState;
  /** Nothing in service yet: the workflow skips the steps and promotes directly. */
  readonly firstRelease: boolean;
  /** Human-readable description of the stable side, for the status and the events. */
  readonly stable: string;
}

/** One poll of a long operation (candidate deployment, restoring a scaled-down slot, scale-down). */
export type Readiness =
  | { readonly ready: true; readonly state: TargetState; readonly message: string }
  | {
      readonly ready: false;
      readonly state: TargetState;
      /** How long the Wait state should wait before polling again. */
      readonly retryAfterSeconds: number;
      readonly message: string;
    };

/** The weights actually configured on the target, as percentages of traffic. */
export interface ObservedWeights {
  /** Percent of traffic (0–100) the candidate receives now; may be fractional after drift. */
  readonly canary: number;
  /** Percent of traffic the stable side receives now. */
  readonly stable: number;
  /** Percent this rollout last set for the candidate. */
  readonly expectedCanary: number;
  /** True when what is configured differs from what this rollout set. */
  readonly drift: boolean;
  /** Target-specific detail (raw ALB weights, alias routing config), for messages. */
  readonly detail: string;
}

/**
 * The outcome of a weight change. `drift` means nothing was written: someone else changed the
 * weights since this rollout set them; the handler pauses the rollout with
 * {@link PAUSED_DRIFT} and a person decides (promote = continue with `overwriteDrift`, abort =
 * back to stable).
 */
export type WeightChange =
  | { readonly outcome: "applied"; readonly state: TargetState; readonly weights: ObservedWeights }
  | {
      readonly outcome: "drift";
      readonly state: TargetState;
      readonly weights: ObservedWeights;
      readonly message: string;
    };

/** A header route (Argo `setHeaderRoute`): requests matching all `match` entries go to the candidate. */
export interface HeaderRoute {
  readonly name: string;
  readonly match: readonly {
    readonly headerName: string;
    readonly headerValue: { readonly exact?: string; readonly prefix?: string; readonly regex?: string };
  }[];
}

/**
 * The outcome of a header route change. `applied: false` with a message when the target cannot
 * route by header (a Lambda alias: testers invoke the candidate version directly).
 */
export interface HeaderRouteChange {
  readonly state: TargetState;
  readonly applied: boolean;
  readonly message: string;
}

/**
 * A mirror route (Argo `setMirrorRoute`): `percentage` of the requests matching `match` (any entry;
 * absent = all) are copied to the candidate as well, and the copy's answer is never the caller's.
 * `percentage` 0 removes the route.
 */
export interface MirrorRoute {
  readonly name: string;
  readonly percentage: number;
  readonly match?: readonly Record<string, unknown>[];
}

/** The outcome of a mirror route change. */
export interface MirrorRouteChange {
  readonly state: TargetState;
  readonly message: string;
}

/** The candidate's pods after a `setCanaryScale` step, and what was done. */
export interface CanaryScaleChange {
  readonly state: TargetState;
  readonly message: string;
}

import type { CanaryScale } from "../../statemachine/pods.ts";

export type { CanaryScale };

/** One ReplicaSet of an `experiment` step: the pod template it copies and its pods. */
export interface ExperimentTemplate {
  readonly name: string;
  readonly specRef: "stable" | "canary";
  readonly replicas: number;
}

/** An `experiment` step as a target runs it. */
export interface Experiment {
  /** The step's index (0-based), part of the experiment's name as in Argo. */
  readonly stepIndex: number;
  readonly templates: readonly ExperimentTemplate[];
}

/** The target after an experiment started or stopped, and what was done. */
export interface ExperimentChange {
  readonly state: TargetState;
  readonly message: string;
}

/** Delays of the rollout spec that the target applies (seconds). */
export interface PromoteOptions {
  /** `scaleDownDelaySeconds`: how long the replaced side stays ready for a quick return. */
  readonly scaleDownDelaySeconds: number;
}

export interface AbortOptions {
  /** `abortScaleDownDelaySeconds`: how long the aborted candidate stays up for inspection. */
  readonly abortScaleDownDelaySeconds: number;
  /** Seconds allowed to bring a scaled-down stable slot back before failing. */
  readonly progressDeadlineSeconds?: number;
}

/**
 * One traffic target. Every method takes the state the previous call returned and returns the
 * new one; the caller must store it before the next call. Methods are safe to retry with the
 * same input state (Lambda retries) unless documented otherwise.
 *
 * Call order for one rollout:
 * `prepare` → `deployCandidate` → `checkReadiness`* (until `ready`) → (`setHeaderRoute` |
 * `setWeight` | `readWeights`)* → `promote` | `abort`* (until `ready`) → `scaleDown`* (until
 * `ready`).
 */
export interface TrafficTarget {
  readonly type: TargetType;

  /**
   * What the candidate runs for this push (most targets: the image, or the model package an
   * approval in the Model Registry pushed; `pushedArtifact`). Pure: Begin asks before it records
   * anything, so a push the target cannot run (a `RangeError` naming why) fails the execution
   * without touching the rollout.
   */
  artifactFor(pushed: Pushed): CandidateArtifact;

  /** Reads which side is stable and the current weights; changes nothing. */
  prepare(): Promise<Prepared>;

  /**
   * Puts the candidate in place with no traffic (new task definition on the free slot, new Lambda
   * code, a plugin's candidate) and returns immediately; poll {@link checkReadiness}.
   */
  deployCandidate(state: TargetState, artifact: CandidateArtifact): Promise<TargetState>;

  /**
   * One poll of the pending operation (deployment, or restoring the stable side during an abort).
   * Throws `TargetNotReadyError` when it failed or its deadline passed, so a workflow never hangs.
   */
  checkReadiness(state: TargetState): Promise<Readiness>;

  /** Reads the weights configured now and compares them with what this rollout set. */
  readWeights(state: TargetState): Promise<ObservedWeights>;

  /**
   * Sends `percent` (0–100) of traffic to the candidate. Re-reads the weights first and returns a
   * `drift` outcome instead of writing when someone else changed them, unless `overwriteDrift`.
   */
  setWeight(
    state: TargetState,
    percent: number,
    options?: { readonly overwriteDrift?: boolean },
  ): Promise<WeightChange>;

  /** Routes requests matching the header route to the candidate whatever the weight (testers). */
  setHeaderRoute(state: TargetState, route: HeaderRoute): Promise<HeaderRouteChange>;

  /** Removes a header route set by {@link setHeaderRoute}; a no-op when absent. */
  removeHeaderRoute(state: TargetState, name: string): Promise<HeaderRouteChange>;

  /**
   * Copies a share of the requests to the candidate (shadow) without changing who answers; absent
   * on a target that cannot mirror. Promote and abort remove the mirror.
   */
  setMirrorRoute?(state: TargetState, route: MirrorRoute): Promise<MirrorRouteChange>;

  /**
   * Argo's `setCanaryScale`: the candidate's pods decoupled from the weight until the next one,
   * cleared by promote and abort; absent on a target whose candidate scales with the weight.
   */
  setCanaryScale?(state: TargetState, scale: CanaryScale): Promise<CanaryScaleChange>;

  /**
   * Argo's `experiment` step: ReplicaSets of the stable and the candidate's pod templates next to
   * the rollout's own, with no traffic from its router; `checkReadiness` waits until they are
   * available. Absent on a target with no pod template to run apart from the weight.
   */
  startExperiment?(state: TargetState, experiment: Experiment): Promise<ExperimentChange>;

  /**
   * The values only the running experiment knows, by Argo's placeholder name:
   * `templates.<name>.podTemplateHash` for each of its templates.
   */
  experimentValues?(state: TargetState): Record<string, string>;

  /** Deletes the experiment's ReplicaSets (also done by promote and abort). */
  stopExperiment?(state: TargetState): Promise<ExperimentChange>;

  /**
   * Makes the candidate the stable side with all the traffic (no second deployment), removes
   * header routes and schedules the old side's scale-down after `scaleDownDelaySeconds`.
   */
  promote(state: TargetState, options: PromoteOptions): Promise<TargetState>;

  /**
   * Sends all traffic back to the stable side, removes header routes and schedules the
   * candidate's scale-down after `abortScaleDownDelaySeconds`. Inside the scale-down window after
   * a promotion this is a weight change; after it, the old side is scaled back up first and the
   * result is `ready: false`: call `abort` again (from a Wait loop) until it is `ready`. Throws
   * `TargetNotReadyError` when the old side does not come back before its deadline.
   */
  abort(state: TargetState, options: AbortOptions): Promise<Readiness>;

  /**
   * Scales the replaced (or aborted) side down once its delay has passed; `ready: false` with the
   * remaining seconds before that. Touches nothing if that side carries traffic again (another
   * release made it the stable one).
   */
  scaleDown(state: TargetState): Promise<Readiness>;
}
