import {
  type Direct,
  direct,
  itemOf,
  ROLLOUT,
  retried,
  startRevision,
  TARGET,
} from "@sfn-rollouts/test-support/direct-workflow";
import { describe, expect, it } from "vitest";
import { ConcurrentUpdateError, StoreUnavailableError } from "../../../functions/store/errors.ts";
import { abort } from "../../../functions/workflow/abort.ts";
import { StoredAnalysisSchema, startAnalysis } from "../../../functions/workflow/analysis.ts";
import { awaitStep } from "../../../functions/workflow/await.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { promote } from "../../../functions/workflow/promote.ts";
import { resume } from "../../../functions/workflow/resume.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";
import { MetricSchema } from "../../../statemachine/spec.ts";

/**
 * Lambda retries a handler that threw, from the start. A handler whose state write succeeded and
 * whose later side effect (a Timer schedule, a lifecycle event) failed must, on the retry, do
 * what is missing — once — and nothing twice.
 */

const base = (context: WorkflowContext) => ({ context, rollout: ROLLOUT, target: TARGET });

async function atRevision2(): Promise<{ d: Direct; r2: WorkflowContext }> {
  const d = direct();
  const r1 = await startRevision(d, 1);
  await promote(d.deps, { ...base(r1), scaleDownDelaySeconds: 0 });
  await d.timer.runUntilIdle();
  const r2 = await startRevision(d, 2);
  d.target.calls.length = 0;
  d.events.published.length = 0;
  d.resumed.length = 0;
  return { d, r2 };
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
          initialDelay: 5,
          count: 2,
          successCondition: "result[0] >= 0.95",
          provider: { web: { url: "http://127.0.0.1:1/unused" } },
        }),
      ],
    },
  ],
  args: {},
};

const ofType = async (d: Direct, type: string) => (await itemOf(d)).events.filter((e) => e.type === type);

describe("a retried promote", () => {
  it("schedules the scale-down its first attempt could not, and announces the completion once", async () => {
    const { d, r2 } = await atRevision2();
    d.faults.schedule = "before";
    await retried(() => promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 30 }));
    expect(d.timer.pending()).toMatchObject([
      { payload: { kind: "scale-down", executionArn: r2.executionArn, revision: 2 } },
    ]);
    expect(d.events.types()).toEqual(["RolloutCompleted"]);
    expect(d.events.published[0]?.detail.message).toBe("Rollout completed: revision 2 (v2) is stable");
    expect((await ofType(d, "RolloutCompleted")).map((e) => e.message)).toEqual([
      "Rollout completed: revision 1 (v1) is stable",
      "Rollout completed: revision 2 (v2) is stable",
    ]);
    expect((await itemOf(d)).history.map((h) => h.revision)).toEqual([1, 2]);
    expect(d.target.calls.filter((c) => c === "promote")).toHaveLength(1);
    await d.timer.runUntilIdle();
    expect(d.target.calls).toContain("scaleDown v2");
  });

  it("whose event was delivered but its answer lost publishes it again with the same id, never another", async () => {
    const { d, r2 } = await atRevision2();
    const seen: unknown[] = [];
    const publish = d.deps.events.publish;
    d.deps.events = {
      publish: async (events) => {
        for (const e of [events].flat()) seen.push(e.detail.id);
        return publish(events);
      },
    };
    d.faults.publish = "after";
    await retried(() => promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 30 }));
    expect(seen).toHaveLength(2);
    expect(new Set(seen).size).toBe(1);
    expect(seen[0]).toMatch(/^checkout-222222222222-g2\/promote\/RolloutCompleted$/);
    // The port keeps one of them.
    expect(d.events.types()).toEqual(["RolloutCompleted"]);
  });
});

describe("a retried setWeight", () => {
  it("records the step and announces it once when its event failed", async () => {
    const { d, r2 } = await atRevision2();
    d.faults.publish = "before";
    const step = { ...base(r2), stepIndex: 0, step: { kind: "setWeight" as const, weight: 25 } };
    await retried(() => setWeight(d.deps, step));
    expect(await ofType(d, "RolloutStepCompleted")).toHaveLength(1);
    expect(d.events.types()).toEqual(["TrafficWeightUpdated", "RolloutStepCompleted"]);
    expect(await itemOf(d)).toMatchObject({ weight: 25, stepIndex: 1 });
  });
});

describe("a retried abort", () => {
  it("records one rollback (the cooldown counts them) and announces it once", async () => {
    const { d, r2 } = await atRevision2();
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    d.events.published.length = 0;
    d.faults.publish = "before";
    await retried(() =>
      abort(d.deps, {
        ...base(r2),
        error: { Error: "AnalysisRunFailed", Cause: "failed" },
        onFailure: "rollback",
        abortScaleDownDelaySeconds: 30,
      }),
    );
    const item = await itemOf(d);
    expect(item.rollbacks).toHaveLength(1);
    expect(await ofType(d, "RolloutAborted")).toHaveLength(1);
    expect(d.events.types()).toEqual(["RolloutAborted"]);
    expect(d.timer.pending()).toHaveLength(1);
  });

  it("schedules the candidate's scale-down its first attempt could not", async () => {
    const { d, r2 } = await atRevision2();
    d.faults.schedule = "before";
    await retried(() =>
      abort(d.deps, {
        ...base(r2),
        error: { Error: "AnalysisRunFailed", Cause: "failed" },
        onFailure: "rollback",
        abortScaleDownDelaySeconds: 30,
      }),
    );
    expect(d.timer.pending()).toMatchObject([{ payload: { kind: "scale-down", revision: 2 } }]);
    expect(d.events.types()).toEqual(["RolloutAborted"]);
  });
});

describe("a retried await", () => {
  it("schedules the pause's end its first attempt could not, and announces the pause once", async () => {
    const { d, r2 } = await atRevision2();
    d.tokens.live.add("token-1");
    d.faults.schedule = "before";
    const payload = {
      ...base(r2),
      stepIndex: 1,
      step: { kind: "pause" as const, duration: 60, reason: "CanaryPauseStep" as const },
      taskToken: "token-1",
    };
    await retried(() => awaitStep(d.deps, payload));
    expect(await ofType(d, "RolloutPaused")).toHaveLength(1);
    expect(d.events.types()).toEqual(["RolloutPaused"]);
    await d.timer.runUntilIdle();
    expect(d.tokens.successes.map((s) => s.token)).toEqual(["token-1"]);
  });

  it("a pause that runs again after a hold, with a new token, is ended by the Timer too", async () => {
    const { d, r2 } = await atRevision2();
    const pause = { kind: "pause" as const, duration: 60, reason: "CanaryPauseStep" as const };
    d.tokens.live.add("token-1");
    await awaitStep(d.deps, { ...base(r2), stepIndex: 1, step: pause, taskToken: "token-1" });
    // A hold failed token-1; a person promoted (the wait is cleared); the step runs again.
    d.tokens.live.delete("token-1");
    const held = await itemOf(d);
    await d.store.save(
      { ...held, phase: "Progressing", currentTaskToken: null, waitingFor: null, pause: null },
      held.version,
    );
    d.clock.set(d.clock.now() + 10_000);
    d.tokens.live.add("token-2");
    await awaitStep(d.deps, { ...base(r2), stepIndex: 1, step: pause, taskToken: "token-2" });
    await d.timer.runUntilIdle();
    expect(d.tokens.successes.map((s) => s.token)).toEqual(["token-2"]);
    expect(await ofType(d, "RolloutPaused")).toHaveLength(2);
  });

  it("retried by Step Functions with a new token, the same wait goes on under it, announced once, ending on time", async () => {
    const { d, r2 } = await atRevision2();
    const pause = { kind: "pause" as const, duration: 60, reason: "CanaryPauseStep" as const };
    d.tokens.live.add("token-1");
    const startedAt = d.clock.now();
    await awaitStep(d.deps, { ...base(r2), stepIndex: 1, step: pause, taskToken: "token-1" });
    // The invocation's answer was lost: the Task's retry brings a new token.
    d.tokens.live.delete("token-1");
    d.clock.set(startedAt + 5_000);
    d.tokens.live.add("token-2");
    await awaitStep(d.deps, { ...base(r2), stepIndex: 1, step: pause, taskToken: "token-2" });
    expect(await itemOf(d)).toMatchObject({
      currentTaskToken: "token-2",
      pause: { until: startedAt + 60_000 },
    });
    expect(await ofType(d, "RolloutPaused")).toHaveLength(1);
    expect(d.events.types()).toEqual(["RolloutPaused"]);
    await d.timer.runUntilIdle();
    expect(d.tokens.successes).toMatchObject([{ token: "token-2" }]);
    expect(d.clock.now()).toBe(startedAt + 60_000);
  });
});

describe("a retried begin", () => {
  it("takes the superseded candidate's traffic back before deploying, even when its first attempt failed there", async () => {
    const { d, r2 } = await atRevision2();
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 50 } });
    d.target.calls.length = 0;
    d.target.failSetWeight = "before";
    await retried(() => startRevision(d, 3));
    expect(d.target.canary).toBe(0);
    expect(d.target.calls).toEqual(["setWeight 0", "setWeight 0", "prepare", "deployCandidate v3"]);
    expect(await itemOf(d)).toMatchObject({ weight: 0, currentRevision: { revision: 3 } });
  });
});

describe("a retried analysis answer", () => {
  it("records the run's phase once when the first delivery of its answer failed", async () => {
    const { d, r2 } = await atRevision2();
    d.tokens.live.add("token-b");
    await startAnalysis(d.deps, {
      ...base(r2),
      stepIndex: 1,
      step: { kind: "analysis", origin: "step", analysis: ANALYSIS },
      taskToken: "token-b",
    });
    const send = d.tokens.sendSuccess.bind(d.tokens);
    let failures = 1;
    d.deps.tokens = {
      sendFailure: d.tokens.sendFailure.bind(d.tokens),
      sendSuccess: async (token, output) => {
        if (failures-- > 0) throw new Error("SendTaskSuccess throttled");
        return send(token, output);
      },
    };
    // The Timer delivers the tick again after the failure (Scheduler and the ticker retry).
    await expect(d.timer.runUntilIdle()).rejects.toThrow("throttled");
    const runId = `${r2.executionArn.split(":").at(-1)}.step01`;
    await resume(
      d.deps,
      { kind: "tick", rollout: r2.rollout, executionArn: r2.executionArn, revision: 2, runId },
      "again",
    );
    expect(d.tokens.successes.map((s) => s.token)).toEqual(["token-b"]);
    expect(await ofType(d, "AnalysisRunSuccessful")).toHaveLength(1);
  });
});

describe("a retried startAnalysis", () => {
  it("measures its run when the first attempt could not record the start: a throttled write ends nothing", async () => {
    const { d, r2 } = await atRevision2();
    d.tokens.live.add("token-a");
    // The run is created, then the write of the rollout item that records the start is throttled
    // past the SDK's retries: the attempt fails and the Task retries it.
    const store = d.deps.store;
    let throttle = 1;
    d.deps.store = new Proxy(store, {
      get(target, property) {
        if (property === "save")
          return async (...args: Parameters<typeof store.save>) => {
            if (throttle-- > 0) throw new StoreUnavailableError("PutItem", args[0].name);
            return target.save(...args);
          };
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const payload = {
      ...base(r2),
      stepIndex: 1,
      step: { kind: "analysis" as const, origin: "step" as const, analysis: ANALYSIS },
      taskToken: "token-a",
    };
    await expect(startAnalysis(d.deps, payload)).rejects.toThrow(StoreUnavailableError);
    await startAnalysis(d.deps, payload);
    await d.timer.runUntilIdle();
    // Answered on its measurements (2 of 2 passed), not as a run the failed attempt terminated.
    const runId = `${r2.executionArn.split(":").at(-1)}.step01`;
    const run = (await d.store.getRun(r2.rollout, runId, StoredAnalysisSchema))?.run.run;
    expect(run?.phase).toBe("Successful");
    expect(run?.message ?? "").not.toContain("Run Terminated");
    expect(run?.metricResults[0]?.measurements).toHaveLength(2);
    expect(d.tokens.successes.map((s) => s.token)).toEqual(["token-a"]);
  });

  it("records its start once when its first tick could not be scheduled", async () => {
    const { d, r2 } = await atRevision2();
    d.tokens.live.add("token-a");
    d.faults.schedule = "before";
    const payload = {
      ...base(r2),
      stepIndex: 1,
      step: { kind: "analysis" as const, origin: "step" as const, analysis: ANALYSIS },
      taskToken: "token-a",
    };
    await retried(() => startAnalysis(d.deps, payload));
    expect(await ofType(d, "AnalysisRunStarted")).toHaveLength(1);
    expect(d.timer.pending()).toMatchObject([{ payload: { kind: "tick", executionArn: r2.executionArn } }]);
  });
});

/**
 * The SDK sends a conditional write again when its answer is lost (a timeout after DynamoDB
 * applied it); the resend fails its condition, so `update` reads the item again and runs the
 * mutation once more, on an item that already holds the step's write.
 */
function loseNextSaveAnswer(d: Direct): () => void {
  const store = d.deps.store;
  let armed = false;
  d.deps.store = new Proxy(store, {
    get(target, property) {
      if (property === "save")
        return async (...args: Parameters<typeof store.save>) => {
          const saved = await target.save(...args);
          if (!armed) return saved;
          armed = false;
          throw new ConcurrentUpdateError(`rollout "${saved.name}"`, args[1]);
        };
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return () => {
    armed = true;
  };
}

describe("a state write whose answer was lost and that the SDK sent again", () => {
  it("abort records one rollback and one item event", async () => {
    const { d, r2 } = await atRevision2();
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    loseNextSaveAnswer(d)();
    await abort(d.deps, {
      ...base(r2),
      error: { Error: "AnalysisRunFailed", Cause: "failed" },
      onFailure: "rollback",
      abortScaleDownDelaySeconds: 30,
    });
    expect((await itemOf(d)).rollbacks).toHaveLength(1);
    expect(await ofType(d, "RolloutAborted")).toHaveLength(1);
  });

  it("promote records the revision in the history once", async () => {
    const { d, r2 } = await atRevision2();
    const before = (await itemOf(d)).history.length;
    loseNextSaveAnswer(d)();
    await promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 0 });
    const item = await itemOf(d);
    expect(item.history).toHaveLength(before + 1);
    const completed = await ofType(d, "RolloutCompleted");
    expect(completed.filter((e) => e.message.includes("revision 2"))).toHaveLength(1);
  });

  it("setWeight records its step once", async () => {
    const { d, r2 } = await atRevision2();
    loseNextSaveAnswer(d)();
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    expect(await ofType(d, "RolloutStepCompleted")).toHaveLength(1);
  });

  it("await records its pause once", async () => {
    const { d, r2 } = await atRevision2();
    loseNextSaveAnswer(d)();
    await awaitStep(d.deps, {
      ...base(r2),
      stepIndex: 0,
      step: { kind: "pause", duration: 60, reason: "CanaryPauseStep" },
      taskToken: "token-1",
    });
    expect(await ofType(d, "RolloutPaused")).toHaveLength(1);
  });
});

describe("an abort after a promotion whose side effects failed past its retries", () => {
  it("rolls nothing back, records no rollback, and performs what promote left pending", async () => {
    const { d, r2 } = await atRevision2();
    d.faults.publish = "before";
    await expect(promote(d.deps, { ...base(r2), scaleDownDelaySeconds: 30 })).rejects.toThrow(
      "publish failed",
    );
    d.target.calls.length = 0;
    // The Task's Catch sends the execution to Abort.
    const result = await abort(d.deps, {
      ...base(r2),
      error: { Error: "Error", Cause: "publish failed" },
      onFailure: "rollback",
      abortScaleDownDelaySeconds: 30,
    });
    expect(result.phase).toBe("Healthy");
    const item = await itemOf(d);
    expect(item).toMatchObject({ phase: "Healthy", weight: 100 });
    expect(item.rollbacks).toHaveLength(0);
    expect(d.target.calls.filter((c) => c.startsWith("abort"))).toEqual([]);
    expect(d.events.types()).toEqual(["RolloutCompleted"]);
  });
});
