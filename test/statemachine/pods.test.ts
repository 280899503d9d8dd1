import { describe, expect, it } from "vitest";
import { canaryCounts, resolveMaxSurge, routedCanaryCounts } from "../../statemachine/pods.ts";

// Argo Rollouts' own table for approximateWeightedCanaryStableReplicaCounts (maxWeight 100),
// plus Argo's documented examples: [replicas, weight, maxSurge, canary, stable].
const ARGO_CASES: Array<[number, number, number, number, number]> = [
  [0, 0, 0, 0, 0],
  [0, 50, 0, 0, 0],
  [0, 100, 0, 0, 0],
  [0, 0, 1, 0, 0],
  [0, 50, 1, 0, 0],
  [0, 100, 1, 0, 0],
  [1, 0, 0, 0, 1],
  [1, 1, 0, 0, 1],
  [1, 49, 0, 0, 1],
  [1, 50, 0, 1, 0],
  [1, 99, 0, 1, 0],
  [1, 100, 0, 1, 0],
  [1, 0, 1, 0, 1],
  [1, 1, 1, 1, 1],
  [1, 49, 1, 1, 1],
  [1, 50, 1, 1, 1],
  [1, 99, 1, 1, 1],
  [1, 100, 1, 1, 0],
  [2, 0, 0, 0, 2],
  [2, 1, 0, 1, 1],
  [2, 50, 0, 1, 1],
  [2, 99, 0, 1, 1],
  [2, 100, 0, 2, 0],
  [2, 0, 1, 0, 2],
  [2, 1, 1, 1, 2],
  [2, 50, 1, 1, 1],
  [2, 99, 1, 2, 1],
  [2, 100, 1, 2, 0],
  [3, 10, 0, 1, 2],
  [3, 25, 0, 1, 2],
  [3, 33, 0, 1, 2],
  [3, 34, 0, 1, 2],
  [3, 49, 0, 1, 2],
  [3, 50, 0, 2, 1],
  [3, 10, 1, 1, 3],
  [3, 25, 1, 1, 3],
  [3, 33, 1, 1, 2],
  [3, 34, 1, 1, 2],
  [3, 49, 1, 2, 2],
  [3, 50, 1, 2, 2],
  [10, 0, 1, 0, 10],
  [10, 1, 0, 1, 9],
  [10, 14, 0, 1, 9],
  [10, 15, 0, 2, 8],
  [10, 16, 0, 2, 8],
  [10, 99, 0, 9, 1],
  [10, 100, 1, 10, 0],
  [10, 1, 1, 1, 10],
  [10, 18, 1, 2, 9],
  [10, 19, 1, 2, 9],
  [10, 20, 1, 2, 8],
  [10, 23, 1, 2, 8],
  [10, 24, 1, 3, 8],
  [10, 25, 1, 3, 8],
  [10, 99, 1, 10, 1],
  [10, 100, 1, 10, 0],
  // the documented table
  [4, 25, 1, 1, 3],
  [3, 10, 1, 1, 3],
  [3, 10, 0, 1, 2],
  [10, 5, 0, 1, 9],
  [1, 50, 0, 1, 0],
];

describe("canaryCounts (Argo's basic-canary rounding)", () => {
  it.each(ARGO_CASES)(
    "replicas %i, weight %i%%, maxSurge %i → %i canary + %i stable",
    (r, w, s, canary, stable) => {
      expect(canaryCounts(r, w, s)).toEqual({ canary, stable });
    },
  );

  // Where the ceiling fills every pod and the floor is tied with it, Argo has no option left and
  // falls back to no canary pod at all. We keep its answer (and `rollouts plan` warns about it).
  const ARGO_GAPS = new Set(["2/75/0", "5/90/0", "10/95/0"]);

  it.each([...ARGO_GAPS])("keeps Argo's fallback to zero canary pods at %s", (key) => {
    const [r, w, s] = key.split("/").map(Number) as [number, number, number];
    expect(canaryCounts(r, w, s)).toEqual({ canary: 0, stable: r });
  });

  it("otherwise never leaves a side empty for weights 1-99 once two pods exist", () => {
    for (const replicas of [1, 2, 3, 4, 5, 10]) {
      for (const surge of [0, 1, 2]) {
        if (replicas === 1 && surge === 0) continue;
        for (let w = 1; w <= 99; w++) {
          if (ARGO_GAPS.has(`${replicas}/${w}/${surge}`)) continue;
          const { canary, stable } = canaryCounts(replicas, w, surge);
          expect(canary, `${replicas}/${w}/${surge}`).toBeGreaterThan(0);
          expect(stable, `${replicas}/${w}/${surge}`).toBeGreaterThan(0);
          expect(canary + stable).toBeLessThanOrEqual(replicas + surge);
        }
      }
    }
  });

  it("scales the canary to cover an exact weight when a router splits requests", () => {
    expect(routedCanaryCounts(4, 25)).toEqual({ canary: 1, stable: 4 });
    expect(routedCanaryCounts(10, 5)).toEqual({ canary: 1, stable: 10 });
    expect(routedCanaryCounts(3, 50)).toEqual({ canary: 2, stable: 3 });
  });

  it.each([
    [undefined, 4, 1],
    [undefined, 10, 3],
    ["25%", 3, 1],
    ["50%", 3, 2],
    [0, 3, 0],
    [2, 3, 2],
    ["2", 3, 2],
    ["x", 3, undefined],
    [1.5, 3, undefined],
  ] as const)("maxSurge %s on %i replicas resolves to %s pods", (value, replicas, pods) => {
    expect(resolveMaxSurge(value, replicas)).toBe(pods);
  });
});
