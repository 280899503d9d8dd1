/**
 * Kayenta's descriptive statistics and effect sizes, ported from its own suite:
 * kayenta-judge/src/test/scala/com/netflix/kayenta/judge/StatisticSuite.scala
 * (every assertion), then checked against numpy and scipy
 * (test/fixtures/judges/kayenta/make_reference.py).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as kayenta from "../../../../functions/judges/kayenta/index.ts";
import { expectWithin, kayentaTest } from "./suites.ts";

const { cles, cohenD, meanRatio, percentile, summarize, variance } = kayenta;
const suite = (test: string) => kayentaTest("StatisticSuite", test);

describe("StatisticSuite.scala", () => {
  it("Summary Statistics: Scalar", () => {
    expect(summarize([4.0])).toEqual({ min: 4, max: 4, mean: 4, std: 0, count: 1 });
  });

  it("Summary Statistics: List", () => {
    const result = summarize([1.0, 1.0, 1.0, 10.0, 10.0, 10.0]);
    expect(result.min).toBe(1.0);
    expect(result.max).toBe(10.0);
    expect(result.mean).toBe(5.5);
    expectWithin(result.std, 4.9295, 1e-4);
    expect(result.count).toBe(6.0);
  });

  it("Summary Statistics: No Data", () => {
    expect(summarize([])).toEqual({ min: 0, max: 0, mean: 0, std: 0, count: 0 });
  });

  it("Summary Statistics: Basic Percentile", () => {
    const { testData } = suite("Summary Statistics: Basic Percentile");
    expectWithin(percentile(testData!, 5), 0.175, 1.0e-4);
    expect(percentile(testData!, 50)).toBe(1.75);
    expect(percentile(testData!, 100)).toBe(3.5);
  });

  it("Summary Statistics: Basic Percentile Estimate (Linear Interpolation)", () => {
    const { testData } = suite("Summary Statistics: Basic Percentile Estimate (Linear Interpolation)");
    expect(percentile(testData!, 50)).toBe(4.5);
  });

  it("Summary Statistics: Percentile (NIST Data)", () => {
    const { testData } = suite("Summary Statistics: Percentile (NIST Data)");
    // ScalaTest's === on doubles is exact: 95.19568 is what the R-7 estimate rounds to here.
    expect(percentile(testData!, 90)).toBe(95.19568);
  });

  it("Summary Statistics: Percentile Metric Object", () => {
    expect(percentile([1.0], 100)).toBe(1.0);
  });

  it("Summary Statistics: Percentile Estimate (Linear Interpolation)", () => {
    const { testData } = suite("Summary Statistics: Percentile Estimate (Linear Interpolation)");
    expect(percentile(testData!, 25)).toBe(0.0);
    expectWithin(percentile(testData!, 75), 0.0416, 1.0e-4);
  });

  it.each([
    { test: "Effect Size: Mean Ratio (No Effect)", expected: 1.0 },
    { test: "Effect Size: Mean Ratio (High)", expected: 10.0 },
    { test: "Effect Size: Mean Ratio (Low)", expected: 0.1 },
  ])("$test", ({ test, expected }) => {
    const { experimentData, controlData } = suite(test);
    expect(meanRatio(controlData!, experimentData!)).toBe(expected);
  });

  it("Effect Size: Mean Ratio (Summary Stats)", () => {
    const { experimentData, controlData } = suite("Effect Size: Mean Ratio (Summary Stats)");
    // Kayenta's overload on summaries divides the summaries' means: the same ratio.
    const experiment = summarize(experimentData!);
    const control = summarize(controlData!);
    expect(experiment.mean / control.mean).toBe(1.0);
  });

  it("Effect Size: Mean Ratio (Zero Mean)", () => {
    const { experimentData, controlData } = suite("Effect Size: Mean Ratio (Zero Mean)");
    expect(meanRatio(controlData!, experimentData!)).toBeNaN();
  });

  it("Effect Size: Cohen's D", () => {
    const { experimentData, controlData } = suite("Effect Size: Cohen's D");
    // Kayenta passes (experiment, control) here; the measure is symmetric.
    expectWithin(cohenD(experimentData!, controlData!), 3.03821, 1e-5);
  });

  it("CLES Effect Size: Identical", () => {
    const { experimentData, controlData } = suite("CLES Effect Size: Identical");
    expect(cles(controlData!, experimentData!)).toBe(0.5);
  });

  it("CLES Effect Size: Different (No Overlap)", () => {
    const { experimentData, controlData } = suite("CLES Effect Size: Different (No Overlap)");
    expect(cles(controlData!, experimentData!)).toBe(0.0);
  });

  it("CLES Effect Size: High Metric", () => {
    const { experimentData, controlData } = suite("CLES Effect Size: High Metric");
    expectWithin(cles(controlData!, experimentData!), 0.771, 0.001);
  });

  it("CLES Effect Size: Low Metric", () => {
    const { experimentData, controlData } = suite("CLES Effect Size: Low Metric");
    expect(cles(controlData!, experimentData!)).toBe(0.12);
  });
});

interface Reference {
  mannWhitney: {
    name: string;
    experiment: number[];
    control: number[];
    cles: number;
    meanRatio: number;
    cohenD: number;
  }[];
  descriptive: {
    values: number[];
    percentiles: Record<string, number>;
    variance: number;
    populationVariance: number;
  }[];
}
const reference: Reference = JSON.parse(
  readFileSync(new URL("../../../fixtures/judges/kayenta/reference.json", import.meta.url), "utf8"),
);

describe("against numpy and scipy", () => {
  it.each(reference.mannWhitney)("$name: CLES, mean ratio and Cohen's d to 1e-12", (c) => {
    expectWithin(cles(c.control, c.experiment), c.cles, 1e-12);
    expectWithin(meanRatio(c.control, c.experiment), c.meanRatio, 1e-12 * Math.abs(c.meanRatio));
    expectWithin(cohenD(c.control, c.experiment), c.cohenD, 1e-12 * c.cohenD);
  });

  it.each(reference.descriptive)("R-7 percentiles and variances of $values.length values", (c) => {
    for (const [p, value] of Object.entries(c.percentiles)) {
      expectWithin(percentile(c.values, Number(p)), value, 1e-12 * Math.max(1, Math.abs(value)));
    }
    expectWithin(variance(c.values), c.variance, 1e-12 * Math.max(1, c.variance));
    expectWithin(variance(c.values, true), c.populationVariance, 1e-12 * Math.max(1, c.populationVariance));
  });
});
