import { describe, expect, it } from "vitest";
import { runHook } from "../../../functions/workflow/hook.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";
import { direct, itemOf, ROLLOUT, startRevision, TARGET } from "../../support/direct-workflow.ts";

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
});
