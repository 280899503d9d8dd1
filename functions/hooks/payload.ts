import type { HookPoint } from "../../statemachine/safety.ts";

/**
 * What a hook function receives (documented in docs/safety.md). It answers with
 * `SendTaskSuccess({taskToken, output})` to let the rollout go on, or
 * `SendTaskFailure({taskToken, error, cause})` to abort it with that message; while it works it
 * may send `SendTaskHeartbeat({taskToken})` (required when the hook has `heartbeatSeconds`).
 */
export interface HookEvent {
  type: "sfn-rollouts.hook";
  hook: HookPoint;
  rollout: string;
  /** Argo's revision number of the candidate. */
  revision: number;
  /** The spec's revision (the pod template's hash). */
  specRevision: string;
  image: string;
  tag: string | null;
  digest: string;
  /** Percent of traffic on the candidate when the hook runs. */
  weight: number;
  /** The step just done (afterTraffic), the step count (afterPromotion), or null (beforeTraffic). */
  stepIndex: number | null;
  executionArn: string;
  taskToken: string;
  /** Seconds the rollout waits for the verdict, and between heartbeats when it requires them. */
  timeoutSeconds: number;
  heartbeatSeconds: number | null;
}
