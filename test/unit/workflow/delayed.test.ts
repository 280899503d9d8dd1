import {
  type Direct,
  direct,
  itemOf,
  ROLLOUT,
  startRevision,
  T0,
  TARGET,
} from "@sfn-rollouts/test-support/direct-workflow";
import { describe, expect, it } from "vitest";
import { abort } from "../../../functions/workflow/abort.ts";
import { startAnalysis } from "../../../functions/workflow/analysis.ts";
import { awaitStep } from "../../../functions/workflow/await.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { promote } from "../../../functions/workflow/promote.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";
import { MetricSchema } from "../../../statemachine/spec.ts";

/**
 * Delayed work (a scale-down, an abort that waits for the old side) is delivered by the Timer long
 * after it was scheduled. It belongs to the execution and revision that scheduled it, and must do
 * nothing once another one drives the rollout.
 */

const base = (context: WorkflowContext) => ({ context, rollout: ROLLOUT, target: TARGET });

async function stableRevision1(d: Direct): Promise<void> {
  const context = await startRevision(d, 1);
  await promote(d.deps, { ...base(context), scaleDownDelaySeconds: 0 });
  await d.timer.runUntilIdle();
  d.target.calls.length = 0;
  d.events.published.length = 0;
  d.resumed.length = 0;
}

const rollback = (context: WorkflowContext) => ({
  ...base(context),
  error: { Error: "AnalysisRunFailed", Cause: "the candidate failed" },
  onFailure: "rollback" as const,
  abortScaleDownDelaySeconds: 30,
});

describe("delayed work of an older execution", () => {
  it("an abort continued after a newer revision set 50% moves no traffic and scales nothing down", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    // The old side is not back yet: the abort continues from the Timer in 15 s.
    d.target.abortPending = 1;
    await abort(d.deps, rollback(r2));
    expect(d.timer.pending()).toMatchObject([
      { payload: { kind: "abort-continue", executionArn: r2.executionArn, revision: 2 } },
    ]);

    const r3 = await startRevision(d, 3);
    await setWeight(d.deps, { ...base(r3), stepIndex: 0, step: { kind: "setWeight", weight: 50 } });
    d.target.calls.length = 0;
    await d.timer.advanceTo(T0 + 120_000);

    expect(d.target.calls).toEqual([]);
    expect(d.target.canary).toBe(50);
    expect(await itemOf(d)).toMatchObject({
      weight: 50,
      executionArn: r3.executionArn,
      phase: "Progressing",
    });
    const skipped = d.events.ofType("RolloutDelayedActionSkipped");
    expect(skipped).toHaveLength(1);
    expect(skipped[0]?.detail).toMatchObject({ rollout: "checkout", revision: 2 });
    expect(skipped[0]?.detail.message).toMatch(
      /^abort-continue of revision 2 \(execution checkout-222222222222-g2\) skipped: execution checkout-222222222222-g2 no longer drives the rollout \(now checkout-333333333333-g3, revision 3\)$/,
    );
    expect(d.resumed).toEqual([expect.stringMatching(/^skipped: /)]);
  });

  it("a promotion's scale-down due after a newer revision started does not scale down its candidate", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    await promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 30 });
    const r3 = await startRevision(d, 3);
    await setWeight(d.deps, { ...base(r3), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    d.target.calls.length = 0;
    await d.timer.runUntilIdle();
    expect(d.target.calls).toEqual([]);
    expect(d.events.ofType("RolloutDelayedActionSkipped")[0]?.detail.message).toMatch(
      /^scale-down of revision 2 .* skipped: execution checkout-222222222222-g2 no longer drives the rollout/,
    );
  });

  it("the execution's own delayed work still runs: the abort continues, then the candidate is scaled down", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    d.target.abortPending = 1;
    await abort(d.deps, rollback(r2));
    d.target.calls.length = 0;
    await d.timer.runUntilIdle();
    expect(d.target.calls).toEqual(["abort", "scaleDown v2"]);
    expect(d.target.canary).toBe(0);
    expect(d.events.ofType("RolloutDelayedActionSkipped")).toEqual([]);
  });

  it("a firing whose revision is not the item's current one is skipped too", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    await promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 30 });
    // Same execution, but the item names another revision (someone rewrote it meanwhile).
    const item = await itemOf(d);
    await d.store.save(
      {
        ...item,
        currentRevision: {
          ...(item.currentRevision as NonNullable<typeof item.currentRevision>),
          revision: 7,
        },
      },
      item.version,
    );
    d.target.calls.length = 0;
    await d.timer.runUntilIdle();
    expect(d.target.calls).toEqual([]);
    expect(d.events.ofType("RolloutDelayedActionSkipped")[0]?.detail.message).toMatch(
      /skipped: revision 2 is not the rollout's current revision \(7\)$/,
    );
  });
});

/**
 * Firings scheduled by the previous release are still pending when a new one is deployed. They
 * carry no revision, and a tick, a scale-down or a continued abort carried no execution either:
 * they must still be performed, checked against what they do carry.
 */
describe("delayed work scheduled before the upgrade", () => {
  /** Rewrites every pending firing as the previous release scheduled it. */
  async function asPreviousRelease(d: Direct): Promise<void> {
    for (const firing of d.timer.pending()) {
      const { revision: _revision, ...payload } = firing.payload as Record<string, unknown>;
      if (payload.kind !== "pause") delete payload.executionArn;
      await d.timer.cancel(firing.key);
      await d.timer.schedule({ at: firing.at, key: firing.key, payload });
    }
  }

  const ANALYSIS = {
    templates: [
      {
        name: "success-rate",
        kind: "AnalysisTemplate" as const,
        metrics: [
          MetricSchema.parse({
            name: "success-rate",
            interval: 3,
            count: 2,
            successCondition: "result[0] >= 0.95",
            provider: { web: { url: "http://127.0.0.1:1/unused" } },
          }),
        ],
      },
    ],
    args: {},
  };

  it("a timed pause ends", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    d.tokens.live.add("token-1");
    const pause = { kind: "pause" as const, duration: 60, reason: "CanaryPauseStep" as const };
    await awaitStep(d.deps, { ...base(r2), stepIndex: 1, step: pause, taskToken: "token-1" });
    await asPreviousRelease(d);
    expect(d.timer.pending()).toEqual([
      expect.objectContaining({
        payload: { kind: "pause", rollout: "checkout", executionArn: r2.executionArn, token: "token-1" },
      }),
    ]);
    await d.timer.runUntilIdle();
    expect(d.resumed).toEqual(["pause ended"]);
    expect(d.tokens.successes.map((s) => s.token)).toEqual(["token-1"]);
    expect(await itemOf(d)).toMatchObject({ phase: "Progressing", waitingFor: null });
  });

  it("a timed pause of an execution that no longer drives the rollout is still skipped", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    d.tokens.live.add("token-1");
    const pause = { kind: "pause" as const, duration: 60, reason: "CanaryPauseStep" as const };
    await awaitStep(d.deps, { ...base(r2), stepIndex: 1, step: pause, taskToken: "token-1" });
    await asPreviousRelease(d);
    await startRevision(d, 3);
    await d.timer.runUntilIdle();
    expect(d.tokens.successes).toEqual([]);
    expect(d.events.ofType("RolloutDelayedActionSkipped")[0]?.detail).toMatchObject({
      revision: null,
      message: expect.stringMatching(
        /^pause \(execution checkout-222222222222-g2\) skipped: execution checkout-222222222222-g2 no longer drives the rollout/,
      ),
    });
  });

  it("an analysis keeps ticking until it answers", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    d.tokens.live.add("token-a");
    await startAnalysis(d.deps, {
      ...base(r2),
      stepIndex: 1,
      step: { kind: "analysis", origin: "step", analysis: ANALYSIS },
      taskToken: "token-a",
    });
    await asPreviousRelease(d);
    expect(d.timer.pending()).toMatchObject([{ payload: { kind: "tick" } }]);
    expect(d.timer.pending()[0]?.payload).not.toHaveProperty("executionArn");
    await d.timer.runUntilIdle();
    expect(d.tokens.successes).toMatchObject([{ token: "token-a", output: { phase: "Successful" } }]);
    expect(d.events.ofType("RolloutDelayedActionSkipped")).toEqual([]);
  });

  it("a tick of a run whose execution no longer drives the rollout is skipped and closes the run", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    d.tokens.live.add("token-a");
    await startAnalysis(d.deps, {
      ...base(r2),
      stepIndex: 1,
      step: { kind: "analysis", origin: "step", analysis: ANALYSIS },
      taskToken: "token-a",
    });
    await asPreviousRelease(d);
    await startRevision(d, 3);
    await d.timer.runUntilIdle();
    expect(d.events.ofType("RolloutDelayedActionSkipped")[0]?.detail).toMatchObject({
      revision: 2,
      message: expect.stringMatching(
        /^tick of revision 2 \(execution checkout-222222222222-g2\) skipped: execution checkout-222222222222-g2 no longer drives the rollout/,
      ),
    });
    expect(d.resumed).toEqual([expect.stringMatching(/^skipped: /)]);
  });

  it("a promotion's scale-down scales the old side down", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    await promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 30 });
    await asPreviousRelease(d);
    expect(d.timer.pending()).toEqual([
      expect.objectContaining({
        payload: { kind: "scale-down", rollout: "checkout", target: TARGET, attempt: 0 },
      }),
    ]);
    d.target.calls.length = 0;
    const before = await itemOf(d);
    await d.timer.runUntilIdle();
    expect(d.target.calls).toEqual(["scaleDown v2"]);
    expect(d.events.ofType("RolloutDelayedActionSkipped")).toEqual([]);
    // The target's state came back as it was: nothing to record, so the item is not rewritten.
    expect((await itemOf(d)).version).toBe(before.version);
  });

  it("a scale-down that changes the target's state records it", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    await promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 30 });
    await asPreviousRelease(d);
    const scaleDown = d.target.scaleDown.bind(d.target);
    d.target.scaleDown = async (state) => ({
      ...(await scaleDown(state)),
      state: { ...state, scaledDown: true },
    });
    const before = await itemOf(d);
    await d.timer.runUntilIdle();
    const after = await itemOf(d);
    expect(after.version).toBe(before.version + 1);
    expect(after.targetState).toMatchObject({ scaledDown: true });
  });

  it("an abort continues, then the candidate is scaled down", async () => {
    const d = direct();
    await stableRevision1(d);
    const r2 = await startRevision(d, 2);
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    d.target.abortPending = 1;
    await abort(d.deps, rollback(r2));
    await asPreviousRelease(d);
    expect(d.timer.pending()).toMatchObject([{ payload: { kind: "abort-continue", attempt: 1 } }]);
    expect(d.timer.pending()[0]?.payload).not.toHaveProperty("revision");
    d.target.calls.length = 0;
    await d.timer.runUntilIdle();
    expect(d.target.calls).toEqual(["abort", "scaleDown v2"]);
    expect(d.target.canary).toBe(0);
    expect(d.events.ofType("RolloutDelayedActionSkipped")).toEqual([]);
  });
});
