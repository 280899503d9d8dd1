import { digest, type FakeRolloutOptions, startStableRollout } from "@sfn-rollouts/test-support/fake-rollout";
import { describe, expect, it, onTestFinished } from "vitest";
import type { CanaryScale, TargetState } from "../../../functions/traffic/port.ts";

/** `setCanaryScale` steps on the compiled workflow, in the embedded runtime with a router in memory. */
async function withStable(options: FakeRolloutOptions = {}) {
  const w = await startStableRollout(options);
  onTestFinished(() => w.close());
  return w;
}

const steps: FakeRolloutOptions["steps"] = [
  { kind: "setWeight", weight: 20 },
  { kind: "setCanaryScale", replicas: 3 },
  { kind: "setWeight", weight: 50 },
  { kind: "setCanaryScale", matchTrafficWeight: true },
];

describe("setCanaryScale", () => {
  it("a target that scales its canary gets each scale as written, and the rollout goes on", async () => {
    const w = await withStable({ steps });
    const scales: CanaryScale[] = [];
    Object.assign(w.router, {
      setCanaryScale: async (state: TargetState, scale: CanaryScale) => {
        scales.push(scale);
        return { state, message: "scaled" };
      },
    });
    const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending).toEqual({ state: "Healthy" });
    expect(scales).toEqual([{ replicas: 3 }, { matchTrafficWeight: true }]);
  });

  it("a target whose candidate scales with the weight aborts the rollout, naming the step and the target", async () => {
    const w = await withStable({ steps });
    const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending.state).toBe("Aborted");
    expect((await w.item()).message).toMatch(
      /step 2: setCanaryScale is not supported by the [a-z-]+ target: its candidate scales with the weight/,
    );
  });
});
