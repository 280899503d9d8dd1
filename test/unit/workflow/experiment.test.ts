import { digest, type FakeRolloutOptions, startStableRollout } from "@sfn-rollouts/test-support/fake-rollout";
import { analysisSpec, metric } from "@sfn-rollouts/test-support/rollout-spec";
import { describe, expect, it, onTestFinished } from "vitest";
import type { Experiment, TargetState } from "../../../functions/traffic/port.ts";
import { StoredAnalysisSchema } from "../../../functions/workflow/analysis.ts";

/** `experiment` steps on the compiled workflow, in the embedded runtime with a router in memory. */
async function withStable(options: FakeRolloutOptions = {}) {
  const w = await startStableRollout(options);
  onTestFinished(() => w.close());
  return w;
}

const steps: FakeRolloutOptions["steps"] = [
  { kind: "setWeight", weight: 20 },
  {
    kind: "experiment",
    duration: 60,
    templates: [
      { name: "baseline", specRef: "stable" },
      { name: "canary", specRef: "canary", replicas: 2 },
    ],
  },
  { kind: "setWeight", weight: 50 },
];

describe("experiment steps", () => {
  it("a target that runs experiments starts it, the duration passes, it is stopped, and the rollout goes on", async () => {
    const w = await withStable({ steps });
    const calls: string[] = [];
    Object.assign(w.router, {
      startExperiment: async (state: TargetState, experiment: Experiment) => {
        calls.push(
          `start ${experiment.stepIndex} ${experiment.templates.map((t) => `${t.name}/${t.specRef}/${t.replicas}`).join(" ")}`,
        );
        return { state, message: "started" };
      },
      stopExperiment: async (state: TargetState) => {
        calls.push("stop");
        return { state, message: "stopped" };
      },
    });
    const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending).toEqual({ state: "Healthy" });
    // Argo's default of one pod for a template without replicas.
    expect(calls).toEqual(["start 1 baseline/stable/1 canary/canary/2", "stop"]);
    const events = (await w.item()).events.map((e) => e.type);
    expect(events).toContain("ExperimentCreated");
  });

  it("a target without experiments aborts the rollout, naming the step and the target", async () => {
    const w = await withStable({ steps });
    const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending.state).toBe("Aborted");
    expect((await w.item()).message).toMatch(
      /step 2: experiment is not supported by the [a-z-]+ target: it has no pod template to run next to the rollout/,
    );
  });

  const hashed: FakeRolloutOptions["steps"] = [
    { kind: "setWeight", weight: 20 },
    {
      kind: "experiment",
      templates: [{ name: "canary", specRef: "canary" }],
      analysis: analysisSpec(
        metric({
          provider: { web: { url: "http://127.0.0.1:1/rate?hash={{templates.canary.podTemplateHash}}" } },
        }),
      ),
    },
  ];

  it("an analysis's {{templates.<name>.podTemplateHash}} is the target's value when it starts", async () => {
    const w = await withStable({ steps: hashed });
    let stopped = false;
    Object.assign(w.router, {
      startExperiment: async (state: TargetState) => ({ state, message: "started" }),
      experimentValues: () => ({ "templates.canary.podTemplateHash": "x5b7c" }),
      stopExperiment: async (state: TargetState) => {
        stopped = true;
        return { state, message: "stopped" };
      },
    });
    expect(await w.rollOut({ digest: digest(2), tag: "v2" })).toEqual({ state: "Healthy" });
    expect(stopped).toBe(true);
    const runs = await w.store.listRuns("checkout", StoredAnalysisSchema);
    const urls = runs.flatMap((r) => r.run.run.metrics.map((m) => JSON.stringify(m.provider)));
    expect(urls).toEqual([expect.stringContaining("hash=x5b7c")]);
  });

  it("a hash the target does not know aborts the rollout, naming the placeholder", async () => {
    const w = await withStable({ steps: hashed });
    Object.assign(w.router, {
      startExperiment: async (state: TargetState) => ({ state, message: "started" }),
      experimentValues: () => ({}),
      stopExperiment: async (state: TargetState) => ({ state, message: "stopped" }),
    });
    const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending.state).toBe("Aborted");
    expect((await w.item()).message).toContain(
      'step 2: {{templates.canary.podTemplateHash}} has no value: no ReplicaSet of experiment template "canary" is running',
    );
  });
});
