import type { TargetState } from "../traffic/port.ts";
import type { WorkflowDeps } from "./deps.ts";
import { drivingItem, recordStep } from "./item.ts";
import type { CheckReadyPayload } from "./payloads.ts";

export interface CheckReadyResult {
  ready: boolean;
  waitSeconds: number;
  message: string;
}

/**
 * One readiness poll of a target with pods (the candidate's tasks started, a weight's pods
 * settled). The Wait loop around it never hangs: the target throws `TargetNotReadyError` past its
 * progress deadline, and the Catch aborts the rollout.
 */
export async function checkReady(deps: WorkflowDeps, payload: CheckReadyPayload): Promise<CheckReadyResult> {
  const item = await drivingItem(deps, payload.context);
  const readiness = await deps.targetFor(payload.target).checkReadiness(item.targetState as TargetState);
  await recordStep(deps, payload.context, (latest) => ({
    ...latest,
    targetState: readiness.state,
    message: readiness.ready ? latest.message : readiness.message,
  }));
  return {
    ready: readiness.ready,
    waitSeconds: readiness.ready ? 0 : readiness.retryAfterSeconds,
    message: readiness.message,
  };
}
