import { registerTaskToken } from "../abort/request-abort.ts";
import type { HookEvent } from "../hooks/payload.ts";
import { update } from "../store/update.ts";
import type { WorkflowDeps } from "./deps.ts";
import { commit, doneUnder, tokenId } from "./effects.ts";
import { drivingItem } from "./item.ts";
import type { HookPayload, WorkflowContext } from "./payloads.ts";

/**
 * The error a hook's wait ends with when its Task was retried after an earlier attempt had started
 * the hook function: that function answers the earlier attempt's token, which Step Functions no
 * longer accepts, and it is not started a second time.
 */
const HOOK_ALREADY_STARTED = "HookAlreadyStarted";

/**
 * A lifecycle hook's wait: the task token is stored on the rollout item (in the conditional write
 * that refuses an aborted or superseded execution, as every wait does), so the abort channel — a
 * person, an alarm, a newer push — ends the hook's wait at once; then the hook function is invoked
 * asynchronously with the rollout, the revision, the weight and the token, and answers the token
 * itself.
 *
 * The hook function is started once per wait. Once Lambda has accepted the invocation, the start
 * is recorded on the item under the hook's state and the token's hash (`hook-<point>-<step>/<token
 * hash>` in the execution's done ids). A retried invocation with the same token finds it and starts
 * nothing. One with a new token (Step Functions retried the Task after the function was started)
 * cannot hand that token to the running hook, which answers the old one: it ends the new wait with
 * `HookAlreadyStarted` instead of starting the hook again, and the rollout aborts, naming the hook.
 * The one case left is a crash between Lambda accepting the invocation and that record's write:
 * nothing shows the start, so a retry starts the hook again (at least once, never silently zero).
 */
export async function runHook(
  deps: WorkflowDeps,
  payload: HookPayload,
): Promise<{ invoked: string; started: boolean }> {
  const { context, hook, taskToken, stepIndex } = payload;
  if (!deps.hooks) throw new Error("no hook invoker is configured for this function");
  const item = await drivingItem(deps, context, { hold: "allow" });
  const registered = await registerTaskToken({
    store: deps.store,
    name: context.rollout,
    executionArn: context.executionArn,
    token: taskToken,
    waitingFor: "hook",
    clock: deps.clock,
  });
  const prefix = `hook-${hook.point}-${stepIndex === null ? "start" : String(stepIndex).padStart(2, "0")}/`;
  const started = `${prefix}${tokenId(taskToken)}`;
  const earlier = doneUnder(registered, context, prefix);
  if (earlier.includes(started)) return { invoked: hook.function, started: false };
  if (earlier.length > 0) {
    await deps.tokens.sendFailure(
      taskToken,
      HOOK_ALREADY_STARTED,
      "the hook function was already started for this wait, and Step Functions then retried the hook " +
        "Task with a new task token; the running hook answers the earlier token, which is no longer " +
        "accepted, so the hook is not started a second time and the rollout stops here",
    );
    return { invoked: hook.function, started: false };
  }
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
  await recordStart(deps, context, started);
  return { invoked: hook.function, started: true };
}

/** Marks the hook's start done for the execution, unless another execution took the rollout over. */
async function recordStart(deps: WorkflowDeps, context: WorkflowContext, id: string): Promise<void> {
  await update(deps.store, context.rollout, "latest", (latest) =>
    latest.executionArn === context.executionArn && latest.effects.executionArn === context.executionArn
      ? commit(latest, context, id, [])
      : null,
  );
}
