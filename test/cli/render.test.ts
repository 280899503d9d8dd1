import { describe, expect, it } from "vitest";
import type { RolloutView, StoredMeasurementValue } from "../../cli/render.ts";
import {
  currentGates,
  currentStepOf,
  inferStrategy,
  renderList,
  renderRollout,
  statusLine,
} from "../../cli/render.ts";
import { createRun, tick } from "../../functions/analysis/run.ts";
import type { AnalysisRun } from "../../functions/analysis/types.ts";
import type { MetricProvider } from "../../functions/metrics/port.ts";
import type { StoredMeasurement, StoredRun } from "../../functions/store/port.ts";
import { type RolloutEvent, type RolloutItem, RolloutItemSchema } from "../../functions/store/schema.ts";
import type { StoredAnalysis } from "../../functions/workflow/analysis.ts";
import { loadRollout } from "../../statemachine/index.ts";

// Items, runs and measurements as the workflow writes them.

const T0 = Date.parse("2026-01-01T00:00:00Z");
const at = (seconds: number) => T0 + seconds * 1000;

const REPO = "123456789012.dkr.ecr.us-east-1.amazonaws.com/demo";
const STABLE_DIGEST = `sha256:${"a1".repeat(32)}`;
const CANARY_DIGEST = `sha256:${"b2".repeat(32)}`;
const STABLE = { revision: 1, image: `${REPO}@${STABLE_DIGEST}`, digest: STABLE_DIGEST, tag: "v1" };
const CANARY = { revision: 2, image: `${REPO}@${CANARY_DIGEST}`, digest: CANARY_DIGEST, tag: "v2" };
const EXECUTION =
  "arn:aws:states:us-east-1:123456789012:execution:demo-rollout:demo-b2b2b2b2b2b2b2b2b2b2b2b2-g2";
const RUN_ID = "demo-b2b2b2b2b2b2b2b2b2b2b2b2-g2.step01";

function item(fields: Partial<RolloutItem>): RolloutItem {
  return RolloutItemSchema.parse({
    name: "demo",
    phase: "Progressing",
    stableRevision: STABLE,
    currentRevision: CANARY,
    stepCount: 5,
    executionArn: EXECUTION,
    createdAt: T0,
    updatedAt: at(30),
    version: 7,
    history: [{ ...STABLE, at: T0 - 86_400_000 }],
    ...fields,
  });
}

const started: RolloutEvent = {
  at: at(0),
  type: "RolloutUpdated",
  message: "revision 2 (v2) started by demo-b2b2b2b2b2b2b2b2b2b2b2b2-g2",
};
const step0: RolloutEvent = {
  at: at(1),
  type: "RolloutStepCompleted",
  message: "Rollout step 1/5 completed (weight 25%)",
  summary: "weight 25%",
  step: 0,
};
const analysisStarted: RolloutEvent = {
  at: at(2),
  type: "AnalysisRunStarted",
  message: `analysis (step 2) ${RUN_ID} started: success-rate`,
  summary: "analysis started: success-rate",
  step: 1,
};

/** The seed's analysis run after `values.length` measurements of `success-rate`. */
async function seedRun(values: number[]): Promise<AnalysisRun> {
  const { spec } = await loadRollout(["examples/rollout.yaml", "examples/analysis-success-rate.yaml"]);
  const step = spec.steps.find((s) => s.kind === "analysis");
  if (step?.kind !== "analysis") throw new Error("the seed has an analysis step");
  let run = createRun(step.analysis, new Date(at(2)));
  const queue = [...values];
  const provider: MetricProvider = {
    measure: async () => {
      const v = queue.shift() ?? 1;
      return { ok: true, result: [v], value: `[${v}]` };
    },
  };
  // The seed's metric: after 5s, every 3s, two measurements.
  for (let i = 0; i < values.length; i++) run = await tick(run, new Date(at(2 + 5 + 3 * i)), provider);
  return run;
}

function storedRun(run: AnalysisRun, executionArn = EXECUTION): StoredRun<StoredAnalysis> {
  return {
    rollout: "demo",
    runId: RUN_ID,
    version: 3,
    createdAt: at(2),
    updatedAt: at(10),
    run: {
      run,
      context: {
        rollout: "demo",
        revision: 2,
        image: CANARY.image,
        digest: CANARY.digest,
        tag: "v2",
        executionArn,
      },
      stepIndex: 1,
      background: false,
      token: "token-analysis",
      tick: 2,
      templates: ["success-rate"],
      answered: false,
    },
  };
}

/** The measurements the analysis ticks stored for the run. */
function storedMeasurements(run: AnalysisRun): StoredMeasurement<StoredMeasurementValue>[] {
  return run.metricResults.flatMap((result) =>
    result.measurements.map((m, i) => ({
      rollout: "demo",
      runId: RUN_ID,
      measurementId: `${result.name}#${String(i + 1).padStart(6, "0")}`,
      value: { metric: result.name, ...m },
      at: Date.parse(m.finishedAt),
      expiresAt: Math.floor(Date.parse(m.finishedAt) / 1000) + 604_800,
    })),
  );
}

async function progressingAtAnalysis(): Promise<RolloutView> {
  const run = await seedRun([0.99]);
  return {
    item: item({
      phase: "Progressing",
      stepIndex: 1,
      weight: 25,
      currentTaskToken: "token-analysis",
      waitingFor: "analysis",
      waitingSince: at(2),
      events: [started, step0, analysisStarted],
    }),
    runs: [storedRun(run)],
    measurements: { [RUN_ID]: storedMeasurements(run) },
  };
}

async function pausedForPromote(): Promise<RolloutView> {
  const run = await seedRun([0.99, 0.97]);
  return {
    item: item({
      phase: "Paused",
      message: "CanaryPauseStep: waiting for rollouts promote",
      stepIndex: 3,
      weight: 50,
      currentTaskToken: "token-pause",
      waitingFor: "pause",
      waitingSince: at(20),
      pause: { reason: "CanaryPauseStep", startedAt: at(20), until: null },
      events: [
        started,
        step0,
        analysisStarted,
        {
          at: at(13),
          type: "AnalysisRunSuccessful",
          message: `analysis (step 2) ${RUN_ID} Successful: Metric "success-rate" assessed Successful`,
          summary: 'analysis Successful: Metric "success-rate" assessed Successful',
          step: 1,
        },
        {
          at: at(14),
          type: "RolloutStepCompleted",
          message: "Rollout step 3/5 completed (weight 50%)",
          summary: "weight 50%",
          step: 2,
        },
        {
          at: at(20),
          type: "RolloutPaused",
          message: "CanaryPauseStep: waiting for rollouts promote",
          step: 3,
        },
      ],
    }),
    runs: [storedRun(run)],
    measurements: { [RUN_ID]: storedMeasurements(run) },
  };
}

async function degradedByAnalysis(): Promise<RolloutView> {
  const run = await seedRun([0.5]);
  const message = `RolloutAborted: Rollout aborted update to revision 2: ${run.message ?? "analysis failed"}`;
  return {
    item: item({
      phase: "Degraded",
      message,
      stepIndex: 1,
      weight: 0,
      events: [
        started,
        step0,
        analysisStarted,
        {
          at: at(7),
          type: "AnalysisRunFailed",
          message: `analysis (step 2) ${RUN_ID} Failed: ${run.message ?? ""}`,
          summary: `analysis Failed: ${run.message ?? ""}`,
          step: 1,
        },
        { at: at(8), type: "RolloutAborted", message },
      ],
    }),
    runs: [storedRun(run)],
    measurements: { [RUN_ID]: storedMeasurements(run) },
  };
}

function healthy(): RolloutView {
  return {
    item: item({
      phase: "Healthy",
      stableRevision: CANARY,
      currentRevision: CANARY,
      stepIndex: 5,
      weight: 100,
      history: [
        { ...STABLE, at: T0 - 86_400_000 },
        { ...CANARY, at: at(60) },
      ],
      events: [
        started,
        step0,
        {
          at: at(60),
          type: "RolloutCompleted",
          message: "Rollout completed: revision 2 (v2) is stable",
        },
      ],
    }),
    runs: [],
    measurements: {},
  };
}

const lines = (text: string) => text.split("\n");

describe("rollouts get: one frame", () => {
  it("Paused at a pause step: the whole frame, as kubectl argo rollouts get shows it", async () => {
    const text = renderRollout(await pausedForPromote());
    expect(text).toBe(
      [
        "Name:            demo",
        "Status:          ॥ Paused",
        "Message:         CanaryPauseStep: waiting for rollouts promote",
        "Strategy:        Canary",
        "  Step:          3/5",
        "  SetWeight:     50",
        "  ActualWeight:  50",
        "Images:          123456789012.dkr.ecr.us-east-1.amazonaws.com/demo:v1 (stable, revision 1, sha256:a1a1a1a1a1a1)",
        "                 123456789012.dkr.ecr.us-east-1.amazonaws.com/demo:v2 (canary, revision 2, sha256:b2b2b2b2b2b2)",
        "Execution:       demo-b2b2b2b2b2b2b2b2b2b2b2b2-g2",
        "Waiting for:     pause since 2026-01-01T00:00:20Z (rollouts promote ends it)",
        "",
        "Steps:",
        "    ✔ 0  weight 25%",
        '    ✔ 1  analysis Successful: Metric "success-rate" assessed Successful',
        "    ✔ 2  weight 50%",
        "  ▶ ॥ 3  CanaryPauseStep: waiting for rollouts promote",
        "    · 4",
        "",
        "Analysis runs:",
        `  ✔ ${RUN_ID}  Successful  step 1  success-rate`,
        "      ✔ success-rate: ✔ [0.99]  ✔ [0.97]  (2 successful, 0 failed, 0 inconclusive, 0 error)",
        "",
        "Events:",
        `  2026-01-01T00:00:00Z  RolloutUpdated         revision 2 (v2) started by demo-b2b2b2b2b2b2b2b2b2b2b2b2-g2`,
        "  2026-01-01T00:00:01Z  RolloutStepCompleted   Rollout step 1/5 completed (weight 25%)",
        `  2026-01-01T00:00:02Z  AnalysisRunStarted     analysis (step 2) ${RUN_ID} started: success-rate`,
        `  2026-01-01T00:00:13Z  AnalysisRunSuccessful  analysis (step 2) ${RUN_ID} Successful: Metric "success-rate" assessed Successful`,
        "  2026-01-01T00:00:14Z  RolloutStepCompleted   Rollout step 3/5 completed (weight 50%)",
        "  2026-01-01T00:00:20Z  RolloutPaused          CanaryPauseStep: waiting for rollouts promote",
        "",
      ].join("\n"),
    );
  });

  it("Progressing at an analysis: the analysis step is current and its run shows the last measurement", async () => {
    const text = renderRollout(await progressingAtAnalysis());
    const l = lines(text);
    expect(l[1]).toBe("Status:          ◌ Progressing");
    expect(l).not.toContain(expect.stringMatching(/^Message:/));
    expect(text).toContain("  Step:          1/5\n");
    expect(text).toContain("Waiting for:     analysis since 2026-01-01T00:00:02Z\n");
    expect(text).toContain("    ✔ 0  weight 25%\n  ▶ ◌ 1  analysis started: success-rate\n    · 2\n");
    expect(text).toContain(`  ◌ ${RUN_ID}  Running  step 1  success-rate\n`);
    expect(text).toContain(
      "      ◌ success-rate: ✔ [0.99]  (1 successful, 0 failed, 0 inconclusive, 0 error)\n",
    );
  });

  it("Degraded by a failed analysis: the failed step is marked ✖ and the run says why", async () => {
    const text = renderRollout(await degradedByAnalysis());
    expect(text).toContain("Status:          ✖ Degraded\n");
    expect(text).toContain(
      'Message:         RolloutAborted: Rollout aborted update to revision 2: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)\n',
    );
    expect(text).toContain("(canary, aborted, revision 2, sha256:b2b2b2b2b2b2)");
    expect(text).toContain("  ▶ ✖ 1  analysis Failed:");
    expect(text).toContain(`  ✖ ${RUN_ID}  Failed  step 1  success-rate\n`);
    expect(text).toContain(
      '      Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)\n',
    );
    expect(text).toContain(
      "      ✖ success-rate: ✖ [0.5]  (0 successful, 1 failed, 0 inconclusive, 0 error)\n",
    );
    expect(text).not.toContain("Waiting for:");
  });

  it("Healthy: one image (stable), every step done, no step marked current", () => {
    const text = renderRollout(healthy());
    expect(text).toContain("Status:          ✔ Healthy\n");
    expect(text).toContain(
      "Images:          123456789012.dkr.ecr.us-east-1.amazonaws.com/demo:v2 (stable, revision 2, sha256:b2b2b2b2b2b2)\nExecution:",
    );
    expect(text).toContain("  Step:          5/5\n  SetWeight:     100\n");
    expect(text).not.toContain("▶");
    expect(text).not.toContain("Analysis runs:");
    expect(lines(text).filter((l) => /^ {4}✔ \d/.test(l))).toHaveLength(5);
  });

  it("shows weight drift and a pending abort, and hides runs of an older execution", async () => {
    const view = await progressingAtAnalysis();
    view.item = item({
      ...view.item,
      drift: { step: 2, message: "weights are 90/10, expected 75/25", approved: false },
      abortRequested: true,
      abortReason: "bad latency",
    });
    view.runs = view.runs.map((r) => ({
      ...r,
      run: { ...r.run, context: { ...r.run.context, executionArn: "old" } },
    }));
    const text = renderRollout(view);
    expect(text).toContain("  ActualWeight:  changed by someone else (weights are 90/10, expected 75/25)\n");
    expect(text).toContain("Abort requested: bad latency\n");
    expect(text).not.toContain("Analysis runs:");
  });
});

describe("the step list reads fields, not messages", () => {
  it("a step shows its event's summary, whatever the message says", async () => {
    const view = await progressingAtAnalysis();
    view.item = item({
      ...view.item,
      events: [
        started,
        { ...step0, message: "Schritt 1/5 abgeschlossen (Gewicht 25 %)", summary: "weight 25%" },
        { ...analysisStarted, message: "Analyse läuft", summary: "analysis started: success-rate" },
      ],
    });
    const text = renderRollout(view);
    expect(text).toContain("    ✔ 0  weight 25%\n");
    expect(text).toContain("  ▶ ◌ 1  analysis started: success-rate\n");
  });

  it("an event without a summary (written before events had one) shows its message as it is", async () => {
    const view = await progressingAtAnalysis();
    view.item = item({ ...view.item, events: [started, { ...step0, summary: undefined }] });
    expect(renderRollout(view)).toContain("    ✔ 0  Rollout step 1/5 completed (weight 25%)\n");
  });

  it("the strategy comes from the item's fields, never from event wording", () => {
    const worded = item({
      strategy: null,
      events: [started, { ...step0, message: "(weight 25%) CanaryPauseStep BlueGreenPause (preview:" }],
    });
    expect(inferStrategy(worded)).toBeUndefined();
    expect(inferStrategy(item({ strategy: "blueGreen" }))).toBe("BlueGreen");
    expect(inferStrategy(item({ strategy: "canary" }))).toBe("Canary");
  });
});

describe("what the frame infers from the item", () => {
  it("the current step is the later of stepIndex and the newest step an event of this execution names", async () => {
    const paused = (await pausedForPromote()).item;
    expect(currentStepOf({ ...paused, stepIndex: 2 })).toBe(3);
    // An older execution's events do not count: only those after the last RolloutUpdated.
    const restarted = item({
      stepIndex: 0,
      events: [...paused.events, { at: at(90), type: "RolloutUpdated", message: "revision 3" }],
    });
    expect(currentStepOf(restarted)).toBe(0);
    expect(inferStrategy(restarted)).toBeUndefined();
    expect(inferStrategy(paused)).toBe("Canary");
    expect(inferStrategy(item({ pause: { reason: "BlueGreenPause", startedAt: 0, until: null } }))).toBe(
      "BlueGreen",
    );
  });

  it("status prints the phase, and the message after a dash when there is one", () => {
    expect(statusLine({ phase: "Healthy", message: "" })).toBe("Healthy");
    expect(statusLine({ phase: "Paused", message: "CanaryPauseStep" })).toBe("Paused - CanaryPauseStep");
  });
});

describe("rollouts list", () => {
  it("one aligned row per rollout; the canary column only while it differs from stable", async () => {
    const paused = (await pausedForPromote()).item;
    const text = renderList([{ ...paused, name: "checkout" }, healthy().item]);
    expect(lines(text)).toEqual([
      "NAME      STATUS     STEP  WEIGHT  STABLE  CANARY  UPDATED               MESSAGE",
      "checkout  ॥ Paused   3/5   50      1       2       2026-01-01T00:00:30Z  CanaryPauseStep: waiting for rollouts promote",
      "demo      ✔ Healthy  5/5   100     2       -       2026-01-01T00:00:30Z",
      "",
    ]);
    expect(renderList([])).toBe("No rollouts found.\n");
  });
});

describe("rollouts get: judges", () => {
  it("shows a gate's looks, holds included, and its latest decision in its own words; --json lists the gates", async () => {
    const { spec } = await loadRollout(["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"]);
    const step = spec.steps.find((s) => s.kind === "analysis");
    if (step?.kind !== "analysis") throw new Error("an analysis step");
    const errors = step.analysis.templates[0]?.metrics.find((m) => m.name === "errors");
    if (!errors) throw new Error("the errors gate");
    // The candidate fails 3% of its requests, the stable version 1%: 250 requests per side a look.
    let look = 0;
    const provider: MetricProvider = {
      measure: async () => {
        look++;
        const n = 250 * look;
        const counts = { c: { bad: Math.round(0.03 * n), n }, s: { bad: Math.round(0.01 * n), n } };
        return {
          ok: true,
          value: "",
          result: {
            "candidate.bad": { ok: true, value: [counts.c.bad] },
            "candidate.n": { ok: true, value: [counts.c.n] },
            "stable.bad": { ok: true, value: [counts.s.bad] },
            "stable.n": { ok: true, value: [counts.s.n] },
          },
        };
      },
    };
    let run = createRun(
      { templates: [{ name: "judges", kind: "AnalysisTemplate", metrics: [errors] }] },
      new Date(at(0)),
    );
    for (let i = 1; run.phase === "Running" || run.phase === "Pending"; i++) {
      run = await tick(run, new Date(at(30 * i)), provider);
      if (i > 20) throw new Error("the gate never decided");
    }
    const view: RolloutView = {
      item: item({
        phase: "Degraded",
        message: `RolloutAborted: Rollout aborted update to revision 2: ${run.message}`,
      }),
      runs: [{ ...storedRun(run), run: { ...storedRun(run).run, templates: ["judges"] } }],
      measurements: { [RUN_ID]: storedMeasurements(run) },
    };
    const frame = renderRollout(view);
    expect(run.message).toMatch(
      /^Gate "errors" rolled back: candidate 3\.0% errors within the 10\.0% ceiling; candidate 3\.0% vs stable 1\.0% errors, p = \S+ < alpha 0\.025 \(sequential-rate, Bayes factor \S+, n = (\d+)\/\1; alpha 0\.025 is half the rollout's error budget 0\.05\)$/,
    );
    expect(frame).toContain(`  ✖ ${RUN_ID}  Failed  step 1  judges\n      ${run.message}\n`);
    const held = run.metricResults[0]?.held ?? 0;
    expect(held).toBeGreaterThan(0);
    expect(frame).toMatch(
      new RegExp(
        `      ✖ errors: (◌ [^\\n]+  )*✖ 0\\.03 vs 0\\.01 p=\\S+ n=\\d+/\\d+  \\(0 successful, 1 failed, 0 inconclusive, 0 error, ${held} held\\)\\n`,
      ),
    );
    expect(frame).toContain(`        ${run.message} [look ${held + 1}]\n`);
    expect(currentGates(view)).toEqual([
      expect.objectContaining({
        runId: RUN_ID,
        metric: "errors",
        test: "sequential-rate",
        decision: "rollback",
      }),
    ]);
  });
});

describe("rollouts get, list and status print stored text without its control characters", () => {
  /** Anything a terminal would act on: C0 but the frame's own line feeds, DEL, C1. */
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for control characters
  const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

  async function hostile(): Promise<RolloutView> {
    const view = await progressingAtAnalysis();
    const run = view.runs[0] as StoredRun<StoredAnalysis>;
    const measured = (view.measurements[RUN_ID] ?? []).map((m) => ({
      ...m,
      value: { ...m.value, value: "[0.99]\x1b[2J\x1b[H", message: "ok\x1b]0;pwned\x07" },
    }));
    return {
      item: item({
        ...view.item,
        message: "Paused\x1b[31m red\x1b[0m\r\noverwritten",
        abortRequested: true,
        abortReason: "because\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ \x9b2J now",
        events: [
          ...view.item.events,
          { at: at(9), type: "RolloutAborted", message: "boom\x07\x08\x00\rfake line" },
        ],
      }),
      runs: [{ ...run, run: { ...run.run, run: { ...run.run.run, message: "msg\x1bc reset" } } }],
      measurements: { [RUN_ID]: measured },
    };
  }

  it("get: every line is free of escape sequences and control characters, the text itself kept", async () => {
    const text = renderRollout(await hostile());
    expect(text).not.toMatch(CONTROL);
    expect(text).toContain("Message:         Paused red overwritten\n");
    expect(text).toContain("Abort requested: becauseclick  now\n");
    expect(text).toMatch(/RolloutAborted +boom fake line\n/);
    expect(text).toContain("[0.99]");
    expect(text).toContain("msg reset");
  });

  it("list and status: the same, and the columns line up on what is printed", async () => {
    const view = await hostile();
    const list = renderList([view.item]);
    expect(list).not.toMatch(CONTROL);
    const [header, row] = list.split("\n");
    expect(row?.indexOf("Paused red overwritten")).toBe(header?.indexOf("MESSAGE"));
    expect(statusLine(view.item)).toBe("Progressing - Paused red overwritten");
  });
});
