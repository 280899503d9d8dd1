import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  fastLatencySamples,
  fastRateSamples,
  histogramFromCumulative,
  histogramLogSummary,
  histogramRankBucket,
  mergeLogSummaries,
  summarizeLatencies,
} from "../../../functions/judges/index.ts";

/**
 * The sequential judges' fast path (the minimum sample derived from the regression they must catch
 * at once) and the summaries a latency gate tests: values from scipy and numpy
 * (`test/fixtures/judges/make_fast_reference.py` writes `fast-reference.json`).
 */

interface Reference {
  fastRate: Array<{ baseline: number; ratio: number; alpha: number; samples: number }>;
  fastLatency: Array<{ ratio: number; sigma: number; alpha: number; samples: number }>;
  histogramLogSummary: { bounds: number[]; counts: number[]; n: number; mean: number; m2: number };
  mergeLogSummaries: Record<"a" | "b" | "both", { n: number; mean: number; m2: number }>;
}

const REFERENCE = JSON.parse(
  readFileSync(new URL("../../fixtures/judges/fast-reference.json", import.meta.url), "utf8"),
) as Reference;

describe("the fast path of the sequential tests", () => {
  it.each(REFERENCE.fastRate)(
    "counts: $ratio× a $baseline stable rate crosses alpha $alpha at $samples per side (scipy)",
    ({ baseline, ratio, alpha, samples }) => {
      expect(fastRateSamples({ baseline, ratio, alpha })).toBe(samples);
    },
  );

  it.each(REFERENCE.fastLatency)(
    "latency: $ratio× slower with spread $sigma crosses alpha $alpha at $samples per side",
    ({ ratio, sigma, alpha, samples }) => {
      expect(fastLatencySamples({ ratio, sigma, alpha })).toBe(samples);
    },
  );

  it("needs more samples for a smaller alpha, a smaller effect or a rarer baseline", () => {
    const at = (alpha: number, ratio = 10, baseline = 0.01) => fastRateSamples({ baseline, ratio, alpha });
    expect(at(0.01)).toBeGreaterThan(at(0.05));
    expect(at(0.05, 3)).toBeGreaterThan(at(0.05, 10));
    expect(at(0.05, 10, 0.001)).toBeGreaterThan(at(0.05, 10, 0.01));
  });

  it("refuses inputs that have no fast regression", () => {
    expect(() => fastRateSamples({ baseline: 0, ratio: 10, alpha: 0.05 })).toThrow(/baseline/);
    expect(() => fastRateSamples({ baseline: 0.2, ratio: 5, alpha: 0.05 })).toThrow(
      /ratio × baseline below 1/,
    );
    expect(() => fastRateSamples({ baseline: 0.01, ratio: 1, alpha: 0.05 })).toThrow(/ratio/);
    expect(() => fastLatencySamples({ ratio: 2, sigma: 0, alpha: 0.05 })).toThrow(/sigma/);
    expect(() => fastLatencySamples({ ratio: 2, sigma: 0.5, alpha: 1 })).toThrow(/alpha/);
  });
});

describe("what a latency gate tests", () => {
  const { bounds, counts } = REFERENCE.histogramLogSummary;
  // Cumulative buckets, as Prometheus keeps them (the last one is +Inf).
  const cumulative = [...bounds, Number.POSITIVE_INFINITY].map((le, i) => ({
    le,
    count: counts.slice(0, i + 1).reduce((a, b) => a + b, 0),
  }));
  const histogram = histogramFromCumulative(cumulative);

  it("summarizes a histogram with each value at its bucket's geometric middle (numpy)", () => {
    const summary = histogramLogSummary(histogram);
    expect(summary.n).toBe(REFERENCE.histogramLogSummary.n);
    expect(summary.mean).toBeCloseTo(REFERENCE.histogramLogSummary.mean, 12);
    expect(summary.m2 / REFERENCE.histogramLogSummary.m2).toBeCloseTo(1, 12);
  });

  it("rounds extrapolated counts, and refuses values at or below 0", () => {
    const h = histogramFromCumulative([
      { le: 0.1, count: 9.6 },
      { le: 1, count: 20.2 },
      { le: Number.POSITIVE_INFINITY, count: 20.2 },
    ]);
    expect(histogramLogSummary(h).n).toBe(10 + 11);
    const zero = histogramFromCumulative([
      { le: 0, count: 3 },
      { le: 1, count: 5 },
    ]);
    expect(() => histogramLogSummary(zero)).toThrow(/at or below 0 have no logarithm/);
  });

  it("finds the bucket that holds the nearest-rank p95", () => {
    // 1,004 values, 913 of them at most 0.1 and 1,000 at most 0.25: rank ceil(0.95 × 1004) = 954.
    expect(histogramRankBucket(histogram, 0.95)).toEqual({ lower: 0.1, upper: 0.25 });
    expect(histogramRankBucket(histogram, 0.001)).toEqual({ lower: 0, upper: 0.005 });
    expect(histogramRankBucket(histogram, 1)).toEqual({ lower: 10, upper: Number.POSITIVE_INFINITY });
    expect(histogramRankBucket(histogramFromCumulative([{ le: 1, count: 0 }]), 0.95)).toBeUndefined();
  });

  it("pools two summaries into the summary of both streams (numpy)", () => {
    const { a, b, both } = REFERENCE.mergeLogSummaries;
    const pooled = mergeLogSummaries(a, b);
    expect(pooled.n).toBe(both.n);
    expect(pooled.mean).toBeCloseTo(both.mean, 12);
    expect(pooled.m2 / both.m2).toBeCloseTo(1, 10);
    expect(mergeLogSummaries({ n: 0, mean: 0, m2: 0 }, a)).toEqual(a);
    const latencies = [120, 80, 101, 99, 250, 47];
    const whole = summarizeLatencies(latencies);
    const halves = mergeLogSummaries(
      summarizeLatencies(latencies.slice(0, 2)),
      summarizeLatencies(latencies.slice(2)),
    );
    expect(halves.mean).toBeCloseTo(whole.mean, 12);
    expect(halves.m2).toBeCloseTo(whole.m2, 12);
  });
});
