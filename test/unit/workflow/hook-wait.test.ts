import { direct, itemOf, ROLLOUT, startRevision, TARGET } from "@sfn-rollouts/test-support/direct-workflow";
import { interceptSaves } from "@sfn-rollouts/test-support/store";
import { describe, expect, it } from "vitest";
import { runHook } from "../../../functions/workflow/hook.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";

const base = (context: WorkflowContext) => ({ context, rollout: ROLLOUT, target: TARGET });
const HOOK = "arn:aws:lambda:us-east-1:123456789012:function:smoke";

/**
 * A hook answers its task token itself, straight to Step Functions: nothing of ours sees the
 * answer. The step the execution moves on to is the sign the hook's wait is over, so the item
 * must stop saying it waits for the hook (what `rollouts get` shows, what `promote` refuses,
 * the token an abort would fail).
 */
describe("a lifecycle hook's wait", () => {
  it("ends on the item with the next step the execution runs", async () => {
    const d = direct();
    const r2 = await startRevision(d, 2);
    const invoked: string[] = [];
    d.deps.hooks = { invoke: async (fn: string) => void invoked.push(fn) } as never;
    await runHook(d.deps, {
      ...base(r2),
      stepIndex: 0,
      hook: { point: "beforeTraffic", function: HOOK, timeoutSeconds: 600 },
      taskToken: "token-of-the-hook",
    });
    expect(invoked).toEqual([HOOK]);
    expect(await itemOf(d)).toMatchObject({ waitingFor: "hook", currentTaskToken: "token-of-the-hook" });

    // The hook passed (it answered the token): the execution runs the step's weight change.
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    expect(await itemOf(d)).toMatchObject({
      weight: 25,
      waitingFor: null,
      currentTaskToken: null,
      waitingSince: null,
    });
  });

  it("is started once per token; a start whose record was lost is made again (at least once)", async () => {
    const d = direct();
    const r2 = await startRevision(d, 2);
    const invoked: string[] = [];
    d.deps.hooks = {
      invoke: async (_fn: string, event: { taskToken: string }) => void invoked.push(event.taskToken),
    } as never;
    const payload = (taskToken: string) => ({
      ...base(r2),
      stepIndex: 0,
      hook: { point: "afterTraffic" as const, function: HOOK, timeoutSeconds: 600 },
      taskToken,
    });
    const store = d.deps.store;
    // The Lambda dies after Lambda accepted the invocation, before the start is recorded.
    let saves = 0;
    d.deps.store = interceptSaves(store, () => {
      if (++saves === 2) throw new Error("the function timed out");
    });
    await expect(runHook(d.deps, payload("token-1"))).rejects.toThrow("the function timed out");
    d.deps.store = store;
    expect(await runHook(d.deps, payload("token-1"))).toEqual({ invoked: HOOK, started: true });
    expect(await runHook(d.deps, payload("token-1"))).toEqual({ invoked: HOOK, started: false });
    expect(invoked).toEqual(["token-1", "token-1"]);
    // A new token for the same wait (the Task retried): the hook is not started again, the new
    // wait ends with HookAlreadyStarted.
    d.tokens.live.add("token-2");
    expect(await runHook(d.deps, payload("token-2"))).toEqual({ invoked: HOOK, started: false });
    expect(invoked).toEqual(["token-1", "token-1"]);
    expect(d.tokens.failures).toEqual([
      {
        token: "token-2",
        error: "HookAlreadyStarted",
        cause: expect.stringContaining("not started a second time"),
      },
    ]);
    // Another hook state of the same execution is its own wait.
    expect(await runHook(d.deps, { ...payload("token-3"), stepIndex: 2 })).toEqual({
      invoked: HOOK,
      started: true,
    });
    expect(invoked).toEqual(["token-1", "token-1", "token-3"]);
  });
});
