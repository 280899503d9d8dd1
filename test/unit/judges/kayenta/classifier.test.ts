/**
 * Kayenta's metric classifiers, ported from its own suite:
 * kayenta-judge/src/test/scala/com/netflix/kayenta/judge/ClassifierSuite.scala
 * — every test, with its series (test/fixtures/judges/kayenta/suites.json), its classifier settings
 * and its assertions. Kayenta writes the effect thresholds as (decrease, increase) pairs:
 * `effectSizeThresholds = (0.8, 1.2)` is allowedDecrease 0.8, allowedIncrease 1.2.
 */
import { describe, expect, it } from "vitest";
import type { Direction } from "../../../../functions/judges/comparative.ts";
import * as kayenta from "../../../../functions/judges/kayenta/index.ts";
import { kayentaTest } from "./suites.ts";

const { classifyMannWhitney, classifyMeanInequality } = kayenta;

interface Case {
  test: string;
  tolerance: number;
  confidence: number;
  direction: Direction;
  settings?: kayenta.MannWhitneySettings;
  traits?: Omit<kayenta.MetricTraits, "direction">;
  classification: kayenta.MetricLabel;
  /** Asserted only where Kayenta asserts it. */
  critical?: boolean;
  deviation?: number;
}

const standard = { tolerance: 0.1, confidence: 0.95 };
const cles = { tolerance: 0.2, confidence: 0.98 };

const cases: Case[] = [
  {
    test: "Mann-Whitney Classifier Test: Pass Metric",
    ...standard,
    direction: "either",
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Classifier Test: High Metric",
    ...standard,
    direction: "either",
    classification: "High",
  },
  {
    test: "Mann-Whitney Classifier Test: Low Metric",
    ...standard,
    direction: "either",
    classification: "Low",
  },
  {
    test: "Mann-Whitney Classifier Directional Test: Increase",
    ...standard,
    direction: "increase",
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Classifier Directional Test: Decrease",
    ...standard,
    direction: "decrease",
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Classifier Directional Test: High Metric",
    ...standard,
    direction: "increase",
    classification: "High",
    critical: false,
  },
  {
    test: "Mann-Whitney Classifier Directional Test: Low Metric",
    ...standard,
    direction: "decrease",
    classification: "Low",
  },
  {
    test: "Mann-Whitney Classifier Test: High Metric (Large Input)",
    ...standard,
    direction: "either",
    classification: "High",
    critical: false,
  },
  {
    test: "Mann-Whitney Classifier Test - Mean Ratio Effect Size: High",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 0.8, allowedIncrease: 1.2 },
    classification: "High",
  },
  {
    test: "Mann-Whitney Classifier Test - Mean Ratio Effect Size: Low",
    ...standard,
    direction: "decrease",
    settings: { allowedDecrease: 0.8, allowedIncrease: 1.2 },
    classification: "Low",
  },
  {
    test: "Mann-Whitney Classifier Test - Mean Ratio Effect Size: Pass",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 0.5, allowedIncrease: 1.0 },
    traits: { nanStrategy: "remove" },
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Classifier Test - Mean Ratio Effect Size: Pass (Large Input)",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 1.0, allowedIncrease: 5.0 },
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Classifier Test - CLES Effect Size: Pass",
    ...cles,
    direction: "either",
    settings: { allowedDecrease: 0.5, allowedIncrease: 0.8, measure: "cles" },
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Classifier Test - CLES Effect Size: High",
    ...cles,
    direction: "either",
    settings: { allowedDecrease: 0.2, allowedIncrease: 0.8, measure: "cles" },
    classification: "High",
  },
  {
    test: "Mann-Whitney Classifier Test - CLES Effect Size: Low",
    ...cles,
    direction: "either",
    settings: { allowedDecrease: 0.2, allowedIncrease: 0.8, measure: "cles" },
    classification: "Low",
  },
  {
    test: "Mann-Whitney Classifier Test - Critical Effect Size: Critical High",
    ...standard,
    direction: "either",
    settings: { criticalDecrease: 1.0, criticalIncrease: 1.2 },
    traits: { critical: true },
    classification: "High",
    critical: true,
  },
  {
    test: "Mann-Whitney Classifier Test - Critical Effect Size: Critical Low",
    ...standard,
    direction: "either",
    settings: { criticalDecrease: 1.2, criticalIncrease: 1.0 },
    traits: { critical: true },
    classification: "Low",
    critical: true,
  },
  {
    test: "Mann-Whitney Classifier Test - Critical Effect Size: High",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 1.0, allowedIncrease: 5.0, criticalDecrease: 1.0, criticalIncrease: 13.0 },
    traits: { critical: true },
    classification: "High",
    critical: false,
  },
  {
    test: "Mann-Whitney Classifier Test - Critical Effect Size: Pass",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 1.0, allowedIncrease: 13.0, criticalDecrease: 1.0, criticalIncrease: 15.0 },
    traits: { critical: true },
    classification: "Pass",
    critical: false,
  },
  {
    test: "Mann-Whitney Classifier Test - Critical Effect Size: Critical High (Default Thresholds)",
    ...standard,
    direction: "either",
    traits: { critical: true },
    classification: "High",
    critical: true,
  },
  { test: "Mann-Whitney Tied Observations", ...standard, direction: "decrease", classification: "Pass" },
  { test: "Mann-Whitney Identical Populations", ...standard, direction: "decrease", classification: "Pass" },
  {
    test: "Mann-Whitney Leading Zero Identical Population",
    ...standard,
    direction: "decrease",
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Missing Experiment Data",
    ...standard,
    direction: "decrease",
    classification: "Nodata",
  },
  {
    test: "Mann-Whitney Missing Experiment Data: Critical Metric",
    ...standard,
    direction: "decrease",
    traits: { critical: true },
    classification: "Nodata",
    critical: true,
  },
  {
    test: "Mann-Whitney Missing Experiment Data with NaN Replacement",
    ...standard,
    direction: "decrease",
    traits: { nanStrategy: "replace" },
    classification: "Pass",
  },
  {
    test: "Mann-Whitney Majority Tied Observations",
    ...standard,
    direction: "either",
    classification: "Pass",
  },
  { test: "Mann-Whitney Tied Ranks", ...standard, direction: "either", classification: "High" },
  { test: "Mann-Whitney Tied Ranks With Zeros", ...standard, direction: "either", classification: "High" },
  {
    test: "Mann-Whitney Zero Mean: High Metric with Effect Size",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 0.8, allowedIncrease: 1.2 },
    classification: "High",
    deviation: Number.NaN,
  },
  {
    test: "Mann-Whitney Zero Mean: Low Metric with Effect Size",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 0.8, allowedIncrease: 1.2 },
    classification: "Low",
    deviation: Number.NaN,
  },
  {
    test: "Mann-Whitney Zero Mean: Critical Metric",
    ...standard,
    direction: "either",
    settings: { criticalDecrease: 0.8, criticalIncrease: 1.2 },
    traits: { nanStrategy: "replace", critical: true },
    classification: "High",
    critical: true,
  },
  {
    test: "Mann-Whitney Zero Mean: Pass Metric",
    ...standard,
    direction: "either",
    settings: { allowedDecrease: 0.8, allowedIncrease: 1.2 },
    classification: "Pass",
    deviation: 1.0,
  },
];

describe("ClassifierSuite.scala: the Mann-Whitney classifier", () => {
  it.each(cases)("$test", (c) => {
    const { experimentData, controlData } = kayentaTest("ClassifierSuite", c.test);
    const result = classifyMannWhitney(
      controlData!,
      experimentData!,
      { ...c.traits, direction: c.direction },
      { tolerance: c.tolerance, confidence: c.confidence, ...c.settings },
    );
    expect(result.classification).toBe(c.classification);
    if (c.critical !== undefined) expect(result.critical).toBe(c.critical);
    if (c.deviation !== undefined) expect(result.deviation).toBe(c.deviation);
  });

  it("Mann-Whitney Missing Data: Reason String", () => {
    const { experimentData, controlData } = kayentaTest(
      "ClassifierSuite",
      "Mann-Whitney Missing Data: Reason String",
    );
    const result = classifyMannWhitney(
      controlData!,
      experimentData!,
      { name: "test-critical-metric", direction: "decrease", critical: true },
      standard,
    );
    expect(result.reason).toBeTruthy();
  });
});

describe("ClassifierSuite.scala: the mean-inequality classifier", () => {
  it.each([
    { test: "Mean Inequality Classifier Test: High Metric", classification: "High" },
    { test: "Mean Inequality Classifier Test: Low Metric", classification: "Low" },
    { test: "Mean Inequality Classifier Test: Pass Metric", classification: "Pass" },
  ])("$test", ({ test, classification }) => {
    const { experimentData, controlData } = kayentaTest("ClassifierSuite", test);
    expect(
      classifyMeanInequality(controlData!, experimentData!, { direction: "either" }).classification,
    ).toBe(classification);
  });
});
