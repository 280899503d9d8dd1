/**
 * Kayenta's Mann-Whitney confidence interval, ported from its own suite:
 * kayenta-mannwhitney/src/test/scala/com/netflix/kayenta/mannwhitney/MannWhitneySuite.scala
 * (every assertion, with its inputs and expected values and JUnit's tolerance E = 1e-6), then
 * checked against scipy (test/fixtures/judges/kayenta/make_reference.py).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as kayenta from "../../../../functions/judges/kayenta/index.ts";
import { expectWithin, kayentaTest } from "./suites.ts";

const { brentRoot, commonsNormalQuantile, mannWhitneyInterval, wilcoxonDiff } = kayenta;
const E = 0.000001;
const suite = (test: string) => kayentaTest("MannWhitneySuite", test);

describe("MannWhitneySuite.scala", () => {
  it("Wilcoxon Diff Function", () => {
    const { x, y } = suite("Wilcoxon Diff Function");
    expectWithin(wilcoxonDiff(0, 0, x!, y!), -1.229416, E);
    expectWithin(wilcoxonDiff(5, 0, x!, y!), -35.80606, E);
  });

  it("Test zQuant", () => {
    expectWithin(commonsNormalQuantile(0.02 / 2), -2.326348, E);
  });

  it("Mann-Whitney Confidence Interval & Estimate", () => {
    const { experimentData, controlData } = suite("Mann-Whitney Confidence Interval & Estimate");
    const result = mannWhitneyInterval(experimentData!, controlData!);
    expectWithin(result.lower, 6.0, E);
    expectWithin(result.upper, 39.0, E);
    expectWithin(result.estimate, 22.5, E);
  });

  it("Mann-Whitney Confidence Interval & Estimate: Problem Case", () => {
    const { experiment, control } = suite("Mann-Whitney Confidence Interval & Estimate: Problem Case");
    const result = mannWhitneyInterval(experiment!, control!, 0.98);
    expectWithin(result.lower, -1.4808028936386108e-5, E);
    expectWithin(result.upper, 1.808255910873413e-5, E);
    expectWithin(result.estimate, 1.808255910873413e-5, E);
  });

  it("Mann-Whitney Confidence Interval & Estimate: Tie out with R Version", () => {
    const { experiment, control } = suite(
      "Mann-Whitney Confidence Interval & Estimate: Tie out with R Version",
    );
    const result = mannWhitneyInterval(experiment!, control!);
    expectWithin(result.lower, -0.500002521696696, E);
    expectWithin(result.upper, -3.486287505871302e-5, E);
    expectWithin(result.estimate, -0.4999393907180323, 0.0001);
  });

  it("Mann-Whitney Confidence Interval & Estimate: Tie out with R Version (Large)", () => {
    const { experiment, control } = suite(
      "Mann-Whitney Confidence Interval & Estimate: Tie out with R Version (Large)",
    );
    const result = mannWhitneyInterval(experiment!, control!, 0.98);
    expectWithin(result.lower, -0.4999173250549087, E);
    expectWithin(result.upper, -6.912685789769486e-6, E);
    expectWithin(result.estimate, -3.45044082729315e-5, 0.0001);
  });

  it("Mann-Whitney Intermediate Values / Variables", () => {
    const { x, y } = suite("Mann-Whitney Intermediate Values / Variables");
    const confidenceLevel = 0.95;
    const alpha = 1.0 - confidenceLevel;
    const muMin = Math.min(...x!) - Math.max(...y!);
    const muMax = Math.max(...x!) - Math.min(...y!);
    const diff = (zq: number) => (mu: number) => wilcoxonDiff(mu, zq, x!, y!);
    const zqLower = commonsNormalQuantile(alpha / 2) * -1;
    const zqUpper = commonsNormalQuantile(alpha / 2);
    const fLower0 = wilcoxonDiff(muMin, 0, x!, y!);
    const fUpper0 = wilcoxonDiff(muMax, 0, x!, y!);
    const fLower1 = wilcoxonDiff(muMin, zqLower, x!, y!);
    const fUpper1 = wilcoxonDiff(muMax, zqLower, x!, y!);
    const fLower2 = wilcoxonDiff(muMin, zqUpper, x!, y!);
    const fUpper2 = wilcoxonDiff(muMax, zqUpper, x!, y!);
    const ciLower = brentRoot(muMin, muMax, fLower1, fUpper1, diff(zqLower));
    const ciUpper = brentRoot(muMin, muMax, fLower2, fUpper2, diff(zqUpper));
    const estimate = brentRoot(muMin, muMax, fLower0, fUpper0, diff(0));

    expectWithin(muMin, -3.124999999999986, E);
    expectWithin(muMax, 5.555555555555557, E);
    expectWithin(zqLower, 1.9599639845400536, E);
    expectWithin(zqUpper, -1.9599639845400536, E);
    expectWithin(fLower1, 17.090968923762254, E);
    expectWithin(fUpper1, -20.997687930433106, E);
    expectWithin(fLower2, 21.01089689284236, E);
    expectWithin(fUpper2, -17.077759961353, E);
    expectWithin(ciLower, 3.521755377702165e-5, E);
    expectWithin(ciUpper, 2.02456461662334e-5, E);
    expectWithin(estimate, 2.6279243045155653e-5, E);
  });
});

interface Reference {
  mannWhitney: {
    name: string;
    experiment: number[];
    control: number[];
    confidence: number;
    wilcoxonDiff: { mu: number; quantile: number; value: number }[];
    interval: { lower: number; upper: number; estimate: number };
  }[];
}
const reference: Reference = JSON.parse(
  readFileSync(new URL("../../../fixtures/judges/kayenta/reference.json", import.meta.url), "utf8"),
);

describe("against scipy", () => {
  it.each(reference.mannWhitney)("$name: the rank-sum statistic at any shift, to 1e-12", (c) => {
    for (const point of c.wilcoxonDiff) {
      // scipy's quantile is its own ndtri; the statistic itself does not depend on it.
      const value = wilcoxonDiff(point.mu, point.quantile, c.experiment, c.control);
      expect(Math.abs(value - point.value)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(point.value)));
    }
  });

  it.each(reference.mannWhitney)(
    "$name: each end of the interval stops within the solver's tolerance of where the statistic crosses",
    (c) => {
      const result = mannWhitneyInterval(c.experiment, c.control, c.confidence);
      // Brent stops once the bracket is 2 × (1e-4 / 2 + 2ε|b|) wide: the end is within it of the crossing.
      for (const end of ["lower", "upper", "estimate"] as const) {
        const slack = 1e-4 + 4 * Number.EPSILON * Math.abs(result[end]);
        expect(Math.abs(result[end] - c.interval[end])).toBeLessThanOrEqual(slack);
      }
      expect(result.lower).toBeLessThanOrEqual(result.upper);
    },
  );
});
