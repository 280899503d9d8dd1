import { describe, expect, it, vi } from "vitest";
import {
  binomialTestPValue,
  logBeta,
  logGamma,
  mannWhitney,
  mannWhitneySorted,
  normalCdf,
  normalSf,
  oneProportion,
  regularizedBeta,
  samplesOneProportion,
  samplesPerSide,
  secondsToSamples,
  twoProportion,
} from "../../../functions/judges/index.ts";
import { alternatives, expectClose, reference } from "./reference.ts";

/** The same values, with every read of an element counted. */
function counted<T extends ArrayLike<number>>(values: T): { values: T; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(values, {
    get(target, key) {
      if (typeof key === "string" && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key);
    },
  });
  return { values: proxy, reads: () => reads };
}

describe("normal tail", () => {
  it.each(reference.normalSf)("sf($z) matches scipy.stats.norm.sf to 1e-9 relative", ({ z, sf }) => {
    expectClose(normalSf(z), sf);
    expectClose(normalCdf(-z), sf);
  });

  it("keeps p-values like 4e-71 instead of rounding them to 0", () => {
    const p = normalSf(17.79132937602425);
    expect(p).toBeGreaterThan(0);
    expectClose(p, reference.oneProportion[0]!.normal.greater);
  });
});

describe("special functions", () => {
  it.each(reference.special.gammaln)("logGamma($x) matches scipy.special.gammaln", ({ x, value }) => {
    // gammaln is 0 at 1 and 2: compare absolutely there, relatively elsewhere.
    expectClose(logGamma(x), value, 1e-12, 1e-13);
  });

  it.each(reference.special.betainc)("I_$x($a, $b) matches scipy.special.betainc", ({ a, b, x, value }) => {
    const { lower, upper } = regularizedBeta(a, b, x);
    expectClose(lower, value, 1e-10);
    expectClose(upper, 1 - value, 1e-9, 1e-15);
  });

  it("logBeta is symmetric and agrees with logGamma", () => {
    expectClose(logBeta(3.5, 7.25), logBeta(7.25, 3.5), 1e-15);
    expectClose(logBeta(2, 3), Math.log(1 / 12), 1e-14);
  });

  it("rejects arguments outside the domain", () => {
    expect(() => logGamma(0)).toThrow(RangeError);
    expect(() => regularizedBeta(1, 1, 1.5)).toThrow(RangeError);
    expect(() => regularizedBeta(0, 1, 0.5)).toThrow(RangeError);
  });
});

describe("Mann-Whitney U against scipy.stats.mannwhitneyu(method='asymptotic')", () => {
  for (const fixture of reference.mannWhitney) {
    describe(fixture.name, () => {
      it.each(alternatives)("U, z and p for alternative=%s", (alternative) => {
        const expected = fixture.results[alternative];
        const result = mannWhitney(fixture.candidate, fixture.primary, alternative);
        expectClose(result.statistic, expected.u);
        expectClose(result.z, expected.z);
        expectClose(result.pValue, expected.p);
      });

      it("reports the difference of medians and the ratio of means beside the p-value", () => {
        const result = mannWhitney(fixture.candidate, fixture.primary);
        expectClose(result.effect, fixture.medianCandidate - fixture.medianPrimary, 1e-12);
        expectClose(result.meanRatio, fixture.meanRatio, 1e-12);
      });
    });
  }

  it("ranks 2000 heavily tied values per side (the case that needs average ranks and the tie term)", () => {
    const fixture = reference.mannWhitney.find((f) => f.name.startsWith("n=2000"))!;
    expect(fixture.candidate).toHaveLength(2000);
    expect(new Set(fixture.candidate).size).toBeLessThanOrEqual(21);
    expectClose(mannWhitney(fixture.candidate, fixture.primary, "greater").pValue, fixture.results.greater.p);
  });

  it("does not care about input order and accepts typed arrays", () => {
    const fixture = reference.mannWhitney[3]!;
    const shuffled = [...fixture.candidate].reverse();
    const a = mannWhitney(shuffled, Float64Array.from(fixture.primary), "greater");
    expectClose(a.pValue, fixture.results.greater.p);
  });

  it("gives the same numbers on presorted windows, and refuses a window that is not sorted", () => {
    const fixture = reference.mannWhitney[2]!;
    const x = Float64Array.from(fixture.candidate).sort();
    const y = Float64Array.from(fixture.primary).sort();
    for (const alternative of alternatives) {
      expect(mannWhitneySorted(x, y, alternative)).toEqual(
        mannWhitney(fixture.candidate, fixture.primary, alternative),
      );
    }
    expect(() => mannWhitneySorted(Float64Array.of(2, 1), Float64Array.of(1))).toThrow(
      /not sorted at index 1/,
    );
  });

  it("returns 'no evidence' (z = 0, p = 1) when every value is identical, where scipy gives NaN", () => {
    const result = mannWhitney([5, 5, 5], [5, 5], "two-sided");
    expect(result).toMatchObject({ z: 0, pValue: 1, effect: 0, meanRatio: 1 });
  });

  it("refuses an empty side and non-finite values", () => {
    expect(() => mannWhitney([], [1, 2])).toThrow(/at least one value on each side/);
    expect(() => mannWhitney([1, Number.NaN], [1, 2])).toThrow(/candidate\[1\]/);
    expect(() => mannWhitney([1], [Number.POSITIVE_INFINITY])).toThrow(/primary\[0\]/);
  });

  // The work is counted, not timed: every value read from either side goes through a counter.
  // Sorting is the engine's own O(n log n); after it, ranking is one merge of the two sorted
  // sides, a bounded number of reads per value, where comparing every pair would read n² times.
  it("scales as n log n: one sort per side, then a merge that reads each value a few times", () => {
    const sides = (n: number) => ({
      x: new Float64Array(n).map((_, i) => (i * 7919) % 100_003).sort(),
      y: new Float64Array(n).map((_, i) => ((i * 104_729) % 100_019) + 0.5).sort(),
    });
    const readsOfMerge = (n: number) => {
      const { x, y } = sides(n);
      const cx = counted(x);
      const cy = counted(y);
      expect(mannWhitneySorted(cx.values, cy.values, "two-sided")).toEqual(
        mannWhitneySorted(x, y, "two-sided"),
      );
      return cx.reads() + cy.reads();
    };
    const small = readsOfMerge(2_000);
    const large = readsOfMerge(4_000);
    // At most a dozen reads per value (checking the order, merging, the medians and the means).
    expect(small).toBeLessThanOrEqual(12 * 2 * 2_000);
    // Twice the values, twice the reads (comparing every pair would read four times as many).
    expect(large / small).toBeLessThan(2.01);

    // Unsorted input is read once to check it and once to copy it; the copies are what is sorted.
    const n = 100_000;
    const { x, y } = sides(n);
    const unsortedX = counted(Array.from(x).reverse());
    const unsortedY = counted(Array.from(y).reverse());
    const sort = vi.spyOn(Float64Array.prototype, "sort");
    let result: ReturnType<typeof mannWhitney>;
    let sorted: number[];
    try {
      result = mannWhitney(unsortedX.values, unsortedY.values, "two-sided");
      sorted = sort.mock.contexts.map((side) => (side as Float64Array).length);
    } finally {
      sort.mockRestore();
    }
    expect(sorted).toEqual([n, n]);
    expect(result).toEqual(mannWhitneySorted(x, y, "two-sided"));
    expect(result.pValue).toBeGreaterThanOrEqual(0);
    expect(result.pValue).toBeLessThanOrEqual(1);
    expect(unsortedX.reads()).toBeLessThanOrEqual(2 * n);
    expect(unsortedY.reads()).toBeLessThanOrEqual(2 * n);
  });
});

describe("two-proportion z-test", () => {
  it.each(reference.twoProportion)(
    "z² equals chi2_contingency($candidate.bad/$candidate.n vs $primary.bad/$primary.n)",
    (fixture) => {
      for (const alternative of alternatives) {
        const result = twoProportion(fixture.candidate, fixture.primary, alternative);
        expectClose(result.statistic, fixture.chi2);
        expectClose(result.z * result.z, fixture.chi2);
        expectClose(result.z, fixture.z);
        expectClose(result.pValue, fixture.p[alternative]);
      }
    },
  );

  it.each([
    [0, 100, 0, 100],
    [0, 1, 0, 5000],
    [100, 100, 40, 40],
  ])("treats %i/%i vs %i/%i (no variance) as no evidence, not NaN", (bc, nc, bp, np) => {
    for (const alternative of alternatives) {
      const result = twoProportion({ bad: bc, n: nc }, { bad: bp, n: np }, alternative);
      expect(result.z).toBe(0);
      expect(result.pValue).toBe(1);
      expect(Number.isNaN(result.effect)).toBe(false);
    }
  });

  it("refuses impossible counts", () => {
    expect(() => twoProportion({ bad: 3, n: 2 }, { bad: 0, n: 1 })).toThrow(/candidate.bad/);
    expect(() => twoProportion({ bad: 0, n: 10 }, { bad: 0, n: 0 })).toThrow(/at least one observation/);
    expect(() => twoProportion({ bad: 0.5, n: 10 }, { bad: 0, n: 10 })).toThrow(RangeError);
  });
});

describe("one-proportion test against a limit", () => {
  it.each(reference.oneProportion)(
    "normal and exact p for $candidate.bad/$candidate.n vs $limit",
    (fixture) => {
      for (const alternative of alternatives) {
        const normal = oneProportion(fixture.candidate, fixture.limit, alternative, "normal");
        expectClose(normal.z, fixture.z);
        expectClose(normal.pValue, fixture.normal[alternative]);
        const exact = oneProportion(fixture.candidate, fixture.limit, alternative, "exact");
        expectClose(exact.pValue, fixture.exact[alternative]);
        expect(exact.effect).toBe(fixture.candidate.bad / fixture.candidate.n);
      }
    },
  );

  it("reproduces the shadow-rollback example: z=17.79, p=4.1e-71", () => {
    const result = oneProportion({ bad: 150, n: 414 }, 0.1);
    expect(result.z.toFixed(2)).toBe("17.79");
    expect(result.pValue.toExponential(1)).toBe("4.1e-71");
  });

  it("rejects a limit outside (0, 1) and an empty sample", () => {
    expect(() => oneProportion({ bad: 0, n: 10 }, 0)).toThrow(/strictly between 0 and 1/);
    expect(() => oneProportion({ bad: 0, n: 0 }, 0.1)).toThrow(/at least one observation/);
  });

  it("exact binomial p-values at the edges", () => {
    expect(binomialTestPValue(0, 20, 0.1, "greater")).toBe(1);
    expectClose(binomialTestPValue(20, 20, 0.1, "greater"), 1e-20, 1e-9);
    expectClose(binomialTestPValue(0, 20, 0.1, "less"), 0.9 ** 20, 1e-12);
    expect(binomialTestPValue(2, 20, 0.1, "two-sided")).toBe(1);
  });
});

describe("sample size and step duration", () => {
  it.each(reference.sampleSize)(
    "$baseline → $candidate at alpha $alpha, power $power, $sides-sided: n per side",
    (fixture) => {
      expect(
        samplesPerSide({
          baseline: fixture.baseline,
          candidate: fixture.candidate,
          alpha: fixture.alpha,
          power: fixture.power,
          sides: fixture.sides,
        }),
      ).toBe(fixture.n);
    },
  );

  it.each(reference.sampleSizeOneProportion)(
    "one-proportion: $candidate against the limit $limit at alpha $alpha, power $power, $sides-sided",
    (fixture) => {
      expect(
        samplesOneProportion({
          limit: fixture.limit,
          candidate: fixture.candidate,
          alpha: fixture.alpha,
          power: fixture.power,
          sides: fixture.sides,
        }),
      ).toBe(fixture.n);
    },
  );

  it("gives the model-rollout figures: 147 for 10 points from 0.97, 556 for 5 points from 0.95, 180 for 10 from 0.95", () => {
    expect(samplesPerSide({ baseline: 0.97, candidate: 0.87, alpha: 0.01 })).toBe(147);
    expect(samplesPerSide({ baseline: 0.95, candidate: 0.9, alpha: 0.01 })).toBe(556);
    expect(samplesPerSide({ baseline: 0.95, candidate: 0.85, alpha: 0.01 })).toBe(180);
  });

  it("turns samples into seconds at a request rate and weight (a model-rollout plan: 150 at 60 rps, 25% → 10 s)", () => {
    expect(secondsToSamples(150, 60, 25)).toBe(10);
    expect(secondsToSamples(150, 60, 50)).toBe(5);
    expect(secondsToSamples(180, 60, 100)).toBe(3);
  });

  it("refuses inputs that have no answer", () => {
    expect(() => samplesPerSide({ baseline: 0.9, candidate: 0.9, alpha: 0.05 })).toThrow(/equal/);
    expect(() => samplesPerSide({ baseline: 1, candidate: 0.9, alpha: 0.05 })).toThrow(/baseline/);
    expect(() => samplesOneProportion({ limit: 0.1, candidate: 0.1, alpha: 0.05 })).toThrow(/equal/);
    expect(() => samplesOneProportion({ limit: 0, candidate: 0.1, alpha: 0.05 })).toThrow(/limit/);
    expect(() => secondsToSamples(100, 60, 0)).toThrow(/weightPercent/);
    expect(() => secondsToSamples(100, 0, 10)).toThrow(/requestsPerSecond/);
  });
});
