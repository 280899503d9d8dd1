import { digest, type FakeRolloutOptions, startStableRollout } from "@sfn-rollouts/test-support/fake-rollout";
import { describe, expect, it, onTestFinished } from "vitest";
import type { MirrorRoute, TargetState } from "../../../functions/traffic/port.ts";

/** `setMirrorRoute` steps on the compiled workflow, in the embedded runtime with a router in memory. */
async function withStable(options: FakeRolloutOptions = {}) {
  const w = await startStableRollout(options);
  onTestFinished(() => w.close());
  return w;
}

const steps: FakeRolloutOptions["steps"] = [
  { kind: "setMirrorRoute", name: "shadow", percentage: 50 },
  { kind: "setMirrorRoute", name: "shadow" },
  { kind: "setWeight", weight: 50 },
];

describe("setMirrorRoute", () => {
  it("a target that can mirror gets the percentage, then 0 to remove it, and the rollout goes on", async () => {
    const w = await withStable({ steps });
    const routes: MirrorRoute[] = [];
    Object.assign(w.router, {
      setMirrorRoute: async (state: TargetState, route: MirrorRoute) => {
        routes.push(route);
        return { state, message: `mirror ${route.name} ${route.percentage}%` };
      },
    });
    const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending).toEqual({ state: "Healthy" });
    expect(routes).toEqual([
      { name: "shadow", percentage: 50 },
      { name: "shadow", percentage: 0 },
    ]);
    // A mirror route changes no weight: the steps announce their completion and nothing else.
    expect(w.events.types().slice(0, 3)).toEqual([
      "RolloutUpdated",
      "RolloutStepCompleted",
      "RolloutStepCompleted",
    ]);
  });

  it("a target that cannot mirror aborts the rollout with a message naming the step", async () => {
    const w = await withStable({ steps });
    const ending = await w.rollOut({ digest: digest(2), tag: "v2" });
    expect(ending.state).toBe("Aborted");
    expect((await w.item()).message).toContain('step 1: setMirrorRoute "shadow" is not supported by the');
  });
});
