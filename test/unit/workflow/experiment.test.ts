import { digest, type FakeRolloutOptions, startStableRollout } from "@sfn-rollouts/test-support/fake-rollout";
import { describe, expect, it, onTestFinished } from "vitest";
import type { Experiment, TargetState } from "../../../functions/traffic/port.ts";

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
});
