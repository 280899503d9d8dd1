import { describe, expect, it } from "vitest";
import {
  addLatency,
  emptyLogSummary,
  gaussian,
  mulberry32,
  sequentialLatency,
  sequentialRate,
  simulateAaRollouts,
  summarizeLatencies,
} from "../../../functions/judges/index.ts";
import { expectClose, reference } from "./reference.ts";

/** alpha plus three binomial standard errors: the A/A rate of a valid test over `runs` rollouts stays below it. */
function upperMargin(alpha: number, runs: number): number {
  return alpha + 3 * Math.sqrt((alpha * (1 - alpha)) / runs);
}

describe("seeded randomness", () => {
  it("mulberry32 is deterministic per seed and uniform in [0, 1)", () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const first = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(first);
    expect(Array.from({ length: 5 }, c)).not.toEqual(first);
    const draws = Array.from({ length: 20_000 }, mulberry32(7));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
    expect(Math.abs(draws.reduce((s, v) => s + v, 0) / draws.length - 0.5)).toBeLessThan(0.01);
  });

  it("Box-Muller draws have mean 0 and variance 1", () => {
    const normal = gaussian(mulberry32(11));
    const draws = Array.from({ length: 40_000 }, normal);
    const mean = draws.reduce((s, v) => s + v, 0) / draws.length;
    const variance = draws.reduce((s, v) => s + (v - mean) ** 2, 0) / draws.length;
    expect(Math.abs(mean)).toBeLessThan(0.02);
    expect(Math.abs(variance - 1)).toBeLessThan(0.03);
  });
});

describe("Poisson-process Bayes factor for counts (Lindon & Malek)", () => {
  it.each(reference.sequentialRate)(
    "ln BF for $candidateBad vs $primaryBad events, allocation $allocation, k=$concentration matches scipy",
    (fixture) => {
      const result = sequentialRate(
        { bad: fixture.candidateBad, n: 1000 },
        { bad: fixture.primaryBad, n: 1000 },
        { allocation: fixture.allocation, concentration: fixture.concentration },
      );
      expectClose(result.statistic, fixture.logBayesFactor, 1e-9, 1e-12);
      expectClose(result.pValue, Math.min(1, Math.exp(-fixture.logBayesFactor)), 1e-9, 1e-12);
      expect(result.z).toBeNull();
    },
  );

  it.each([
    [0, 0, 0.5, 2],
    [7, 3, 0.5, 2],
    [3, 12, 0.2, 2],
    [40, 35, 0.5, 10],
  ])(
    "is a martingale under 'no difference': ρ·BF(x+1, y) + (1−ρ)·BF(x, y+1) = BF(x, y) at (%i, %i, ρ=%f, k=%f)",
    (x, y, rho, k) => {
      const bf = (c: number, p: number) =>
        sequentialRate({ bad: c, n: 1000 }, { bad: p, n: 1000 }, { allocation: rho, concentration: k })
          .bayesFactor;
      expectClose(rho * bf(x + 1, y) + (1 - rho) * bf(x, y + 1), bf(x, y), 1e-10);
    },
  );

  it("starts at BF = 1 with no events and grows with evidence that the candidate is worse", () => {
    expect(sequentialRate({ bad: 0, n: 0 }, { bad: 0, n: 0 }).bayesFactor).toBeCloseTo(1, 12);
    const weak = sequentialRate({ bad: 12, n: 1000 }, { bad: 10, n: 1000 });
    const strong = sequentialRate({ bad: 40, n: 1000 }, { bad: 10, n: 1000 });
    expect(strong.bayesFactor).toBeGreaterThan(weak.bayesFactor);
    expect(strong.pValue).toBeLessThan(0.001);
    expect(strong.effect).toBeCloseTo(0.03, 12);
  });

  it("is one-sided: a better candidate never produces evidence", () => {
    const better = sequentialRate({ bad: 2, n: 1000 }, { bad: 40, n: 1000 });
    expect(better.bayesFactor).toBeLessThan(1);
    expect(better.pValue).toBe(1);
  });

  it("never lets the always-valid p-value rise again once a look has lowered it", () => {
    const first = sequentialRate({ bad: 30, n: 1000 }, { bad: 10, n: 1000 });
    const later = sequentialRate(
      { bad: 31, n: 2000 },
      { bad: 30, n: 2000 },
      { previousPValue: first.pValue },
    );
    expect(later.bayesFactor).toBeLessThan(first.bayesFactor);
    expect(later.pValue).toBe(first.pValue);
  });

  it("uses the configured traffic share: 12 of 52 events is a lot for a 10% canary, nothing for a 50% one", () => {
    const canary = sequentialRate({ bad: 12, n: 100 }, { bad: 40, n: 100 }, { allocation: 0.1 });
    const half = sequentialRate({ bad: 12, n: 100 }, { bad: 40, n: 100 }, { allocation: 0.5 });
    expect(canary.bayesFactor).toBeGreaterThan(10);
    expect(half.bayesFactor).toBeLessThan(1);
  });

  it("refuses an allocation or a prior it cannot use", () => {
    expect(() => sequentialRate({ bad: 0, n: 1 }, { bad: 0, n: 1 }, { allocation: 1 })).toThrow(/allocation/);
    expect(() => sequentialRate({ bad: 0, n: 1 }, { bad: 0, n: 1 }, { concentration: 0 })).toThrow(
      /concentration/,
    );
    expect(() => sequentialRate({ bad: 2, n: 1 }, { bad: 0, n: 1 })).toThrow(/candidate.bad/);
  });
});

describe("mixture SPRT on log latency", () => {
  it.each(reference.sequentialLatency)(
    "t and ln BF (g=$g) match scipy's ttest_ind and the closed form",
    (fixture) => {
      const result = sequentialLatency(fixture.candidate, fixture.primary, {
        g: fixture.g,
        alternative: "two-sided",
      });
      expectClose(result.t, fixture.t, 1e-9);
      expectClose(result.statistic, fixture.logBayesFactor, 1e-9);
    },
  );

  it("accepts running summaries and gives the same answer as the arrays", () => {
    const fixture = reference.sequentialLatency[0]!;
    let summary = emptyLogSummary;
    for (const value of fixture.candidate) summary = addLatency(summary, value);
    const fromSummary = sequentialLatency(summary, summarizeLatencies(fixture.primary), { g: fixture.g });
    const fromArrays = sequentialLatency(fixture.candidate, fixture.primary, { g: fixture.g });
    expectClose(fromSummary.statistic, fromArrays.statistic, 1e-12);
    expectClose(fromSummary.effect, fromArrays.effect, 1e-12);
  });

  it("counts evidence only in the worse direction for a one-sided test", () => {
    const fixture = reference.sequentialLatency[2]!; // the candidate is ~30% faster here: t < 0
    const slower = sequentialLatency(fixture.candidate, fixture.primary, {
      g: fixture.g,
      alternative: "greater",
    });
    const faster = sequentialLatency(fixture.candidate, fixture.primary, {
      g: fixture.g,
      alternative: "less",
    });
    expect(slower.t).toBeLessThan(0);
    expect(slower.bayesFactor).toBeGreaterThan(1000);
    expect(slower.pValue).toBe(1);
    expect(faster.pValue).toBeLessThan(0.001);
    expect(faster.effect).toBeLessThan(-0.15);
  });

  it("handles identical values without NaN", () => {
    const same = sequentialLatency([100, 100, 100], [100, 100, 100]);
    expect(same.t).toBe(0);
    expect(same.pValue).toBe(1);
    const shifted = sequentialLatency([200, 200, 200], [100, 100, 100]);
    expect(Number.isFinite(shifted.statistic)).toBe(true);
    expect(shifted.effect).toBeCloseTo(1, 12);
  });

  it("refuses non-positive latencies and too few values", () => {
    expect(() => sequentialLatency([0, 1], [1, 2])).toThrow(/candidate\[0\]/);
    expect(() => sequentialLatency([1], [1])).toThrow(/three in total/);
    expect(() => sequentialLatency([1, 2], [1, 2], { g: -1 })).toThrow(/g must be/);
  });
});

describe("A/A rollouts looked at every 10 samples per side (200 seeded simulations)", () => {
  const runs = 200;
  const alpha = 0.05;

  it("the sequential rate test keeps false rollbacks at or under alpha", () => {
    const summary = simulateAaRollouts({ monitor: "sequential-rate", rollouts: runs, seed: 4, alpha });
    expect(summary.rollouts).toBe(runs);
    expect(summary.rollbackRate).toBeLessThanOrEqual(upperMargin(alpha, runs));
  });

  it("the sequential latency test keeps false rollbacks at or under alpha", () => {
    const summary = simulateAaRollouts({ monitor: "sequential-latency", rollouts: runs, seed: 4, alpha });
    expect(summary.rollbackRate).toBeLessThanOrEqual(upperMargin(alpha, runs));
  });

  it("the naive repeated two-proportion test does not (this is the problem the sequential tests solve)", () => {
    const summary = simulateAaRollouts({ monitor: "naive-two-proportion", rollouts: runs, seed: 4, alpha });
    expect(summary.rollbackRate).toBeGreaterThan(upperMargin(alpha, runs));
  });

  it("the naive repeated Mann-Whitney does not either, even over a shorter window", () => {
    const summary = simulateAaRollouts({
      monitor: "naive-mann-whitney",
      rollouts: 100,
      seed: 4,
      alpha,
      maxPerSide: 500,
    });
    expect(summary.rollbackRate).toBeGreaterThan(upperMargin(alpha, 100));
  });

  it("the sequential tests still catch real regressions: +20% latency and 1% → 3% errors", () => {
    const latency = simulateAaRollouts({
      monitor: "sequential-latency",
      rollouts: 50,
      seed: 9,
      candidateLatencyFactor: 1.2,
    });
    const errors = simulateAaRollouts({
      monitor: "sequential-rate",
      rollouts: 50,
      seed: 9,
      candidateErrorRate: 0.03,
      maxPerSide: 10_000,
    });
    expect(latency.rollbackRate).toBeGreaterThanOrEqual(0.9);
    expect(latency.medianSamplesToRollback).toBeLessThan(500);
    expect(errors.rollbackRate).toBeGreaterThanOrEqual(0.9);
    expect(errors.medianSamplesToRollback).toBeLessThan(2000);
  });

  it("is reproducible from its seed", () => {
    const a = simulateAaRollouts({
      monitor: "sequential-rate",
      rollouts: 20,
      seed: 99,
      candidateErrorRate: 0.03,
    });
    const b = simulateAaRollouts({
      monitor: "sequential-rate",
      rollouts: 20,
      seed: 99,
      candidateErrorRate: 0.03,
    });
    expect(b).toEqual(a);
  });
});
