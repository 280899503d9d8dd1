import { describe, expect, it } from "vitest";
import { z } from "zod";
import { requestAbort } from "../../../functions/abort/request-abort.ts";
import { ConcurrentUpdateError } from "../../../functions/store/errors.ts";
import type { RolloutStore } from "../../../functions/store/port.ts";
import { update } from "../../../functions/store/update.ts";
import type { TimerFiring } from "../../../functions/timer/port.ts";
import { abort } from "../../../functions/workflow/abort.ts";
import { analysisTick, StoredAnalysisSchema, startAnalysis } from "../../../functions/workflow/analysis.ts";
import { awaitStep } from "../../../functions/workflow/await.ts";
import { artifactFor, begin } from "../../../functions/workflow/begin.ts";
import { checkReady } from "../../../functions/workflow/check-ready.ts";
import { promoteRollout } from "../../../functions/workflow/operate.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { promote } from "../../../functions/workflow/promote.ts";
import { resume } from "../../../functions/workflow/resume.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";
import type { Step } from "../../../statemachine/spec.ts";
import {
  acceptPush,
  analysisSpec,
  digest,
  item,
  liveToken,
  metric,
  NAME,
  rolloutRef,
  runExecution,
  TARGET,
  type World,
  world,
} from "./harness.ts";

async function withStable(scripts: Record<string, Array<number | "E">> = {}): Promise<World> {
  const w = world(scripts);
  expect(await runExecution(w, await acceptPush(w, { digest: digest(1), tag: "v1", generation: 1 }))).toEqual(
    {
      state: "Healthy",
    },
  );
  await w.timer.runUntilIdle();
  w.router.calls.length = 0;
  w.events.published.length = 0;
  w.metrics.points.length = 0;
  w.resumed.length = 0;
  return w;
}

/** Begin of revision 2 (generation 2) and the Task body every later state receives. */
async function begun(w: World, generation = 2, d = digest(2)) {
  const payload = await acceptPush(w, { digest: d, tag: `v${generation}`, generation });
  const { context, firstRevision } = await begin(w.deps, payload);
  expect(firstRevision).toBe(false);
  return { context, base: { context, rollout: rolloutRef(), target: TARGET } };
}

const weightStep = (weight: number): Step => ({ kind: "setWeight", weight });
const abortError = { Error: "RolloutAborted", Cause: "" };

describe("abortRequested seen mid-step", () => {
  it("a step that starts after an abort was recorded throws RolloutAborted and moves no traffic", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const outcome = await requestAbort({
      store: w.store,
      sfn: w.tokens,
      name: NAME,
      reason: "stop it",
      clock: w.clock,
    });
    expect(outcome.status).toBe("recorded");
    w.router.calls.length = 0;
    await expect(setWeight(w.deps, { ...base, stepIndex: 0, step: weightStep(25) })).rejects.toMatchObject({
      name: "RolloutAborted",
      message: "stop it",
    });
    await expect(checkReady(w.deps, { ...base, stepIndex: null })).rejects.toMatchObject({
      name: "RolloutAborted",
    });
    await expect(promote(w.deps, { ...base, scaleDownDelaySeconds: 30 })).rejects.toMatchObject({
      name: "RolloutAborted",
    });
    expect(w.router.calls).toEqual([]);
    // A wait refuses to store its token: the abort can never fall between "checked" and "waiting".
    const token = liveToken(w);
    await expect(
      awaitStep(w.deps, {
        ...base,
        stepIndex: 1,
        step: { kind: "pause", reason: "CanaryPauseStep" },
        taskToken: token,
      }),
    ).rejects.toMatchObject({ name: "RolloutAborted" });
    await expect(
      startAnalysis(w.deps, {
        ...base,
        stepIndex: 1,
        step: { kind: "analysis", origin: "step", analysis: analysisSpec() },
        taskToken: token,
      }),
    ).rejects.toMatchObject({ name: "RolloutAborted" });
    expect((await item(w)).currentTaskToken).toBeNull();
    // No run is left behind Pending for an analysis that never started.
    expect(await w.store.listRuns(NAME, StoredAnalysisSchema)).toEqual([]);
    // The Catch goes to Abort, which takes the requested reason.
    const out = await abort(w.deps, {
      ...base,
      error: {
        Error: "RolloutAborted",
        Cause: JSON.stringify({ errorType: "RolloutAborted", errorMessage: "stop it" }),
      },
      onFailure: "rollback",
      abortScaleDownDelaySeconds: 30,
    });
    expect(out.message).toBe("RolloutAborted: Rollout aborted update to revision 2: stop it");
    expect(await item(w)).toMatchObject({ phase: "Degraded", abortRequested: false, weight: 0 });
  });

  it("an abort that lands while the router moves traffic is seen by the step's conditional write", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const original = w.router.setWeight.bind(w.router);
    w.router.setWeight = async (state, percent, options) => {
      const change = await original(state, percent, options);
      await requestAbort({ store: w.store, sfn: w.tokens, name: NAME, reason: "mid-step", clock: w.clock });
      return change;
    };
    await expect(setWeight(w.deps, { ...base, stepIndex: 0, step: weightStep(25) })).rejects.toMatchObject({
      name: "RolloutAborted",
    });
    const after = await item(w);
    expect(after.stepIndex).toBe(0);
    expect(after.events.map((e) => e.type)).not.toContain("RolloutStepCompleted");
    expect(w.events.published).toEqual([]);
    await abort(w.deps, { ...base, error: abortError, onFailure: "rollback", abortScaleDownDelaySeconds: 0 });
    expect(w.router.canary).toBe(0);
    expect((await item(w)).message).toBe("RolloutAborted: Rollout aborted update to revision 2: mid-step");
  });

  it("a timed pause whose token was failed by an abort does not resume the rollout", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const token = liveToken(w);
    await awaitStep(w.deps, {
      ...base,
      stepIndex: 0,
      step: { kind: "pause", duration: 60, reason: "CanaryPauseStep" },
      taskToken: token,
    });
    const outcome = await requestAbort({
      store: w.store,
      sfn: w.tokens,
      name: NAME,
      reason: "no",
      clock: w.clock,
    });
    expect(outcome.status).toBe("signalled");
    // The Timer fires before the Abort state ran.
    await w.timer.runUntilIdle();
    expect(w.resumed).toEqual(["pause token stale (TaskDoesNotExist)"]);
    const now = await item(w);
    expect(now.phase).toBe("Paused");
    expect(now.events.map((e) => e.type)).not.toContain("RolloutResumed");
    await abort(w.deps, {
      ...base,
      error: { Error: "RolloutAborted", Cause: "no" },
      onFailure: "rollback",
      abortScaleDownDelaySeconds: 0,
    });
    expect(await item(w)).toMatchObject({ phase: "Degraded", currentTaskToken: null, pause: null });
  });
});

describe("a superseded execution", () => {
  it("a newer push takes over: the old execution's Lambdas throw ExecutionSuperseded and its Abort touches nothing", async () => {
    const w = await withStable();
    const old = await begun(w, 2, digest(2));
    await setWeight(w.deps, { ...old.base, stepIndex: 0, step: weightStep(25) });
    const pauseToken = liveToken(w);
    await awaitStep(w.deps, {
      ...old.base,
      stepIndex: 1,
      step: { kind: "pause", reason: "CanaryPauseStep" },
      taskToken: pauseToken,
    });
    // The trigger accepts a newer push and aborts the old execution through the abort channel.
    const payload3 = await acceptPush(w, { digest: digest(3), tag: "v3", generation: 3 });
    const superseding = await requestAbort({
      store: w.store,
      sfn: w.tokens,
      name: NAME,
      reason: "superseded by a newer revision",
      clock: w.clock,
      executionArn: old.context.executionArn,
    });
    expect(superseding.status).toBe("signalled");
    // The newer execution's Begin takes over, putting traffic back on stable first.
    const next = await begin(w.deps, payload3);
    expect(next.context.revision).toBe(3);
    expect(w.router.canary).toBe(0);
    expect(w.router.calls.slice(-3)).toEqual(["setWeight 0 overwrite", "prepare", "deployCandidate v3"]);
    await setWeight(w.deps, {
      context: next.context,
      rollout: rolloutRef(),
      target: TARGET,
      stepIndex: 0,
      step: weightStep(10),
    });
    const before = await item(w);
    w.router.calls.length = 0;
    // The old execution reaches its Abort state (the token failure), and any Lambda it still runs.
    await expect(
      abort(w.deps, {
        ...old.base,
        error: { Error: "RolloutAborted", Cause: "superseded" },
        onFailure: "rollback",
        abortScaleDownDelaySeconds: 0,
      }),
    ).rejects.toMatchObject({ name: "ExecutionSuperseded" });
    await expect(
      setWeight(w.deps, { ...old.base, stepIndex: 2, step: weightStep(50) }),
    ).rejects.toMatchObject({
      name: "ExecutionSuperseded",
    });
    await expect(promote(w.deps, { ...old.base, scaleDownDelaySeconds: 0 })).rejects.toMatchObject({
      name: "ExecutionSuperseded",
    });
    expect(w.router.calls).toEqual([]);
    expect(await item(w)).toEqual(before);
    expect(w.router.canary).toBe(10);
  });

  it("a late Begin of an older push is refused without touching the rollout", async () => {
    const w = await withStable();
    const stale = await acceptPush(w, { digest: digest(2), tag: "v2", generation: 2 });
    await acceptPush(w, { digest: digest(3), tag: "v3", generation: 3 });
    const before = await item(w);
    await expect(begin(w.deps, stale)).rejects.toMatchObject({ name: "ExecutionSuperseded" });
    expect(await item(w)).toEqual(before);
    expect(w.router.calls).toEqual([]);
  });
});

describe("conditional-write conflicts", () => {
  it("two Begins of one execution (a Lambda retry racing the first attempt) record it once", async () => {
    const w = await withStable();
    const payload = await acceptPush(w, { digest: digest(2), tag: "v2", generation: 2 });
    const [a, b] = await Promise.all([begin(w.deps, payload), begin(w.deps, payload)]);
    expect(a.context).toEqual(b.context);
    expect(a.context.revision).toBe(2);
    const now = await item(w);
    expect(now.events.filter((e) => e.type === "RolloutUpdated").map((e) => e.message)).toEqual([
      expect.stringContaining("revision 1"),
      expect.stringContaining("revision 2"),
    ]);
  });

  it("a step whose write loses a race re-reads the item and decides again", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    // Another writer (the CLI) slips in before the step's first save attempt.
    let injected = false;
    const store = w.deps.store;
    const racing: RolloutStore = Object.create(store);
    racing.save = async (next, expected) => {
      if (!injected) {
        injected = true;
        await update(store, NAME, "latest", (latest) => ({ ...latest, message: "touched by someone else" }));
      }
      return store.save(next, expected);
    };
    racing.get = (name) => store.get(name);
    w.deps.store = racing;
    const result = await setWeight(w.deps, { ...base, stepIndex: 0, step: weightStep(25) });
    expect(result).toMatchObject({ drift: false, weight: 25 });
    expect(w.store.conflicts).toBeGreaterThanOrEqual(1);
    expect(await item(w)).toMatchObject({ weight: 25, stepIndex: 1 });
  });

  it("a strict compare-and-set loses to a concurrent write", async () => {
    const w = await withStable();
    const seen = await item(w);
    await update(w.store, NAME, "latest", (latest) => ({ ...latest, message: "first" }));
    await expect(
      update(w.store, NAME, seen.version, (latest) => ({ ...latest, message: "second" })),
    ).rejects.toBeInstanceOf(ConcurrentUpdateError);
  });
});

describe("the Timer", () => {
  it("a duplicated tick firing does not count a measurement twice nor fork the tick chain", async () => {
    const w = await withStable();
    const deliveries: string[] = [];
    // Every firing is delivered twice (Scheduler and the ticker are at-least-once).
    w.timer.setHandler(async (firing: TimerFiring) => {
      const payload = firing.payload as Parameters<typeof resume>[1];
      for (let i = 0; i < 2; i++) {
        deliveries.push(firing.key);
        w.resumed.push(await resume(w.deps, payload, firing.key));
      }
    });
    const ending = await runExecution(
      w,
      await acceptPush(w, { digest: digest(2), tag: "v2", generation: 2 }),
      {
        steps: [weightStep(10), { kind: "analysis", origin: "step", analysis: analysisSpec() }],
      },
    );
    expect(ending).toEqual({ state: "Healthy" });
    expect(w.provider.calls).toHaveLength(2);
    const runId = `${NAME}-222222222222-g2.step01`;
    const measurements = await w.store.listMeasurements(NAME, runId, z.unknown());
    expect(measurements.map((m) => m.measurementId)).toEqual(["success-rate#000001", "success-rate#000002"]);
    const ticks = deliveries.filter((k) => k.includes("/tick-"));
    // Two measurements: two tick firings, each delivered twice; no extra firing from the duplicates.
    expect(ticks).toHaveLength(4);
    expect(new Set(ticks).size).toBe(2);
    expect(w.metrics.points.filter((p) => p.name === "Measurements")).toHaveLength(2);
  });

  it("two concurrent deliveries of one tick: one wins the run's conditional write, the other stops", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const token = liveToken(w);
    const one = metric({ count: 1, interval: undefined, initialDelay: 5 });
    const { runId } = await startAnalysis(w.deps, {
      ...base,
      stepIndex: 0,
      step: { kind: "analysis", origin: "step", analysis: analysisSpec(one) },
      taskToken: token,
    });
    w.clock.advance(5_000);
    const results = await Promise.all([analysisTick(w.deps, NAME, runId), analysisTick(w.deps, NAME, runId)]);
    // The loser of the run's conditional write stops (undefined) and records nothing.
    expect(results.map((r) => r?.phase ?? "lost").sort()).toEqual(["Successful", "lost"]);
    expect(await w.store.listMeasurements(NAME, runId, z.unknown())).toHaveLength(1);
    expect(w.tokens.successes.filter((s) => s.token === token)).toHaveLength(1);
    expect((await w.store.getRun(NAME, runId, StoredAnalysisSchema))?.run.answered).toBe(true);
  });

  it("a start-analysis retried after its first tick could not be scheduled schedules it", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const token = liveToken(w);
    const body = {
      ...base,
      stepIndex: 1,
      step: { kind: "analysis" as const, origin: "step" as const, analysis: analysisSpec() },
      taskToken: token,
    };
    const schedule = w.deps.timer.schedule.bind(w.deps.timer);
    let fail = true;
    w.deps.timer = {
      schedule: async (request) => {
        if (fail) {
          fail = false;
          throw new Error("Scheduler throttled");
        }
        return schedule(request);
      },
      cancel: (key) => w.timer.cancel(key),
    };
    await expect(startAnalysis(w.deps, body)).rejects.toThrow("Scheduler throttled");
    // Step Functions retries the Task (same input).
    await startAnalysis(w.deps, body);
    expect(w.timer.pending().filter((f) => f.key.includes("/tick-"))).toHaveLength(1);
    await w.timer.runUntilIdle();
    expect(w.tokens.successes.find((s) => s.token === token)?.output).toMatchObject({ phase: "Successful" });
  });

  it("a start-analysis retried with a new task token answers the new token", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const first = liveToken(w);
    const body = {
      ...base,
      stepIndex: 1,
      step: { kind: "analysis" as const, origin: "step" as const, analysis: analysisSpec() },
    };
    await startAnalysis(w.deps, { ...body, taskToken: first });
    w.tokens.live.delete(first);
    const second = liveToken(w);
    await startAnalysis(w.deps, { ...body, taskToken: second });
    expect((await item(w)).currentTaskToken).toBe(second);
    await w.timer.runUntilIdle();
    expect(w.tokens.successes.map((s) => s.token)).toEqual([second]);
  });
});

describe("runs of an execution that moved on", () => {
  it("a step analysis still scheduled when the Abort state ran is closed at its next tick, not measured", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const token = liveToken(w);
    const { runId } = await startAnalysis(w.deps, {
      ...base,
      stepIndex: 0,
      step: { kind: "analysis", origin: "step", analysis: analysisSpec(metric({ count: 3, interval: 30 })) },
      taskToken: token,
    });
    // The token is failed by a Lambda timeout, say, and the Abort state runs.
    w.tokens.live.delete(token);
    await abort(w.deps, {
      ...base,
      error: { Error: "States.Timeout" },
      onFailure: "rollback",
      abortScaleDownDelaySeconds: 0,
    });
    const degraded = await item(w);
    await w.timer.runUntilIdle();
    expect(w.provider.calls).toEqual([]);
    const run = await w.store.getRun(NAME, runId, StoredAnalysisSchema);
    expect(run?.run.run).toMatchObject({ phase: "Successful", message: "Run Terminated" });
    expect((await item(w)).events).toEqual(degraded.events);
  });
});

describe("a token already used", () => {
  it("a pause promoted by a person before its timer fires: the firing does nothing", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const token = liveToken(w);
    await awaitStep(w.deps, {
      ...base,
      stepIndex: 0,
      step: { kind: "pause", duration: 120, reason: "CanaryPauseStep" },
      taskToken: token,
    });
    const promoted = await promoteRollout(
      { store: w.store, tokens: w.tokens, clock: w.clock, executions: {} as never },
      NAME,
      false,
    );
    expect(promoted.ok).toBe(true);
    await w.timer.runUntilIdle();
    expect(w.resumed).toEqual(["pause already ended"]);
    expect(w.tokens.successes.filter((s) => s.token === token)).toHaveLength(1);
  });

  it("a pause firing whose token Step Functions no longer knows (crash after answering) clears the wait", async () => {
    const w = await withStable();
    const { base } = await begun(w);
    const token = liveToken(w);
    await awaitStep(w.deps, {
      ...base,
      stepIndex: 0,
      step: { kind: "pause", duration: 1, reason: "CanaryPauseStep" },
      taskToken: token,
    });
    w.tokens.live.delete(token); // answered by a first delivery that crashed before clearing
    const result = await resume(
      w.deps,
      {
        kind: "pause",
        rollout: NAME,
        executionArn: base.context.executionArn,
        revision: base.context.revision,
        token,
      },
      "k",
    );
    expect(result).toBe("pause token stale (TaskDoesNotExist)");
    expect(await item(w)).toMatchObject({ phase: "Progressing", currentTaskToken: null, pause: null });
  });

  it("an analysis whose token is no longer waited on ends without a crash and answers once", async () => {
    const w = await withStable({ "success-rate": [0.1] });
    const { base } = await begun(w);
    const token = liveToken(w);
    w.tokens.live.delete(token); // the Task timed out, say
    const one = metric({ count: 1, interval: undefined, initialDelay: 0 });
    const { runId } = await startAnalysis(w.deps, {
      ...base,
      stepIndex: 0,
      step: { kind: "analysis", origin: "step", analysis: analysisSpec(one) },
      taskToken: token,
    });
    expect(w.tokens.successes).toEqual([]);
    const stored = await w.store.getRun(NAME, runId, StoredAnalysisSchema);
    expect(stored?.run).toMatchObject({ answered: true, run: { phase: "Failed" } });
    // Delivered again (a redelivered tick): the run is answered already, nothing is sent again.
    w.tokens.live.add(token);
    const again = await analysisTick(w.deps, NAME, runId);
    expect(again?.phase).toBe("Failed");
    expect(w.tokens.successes).toEqual([]);
  });
});

describe("background analysis", () => {
  it("a failing background analysis aborts the rollout through the abort channel", async () => {
    const w = await withStable({ bg: [1, 1, 0.2] });
    const { base } = await begun(w);
    const bg = metric({ name: "bg", interval: 60, initialDelay: 0, count: undefined });
    await setWeight(w.deps, { ...base, stepIndex: 0, step: weightStep(20) });
    await startAnalysis(w.deps, { ...base, stepIndex: 0, background: true, analysis: analysisSpec(bg) });
    const token = liveToken(w);
    await awaitStep(w.deps, {
      ...base,
      stepIndex: 1,
      step: { kind: "pause", reason: "CanaryPauseStep" },
      taskToken: token,
    });
    await w.timer.runUntilIdle();
    const failure = w.tokens.failures.find((f) => f.token === token);
    expect(failure).toEqual({
      token,
      error: "RolloutAborted",
      cause: 'Metric "bg" assessed Failed due to failed (1) > failureLimit (0)',
    });
    expect(w.events.types()).toContain("AnalysisRunFailed");
    const out = await abort(w.deps, {
      ...base,
      error: { Error: "RolloutAborted", Cause: failure?.cause ?? "" },
      onFailure: "rollback",
      abortScaleDownDelaySeconds: 0,
    });
    expect(out.message).toBe(
      'RolloutAborted: Rollout aborted update to revision 2: Metric "bg" assessed Failed due to failed (1) > failureLimit (0)',
    );
    expect(await item(w)).toMatchObject({ phase: "Degraded", weight: 0 });
  });

  it("ends when the rollout is promoted", async () => {
    const w = await withStable();
    const { base, context } = await begun(w);
    const bg = metric({ name: "bg", interval: 60, initialDelay: 0, count: undefined });
    const { runId } = await startAnalysis(w.deps, {
      ...base,
      stepIndex: 0,
      background: true,
      analysis: analysisSpec(bg),
    });
    await promote(w.deps, { ...base, scaleDownDelaySeconds: 0 });
    const run = await w.store.getRun(NAME, runId, StoredAnalysisSchema);
    expect(run?.run.run.phase).toBe("Successful");
    expect(run?.run.run.message).toBe("Run Terminated");
    expect(runId).toBe(`${(context as WorkflowContext).executionArn.split(":").at(-1)}.background`);
    const calls = w.provider.calls.length;
    await w.timer.runUntilIdle();
    expect(w.provider.calls.length).toBe(calls);
  });
});

describe("Begin", () => {
  it("a local-proxy target with no upstream for the image fails before the rollout is recorded", async () => {
    const w = await withStable();
    const before = await item(w);
    const payload = await acceptPush(w, { digest: digest(2), tag: "v2", generation: 2 });
    const afterTrigger = await item(w);
    await expect(
      begin(w.deps, {
        ...payload,
        target: {
          type: "local-proxy",
          adminUrl: "http://127.0.0.1:1",
          upstreams: { v1: "http://127.0.0.1:2" },
        },
      }),
    ).rejects.toThrow(/no upstream for image tag "v2"/);
    expect(await item(w)).toEqual(afterTrigger);
    expect(afterTrigger.phase).toBe(before.phase);
    expect(w.router.calls).toEqual([]);
  });
  it('runs an image with no upstream of its own on the local-proxy target\'s "*" upstream', () => {
    const settings = {
      type: "local-proxy",
      adminUrl: "http://127.0.0.1:1",
      upstreams: { v1: "http://127.0.0.1:2", "*": "http://127.0.0.1:3" },
    };
    const revision = { revision: 2, image: `demo@${digest(2)}`, digest: digest(2), tag: "v7" };
    expect(artifactFor(settings, revision)).toEqual({ upstream: "http://127.0.0.1:3", version: "v7" });
    expect(artifactFor(settings, { ...revision, tag: "v1" })).toEqual({
      upstream: "http://127.0.0.1:2",
      version: "v1",
    });
  });
  it("records a target failure after taking over as Degraded, and a retry that succeeds undoes it", async () => {
    const w = await withStable();
    const payload = await acceptPush(w, { digest: digest(2), tag: "v2", generation: 2 });
    const deploy = w.router.deployCandidate.bind(w.router);
    let failures = 1;
    w.router.deployCandidate = async (state, artifact) => {
      if (failures-- > 0)
        throw Object.assign(new Error("the free slot's service is draining"), {
          name: "TargetNotReadyError",
        });
      return deploy(state, artifact);
    };
    await expect(begin(w.deps, payload)).rejects.toThrow("draining");
    const failed = await item(w);
    expect(failed).toMatchObject({
      phase: "Degraded",
      message:
        "RolloutAborted: Rollout aborted update to revision 2: TargetNotReadyError: the free slot's service is draining",
      executionArn: payload.executionId,
    });
    expect(failed.events.at(-1)?.type).toBe("BeginFailed");
    const retried = await begin(w.deps, payload);
    expect(retried.context.revision).toBe(2);
    expect(await item(w)).toMatchObject({ phase: "Progressing", message: "" });
  });
});
