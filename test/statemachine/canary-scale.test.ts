import { describe, expect, it } from "vitest";
import { canaryScaleAt, scaledCanaryCounts } from "../../statemachine/pods.ts";
import type { Step } from "../../statemachine/spec.ts";

// Cases ported from argo-rollouts utils/replicaset/canary_test.go: TestCalculateReplicaCountsForCanary
// (the setCanaryScale rows), TestGetCanaryReplicasOrWeight and TestTrafficWeightToReplicas.
describe("scaledCanaryCounts (Argo's traffic-routed canary with setCanaryScale)", () => {
  it("uses setCanaryScale.replicas and ignores the weight", () => {
    // "For canary replicas, use setCanaryScale.replicas when specified along with trafficRouting"
    expect(scaledCanaryCounts(1, 100, { replicas: 9 })).toEqual({ canary: 9, stable: 1 });
    // "test canary step replicas": setWeight 10 then setCanaryScale replicas 5
    expect(scaledCanaryCounts(10, 10, { replicas: 5 })).toEqual({ canary: 5, stable: 10 });
  });

  it("uses setCanaryScale.weight as a percent of the replicas, rounded up, beyond 100 too", () => {
    // "Use setCanaryScale.weight for canary replicas when specified with trafficRouting"
    expect(scaledCanaryCounts(4, 100, { weight: 200 })).toEqual({ canary: 8, stable: 4 });
    // "test canary step weight": setWeight 10 then setCanaryScale weight 20
    expect(scaledCanaryCounts(10, 10, { weight: 20 })).toEqual({ canary: 2, stable: 10 });
    expect(scaledCanaryCounts(10, 50, { weight: 0 })).toEqual({ canary: 0, stable: 10 });
  });

  it("follows the weight when matchTrafficWeight is set, whatever else is", () => {
    // "Ignore setCanaryScale replicas/weight when matchTrafficWeight is true": 10 replicas at 20%
    expect(scaledCanaryCounts(10, 20, { replicas: 9, weight: 100, matchTrafficWeight: true })).toEqual({
      canary: 2,
      stable: 10,
    });
    expect(scaledCanaryCounts(10, 20, {})).toEqual({ canary: 2, stable: 10 });
  });

  it.each([
    // TestTrafficWeightToReplicas
    [0, 0],
    [20, 2],
    [25, 3],
    [33, 4],
    [99, 10],
    [100, 10],
  ])("a scale of %i%% of 10 replicas is %i pods", (weight, pods) => {
    expect(scaledCanaryCounts(10, 0, { weight }).canary).toBe(pods);
    expect(scaledCanaryCounts(10, weight, undefined).canary).toBe(pods);
  });
});

describe("canaryScaleAt (Argo's UseSetCanaryScale)", () => {
  const steps: Step[] = [
    { kind: "setWeight", weight: 10 },
    { kind: "setCanaryScale", replicas: 3 },
    { kind: "setWeight", weight: 50 },
    { kind: "setCanaryScale", weight: 20 },
    { kind: "setWeight", weight: 80 },
    { kind: "setCanaryScale", matchTrafficWeight: true },
    { kind: "setWeight", weight: 90 },
  ];

  it("keeps the last setCanaryScale through later setWeight steps until the next one", () => {
    expect(canaryScaleAt(steps, 0, true)).toBeUndefined();
    expect(canaryScaleAt(steps, 1, true)).toEqual({ replicas: 3 });
    expect(canaryScaleAt(steps, 2, true)).toEqual({ replicas: 3 });
    expect(canaryScaleAt(steps, 3, true)).toEqual({ weight: 20 });
    expect(canaryScaleAt(steps, 4, true)).toEqual({ weight: 20 });
    expect(canaryScaleAt(steps, 5, true)).toBeUndefined();
    expect(canaryScaleAt(steps, 6, true)).toBeUndefined();
  });

  it("is ignored without a traffic router ('Ignore setCanaryScale when trafficRouting is missing')", () => {
    expect(canaryScaleAt(steps, 2, false)).toBeUndefined();
  });
});
