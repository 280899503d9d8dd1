import type { RolloutFunction } from "@sfn-rollouts/test-support/embedded-rollout";
import {
  digest,
  type FakeRollout,
  type FakeRolloutOptions,
  startStableRollout,
} from "@sfn-rollouts/test-support/fake-rollout";
import { analysisSpec, metric } from "@sfn-rollouts/test-support/rollout-spec";
import { interceptSaves } from "@sfn-rollouts/test-support/store";
import { describe, expect, it, onTestFinished } from "vitest";
import { z } from "zod";
import { requestAbort } from "../../../functions/abort/request-abort.ts";
import { ConcurrentUpdateError } from "../../../functions/store/errors.ts";
import { update } from "../../../functions/store/update.ts";
import type { TimerFiring } from "../../../functions/timer/port.ts";
import { executionName } from "../../../functions/trigger/decide.ts";
import { StoredAnalysisSchema } from "../../../functions/workflow/analysis.ts";
import type { BeginResult } from "../../../functions/workflow/begin.ts";
import { promoteRollout } from "../../../functions/workflow/operate.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { promote } from "../../../functions/workflow/promote.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";
import type { LambdaHandler } from "../../../local/aws/lambda.ts";
import type { Step } from "../../../statemachine/spec.ts";

/**
 * Races and redeliveries on the compiled workflow in the embedded runtime: each test arranges the
 * interleaving by wrapping a function (the Lambda) or a port, and lets the state machine do the rest.
 */

const NAME = "checkout";
const v2 = { digest: digest(2), tag: "v2" };
const v3 = { digest: digest(3), tag: "v3" };

type Wrap = (name: RolloutFunction, handler: LambdaHandler) => LambdaHandler;

async function withStable(options: FakeRolloutOptions = {}): Promise<FakeRollout> {
  const w = await startStableRollout(options);
  onTestFinished(() => w.close());
  return w;
}

/** Wraps the handler of one function only. */
const only =
  (fn: RolloutFunction, wrap: (handler: LambdaHandler) => LambdaHandler): Wrap =>
  (name, handler) =>
    name === fn ? wrap(handler) : handler;

/** The history's failed Task attempts, as `state: error`. */
const failedTasks = (w: FakeRollout, executionArn: string): string[] =>
  w.failedTasks(executionArn).map((f) => `${f.state}: ${f.error}`);

/** What Begin answered, from the execution's history. */
const begun = (w: FakeRollout, executionArn: string): WorkflowContext =>
  (w.stateOutput(executionArn, "Begin") as { begin: { context: WorkflowContext } }).begin.context;

const weightStep = (weight: number): Step => ({ kind: "setWeight", weight });
const forever: Step = { kind: "pause", reason: "CanaryPauseStep" };

describe("abortRequested seen mid-step", () => {
  /** An abort recorded (no wait to fail) just before this function runs, in these steps. */
  const cases: Array<{ fn: RolloutFunction; steps: Step[]; at: string }> = [
    { fn: "checkReady", steps: [weightStep(25)], at: "Candidate-CheckReady" },
    { fn: "setWeight", steps: [weightStep(25)], at: "Step01-SetWeight-25" },
    { fn: "await", steps: [forever], at: "Step01-Pause" },
    {
      fn: "startAnalysis",
      steps: [{ kind: "analysis", origin: "step", analysis: analysisSpec() }],
      at: "Step01-Analysis",
    },
    { fn: "promote", steps: [], at: "Promote" },
  ];
  it.each(cases)(
    "$fn, started after an abort was recorded, throws RolloutAborted and moves no traffic",
    async ({ fn, steps, at }) => {
      let armed = true;
      let outcome: unknown;
      const w = await withStable({
        steps,
        wrap: only(fn, (handler) => async (event, context) => {
          if (armed) {
            armed = false;
            outcome = await requestAbort({
              store: w.store,
              sfn: w.tokens,
              name: NAME,
              reason: "stop it",
              clock: w.clock,
            });
            w.router.calls.length = 0;
          }
          return handler(event, context);
        }),
      });
      armed = true;
      const arn = w.executionArnOf(await w.push(v2));
      const ending = await w.run(arn);
      expect(outcome).toMatchObject({ status: "recorded" });
      // The Catch goes to Abort, which takes the requested reason.
      expect(ending).toEqual({
        state: "Aborted",
        message: "RolloutAborted: Rollout aborted update to revision 2: stop it",
      });
      expect(failedTasks(w, arn)).toEqual([`${at}: RolloutAborted`]);
      // Only Abort touched the target.
      expect(w.router.calls).toEqual(["abort"]);
      // A wait refuses to store its token: the abort can never fall between "checked" and "waiting".
      expect(await w.item()).toMatchObject({
        phase: "Degraded",
        abortRequested: false,
        weight: 0,
        currentTaskToken: null,
      });
      // No run is left behind Pending for an analysis that never started.
      expect(await w.store.listRuns(NAME, StoredAnalysisSchema)).toEqual([]);
    },
  );

  it("an abort that lands while the router moves traffic is seen by the step's conditional write", async () => {
    const w = await withStable({ steps: [weightStep(25), forever] });
    const original = w.router.setWeight.bind(w.router);
    w.router.setWeight = async (state, percent, options) => {
      const change = await original(state, percent, options);
      if (percent === 25)
        await requestAbort({ store: w.store, sfn: w.tokens, name: NAME, reason: "mid-step", clock: w.clock });
      return change;
    };
    const arn = w.executionArnOf(await w.push(v2));
    expect(await w.run(arn)).toEqual({
      state: "Aborted",
      message: "RolloutAborted: Rollout aborted update to revision 2: mid-step",
    });
    expect(failedTasks(w, arn)).toEqual(["Step01-SetWeight-25: RolloutAborted"]);
    const after = await w.item();
    expect(after.stepIndex).toBe(0);
    expect(after.events.map((e) => e.type)).not.toContain("RolloutStepCompleted");
    expect(w.events.types()).toEqual(["RolloutUpdated", "RolloutAborted"]);
    expect(w.router.canary).toBe(0);
  });

  it("a timed pause whose token was failed by an abort does not resume the rollout", async () => {
    let seen: { resumed: string[]; phase: string; events: string[] } | undefined;
    const w: FakeRollout = await withStable({
      steps: [{ kind: "pause", duration: 60, reason: "CanaryPauseStep" }],
      wrap: only("abort", (handler) => async (event, context) => {
        // The Timer fires before the Abort state runs.
        await w.runtime.timer.advanceTo(w.clock.now() + 60_000);
        const item = await w.item();
        seen = { resumed: [...w.resumed], phase: item.phase, events: item.events.map((e) => e.type) };
        return handler(event, context);
      }),
    });
    const arn = w.executionArnOf(await w.push(v2));
    await w.runtime.settle();
    expect(w.currentState(arn)).toBe("Step01-Pause-1m");
    const outcome = await requestAbort({
      store: w.store,
      sfn: w.tokens,
      name: NAME,
      reason: "no",
      clock: w.clock,
    });
    expect(outcome.status).toBe("signalled");
    expect(await w.run(arn)).toMatchObject({ state: "Aborted" });
    expect(seen?.resumed).toEqual(["pause token stale (TaskDoesNotExist)"]);
    expect(seen?.phase).toBe("Paused");
    expect(seen?.events).not.toContain("RolloutResumed");
    expect(await w.item()).toMatchObject({ phase: "Degraded", currentTaskToken: null, pause: null });
  });
});

describe("a superseded execution", () => {
  it("a newer push takes over: the old execution's Lambdas throw ExecutionSuperseded and its Abort touches nothing", async () => {
    let takenOver: () => void = () => undefined;
    const takeover = new Promise<void>((resolve) => {
      takenOver = resolve;
    });
    const revision3 = executionName(NAME, digest(3), 3);
    let abortSaw: { calls: string[]; item: unknown } | undefined;
    const w: FakeRollout = await withStable({
      steps: [weightStep(25), forever, weightStep(50)],
      wrap: (name, handler) => {
        if (name === "begin")
          return async (event, context) => {
            const out = await handler(event, context);
            if (
              (event as { input: { trigger: { executionName: string } } }).input.trigger.executionName ===
              revision3
            )
              takenOver();
            return out;
          };
        if (name === "abort")
          return async (event, context) => {
            // The old execution's Abort runs after the newer Begin has taken over.
            await takeover;
            const before = await w.item();
            const calls = w.router.calls.length;
            try {
              return await handler(event, context);
            } finally {
              abortSaw = {
                calls: w.router.calls.slice(calls),
                item: (await w.item()) === undefined ? null : before,
              };
              expect(await w.item()).toEqual(before);
            }
          };
        return handler;
      },
    });
    const old = w.executionArnOf(await w.push(v2));
    expect(await w.run(old)).toEqual({ state: "Waiting", at: "Step02-Pause" });
    // The trigger accepts a newer push and aborts the old execution through the abort channel.
    const pushed = await w.push(v3);
    expect(pushed).toMatchObject({ outcome: "started", superseded: { status: "signalled" } });
    const next = w.executionArnOf(pushed);
    expect(await w.run(old)).toEqual({ state: "Superseded" });
    expect(failedTasks(w, old)).toEqual(["Step02-Pause: RolloutAborted", "Abort: ExecutionSuperseded"]);
    expect(abortSaw?.calls).toEqual([]);
    expect(await w.run(next)).toEqual({ state: "Waiting", at: "Step02-Pause" });
    // The newer execution's Begin takes over, putting traffic back on stable first.
    expect(begun(w, next).revision).toBe(3);
    const takeoverAt = w.router.calls.indexOf("setWeight 0 overwrite");
    expect(w.router.calls.slice(takeoverAt, takeoverAt + 4)).toEqual([
      "setWeight 0 overwrite",
      "prepare",
      "deployCandidate v3",
      "checkReadiness",
    ]);
    const before = await w.item();
    w.router.calls.length = 0;
    // A Lambda of the old execution still in flight (a retry, say) changes nothing either.
    const oldBase = {
      context: begun(w, old),
      rollout: { name: NAME, revision: "74a0fb7474", strategy: "canary" as const, stepCount: 3 },
      target: w.targets[0],
    };
    await expect(setWeight(w.deps, { ...oldBase, stepIndex: 2, step: weightStep(50) })).rejects.toMatchObject(
      {
        name: "ExecutionSuperseded",
      },
    );
    await expect(promote(w.deps, { ...oldBase, scaleDownDelaySeconds: 0 })).rejects.toMatchObject({
      name: "ExecutionSuperseded",
    });
    expect(w.router.calls).toEqual([]);
    expect(await w.item()).toEqual(before);
    expect(w.router.canary).toBe(25);
  });

  it.each([
    { onFailure: "rollback", abortCalls: ["abort"], traffic: "its traffic is back on the stable version" },
    { onFailure: "stop", abortCalls: [], traffic: "its weights are left as they were \\(onFailure: stop\\)" },
  ] as const)(
    "a newer push whose Begin comes after the old execution's Abort (onFailure: $onFailure): the old one ends superseded, no failed release",
    async ({ onFailure, abortCalls: expectedAbortCalls, traffic }) => {
      let abortDone: () => void = () => undefined;
      const aborted = new Promise<void>((resolve) => {
        abortDone = resolve;
      });
      const revision3 = executionName(NAME, digest(3), 3);
      let abortCalls: string[] = [];
      const w: FakeRollout = await withStable({
        steps: [weightStep(25), forever, weightStep(50)],
        spec: { onFailure },
        wrap: (name, handler) => {
          if (name === "begin")
            return async (event, context) => {
              // The newer execution's Begin runs only once the old execution's Abort has finished.
              const trigger = (event as { input: { trigger: { executionName: string } } }).input.trigger;
              if (trigger.executionName === revision3) await aborted;
              return handler(event, context);
            };
          if (name === "abort")
            return async (event, context) => {
              const calls = w.router.calls.length;
              try {
                return await handler(event, context);
              } finally {
                abortCalls = w.router.calls.slice(calls);
                abortDone();
              }
            };
          return handler;
        },
      });
      const old = w.executionArnOf(await w.push(v2));
      expect(await w.run(old)).toEqual({ state: "Waiting", at: "Step02-Pause" });
      expect(w.router.canary).toBe(25);
      const pushed = await w.push(v3);
      expect(pushed).toMatchObject({ outcome: "started", superseded: { status: "signalled" } });
      const next = w.executionArnOf(pushed);
      // The supersede is what stopped it: it ends as superseded (not counted as a failed rollout),
      // after its Abort put the traffic back, since it still drove the rollout then.
      expect(await w.run(old)).toEqual({ state: "Superseded" });
      expect(failedTasks(w, old)).toEqual(["Step02-Pause: RolloutAborted", "Abort: ExecutionSuperseded"]);
      expect(abortCalls.filter((c) => c === "abort")).toEqual(expectedAbortCalls);
      // As when Begin comes first: a supersede is not a failed release. No rollback is counted (a
      // canary gate's cooldown would refuse pushes of that image), no RolloutAborted is announced.
      const between = await w.item();
      expect(between?.rollbacks).toEqual([]);
      expect(between?.events.find((e) => e.type === "RolloutSuperseded")?.message).toMatch(
        new RegExp(
          `^revision 2 was superseded by a newer revision: .+: ${traffic} until that revision begins$`,
        ),
      );
      expect(w.events.published.map((e) => e.type)).not.toContain("RolloutAborted");
      expect(w.metrics.points.map((p) => p.name)).not.toContain("RolloutsAborted");
      expect(await w.run(next)).toEqual({ state: "Waiting", at: "Step02-Pause" });
      expect(begun(w, next).revision).toBe(3);
      expect(w.router.canary).toBe(25);
    },
  );

  it("an execution aborting for its own failure when a newer push arrives still ends aborted", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let abortEntered: () => void = () => undefined;
    const entered = new Promise<void>((resolve) => {
      abortEntered = resolve;
    });
    let abortDone: () => void = () => undefined;
    const aborted = new Promise<void>((resolve) => {
      abortDone = resolve;
    });
    const revision3 = executionName(NAME, digest(3), 3);
    const w: FakeRollout = await withStable({
      steps: [weightStep(25), forever],
      wrap: (name, handler) => {
        if (name === "setWeight")
          return async (event, context) => {
            const e = event as { stepIndex?: number; context?: { revision?: number } };
            if (e.stepIndex === 0 && e.context?.revision === 2)
              throw Object.assign(new Error("the target refused the weight"), { name: "TargetRejected" });
            return handler(event, context);
          };
        if (name === "abort")
          return async (event, context) => {
            abortEntered();
            await gate; // the newer push is accepted while this Abort runs
            try {
              return await handler(event, context);
            } finally {
              abortDone();
            }
          };
        if (name === "begin")
          return async (event, context) => {
            const trigger = (event as { input: { trigger: { executionName: string } } }).input.trigger;
            if (trigger.executionName === revision3) await aborted;
            return handler(event, context);
          };
        return handler;
      },
    });
    const old = w.executionArnOf(await w.push(v2));
    const running = w.run(old);
    await entered;
    const pushed = await w.push(v3);
    expect(pushed).toMatchObject({ outcome: "started", superseded: { status: "recorded" } });
    release();
    // Its own failure stopped it, not the supersede: it counts as an aborted rollout.
    expect(await running).toMatchObject({ state: "Aborted" });
    expect(await w.run(w.executionArnOf(pushed))).toEqual({ state: "Waiting", at: "Step02-Pause" });
  });

  it("a late Begin of an older push is refused without touching the rollout", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let seen: { before: unknown; after: unknown; calls: string[] } | undefined;
    const stale = executionName(NAME, digest(2), 2);
    const w: FakeRollout = await withStable({
      steps: [weightStep(25), forever],
      wrap: only("begin", (handler) => async (event, context) => {
        const name = (event as { input: { trigger: { executionName: string } } }).input.trigger.executionName;
        if (name !== stale) {
          // The newer execution's Begin runs first; then the older one's, late.
          const out = await handler(event, context);
          if (name === executionName(NAME, digest(3), 3)) release();
          return out;
        }
        await gate;
        const before = await w.item();
        const calls = w.router.calls.length;
        try {
          return await handler(event, context);
        } finally {
          seen = { before, after: await w.item(), calls: w.router.calls.slice(calls) };
        }
      }),
    });
    const old = w.executionArnOf(await w.push(v2));
    const next = w.executionArnOf(await w.push(v3));
    expect(await w.run(old)).toEqual({ state: "Superseded" });
    expect(await w.run(next)).toEqual({ state: "Waiting", at: "Step02-Pause" });
    expect(seen?.after).toEqual(seen?.before);
    expect(seen?.calls).toEqual([]);
    expect(failedTasks(w, old)).toEqual(["Begin: ExecutionSuperseded"]);
  });
});

describe("conditional-write conflicts", () => {
  it("two Begins of one execution (a Lambda retry racing the first attempt) record it once", async () => {
    const results: BeginResult[] = [];
    const w = await withStable({
      steps: [weightStep(25)],
      wrap: only("begin", (handler) => async (event, context) => {
        const [a, b] = (await Promise.all([
          handler(event, context),
          handler(event, context),
        ])) as BeginResult[];
        results.push(a as BeginResult, b as BeginResult);
        return a;
      }),
    });
    expect(await w.rollOut(v2)).toEqual({ state: "Healthy" });
    const [a, b] = results.slice(-2);
    expect(a?.context).toEqual(b?.context);
    expect(a?.context.revision).toBe(2);
    const now = await w.item();
    expect(now.events.filter((e) => e.type === "RolloutUpdated").map((e) => e.message)).toEqual([
      expect.stringContaining("revision 1"),
      expect.stringContaining("revision 2"),
    ]);
  });

  it("a step whose write loses a race re-reads the item and decides again", async () => {
    let armed = false;
    const w: FakeRollout = await withStable({
      steps: [weightStep(25), forever],
      wrap: only("setWeight", (handler) => async (event, context) => {
        armed = true;
        return handler(event, context);
      }),
    });
    // Another writer (the CLI) slips in before the step's first save attempt.
    const store = w.deps.store;
    w.deps.store = interceptSaves(store, async () => {
      if (armed) {
        armed = false;
        await update(store, NAME, "latest", (latest) => ({ ...latest, message: "touched by someone else" }));
      }
    });
    const arn = w.executionArnOf(await w.push(v2));
    expect(await w.run(arn)).toEqual({ state: "Waiting", at: "Step02-Pause" });
    expect(w.stateOutput(arn, "Step01-SetWeight-25")?.last).toMatchObject({
      value: {
        drift: false,
        weight: 25,
      },
    });
    expect(w.store.conflicts).toBeGreaterThanOrEqual(1);
    expect(await w.item()).toMatchObject({ weight: 25, stepIndex: 1 });
  });

  it("a strict compare-and-set loses to a concurrent write", async () => {
    const w = await withStable();
    const seen = await w.item();
    await update(w.store, NAME, "latest", (latest) => ({ ...latest, message: "first" }));
    await expect(
      update(w.store, NAME, seen.version, (latest) => ({ ...latest, message: "second" })),
    ).rejects.toBeInstanceOf(ConcurrentUpdateError);
  });
});

describe("the Timer", () => {
  it("a duplicated tick firing does not count a measurement twice nor fork the tick chain", async () => {
    const deliveries: string[] = [];
    // Every firing is delivered twice (Scheduler and the ticker are at-least-once).
    const w = await withStable({
      steps: [weightStep(10), { kind: "analysis", origin: "step", analysis: analysisSpec() }],
      wrap: only("resume", (handler) => async (event, context) => {
        deliveries.push((event as TimerFiring).key);
        await handler(event, context);
        deliveries.push((event as TimerFiring).key);
        return handler(event, context);
      }),
    });
    expect(await w.rollOut(v2)).toEqual({ state: "Healthy" });
    expect(w.provider.calls).toHaveLength(2);
    const runId = `${executionName(NAME, digest(2), 2)}.step01`;
    const measurements = await w.store.listMeasurements(NAME, runId, z.unknown());
    expect(measurements.map((m) => m.measurementId)).toEqual(["success-rate#000001", "success-rate#000002"]);
    const ticks = deliveries.filter((k) => k.includes("/tick-"));
    // Two measurements: two tick firings, each delivered twice; no extra firing from the duplicates.
    expect(ticks).toHaveLength(4);
    expect(new Set(ticks).size).toBe(2);
    expect(w.metrics.points.filter((p) => p.name === "Measurements")).toHaveLength(2);
  });

  it("two concurrent deliveries of one tick: one wins the run's conditional write, the other stops", async () => {
    const results: string[] = [];
    const w = await withStable({
      steps: [
        {
          kind: "analysis",
          origin: "step",
          analysis: analysisSpec(metric({ count: 1, interval: undefined, initialDelay: 5 })),
        },
      ],
      wrap: only("resume", (handler) => async (event, context) => {
        const both = (await Promise.all([handler(event, context), handler(event, context)])) as Array<{
          result: string;
        }>;
        results.push(...both.map((r) => r.result));
        return both[0];
      }),
    });
    const arn = w.executionArnOf(await w.push(v2));
    await w.runtime.settle();
    const token = (await w.item()).currentTaskToken;
    expect(await w.run(arn)).toEqual({ state: "Healthy" });
    const runId = `${executionName(NAME, digest(2), 2)}.step00`;
    // The loser of the run's conditional write stops and records nothing.
    expect(results.filter((r) => r.includes("/tick-") || r.startsWith("run ")).sort()).toEqual([
      `run ${runId} not found`,
      `run ${runId}: Successful`,
    ]);
    expect(await w.store.listMeasurements(NAME, runId, z.unknown())).toHaveLength(1);
    expect(w.tokens.successes.filter((s) => s.token === token)).toHaveLength(1);
    expect((await w.store.getRun(NAME, runId, StoredAnalysisSchema))?.run.answered).toBe(true);
  });

  /**
   * startAnalysis whose first attempt for revision 2 ends with `fail` (the Lambda service then
   * reports it failed, and Step Functions retries the Task); `attempts` gets each attempt's token
   * and the tick firings pending when it returned.
   */
  const failingOnce =
    (
      fail: (handler: LambdaHandler, event: unknown, context: unknown) => Promise<void>,
      attempts: Array<{ token: string; ticks?: number }>,
      firings: () => TimerFiring[],
    ): Wrap =>
    (name, handler) => {
      if (name !== "startAnalysis") return handler;
      return async (event, context) => {
        const attempt: { token: string; ticks?: number } = {
          token: (event as { taskToken: string }).taskToken,
        };
        attempts.push(attempt);
        if (attempts.length === 1) await fail(handler, event, context);
        const out = await handler(event, context);
        attempt.ticks = firings().filter((f) => f.key.includes("/tick-")).length;
        return out;
      };
    };

  it("a start-analysis whose first tick could not be scheduled aborts the rollout (wait Tasks are not retried)", async () => {
    let fail = true;
    const w = await withStable({
      steps: [weightStep(10), { kind: "analysis", origin: "step", analysis: analysisSpec() }],
    });
    const timer = w.deps.timer;
    w.deps.timer = {
      schedule: async (request) => {
        if (fail && (request.payload as { kind: string }).kind === "tick") {
          fail = false;
          throw new Error("Scheduler throttled");
        }
        return timer.schedule(request);
      },
      cancel: (key) => timer.cancel(key),
    };
    const arn = w.executionArnOf(await w.push(v2));
    const ending = await w.run(arn);
    expect(ending).toMatchObject({ state: "Aborted" });
    expect(failedTasks(w, arn)).toEqual(["Step02-Analysis: Error"]);
    expect((await w.item()).message).toContain("Scheduler throttled");
  });

  it("a start-analysis retried after its first tick could not be scheduled schedules it", async () => {
    let fail = true;
    const attempts: Array<{ token: string; ticks?: number }> = [];
    const ref: { w?: FakeRollout } = {};
    const w = await withStable({
      steps: [weightStep(10), { kind: "analysis", origin: "step", analysis: analysisSpec() }],
      wrap: failingOnce(
        async (handler, event, context) => {
          // The first attempt runs until the Timer refuses; the Lambda service reports it failed.
          await expect(handler(event, context as never)).rejects.toThrow("Scheduler throttled");
          throw Object.assign(new Error("the invocation failed"), { name: "Lambda.ServiceException" });
        },
        attempts,
        () => ref.w?.firings() ?? [],
      ),
    });
    ref.w = w;
    const timer = w.deps.timer;
    w.deps.timer = {
      schedule: async (request) => {
        if (fail && (request.payload as { kind: string }).kind === "tick") {
          fail = false;
          throw new Error("Scheduler throttled");
        }
        return timer.schedule(request);
      },
      cancel: (key) => timer.cancel(key),
    };
    const arn = w.executionArnOf(await w.push(v2));
    expect(await w.run(arn)).toEqual({ state: "Healthy" });
    // Step Functions retried the Task (same input): the retry scheduled the one first tick.
    expect(failedTasks(w, arn)).toEqual(["Step02-Analysis: Lambda.ServiceException"]);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]?.ticks).toBe(1);
    expect(w.provider.calls).toHaveLength(2);
    expect(w.tokens.successes.find((s) => s.token === attempts[1]?.token)?.output).toMatchObject({
      phase: "Successful",
    });
  });

  it("a start-analysis retried with a new task token answers the new token", async () => {
    const attempts: Array<{ token: string; ticks?: number }> = [];
    const w = await withStable({
      steps: [weightStep(10), { kind: "analysis", origin: "step", analysis: analysisSpec() }],
      wrap: failingOnce(
        async (handler, event, context) => {
          // The first attempt stores its token, then the invocation is reported failed.
          await handler(event, context as never);
          throw Object.assign(new Error("the invocation failed"), { name: "Lambda.ServiceException" });
        },
        attempts,
        () => [],
      ),
    });
    const seen: Array<string | null> = [];
    const timer = w.deps.timer;
    w.deps.timer = {
      schedule: async (request) => {
        if ((request.payload as { kind: string }).kind === "tick")
          seen.push((await w.item()).currentTaskToken);
        return timer.schedule(request);
      },
      cancel: (key) => timer.cancel(key),
    };
    const arn = w.executionArnOf(await w.push(v2));
    expect(await w.run(arn)).toEqual({ state: "Healthy" });
    expect(attempts).toHaveLength(2);
    const [first, second] = attempts.map((a) => a.token);
    expect(second).not.toBe(first);
    // After the retry, the item waits on the new token, and only the new token is answered.
    expect(seen.at(-1)).toBe(second);
    expect(w.tokens.successes.map((s) => s.token)).toEqual([second]);
  });
});

describe("runs of an execution that moved on", () => {
  it("a step analysis still scheduled when the Abort state ran is closed at its next tick, not measured", async () => {
    const w = await withStable({
      steps: [
        { kind: "analysis", origin: "step", analysis: analysisSpec(metric({ count: 3, interval: 30 })) },
      ],
    });
    const arn = w.executionArnOf(await w.push(v2));
    await w.runtime.settle();
    const token = (await w.item()).currentTaskToken as string;
    // The wait fails for another reason than an abort (a time-out, say): the Abort state runs.
    expect(await w.tokens.sendFailure(token, "States.Timeout", "the wait timed out")).toEqual({
      delivered: true,
    });
    expect(await w.run(arn)).toMatchObject({ state: "Aborted" });
    const degraded = await w.item();
    await w.idle();
    expect(w.provider.calls).toEqual([]);
    const runId = `${executionName(NAME, digest(2), 2)}.step00`;
    const run = await w.store.getRun(NAME, runId, StoredAnalysisSchema);
    expect(run?.run.run).toMatchObject({ phase: "Successful", message: "Run Terminated" });
    expect((await w.item()).events).toEqual(degraded.events);
  });
});

describe("a token already used", () => {
  it("a pause promoted by a person before its timer fires: the firing does nothing", async () => {
    const w = await withStable({ steps: [{ kind: "pause", duration: 120, reason: "CanaryPauseStep" }] });
    const arn = w.executionArnOf(await w.push(v2));
    await w.runtime.settle();
    const token = (await w.item()).currentTaskToken;
    const promoted = await promoteRollout(
      { store: w.store, tokens: w.tokens, clock: w.clock, executions: {} as never },
      NAME,
      false,
    );
    expect(promoted.ok).toBe(true);
    expect(await w.run(arn)).toEqual({ state: "Healthy" });
    await w.idle();
    expect(w.resumed.filter((r) => r.startsWith("pause"))).toEqual(["pause already ended"]);
    expect(w.tokens.successes.filter((s) => s.token === token)).toHaveLength(1);
  });

  it("a pause firing whose token Step Functions no longer knows (crash after answering) clears the wait", async () => {
    let crash = false;
    let crashed = false;
    let redelivered: { result: unknown; item: unknown } | undefined;
    let firing: TimerFiring | undefined;
    const w: FakeRollout = await withStable({
      steps: [{ kind: "pause", duration: 1, reason: "CanaryPauseStep" }],
      wrap: (name, handler) => {
        if (name === "resume")
          return async (event, context) => {
            if ((event as { payload: { kind: string } }).payload.kind === "pause")
              firing ??= event as TimerFiring;
            return handler(event, context);
          };
        if (name === "promote")
          return async (event, context) => {
            // The Timer delivers the firing again before the next step runs.
            if (firing && !redelivered) {
              const again = await w.runtime.lambda.invoke("resume", firing);
              redelivered = { result: again.ok ? again.payload : again.error, item: await w.item() };
            }
            return handler(event, context);
          };
        return handler;
      },
    });
    const tokens = w.deps.tokens;
    w.deps.tokens = {
      sendSuccess: async (token, output) => {
        const delivery = await tokens.sendSuccess(token, output);
        if ((output as { outcome?: string }).outcome === "continue" && !crashed) {
          crashed = true;
          crash = true;
        }
        return delivery;
      },
      sendFailure: (token, error, cause) => tokens.sendFailure(token, error, cause),
    };
    w.deps.store = interceptSaves(w.deps.store, () => {
      if (crash) {
        crash = false;
        throw new Error("the function crashed");
      }
    });
    expect(await w.rollOut(v2)).toEqual({ state: "Healthy" });
    expect(w.resumed[0]).toMatch(/^error .*the function crashed/);
    expect(redelivered?.result).toEqual({ result: "pause token stale (TaskDoesNotExist)" });
    expect(redelivered?.item).toMatchObject({ phase: "Progressing", currentTaskToken: null, pause: null });
  });

  it("an analysis whose token is no longer waited on ends without a crash and answers once", async () => {
    let runId = "";
    const w: FakeRollout = await withStable({
      scripts: { "success-rate": [0.1] },
      steps: [
        {
          kind: "analysis",
          origin: "step",
          analysis: analysisSpec(metric({ count: 1, interval: undefined, initialDelay: 0 })),
        },
      ],
      wrap: only("startAnalysis", (handler) => async (event, context) => {
        // The Task timed out, say, before the function ran.
        const token = (event as { taskToken: string }).taskToken;
        await w.tokens.sendFailure(token, "States.Timeout", "the wait timed out");
        w.tokens.failures.length = 0;
        const out = (await handler(event, context)) as { runId: string };
        runId = out.runId;
        return out;
      }),
    });
    expect(await w.rollOut(v2)).toMatchObject({ state: "Aborted" });
    expect(w.tokens.successes).toEqual([]);
    const stored = await w.store.getRun(NAME, runId, StoredAnalysisSchema);
    expect(stored?.run).toMatchObject({ answered: true, run: { phase: "Failed" } });
    // Delivered again (a redelivered tick of the same execution): the run is answered already,
    // nothing is sent again.
    const { executionArn, currentRevision } = await w.item();
    const revision = currentRevision?.revision;
    const again = await w.runtime.lambda.invoke("resume", {
      key: `${NAME}/${runId}/tick-again`,
      at: w.clock.now(),
      payload: { kind: "tick", rollout: NAME, executionArn, revision, runId },
    });
    expect(again).toEqual({ ok: true, payload: { result: `run ${runId}: Failed` } });
    expect(w.tokens.successes).toEqual([]);
  });
});

describe("background analysis", () => {
  const bg = metric({ name: "bg", interval: 60, initialDelay: 0, count: undefined });

  it("a failing background analysis aborts the rollout through the abort channel", async () => {
    const w = await withStable({
      scripts: { bg: [1, 1, 0.2] },
      steps: [weightStep(20), forever],
      spec: { backgroundAnalysis: { startingStep: 0, analysis: analysisSpec(bg) } },
    });
    const arn = w.executionArnOf(await w.push(v2));
    await w.runtime.settle();
    expect(w.currentState(arn)).toBe("Step02-Pause");
    const token = (await w.item()).currentTaskToken;
    const ending = await w.run(arn);
    const cause = 'Metric "bg" assessed Failed due to failed (1) > failureLimit (0)';
    expect(w.tokens.failures.find((f) => f.token === token)).toEqual({
      token,
      error: "RolloutAborted",
      cause,
    });
    expect(w.events.types()).toContain("AnalysisRunFailed");
    expect(ending).toEqual({
      state: "Aborted",
      message: `RolloutAborted: Rollout aborted update to revision 2: ${cause}`,
    });
    expect(await w.item()).toMatchObject({ phase: "Degraded", weight: 0 });
  });

  it("ends when the rollout is promoted", async () => {
    const w = await withStable({
      steps: [weightStep(20)],
      spec: { backgroundAnalysis: { startingStep: 0, analysis: analysisSpec(bg) } },
    });
    const arn = w.executionArnOf(await w.push(v2));
    expect(await w.run(arn)).toEqual({ state: "Healthy" });
    const runId = `${arn.split(":").at(-1)}.background`;
    const run = await w.store.getRun(NAME, runId, StoredAnalysisSchema);
    expect(run?.run.run.phase).toBe("Successful");
    expect(run?.run.run.message).toBe("Run Terminated");
    const calls = w.provider.calls.length;
    await w.idle();
    expect(w.provider.calls.length).toBe(calls);
  });
});

describe("Begin", () => {
  it("a push the target cannot run (its artifactFor refuses it) fails Begin before the rollout is recorded", async () => {
    let afterTrigger: unknown;
    let armed = false;
    const w: FakeRollout = await withStable({
      wrap: only("begin", (handler) => async (event, context) => {
        if (armed) afterTrigger ??= await w.item();
        return handler(event, context);
      }),
    });
    armed = true;
    w.router.cannotRun = ["v2"];
    const before = await w.item();
    const arn = w.executionArnOf(await w.push(v2));
    expect(await w.run(arn)).toEqual({
      state: "Failed",
      error: "BeginFailed",
      cause: "The rollout could not start: see the execution's events.",
    });
    expect(failedTasks(w, arn)).toEqual(["Begin: RangeError", "Begin: RangeError", "Begin: RangeError"]);
    expect(w.failedTasks(arn)[0]?.message).toMatch(/cannot run image tag "v2"/);
    expect(await w.item()).toEqual(afterTrigger);
    expect((afterTrigger as { phase: string }).phase).toBe(before.phase);
    expect(w.router.calls).toEqual([]);
  });

  it("records a target failure after taking over as Degraded, and a retry that succeeds undoes it", async () => {
    const seen: unknown[] = [];
    let armed = false;
    const w: FakeRollout = await withStable({
      steps: [weightStep(25), forever],
      wrap: only("begin", (handler) => async (event, context) => {
        try {
          return await handler(event, context);
        } finally {
          if (armed) seen.push(await w.item());
        }
      }),
    });
    armed = true;
    const deploy = w.router.deployCandidate.bind(w.router);
    let failures = 1;
    w.router.deployCandidate = async (state, artifact) => {
      if (failures-- > 0)
        throw Object.assign(new Error("the free slot's service is draining"), {
          name: "TargetNotReadyError",
        });
      return deploy(state, artifact);
    };
    const arn = w.executionArnOf(await w.push(v2));
    expect(await w.run(arn)).toEqual({ state: "Waiting", at: "Step02-Pause" });
    // Step Functions retried Begin (same input).
    expect(failedTasks(w, arn)).toEqual(["Begin: TargetNotReadyError"]);
    expect(seen[0]).toMatchObject({
      phase: "Degraded",
      message:
        "RolloutAborted: Rollout aborted update to revision 2: TargetNotReadyError: the free slot's service is draining",
      executionArn: arn,
    });
    expect((seen[0] as { events: Array<{ type: string }> }).events.at(-1)?.type).toBe("BeginFailed");
    expect(seen[1]).toMatchObject({ phase: "Progressing", message: "" });
    expect(begun(w, arn).revision).toBe(2);
  });
});
