import { expect } from "vitest";
import type { GateSummary } from "../../functions/analysis/judge-look.ts";
import { at, DIGESTS, done, type Scenario, type ScenarioOptions } from "./scenario.ts";

/**
 * The scenarios every backend runs (the embedded runtime on dynalite and on DynamoDB Local, and
 * LocalStack when it is there). Each starts from a fresh rollout `demo`: `options` say how the
 * rollout is deployed, `inProcess` marks the ones that need to wrap a handler in-process.
 */
export interface ScenarioCase {
  name: string;
  options: ScenarioOptions;
  inProcess?: boolean;
  run(s: Scenario): Promise<void>;
}

const FAILED_MESSAGE =
  'RolloutAborted: Rollout aborted update to revision 3: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)';

/** v1 pushed and Healthy: the starting point of most scenarios. */
async function stable(s: Scenario): Promise<void> {
  await s.push("v1");
  expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
}

let thrown = 0;
/** Background analysis ticks let through before the Timer "loses" the rest (lost timer firings). */
let backgroundTicks = 0;
const BACKGROUND = { successCondition: "result[0] >= 0.95", failureCondition: "result[0] < 0.5" };

/** What `rollouts get --json` shows of the current execution's analysis runs. */
interface ShownRuns {
  runs: Array<{
    runId: string;
    run: { run: { phase: string; metricResults: Array<{ measurements: ShownMeasurement[] }> } };
  }>;
  measurements: Record<string, Array<{ value: ShownMeasurement }>>;
}
interface ShownMeasurement {
  phase: string;
  value?: string;
  truncated?: Record<string, number>;
}
/** What each Timer firing's resume returned, in the scenarios that wrap it. */
const resumed: string[] = [];
/** Handlers that already lost one answer (they did all their work, then "timed out"). */
const lostOnce = new Set<string>();

/**
 * The `errors-vs-stable` judge at the 50% step: a look every 2 s, 200 requests per side before any
 * decision, promotion at 800 without evidence of harm (1% → 3% errors is caught near 650).
 */
const JUDGE = { initialDelay: "4s", interval: "2s", count: 60, minSamples: 200, samples: 800 };
/** Traffic that gives the 50% step 30 requests per second per side. */
const JUDGED = { rps: 60, maxSeconds: 600 };
const GATE_FIGURES =
  /\(sequential-rate, Bayes factor [^,]+, n = (\d+)\/(\d+); alpha 0\.05 is the whole of the rollout's error budget 0\.05\)/;

/** The gates `rollouts get --json` shows for the rollout's current execution. */
async function gates(s: Scenario): Promise<GateSummary[]> {
  const shown = await s.cli("get", s.name, "--json");
  expect(shown.code).toBe(0);
  return JSON.parse(shown.out).gates;
}

export const SCENARIOS: ScenarioCase[] = [
  {
    name: "an ECR push starts the rollout; the first revision skips the steps and becomes stable",
    options: {},
    async run(s) {
      await s.push("v1");
      const item = await s.drive(done("v1"));
      expect(item).toMatchObject({ phase: "Healthy", weight: 100, message: "" });
      expect(item?.stableRevision).toMatchObject({ revision: 1, tag: "v1", digest: DIGESTS.v1 });
      expect(item?.events.map((e) => e.type)).not.toContain("RolloutStepCompleted");
      expect(s.proxy.config()).toMatchObject({ stable: s.apps.v1.url, weight: 0 });
      expect(await s.executions()).toEqual([
        { name: expect.stringMatching(new RegExp(`^${s.name}-1{24}-g1$`)), status: "SUCCEEDED" },
      ]);
    },
  },
  {
    name: "promotes a healthy candidate through every step",
    options: {},
    async run(s) {
      await stable(s);
      await s.push("v2");
      const item = await s.drive(done("v2"));
      expect(item).toMatchObject({ phase: "Healthy", weight: 100, stepIndex: 5, stepCount: 5 });
      expect(item?.stableRevision).toMatchObject({ revision: 2, tag: "v2" });
      expect(item?.history.map((h) => h.tag)).toEqual(["v1", "v2"]);
      const steps = item?.events.filter((e) => e.type === "RolloutStepCompleted").map((e) => e.message);
      expect(steps).toEqual([
        "Rollout step 1/5 completed (weight 25%)",
        "Rollout step 3/5 completed (weight 50%)",
      ]);
      // What rollouts get shows for each step is a field of the event, not a parse of its message.
      expect(
        item?.events.filter((e) => e.type === "RolloutStepCompleted").map((e) => [e.step, e.summary]),
      ).toEqual([
        [0, "weight 25%"],
        [2, "weight 50%"],
      ]);
      expect(
        item?.events.filter((e) => e.type.startsWith("AnalysisRun")).map((e) => [e.step, e.summary]),
      ).toEqual([
        [1, "analysis started: success-rate"],
        [1, "analysis Successful"],
        [4, "analysis started: success-rate"],
        [4, "analysis Successful"],
      ]);
      expect(item?.events.filter((e) => e.type === "AnalysisRunSuccessful")).toHaveLength(2);
      expect(item?.strategy).toBe("canary");
      expect(item?.stepLabels).toEqual([
        "setWeight: 25",
        "analysis: success-rate",
        "setWeight: 50",
        "pause: 2s",
        "analysis: success-rate",
      ]);
      expect(s.proxy.config()).toMatchObject({ stable: s.apps.v2.url, weight: 0 });
      // Every call went through the local proxy's target plugin: its state, wrapped by the plugin target.
      expect(item?.targetState).toMatchObject({
        type: "plugin",
        name: "local-proxy",
        state: { phase: "promoted", stable: s.apps.v2.url, stableVersion: "v2", previous: { version: "v1" } },
      });
    },
  },
  {
    name: "aborts a failing candidate with Argo's message and puts the weight back at 0",
    options: {},
    async run(s) {
      await stable(s);
      await s.push("v2");
      await s.drive(done("v2"));
      await s.push("v3");
      const item = await s.drive(done("v3"));
      expect(item).toMatchObject({ phase: "Degraded", message: FAILED_MESSAGE, weight: 0 });
      expect(item?.stableRevision?.tag).toBe("v2");
      expect(s.proxy.config()).toMatchObject({ stable: s.apps.v2.url, weight: 0 });
      const executions = await s.executions();
      expect(executions.find((e) => e.name.includes("3333"))).toMatchObject({
        status: "FAILED",
        error: "RolloutAborted",
      });
      // It stays Degraded: nothing more happens until a new revision arrives.
      const later = await s.drive(() => false, { maxSeconds: 30 });
      expect(later).toMatchObject({ phase: "Degraded", message: FAILED_MESSAGE });
    },
  },
  {
    name: "waits at a pause without a duration until rollouts promote sends the token",
    options: { pause: "{}" },
    async run(s) {
      await stable(s);
      await s.push("v2");
      const paused = await s.drive(at("v2", ["Paused"]));
      expect(paused).toMatchObject({ phase: "Paused", waitingFor: "pause", stepIndex: 3 });
      expect(paused?.message).toBe("CanaryPauseStep: waiting for rollouts promote");
      const shown = await s.cli("get", s.name);
      expect(shown.out).toContain("Strategy:        Canary");
      expect(shown.out).toMatch(/▶ ॥ 3 +CanaryPauseStep: waiting for rollouts promote/);
      expect(shown.out).toMatch(/· 4 +analysis: success-rate/);
      // Time passes and it still waits for a person.
      await s.idle(3_600_000);
      expect((await s.item())?.phase).toBe("Paused");
      const promoted = await s.cli("promote", s.name);
      expect(promoted).toMatchObject({ code: 0 });
      expect(promoted.out).toContain("ended, the rollout continues");
      const item = await s.drive(done("v2"));
      expect(item).toMatchObject({ phase: "Healthy", weight: 100 });
      expect((await s.cli("promote", s.name)).code).toBe(1);
    },
  },
  {
    name: "rollouts abort during an analysis run stops the rollout and puts the weight back",
    options: {},
    async run(s) {
      await stable(s);
      await s.push("v2");
      const analysing = await s.drive((i) => i?.currentRevision?.tag === "v2" && i.waitingFor === "analysis");
      expect(analysing?.weight).toBe(25);
      const aborted = await s.cli("abort", s.name);
      expect(aborted.code).toBe(0);
      const item = await s.drive(done("v2"));
      expect(item).toMatchObject({
        phase: "Degraded",
        message: "RolloutAborted: Rollout aborted update to revision 2: aborted by rollouts abort",
        weight: 0,
      });
      expect(s.proxy.config()).toMatchObject({ stable: s.apps.v1.url, weight: 0 });
      expect((await s.cli("abort", s.name)).code).toBe(1);
    },
  },
  {
    name: "a second push during a rollout supersedes it",
    options: { pause: "{}" },
    async run(s) {
      await stable(s);
      await s.push("v2");
      await s.drive(at("v2", ["Paused"]));
      await s.push("v3");
      const item = await s.drive(done("v3"));
      expect(item).toMatchObject({ phase: "Degraded", message: FAILED_MESSAGE, weight: 0 });
      const executions = await s.executions();
      expect(executions.find((e) => e.name.includes("2222"))).toMatchObject({
        status: "FAILED",
        error: "ExecutionSuperseded",
      });
      expect(item?.stableRevision?.tag).toBe("v1");
      expect(s.proxy.config()).toMatchObject({ stable: s.apps.v1.url, weight: 0 });
    },
  },
  {
    name: "a duplicate push starts nothing",
    options: {},
    async run(s) {
      await stable(s);
      await s.push("v1");
      await s.push("v1");
      await s.drive(() => false, { maxSeconds: 5 });
      expect(await s.executions()).toHaveLength(1);
      expect((await s.item())?.events.filter((e) => e.type === "RolloutUpdated")).toHaveLength(1);
    },
  },
  {
    name: "retries a Lambda that throws once",
    inProcess: true,
    options: {
      wrap: (name, handler) => async (event, context) => {
        if (name === "setWeight" && thrown === 0) {
          thrown++;
          const error = new Error("Rate exceeded");
          error.name = "Lambda.TooManyRequestsException";
          throw error;
        }
        return handler(event, context);
      },
    },
    async run(s) {
      thrown = 0;
      await stable(s);
      await s.push("v2");
      const item = await s.drive(done("v2"));
      expect(thrown).toBe(1);
      expect(item).toMatchObject({ phase: "Healthy", weight: 100 });
    },
  },
  {
    name: "a promotion's delayed scale-down that falls due while a newer revision runs does nothing, and says so",
    inProcess: true,
    options: {
      wrap: (name, handler) =>
        name === "resume"
          ? async (event, context) => {
              const out = await handler(event, context);
              resumed.push(String((out as { result?: unknown })?.result));
              return out;
            }
          : handler,
    },
    async run(s) {
      resumed.length = 0;
      await stable(s);
      await s.push("v2");
      await s.drive(done("v2"));
      // v2's promotion scheduled the scale-down of the old side 30 s from now; v3 starts at once.
      await s.push("v3");
      await s.drive(done("v3"));
      await s.idle(60_000);
      const skipped = (s.lifecycle?.() ?? [])
        .filter((e) => e.type === "RolloutDelayedActionSkipped")
        .map((e) => e.detail);
      expect(skipped).toContainEqual(
        expect.objectContaining({
          revision: 2,
          message: expect.stringMatching(
            /^scale-down of revision 2 \(execution demo-2{24}-g2\) skipped: execution demo-2{24}-g2 no longer drives the rollout \(now demo-3{24}-g3, revision 3\)$/,
          ),
        }),
      );
      // No scale-down ran against the newer execution's target: every one that ran was its own.
      expect(resumed.filter((r) => r.startsWith("nothing to scale down: the demo owns"))).toEqual([
        expect.any(String),
      ]);
      expect(await s.item()).toMatchObject({ phase: "Degraded", weight: 0 });
    },
  },
  {
    name: "handlers whose answer is lost after all their work are retried without doing anything twice",
    inProcess: true,
    options: {
      wrap: (name, handler) =>
        ["setWeight", "await", "promote", "abort"].includes(name)
          ? async (event, context) => {
              const out = await handler(event, context);
              if (!lostOnce.has(name)) {
                lostOnce.add(name);
                const error = new Error("the invocation's answer was lost");
                error.name = "Lambda.ServiceException";
                throw error;
              }
              return out;
            }
          : handler,
    },
    async run(s) {
      lostOnce.clear();
      await stable(s);
      await s.push("v2");
      expect(await s.drive(done("v2"))).toMatchObject({ phase: "Healthy", weight: 100 });
      await s.push("v3");
      const item = await s.drive(done("v3"));
      expect(item).toMatchObject({ phase: "Degraded", message: FAILED_MESSAGE, weight: 0 });
      expect([...lostOnce].sort()).toEqual(["abort", "await", "promote", "setWeight"]);
      const recorded = (type: string) =>
        item?.events.filter((e) => e.type === type).map((e) => e.message) ?? [];
      expect(recorded("RolloutCompleted")).toEqual([
        "Rollout completed: revision 1 (v1) is stable",
        "Rollout completed: revision 2 (v2) is stable",
      ]);
      expect(recorded("RolloutStepCompleted").slice(0, 2)).toEqual([
        "Rollout step 1/5 completed (weight 25%)",
        "Rollout step 3/5 completed (weight 50%)",
      ]);
      expect(recorded("RolloutPaused")).toEqual(["CanaryPauseStep: paused for 2s"]);
      expect(recorded("RolloutAborted")).toHaveLength(1);
      expect(item?.rollbacks).toHaveLength(1);
      const announced = s.lifecycle?.() ?? [];
      const count = (type: string, revision: number) =>
        announced.filter((e) => e.type === type && e.detail.revision === revision).length;
      expect([count("RolloutCompleted", 1), count("RolloutCompleted", 2)]).toEqual([1, 1]);
      expect(count("RolloutStepCompleted", 2)).toBe(2);
      expect(count("RolloutPaused", 2)).toBe(1);
      expect(count("RolloutAborted", 3)).toBe(1);
      const ids = announced.map((e) => e.detail.id).filter((id) => id !== undefined);
      expect(new Set(ids).size).toBe(ids.length);
    },
  },
  {
    name: "a metric provider that is down gives Error measurements and ends in Error, never a promotion",
    options: { providerDown: true },
    async run(s) {
      await stable(s);
      await s.push("v2");
      const item = await s.drive(done("v2"));
      expect(item).toMatchObject({ phase: "Degraded", weight: 0 });
      // As Argo writes it: the limit, then the provider's last error message.
      expect(item?.message).toMatch(
        /^RolloutAborted: Rollout aborted update to revision 2: Metric "success-rate" assessed Error due to consecutiveErrors \(5\) > consecutiveErrorLimit \(4\): "Error Message: /,
      );
      const completed = item?.events.filter((e) => e.type === "RolloutCompleted").map((e) => e.message);
      expect(completed).toEqual(["Rollout completed: revision 1 (v1) is stable"]);
      expect(item?.stableRevision?.tag).toBe("v1");
    },
  },
  {
    name: "an Inconclusive background analysis pauses the rollout for a person, as Argo does; promote goes on",
    // v2 succeeds on 99% of its checkouts: between the two conditions, so Inconclusive.
    options: { background: { successCondition: "result[0] >= 0.999", failureCondition: "result[0] < 0.9" } },
    async run(s) {
      await stable(s);
      await s.push("v2");
      const held = await s.drive(
        (i) => at("v2", ["Paused"])(i) && i?.pause?.reason === "InconclusiveAnalysisRun",
      );
      expect(held?.message).toMatch(
        /^InconclusiveAnalysisRun: the background analysis was inconclusive; rollouts promote to continue, rollouts abort to stop \(background analysis \S+\.background Inconclusive: Metric "success-rate" assessed Inconclusive due to inconclusive \(1\) > inconclusiveLimit \(0\)\)$/,
      );
      expect(held?.events.map((e) => e.type)).toContain("PauseRequested");
      expect(held?.hold).not.toBeNull();
      const weight = held?.weight;
      // It stays paused: time passes, nothing moves.
      await s.idle(600_000);
      expect(await s.item()).toMatchObject({ phase: "Paused", weight });
      expect((await s.cli("promote", s.name)).code).toBe(0);
      const item = await s.drive(done("v2"));
      expect(item).toMatchObject({ phase: "Healthy", weight: 100, hold: null });
    },
  },
  {
    name: "a judged rollout is promoted: no evidence of harm at 800 requests per side",
    options: { judge: JUDGE },
    async run(s) {
      await stable(s);
      await s.push("v2");
      const item = await s.drive(done("v2"), JUDGED);
      expect(item).toMatchObject({ phase: "Healthy", weight: 100 });
      const passed = item?.events.filter((e) => e.type === "AnalysisRunSuccessful").at(-1)?.message;
      expect(passed).toMatch(
        / Successful: Gate "errors" passed: candidate (0\.9\d|1\.\d)% vs stable (0\.9\d|1\.\d)% errors, p = /,
      );
      const [gate] = await gates(s);
      expect(gate).toMatchObject({
        metric: "errors",
        test: "sequential-rate",
        decision: "promote",
        verdict: "PASS",
        candidate: { n: expect.any(Number) },
        stable: { n: expect.any(Number) },
      });
      expect(Math.min(gate?.candidate?.n ?? 0, gate?.stable?.n ?? 0)).toBeGreaterThanOrEqual(800);
    },
  },
  {
    name: "a judge rolls back a regression no threshold catches (1% to 3% errors), with its figures",
    options: { judge: JUDGE },
    async run(s) {
      await stable(s);
      await s.push("v4");
      const item = await s.drive(done("v4"), JUDGED);
      expect(item).toMatchObject({ phase: "Degraded", weight: 0 });
      expect(item?.message).toMatch(
        /^RolloutAborted: Rollout aborted update to revision 2: Gate "errors" rolled back: candidate 3\.\d% vs stable (0\.9\d|1\.\d)% errors, p = \S+ /,
      );
      const [, nc, ns] = GATE_FIGURES.exec(item?.message ?? "") ?? [];
      expect(Number(nc)).toBeGreaterThanOrEqual(200);
      expect(Number(ns)).toBeGreaterThanOrEqual(200);
      // The threshold passed at both analyses (97% of v4's checkouts succeed); the stable
      // version's share of errors in the window is 1% give or take one request.
      expect(item?.events.filter((e) => e.type === "AnalysisRunSuccessful")).toHaveLength(1);
      expect(s.proxy.config()).toMatchObject({ stable: s.apps.v1.url, weight: 0 });
      const failed = s.lifecycle?.().filter((e) => e.type === "AnalysisRunFailed");
      if (failed) {
        expect(failed).toHaveLength(1);
        const [gate] = (failed[0]?.detail.gates ?? []) as Array<Record<string, unknown>>;
        expect(gate).toMatchObject({
          metric: "errors",
          decision: "rollback",
          verdict: "FAIL",
          test: "sequential-rate",
        });
        expect(gate?.pValue).toBeLessThan(0.05);
        expect(gate?.bayesFactor).toBeGreaterThan(20);
      }
    },
  },
  {
    name: "a judge that cannot read holds, never promotes, and pauses Inconclusive for a person",
    options: { judge: { ...JUDGE, count: 5 }, judgeDown: true },
    async run(s) {
      await stable(s);
      await s.push("v2");
      const paused = await s.drive(
        (i) => at("v2", ["Paused"])(i) && i?.pause?.reason === "InconclusiveAnalysisRun",
        JUDGED,
      );
      expect(paused).toMatchObject({ phase: "Paused", waitingFor: "approval", stepIndex: 4 });
      expect(paused?.pause?.reason).toBe("InconclusiveAnalysisRun");
      expect(paused?.message).toMatch(
        /^InconclusiveAnalysisRun: Gate "errors" is inconclusive: held until the end of the analysis: the candidate's reading "bad" failed: Get "http:\/\/127\.0\.0\.1:\d+\/admin\/stats\?version=v2&window=\d+": .*ECONNREFUSED/,
      );
      const [gate] = await gates(s);
      expect(gate).toMatchObject({ metric: "errors", decision: "hold", look: 5 });
      const pausedEvent = s
        .lifecycle?.()
        .filter((e) => e.type === "RolloutPaused")
        .at(-1);
      if (pausedEvent)
        expect(pausedEvent.detail.gates).toEqual([expect.objectContaining({ decision: "hold" })]);
      // A person decides.
      expect((await s.cli("promote", s.name)).code).toBe(0);
      expect(await s.drive(done("v2"), JUDGED)).toMatchObject({ phase: "Healthy", weight: 100 });
    },
  },
  {
    name: "an A/A rollout is never rolled back by a judge: three rollouts of identical versions",
    options: { judge: JUDGE },
    async run(s) {
      await stable(s);
      for (const tag of ["v2", "v1", "v2"] as const) {
        await s.push(tag);
        const item = await s.drive(done(tag), JUDGED);
        expect(item).toMatchObject({ phase: "Healthy", weight: 100 });
        expect((await gates(s)).map((g) => g.decision)).toEqual(["promote"]);
      }
      expect((await s.item())?.events.filter((e) => e.type === "RolloutAborted")).toEqual([]);
    },
  },
  {
    name: "a provider's 600 KB answers are cut to a measurement's bound and flagged; the runs stay under 400 KB and the rollout goes on",
    inProcess: true,
    options: { answerPadding: 600_000, background: BACKGROUND },
    async run(s) {
      await stable(s);
      await s.push("v2");
      const item = await s.drive(done("v2"), { maxSeconds: 120 });
      expect(item).toMatchObject({ phase: "Healthy", weight: 100 });
      expect(item?.events.filter((e) => e.type === "AnalysisRunSuccessful")).toHaveLength(2);
      const shown = await s.cli("get", s.name, "--json");
      expect(shown.code).toBe(0);
      const view = JSON.parse(shown.out) as ShownRuns;
      // Both step analyses and the background analysis, each stored whole, far under 400 KB.
      expect(view.runs.map((r) => r.runId.split(".").at(-1))).toEqual(["background", "step01", "step04"]);
      for (const run of view.runs) {
        expect(Buffer.byteLength(JSON.stringify(run))).toBeLessThan(100_000);
        const kept = run.run.run.metricResults.flatMap((r) => r.measurements);
        expect(kept.length).toBeGreaterThan(0);
        for (const m of kept) {
          expect(m.phase).toBe("Successful");
          expect(Buffer.byteLength(m.value ?? "")).toBeLessThanOrEqual(2048);
          expect(m.value).toMatch(/… \[truncated: 600,0\d\d bytes\]$/);
          expect(m.truncated?.value).toBeGreaterThan(600_000);
        }
      }
      const stored = Object.values(view.measurements).flat();
      expect(stored.length).toBeGreaterThan(0);
      for (const m of stored) expect(Buffer.byteLength(JSON.stringify(m.value))).toBeLessThanOrEqual(4096);
    },
  },
  {
    name: "a background analysis whose timer firings were lost aborts the rollout at its next step instead of being promoted",
    inProcess: true,
    options: {
      pause: "{}",
      background: BACKGROUND,
      // The Timer "loses" every background tick after the first two (its retries exhausted).
      wrap: (name, handler) => async (event, context) => {
        const payload = (event as { payload?: { kind?: string; runId?: string } }).payload;
        if (name === "resume" && payload?.kind === "tick" && payload.runId?.endsWith(".background")) {
          if (++backgroundTicks > 2) return { result: "lost" };
        }
        return handler(event, context);
      },
    },
    async run(s) {
      backgroundTicks = 0;
      await stable(s);
      await s.push("v2");
      const paused = await s.drive(at("v2", ["Paused"]));
      expect(paused).toMatchObject({ waitingFor: "pause", weight: 50 });
      // A person comes back after 35 minutes (past the watchdog's 27-minute grace) and promotes.
      await s.idle(2_100_000);
      // The background run was due again meanwhile, and its firing was lost.
      expect(backgroundTicks).toBeGreaterThan(2);
      expect((await s.cli("promote", s.name)).code).toBe(0);
      const item = await s.drive(done("v2"));
      expect(item).toMatchObject({ phase: "Degraded", weight: 0 });
      expect(item?.message).toMatch(
        /^RolloutAborted: Rollout aborted update to revision 2: Metric "success-rate" assessed Error due to no measurement for \d+m\d*s? \(\d+ intervals\): its timer firings were lost$/,
      );
      const completed = item?.events.filter((e) => e.type === "RolloutCompleted").map((e) => e.message);
      expect(completed).toEqual(["Rollout completed: revision 1 (v1) is stable"]);
      expect(item?.stableRevision?.tag).toBe("v1");
      expect(s.proxy.config()).toMatchObject({ stable: s.apps.v1.url, weight: 0 });
    },
  },
];
