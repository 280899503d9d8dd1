import { describe, expect, it } from "vitest";
import {
  histogramFromCumulative,
  histogramQuantile,
  mannWhitney,
  mannWhitneyHistograms,
} from "../../../functions/judges/index.ts";
import { alternatives, expectClose, reference } from "./reference.ts";

const le = (b: number | "Infinity") => (b === "Infinity" ? Number.POSITIVE_INFINITY : b);
const buckets = (list: { le: number | "Infinity"; count: number }[]) =>
  list.map((b) => ({ le: le(b.le), count: b.count }));

describe("Mann-Whitney U on histogram buckets (a rank test with ties)", () => {
  for (const fixture of reference.histograms) {
    describe(fixture.name, () => {
      const candidate = histogramFromCumulative(buckets(fixture.candidateBuckets));
      const primary = histogramFromCumulative(buckets(fixture.primaryBuckets));
      it.each(alternatives)(
        "U, z and p match scipy on bucket-index samples, alternative=%s",
        (alternative) => {
          const expected = fixture.results[alternative];
          const result = mannWhitneyHistograms(candidate, primary, alternative);
          expectClose(result.statistic, expected.u);
          expectClose(result.z, expected.z);
          expectClose(result.pValue, expected.p);
        },
      );
    });
  }

  it("gives the same U, z and p as the sample test on the bucketed values", () => {
    const bounds = [1, 2, 3, Number.POSITIVE_INFINITY];
    const candidate = { bounds, counts: [2, 5, 1, 3] };
    const primary = { bounds, counts: [4, 4, 4, 0] };
    const expand = (counts: number[]) => counts.flatMap((c, i) => Array(c).fill(i) as number[]);
    const bySamples = mannWhitney(expand(candidate.counts), expand(primary.counts), "greater");
    const byBuckets = mannWhitneyHistograms(candidate, primary, "greater");
    expect(byBuckets.statistic).toBe(bySamples.statistic);
    expectClose(byBuckets.z, bySamples.z, 1e-12);
    expectClose(byBuckets.pValue, bySamples.pValue, 1e-12);
  });

  it("refuses histograms with different buckets, and an empty side", () => {
    const a = { bounds: [1, Number.POSITIVE_INFINITY], counts: [1, 1] };
    expect(() => mannWhitneyHistograms(a, { bounds: [2, Number.POSITIVE_INFINITY], counts: [1, 1] })).toThrow(
      /different buckets/,
    );
    expect(() => mannWhitneyHistograms(a, { bounds: a.bounds, counts: [0, 0] })).toThrow(RangeError);
  });
});

describe("histograms from Prometheus' cumulative buckets", () => {
  it("turns cumulative counts into per-bucket counts, in any order", () => {
    const h = histogramFromCumulative([
      { le: Number.POSITIVE_INFINITY, count: 10 },
      { le: 0.1, count: 4 },
      { le: 0.5, count: 9 },
    ]);
    expect(h).toEqual({ bounds: [0.1, 0.5, Number.POSITIVE_INFINITY], counts: [4, 5, 1] });
  });

  it("raises a dip in extrapolated counts to the count below, as histogram_quantile does", () => {
    const h = histogramFromCumulative([
      { le: 0.1, count: 4.2 },
      { le: 0.5, count: 4.1 },
      { le: Number.POSITIVE_INFINITY, count: 6 },
    ]);
    expect(h.counts[1]).toBe(0);
    expect(h.counts.every((c) => c >= 0)).toBe(true);
  });

  it("refuses duplicated bounds, negative counts and NaN bounds with the bucket named", () => {
    expect(() =>
      histogramFromCumulative([
        { le: 1, count: 1 },
        { le: 1, count: 2 },
      ]),
    ).toThrow(/le=1 appears twice/);
    expect(() => histogramFromCumulative([{ le: 1, count: -1 }])).toThrow(/le=1 has count -1/);
    expect(() => histogramFromCumulative([{ le: Number.NaN, count: 1 }])).toThrow(/not a number/);
    expect(() => histogramFromCumulative([])).toThrow(/no buckets/);
  });

  it("interpolates quantiles as histogram_quantile does", () => {
    const h = { bounds: [0.1, 0.2, 0.4, Number.POSITIVE_INFINITY], counts: [10, 10, 20, 0] };
    // rank 20 of 40 ends the second bucket; rank 30 is half-way through the third.
    expect(histogramQuantile(h, 0.5)).toBeCloseTo(0.2, 12);
    expect(histogramQuantile(h, 0.75)).toBeCloseTo(0.3, 12);
    // the first bucket starts at 0
    expect(histogramQuantile(h, 0.125)).toBeCloseTo(0.05, 12);
    // a rank in the +Inf bucket is the last finite bound
    expect(histogramQuantile({ bounds: h.bounds, counts: [1, 1, 1, 5] }, 0.9)).toBe(0.4);
    expect(histogramQuantile({ bounds: h.bounds, counts: [0, 0, 0, 0] }, 0.5)).toBeNaN();
  });
});
