import { registerTaskToken } from "../abort/request-abort.ts";
import type { HookEvent } from "../hooks/payload.ts";
import type { WorkflowDeps } from "./deps.ts";
import { drivingItem } from "./item.ts";
import type { HookPayload } from "./payloads.ts";

/**
 * A lifecycle hook's wait: the task token is stored on the rollout item (in the conditional write
 * that refuses an aborted or superseded execution, as every wait does), so the abort channel — a
 * person, an alarm, a newer push — ends the hook's wait at once; then the hook function is invoked
 * asynchronously with the rollout, the revision, the weight and the token, and answers the token
 * itself. A retried invocation may start the function twice: a hook must be idempotent (its
 * second answer to a used token is refused by Step Functions and changes nothing).
 */
export async function runHook(deps: WorkflowDeps, payload: HookPayload): Promise<{ invoked: string }> {
  const { context, hook, taskToken, stepIndex } = payload;
  if (!deps.hooks) throw new Error("no hook invoker is configured for this function");
  const item = await drivingItem(deps, context, { hold: "allow" });
  await registerTaskToken({
    store: deps.store,
    name: context.rollout,
    executionArn: context.executionArn,
    token: taskToken,
    waitingFor: "hook",
    clock: deps.clock,
  });
  const event: HookEvent = {
    type: "sfn-rollouts.hook",
    hook: hook.point,
    rollout: context.rollout,
    revision: context.revision,
    specRevision: payload.rollout.revision,
    image: context.image,
    tag: context.tag,
    digest: context.digest,
    weight: item.weight,
    stepIndex,
    executionArn: context.executionArn,
    taskToken,
    timeoutSeconds: hook.timeoutSeconds,
    heartbeatSeconds: hook.heartbeatSeconds ?? null,
  };
  await deps.hooks.invoke(hook.function, event);
  return { invoked: hook.function };
}
