import { T0 } from "@sfn-rollouts/test-support/embedded-rollout";
import {
  digest,
  type FakeRollout,
  type FakeRolloutOptions,
  startFakeRollout,
  startStableRollout,
} from "@sfn-rollouts/test-support/fake-rollout";
import { analysisSpec, metric } from "@sfn-rollouts/test-support/rollout-spec";
import { describe, expect, it, onTestFinished } from "vitest";
import { z } from "zod";
import { METRICS } from "../../../functions/config.ts";
import { executionName } from "../../../functions/trigger/decide.ts";
import { StoredAnalysisSchema } from "../../../functions/workflow/analysis.ts";
import { abortRollout, type OperateDeps, promoteRollout } from "../../../functions/workflow/operate.ts";
import type { Step } from "../../../statemachine/spec.ts";

/**
 * Whole rollouts of the compiled workflow (`compile()`) in the embedded runtime, in virtual time:
 * the shipped handlers over in-memory adapters, a router in memory and scripted metrics.
 */

const NAME = "checkout";
const FAILED_MESSAGE = 'Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)';

/** What `rollouts promote` / `rollouts abort` do (the CLI domain), against the same adapters. */
function person(w: FakeRollout): OperateDeps {
  return {
    store: w.store,
    tokens: w.tokens,
    clock: w.clock,
    executions: {
      start: async () => {
        throw new Error("no executions in these tests");
      },
    } as unknown as OperateDeps["executions"],
  };
}

async function fresh(options: FakeRolloutOptions = {}): Promise<FakeRollout> {
  const w = await startFakeRollout(options);
  onTestFinished(() => w.close());
  return w;
}

/** Revision 1 made stable, so the next push runs the steps. */
async function withStable(options: FakeRolloutOptions = {}): Promise<FakeRollout> {
  const w = await startStableRollout(options);
  onTestFinished(() => w.close());
  return w;
}

const v2 = { digest: digest(2), tag: "v2" };
/** The execution the trigger starts for push `generation` of `digest(n)`. */
const execution = (n: number, generation = n) => executionName(NAME, digest(n), generation);
const executionArn = (w: FakeRollout, name: string) =>
  `${w.stateMachineArn.replace(":stateMachine:", ":execution:")}:${name}`;

describe("the first revision", () => {
  it("skips the steps, promotes, records the stable revision and is Healthy", async () => {
    const w = await fresh();
    const ending = await w.rollOut({ digest: digest(1), tag: "v1" });
    expect(ending).toEqual({ state: "Healthy" });
    const it1 = await w.item();
    expect(it1).toMatchObject({
      phase: "Healthy",
      message: "",
      weight: 100,
      stepIndex: 5,
      stepCount: 5,
      currentRevision: { revision: 1, digest: digest(1), tag: "v1" },
      stableRevision: { revision: 1, digest: digest(1), tag: "v1" },
      executionArn: executionArn(w, execution(1)),
      currentTaskToken: null,
    });
    expect(it1.history.map((h) => h.revision)).toEqual([1]);
    expect(it1.events.map((e) => e.type)).toEqual(["Triggered", "RolloutUpdated", "RolloutCompleted"]);
    // Begin deploys the candidate; the Candidate readiness loop checks it once before Promote.
    expect(w.router.calls).toEqual(["prepare", "deployCandidate v1", "checkReadiness", "promote"]);
    expect(w.events.types()).toEqual(["RolloutUpdated", "RolloutCompleted"]);
    expect(w.events.published[1]?.detail).toMatchObject({
      rollout: NAME,
      revision: 1,
      digest: digest(1),
      step: null,
      message: "Rollout completed: revision 1 (v1) is stable",
    });
    expect(w.metrics.points).toEqual([
      { name: METRICS.canaryWeight, value: 100, rollout: NAME },
      { name: METRICS.promotions, value: 1, rollout: NAME },
    ]);
    // The old side is scaled down after scaleDownDelaySeconds.
    expect(w.firings()).toMatchObject([{ at: T0 + 30_000, payload: { kind: "scale-down", attempt: 0 } }]);
  });
});

describe("a healthy second revision", () => {
  it("walks every step, keeps the step index current at each wait, and promotes", async () => {
    const w = await withStable();
    const seen: Array<{ at: string; stepIndex: number; phase: string; waitingFor: string | null }> = [];
    const timer = w.deps.timer;
    w.deps.timer = {
      schedule: async (request) => {
        const now = await w.item();
        seen.push({
          at: (request.payload as { kind: string }).kind,
          stepIndex: now.stepIndex,
          phase: now.phase,
          waitingFor: now.waitingFor,
        });
        return timer.schedule(request);
      },
      cancel: (key) => timer.cancel(key),
    };
    const ending = await w.rollOut(v2);
    expect(ending).toEqual({ state: "Healthy" });
    const done = await w.item();
    expect(done).toMatchObject({
      phase: "Healthy",
      weight: 100,
      stepIndex: 5,
      currentRevision: { revision: 2 },
      stableRevision: { revision: 2, digest: digest(2) },
      currentTaskToken: null,
      waitingFor: null,
      pause: null,
    });
    expect(done.history.map((h) => h.revision)).toEqual([1, 2]);
    // The candidate is put in place with no traffic; nothing else touches the weights.
    expect(w.router.calls).toEqual([
      "prepare",
      "deployCandidate v2",
      "checkReadiness",
      "setWeight 25",
      "setWeight 50",
      "promote",
    ]);
    expect(w.events.types()).toEqual([
      "RolloutUpdated",
      "TrafficWeightUpdated",
      "RolloutStepCompleted",
      "AnalysisRunRunning",
      "TrafficWeightUpdated",
      "RolloutStepCompleted",
      "RolloutPaused",
      "AnalysisRunRunning",
      "RolloutCompleted",
    ]);
    expect(w.events.ofType("RolloutStepCompleted").map((e) => [e.detail.step, e.detail.message])).toEqual([
      [0, "Rollout step 1/5 completed (weight 25%)"],
      [2, "Rollout step 3/5 completed (weight 50%)"],
    ]);
    expect(w.metrics.points.filter((p) => p.name === METRICS.canaryWeight).map((p) => p.value)).toEqual([
      25, 50, 100,
    ]);
    expect(
      w.metrics.points.filter((p) => p.name === METRICS.analysisRuns).map((p) => p.dimensions?.Phase),
    ).toEqual(["Successful", "Successful"]);
    expect(w.metrics.points.filter((p) => p.name === METRICS.measurements)).toHaveLength(4);
    // Each wait shows the step it is at (rollouts get marks it).
    const firstTick = seen.find((s) => s.at === "tick");
    const pause = seen.find((s) => s.at === "pause");
    const lastTick = seen.filter((s) => s.at === "tick").at(-1);
    expect(firstTick).toEqual({ at: "tick", stepIndex: 1, phase: "Progressing", waitingFor: "analysis" });
    expect(pause).toEqual({ at: "pause", stepIndex: 3, phase: "Paused", waitingFor: "pause" });
    expect(lastTick).toEqual({ at: "tick", stepIndex: 4, phase: "Progressing", waitingFor: "analysis" });
  });

  it("stores each analysis run and its measurements, once each", async () => {
    const w = await withStable();
    const start = w.clock.now();
    expect(await w.rollOut(v2)).toEqual({ state: "Healthy" });
    const runs = await w.store.listRuns(NAME, StoredAnalysisSchema);
    expect(runs.map((r) => [r.runId, r.run.run.phase, r.run.answered])).toEqual([
      [`${execution(2)}.step01`, "Successful", true],
      [`${execution(2)}.step04`, "Successful", true],
    ]);
    const measurements = await w.store.listMeasurements(NAME, `${execution(2)}.step01`, z.unknown());
    expect(measurements.map((m) => m.measurementId)).toEqual(["success-rate#000001", "success-rate#000002"]);
    // initialDelay 5 s, interval 3 s: measurements at +5 s and +8 s of the run; the 2 s pause
    // starts the second analysis at +10 s.
    expect(w.provider.calls.map((c) => c.at - start)).toEqual([5_000, 8_000, 15_000, 18_000]);
  });
});

describe("a failing analysis", () => {
  it("answers the token Failed with Argo's message, aborts, and leaves the rollout Degraded at weight 0", async () => {
    const w = await withStable({ scripts: { "success-rate": [0.5] } });
    const ending = await w.rollOut(v2);
    expect(ending).toEqual({
      state: "Aborted",
      message: `RolloutAborted: Rollout aborted update to revision 2: ${FAILED_MESSAGE}`,
    });
    const token = w.tokens.successes.at(-1);
    expect(token?.output).toEqual({
      phase: "Failed",
      message: FAILED_MESSAGE,
      runId: `${execution(2)}.step01`,
    });
    const aborted = await w.item();
    expect(aborted).toMatchObject({
      phase: "Degraded",
      message: `RolloutAborted: Rollout aborted update to revision 2: ${FAILED_MESSAGE}`,
      weight: 0,
      stepIndex: 1,
      stableRevision: { revision: 1 },
      currentRevision: { revision: 2 },
      currentTaskToken: null,
      abortRequested: false,
    });
    expect(w.router.canary).toBe(0);
    expect(w.router.calls).toEqual([
      "prepare",
      "deployCandidate v2",
      "checkReadiness",
      "setWeight 25",
      "abort",
    ]);
    expect(w.events.types()).toEqual([
      "RolloutUpdated",
      "TrafficWeightUpdated",
      "RolloutStepCompleted",
      "AnalysisRunRunning",
      "AnalysisRunFailed",
      "RolloutAborted",
    ]);
    expect(w.events.ofType("AnalysisRunFailed")[0]?.detail).toMatchObject({ step: 1, revision: 2 });
    expect(w.events.ofType("RolloutAborted")[0]?.detail.message).toBe(aborted.message);
    expect(aborted.events.map((e) => e.type)).toContain("AnalysisRunFailed");
    expect(w.metrics.points.filter((p) => p.name === METRICS.aborts)).toHaveLength(1);
    expect(w.metrics.points.filter((p) => p.name === METRICS.canaryWeight).map((p) => p.value)).toEqual([
      25, 0,
    ]);
    // The candidate is scaled down after abortScaleDownDelaySeconds.
    expect(w.firings()).toMatchObject([{ payload: { kind: "scale-down" } }]);
    await w.idle();
    expect(w.router.calls.at(-1)).toBe("scaleDown");
  });

  it("onFailure: stop leaves the weights as they were", async () => {
    const w = await withStable({ scripts: { "success-rate": [0.5] }, spec: { onFailure: "stop" } });
    const ending = await w.rollOut(v2);
    expect(ending.state).toBe("Aborted");
    const aborted = await w.item();
    expect(aborted.phase).toBe("Degraded");
    expect(aborted.weight).toBe(25);
    expect(aborted.message).toBe(
      `RolloutAborted: Rollout aborted update to revision 2: ${FAILED_MESSAGE} (onFailure: stop: the weights are left as they were)`,
    );
    expect(w.router.canary).toBe(25);
    expect(w.router.calls).not.toContain("abort");
    expect(w.firings()).toEqual([]);
  });

  it("a run whose queries keep failing ends Error after consecutiveErrorLimit and aborts", async () => {
    const w = await withStable({ scripts: { "success-rate": ["E", "E", "E", "E", "E"] } });
    const ending = await w.rollOut(v2);
    expect(ending.state).toBe("Aborted");
    expect((await w.item()).message).toMatch(
      /^RolloutAborted: Rollout aborted update to revision 2: Metric "success-rate" assessed Error due to consecutiveErrors \(5\) > consecutiveErrorLimit \(4\)/,
    );
    // Argo retries an errored measurement 10 s later.
    const first = w.provider.calls[0]?.at ?? Number.NaN;
    expect(w.provider.calls.map((c) => (c.at - first) / 1000)).toEqual([0, 10, 20, 30, 40]);
  });
});

describe("pauses", () => {
  const untilPromoted: Step[] = [
    { kind: "setWeight", weight: 10 },
    { kind: "pause", reason: "CanaryPauseStep" },
    { kind: "setWeight", weight: 60 },
  ];

  it("a timed pause is resumed by the Timer at its end", async () => {
    const steps: Step[] = [
      { kind: "setWeight", weight: 10 },
      { kind: "pause", duration: 300, reason: "CanaryPauseStep" },
    ];
    const w = await withStable({ steps });
    const ending = await w.rollOut(v2);
    expect(ending).toEqual({ state: "Healthy" });
    expect(w.resumed).toContain("pause ended");
    const paused = w.events.ofType("RolloutPaused")[0];
    expect(paused?.detail).toMatchObject({ step: 1, message: "CanaryPauseStep: paused for 5m" });
    // The item records the end of the pause, though Promote follows as soon as the token is answered.
    const done = await w.item();
    const resumed = done.events.find((e) => e.type === "RolloutResumed");
    const pausedAt = done.events.find((e) => e.type === "RolloutPaused");
    expect(resumed?.message).toBe("pause ended");
    expect((resumed?.at ?? 0) - (pausedAt?.at ?? 0)).toBe(300_000);
    expect(done.events.map((e) => e.type).slice(-3)).toEqual([
      "RolloutPaused",
      "RolloutResumed",
      "RolloutCompleted",
    ]);
  });

  it("an indefinite pause waits for rollouts promote", async () => {
    const w = await withStable({ steps: untilPromoted });
    const arn = w.executionArnOf(await w.push(v2));
    const waiting = await w.run(arn);
    expect(waiting).toEqual({ state: "Waiting", at: "Step02-Pause" });
    const paused = await w.item();
    expect(paused).toMatchObject({
      phase: "Paused",
      message: "CanaryPauseStep: waiting for rollouts promote",
      stepIndex: 1,
      waitingFor: "pause",
      pause: { reason: "CanaryPauseStep", until: null },
      weight: 10,
    });
    expect(w.firings()).toEqual([]);
    // A person promotes: the run continues to the end.
    expect((await promoteRollout(person(w), NAME, false)).ok).toBe(true);
    expect(await w.run(arn)).toEqual({ state: "Healthy" });
    expect(w.router.calls).toContain("setWeight 60");
  });

  it("promote --full at a pause skips the remaining steps", async () => {
    const w = await withStable({ steps: untilPromoted });
    const ending = await w.rollOut(v2, {
      decide: async () => (await promoteRollout(person(w), NAME, true)).ok,
    });
    expect(ending).toEqual({ state: "Healthy" });
    expect(w.router.calls).not.toContain("setWeight 60");
    expect(w.router.calls.at(-1)).toBe("promote");
  });

  it("an Inconclusive analysis pauses for a person with the analysis message", async () => {
    const inconclusive = metric({
      successCondition: "result[0] >= 0.9",
      failureCondition: "result[0] < 0.5",
      count: 1,
      interval: undefined,
      initialDelay: 0,
    });
    const steps: Step[] = [
      { kind: "setWeight", weight: 20 },
      { kind: "analysis", origin: "step", analysis: analysisSpec(inconclusive) },
      { kind: "setWeight", weight: 40 },
    ];
    const w = await withStable({ steps, scripts: { "success-rate": [0.7] } });
    const arn = w.executionArnOf(await w.push(v2));
    const waiting = await w.run(arn);
    expect(waiting).toEqual({ state: "Waiting", at: "Step02-Analysis-Inconclusive" });
    const paused = await w.item();
    expect(paused).toMatchObject({
      phase: "Paused",
      waitingFor: "approval",
      stepIndex: 1,
      pause: { reason: "InconclusiveAnalysisRun", until: null },
    });
    expect(paused.message).toMatch(
      /^InconclusiveAnalysisRun: Metric "success-rate" assessed Inconclusive due to inconclusive \(1\) > inconclusiveLimit \(0\); rollouts promote to continue/,
    );
    expect(w.events.types()).toContain("RolloutPaused");
    // promote accepts the Inconclusive run.
    expect((await promoteRollout(person(w), NAME, false)).ok).toBe(true);
    expect(await w.run(arn)).toEqual({ state: "Healthy" });
    expect(w.router.calls).toContain("setWeight 40");
  });
});

describe("weight drift", () => {
  it("pauses on drift, and after promote the step overwrites the weights", async () => {
    const steps: Step[] = [
      { kind: "setWeight", weight: 10 },
      { kind: "setWeight", weight: 30 },
    ];
    const w = await withStable({ steps });
    // Someone moves the weights after the first step.
    const original = w.router.setWeight.bind(w.router);
    w.router.setWeight = async (state, percent, options) => {
      if (percent === 30 && !options?.overwriteDrift) w.router.canary = 77;
      return original(state, percent, options);
    };
    let seen: Awaited<ReturnType<typeof w.item>> | undefined;
    const decided: string[] = [];
    const ending = await w.rollOut(v2, {
      decide: async (at) => {
        decided.push(at);
        seen = await w.item();
        return (await promoteRollout(person(w), NAME, false)).ok;
      },
    });
    expect(ending).toEqual({ state: "Healthy" });
    expect(decided).toEqual(["Step02-SetWeight-30-Drift"]);
    expect(seen).toMatchObject({
      phase: "Paused",
      waitingFor: "approval",
      weight: 10,
      stepIndex: 1,
      pause: { reason: "WeightDrift" },
      drift: { step: 1, approved: false, message: "the candidate receives 77% instead of 10%" },
    });
    expect(seen?.message).toBe(
      "paused-drift: the weights were changed by someone else; rollouts promote to overwrite them, rollouts abort to go back to stable (the candidate receives 77% instead of 10%)",
    );
    expect(w.router.calls).toEqual([
      "prepare",
      "deployCandidate v2",
      "checkReadiness",
      "setWeight 10",
      "setWeight 30",
      "setWeight 30 overwrite",
      "promote",
    ]);
    const done = await w.item();
    expect(done.drift).toBeNull();
    expect(done.events.map((e) => e.type)).toContain("WeightDrift");
  });

  it("abort at a drift pause goes back to stable", async () => {
    const w = await withStable({ steps: [{ kind: "setWeight", weight: 10 }] });
    const original = w.router.setWeight.bind(w.router);
    w.router.setWeight = async (state, percent, options) => {
      if (!options?.overwriteDrift) w.router.canary = 5; // someone moved the weights
      return original(state, percent, options);
    };
    const decided: string[] = [];
    const ending = await w.rollOut(v2, {
      decide: async (at) => {
        decided.push(at);
        return (await abortRollout(person(w), NAME, "drift not expected")).ok;
      },
    });
    expect(ending).toEqual({
      state: "Aborted",
      message: "RolloutAborted: Rollout aborted update to revision 2: drift not expected",
    });
    expect(decided).toEqual(["Step01-SetWeight-10-Drift"]);
    expect((await w.item()).drift).toBeNull();
    expect(w.router.canary).toBe(0);
  });
});

describe("rollouts abort", () => {
  it("during an analysis: the token fails with RolloutAborted, the run is terminated, the rollout Degraded", async () => {
    const w = await withStable();
    const arn = w.executionArnOf(await w.push(v2));
    // The execution runs until it waits on the analysis's first tick (5 s away).
    await w.runtime.settle();
    expect(w.currentState(arn)).toBe("Step02-Analysis");
    expect((await w.item()).waitingFor).toBe("analysis");
    const outcome = await abortRollout(person(w), NAME, "bad latency");
    expect(outcome.message).toMatch(/^aborting checkout: the execution was waiting on analysis/);
    expect(await w.run(arn)).toEqual({
      state: "Aborted",
      message: "RolloutAborted: Rollout aborted update to revision 2: bad latency",
    });
    // The run's next tick finds it aborted: it is terminated, not measured.
    await w.idle();
    const runs = await w.store.listRuns(NAME, StoredAnalysisSchema);
    expect(runs.map((r) => r.run.run.phase)).toEqual(["Successful"]);
    expect(runs[0]?.run.run.message).toBe("Run Terminated");
    expect(w.provider.calls).toEqual([]);
    expect(w.tokens.failures).toMatchObject([{ error: "RolloutAborted", cause: "bad latency" }]);
    expect(await w.item()).toMatchObject({ phase: "Degraded", weight: 0, abortRequested: false });
  });
});
