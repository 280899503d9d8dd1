import { describe, expect, it } from "vitest";
import { RecordingTaskTokens } from "../../../functions/abort/task-tokens.ts";
import { MeasurementSchema } from "../../../functions/analysis/types.ts";
import { ManualClock } from "../../../functions/clock.ts";
import { RecordingEventPublisher } from "../../../functions/events/memory.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import { MemoryRolloutStore } from "../../../functions/store/memory.ts";
import { newRolloutItem } from "../../../functions/store/schema.ts";
import { MAX_ITEM_BYTES, runItemBytes } from "../../../functions/store/size.ts";
import { InProcessTimer } from "../../../functions/timer/in-process.ts";
import { TimerFiringSchema } from "../../../functions/timer/port.ts";
import {
  RUN_TTL_SECONDS,
  runIdFor,
  type StoredAnalysis,
  StoredAnalysisSchema,
  startAnalysis,
} from "../../../functions/workflow/analysis.ts";
import type { WorkflowDeps } from "../../../functions/workflow/deps.ts";
import { RecordingMetricsSink } from "../../../functions/workflow/metrics.ts";
import { ResumePayloadSchema, type WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { promote } from "../../../functions/workflow/promote.ts";
import { resume } from "../../../functions/workflow/resume.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";
import { type AnalysisSpec, type MetricInput, MetricSchema } from "../../../statemachine/spec.ts";

/**
 * The analysis handlers over the in-memory store (which refuses an item past 400 KB as DynamoDB
 * does) and the in-process Timer, in virtual time: what a refused save, a spec too large to store
 * and lost timer firings do to a run and to its rollout.
 */
const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const NAME = "checkout";
const EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:checkout-rollout:checkout-2222-g2";
const CONTEXT: WorkflowContext = {
  rollout: NAME,
  revision: 2,
  image: `123456789012.dkr.ecr.us-east-1.amazonaws.com/checkout@sha256:${"2".repeat(64)}`,
  digest: `sha256:${"2".repeat(64)}`,
  tag: "v2",
  executionArn: EXECUTION,
};
const ROLLOUT = { name: NAME, revision: "abc", strategy: "canary" as const, stepCount: 3 };

interface World {
  deps: WorkflowDeps;
  store: MemoryRolloutStore;
  clock: ManualClock;
  tokens: RecordingTaskTokens;
  timer: InProcessTimer;
  /** Errors a firing's handler threw (the Timer would retry, then lose the firing). */
  failures: unknown[];
  /** When false, tick firings are dropped, as when the Timer's retries are exhausted. */
  deliverTicks: boolean;
}

/** Answers `[0.99, "yyy…"]`: passes `result[0] >= 0.95`, its display value `bytes` long. */
function answering(bytes: number): MetricProvider {
  const result = [0.99, "y".repeat(bytes)];
  return { measure: async () => ({ ok: true, result, value: JSON.stringify(result) }) };
}

async function world(provider: MetricProvider): Promise<World> {
  const clock = new ManualClock(T0);
  const store = new MemoryRolloutStore({ clock });
  const tokens = new RecordingTaskTokens();
  const failures: unknown[] = [];
  const timer = new InProcessTimer({ clock, onError: (error) => failures.push(error) });
  const deps: WorkflowDeps = {
    store,
    tokens,
    timer,
    events: new RecordingEventPublisher(),
    clock,
    targetFor: () => {
      throw new Error("no traffic change is expected here");
    },
    providers: provider,
    metrics: new RecordingMetricsSink(),
  };
  const w: World = { deps, store, clock, tokens, timer, failures, deliverTicks: true };
  timer.setHandler(async (firing) => {
    const parsed = TimerFiringSchema.parse(firing);
    const payload = ResumePayloadSchema.parse(parsed.payload);
    if (payload.kind === "tick" && !w.deliverTicks) return;
    await resume(deps, payload, parsed.key);
  });
  await store.save(
    { ...newRolloutItem(NAME, T0), phase: "Progressing", executionArn: EXECUTION, stepCount: 3 },
    null,
  );
  return w;
}

function analysis(overrides: Partial<MetricInput> = {}): AnalysisSpec {
  const metric = MetricSchema.parse({
    name: "success-rate",
    interval: 30,
    successCondition: "result[0] >= 0.95",
    provider: { web: { url: "http://metrics.internal/rate" } },
    ...overrides,
  });
  return { templates: [{ name: "rate", kind: "AnalysisTemplate", metrics: [metric] }], args: {} };
}

/** A web metric whose spec carries `bytes` of header: a run item that large before any measurement. */
const padded = (bytes: number): Partial<MetricInput> => ({
  provider: {
    web: { url: "http://metrics.internal/rate", headers: [{ key: "X-Pad", value: "p".repeat(bytes) }] },
  },
});

const background = (spec: AnalysisSpec) =>
  startAnalysis(deps(), {
    context: CONTEXT,
    rollout: ROLLOUT,
    stepIndex: 0,
    background: true,
    analysis: spec,
  });
let current: World;
const deps = () => current.deps;

async function storedRun(w: World, runId: string) {
  return (await w.store.getRun(NAME, runId, StoredAnalysisSchema)) as {
    run: StoredAnalysis;
    expiresAt?: number | null;
  };
}

describe("a run the store refuses", () => {
  it("records an Error measurement instead of throwing, keeps ticking, and ends by consecutiveErrorLimit", async () => {
    current = await world(answering(3000));
    // A spec that leaves 2,000 bytes: no room for a measurement with a 2 KB value, room for an Error saying why.
    const probe = analysis(padded(0));
    const base = runItemBytes(NAME, runIdFor(CONTEXT, 0, true), {
      run: {
        metrics: probe.templates[0]?.metrics,
        phase: "Pending",
        terminate: false,
        startedAt: "",
        metricResults: [],
      },
      context: CONTEXT,
      stepIndex: 0,
      background: true,
      token: null,
      tick: 0,
      templates: ["rate"],
      answered: false,
    });
    await background(analysis(padded(MAX_ITEM_BYTES - 2000 - base)));
    const runId = runIdFor(CONTEXT, 0, true);
    await current.timer.advanceTo(T0 + 10 * 60_000);
    expect(current.failures).toEqual([]);
    const { run } = await storedRun(current, runId);
    const result = run.run.metricResults[0];
    expect(result).toMatchObject({ error: 5, consecutiveError: 5, successful: 0, phase: "Error" });
    expect(result?.measurements.at(-1)?.message).toMatch(
      /^the analysis run could not be stored, so this measurement is an Error: ROLLOUT#checkout\/RUN#\S+: write refused: the item \([\d,]+ bytes\) is larger than DynamoDB's 400 KB item limit \(409,600 bytes\)$/,
    );
    expect(run.run.phase).toBe("Error");
    expect(run.run.message).toMatch(
      /^Metric "success-rate" assessed Error due to consecutiveErrors \(5\) > consecutiveErrorLimit \(4\): "Error Message: the analysis run could not be stored/,
    );
    // As a failed background analysis does: the rollout is aborted with the run's message.
    const item = await current.store.get(NAME);
    expect(item).toMatchObject({ abortRequested: true, abortExecutionArn: EXECUTION });
    expect(item?.abortReason).toBe(run.run.message);
    // The errors came 10 s apart, as Argo retries after an Error.
    // (The run itself keeps only the last: the oldest are dropped to fit its item.)
    expect(result?.measurements).toHaveLength(1);
    const measured = await current.store.listMeasurements(NAME, runId, MeasurementSchema.loose());
    expect(measured.map((m) => [m.value.phase, (m.at - T0) / 1000])).toEqual([
      ["Error", 0],
      ["Error", 10],
      ["Error", 20],
      ["Error", 30],
      ["Error", 40],
    ]);
  });

  it("an analysis whose spec alone is past the limit ends in Error, and its step's wait is answered", async () => {
    current = await world(answering(10));
    const token = "token-1";
    current.tokens.live.add(token);
    const spec = analysis(padded(500_000));
    await startAnalysis(current.deps, {
      context: CONTEXT,
      rollout: ROLLOUT,
      stepIndex: 1,
      step: { kind: "analysis", origin: "step", analysis: spec },
      taskToken: token,
    });
    expect(current.tokens.successes).toEqual([
      {
        token,
        output: {
          phase: "Error",
          message: expect.stringMatching(
            /^the analysis run cannot be stored: ROLLOUT#checkout\/RUN#\S+step01: write refused: the item \([\d,]+ bytes\) is larger than DynamoDB's 400 KB item limit/,
          ),
          runId: runIdFor(CONTEXT, 1, false),
        },
      },
    ]);
  });

  it("a run carries a TTL 30 days past its last write or its next due measurement", async () => {
    current = await world(answering(10));
    await background(analysis({ interval: 3600 }));
    const stored = await storedRun(current, runIdFor(CONTEXT, 0, true));
    expect(stored.run.run.metricResults[0]?.successful).toBe(1);
    expect(stored.expiresAt).toBe(Math.floor((T0 + 3600_000) / 1000) + RUN_TTL_SECONDS);
  });
});

describe("the watchdog: a background analysis whose timer firings were lost", () => {
  async function lost(): Promise<string> {
    current = await world(answering(10));
    await background(analysis({ interval: 60 }));
    await current.timer.advanceTo(T0 + 120_000);
    // The Timer's retries are exhausted from here on: no tick is delivered any more.
    current.deliverTicks = false;
    await current.timer.advanceTo(T0 + 120_000 + 29 * 60_000);
    return runIdFor(CONTEXT, 0, true);
  }

  it("is not promoted: promote aborts the rollout and the run ends in Error, not Successful", async () => {
    const runId = await lost();
    await expect(
      promote(current.deps, { context: CONTEXT, rollout: ROLLOUT, scaleDownDelaySeconds: 30 }),
    ).rejects.toMatchObject({ name: "RolloutAborted" });
    const { run } = await storedRun(current, runId);
    expect(run.run.phase).toBe("Error");
    expect(run.run.message).toBe(
      'Metric "success-rate" assessed Error due to no measurement for 29m (29 intervals): its timer firings were lost',
    );
    const item = await current.store.get(NAME);
    expect(item).toMatchObject({ abortRequested: true, phase: "Progressing" });
    expect(item?.abortReason).toBe(run.run.message);
    expect(item?.events.map((e) => e.type)).toContain("AnalysisRunFailed");
  });

  it("aborts at the next traffic step", async () => {
    const runId = await lost();
    await expect(
      setWeight(current.deps, {
        context: CONTEXT,
        rollout: ROLLOUT,
        stepIndex: 2,
        step: { kind: "setWeight", weight: 50 },
      }),
    ).rejects.toMatchObject({ name: "RolloutAborted" });
    expect((await storedRun(current, runId)).run.run.phase).toBe("Error");
  });

  it("is left alone while its firings are only late: within max(3 intervals, interval + 27 minutes)", async () => {
    current = await world(answering(10));
    await background(analysis({ interval: 60 }));
    current.deliverTicks = false;
    // Last measurement at T0; due at +60 s; the watchdog allows 28 minutes of quiet.
    current.clock.set(T0 + 28 * 60_000);
    await expect(
      setWeight(current.deps, {
        context: CONTEXT,
        rollout: ROLLOUT,
        stepIndex: 2,
        step: { kind: "setWeight", weight: 50 },
      }),
    ).rejects.toThrow(/no traffic change is expected here/);
    const runId = runIdFor(CONTEXT, 0, true);
    expect((await storedRun(current, runId)).run.run.phase).toBe("Running");
    current.clock.set(T0 + 28 * 60_000 + 1000);
    await expect(
      setWeight(current.deps, {
        context: CONTEXT,
        rollout: ROLLOUT,
        stepIndex: 2,
        step: { kind: "setWeight", weight: 50 },
      }),
    ).rejects.toMatchObject({ name: "RolloutAborted" });
  });

  it("delivers a failed run whose outcome was never delivered, once its own retries had their time", async () => {
    current = await world({ measure: async () => ({ ok: true, result: [0.2], value: "[0.2]" }) });
    await background(analysis({ interval: 60 }));
    const runId = runIdFor(CONTEXT, 0, true);
    const failed = await current.store.getRun(NAME, runId, StoredAnalysisSchema);
    expect(failed?.run.run.phase).toBe("Failed");
    // As if the tick that ended it had died before delivering, and its retry firing was lost.
    const item = await current.store.get(NAME);
    if (!item || !failed) throw new Error("seeded above");
    await current.store.save(
      { ...item, abortRequested: false, abortReason: null, abortExecutionArn: null },
      item.version,
    );
    await current.store.saveRun(NAME, runId, { ...failed.run, answered: false }, failed.version);
    const step = {
      context: CONTEXT,
      rollout: ROLLOUT,
      stepIndex: 2,
      step: { kind: "setWeight" as const, weight: 50 },
    };
    // The tick's own retries (Lambda's async ones and the redelivery queue's) may still deliver it for 27 minutes.
    current.clock.set(T0 + 26 * 60_000);
    await expect(setWeight(current.deps, step)).rejects.toThrow(/no traffic change is expected here/);
    current.clock.set(T0 + 28 * 60_000);
    await expect(setWeight(current.deps, step)).rejects.toMatchObject({ name: "RolloutAborted" });
    expect((await current.store.get(NAME))?.abortReason).toBe(
      'Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    );
    expect((await storedRun(current, runId)).run.answered).toBe(true);
  });
});
