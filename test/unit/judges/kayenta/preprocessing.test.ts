/**
 * Kayenta's preprocessing and outlier detectors, ported from its own suites:
 * kayenta-judge/src/test/scala/com/netflix/kayenta/judge/TransformSuite.scala,
 * kayenta-judge/src/test/scala/com/netflix/kayenta/judge/DetectorSuite.scala and the RandomUtils
 * tests of kayenta-judge/src/test/scala/com/netflix/kayenta/judge/UtilsSuite.scala (every
 * assertion; the draws are `java.util.Random`'s, seeded as Kayenta seeds them, so they are the
 * very draws its tests make). Then checked against numpy
 * (test/fixtures/judges/kayenta/make_reference.py).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as kayenta from "../../../../functions/judges/kayenta/index.ts";
import { expectWithin, kayentaTest } from "./suites.ts";

const {
  addGaussianNoise,
  iqrDetector,
  javaGaussian,
  kSigmaDetector,
  mean,
  removeNaNs,
  removeOutliers,
  replaceNaNs,
  variance,
} = kayenta;
const transform = (test: string) => kayentaTest("TransformSuite", test);
const detector = (test: string) => kayentaTest("DetectorSuite", test);

/** Kayenta's `RandomUtils.init(seed)` then `RandomUtils.normal(mean, stdev, n)`: n draws of N(mean, stdev²). */
const normalSamples = (seed: number, m: number, stdev: number, n: number) =>
  addGaussianNoise(new Array<number>(n).fill(0), m, stdev, javaGaussian(seed));

describe("TransformSuite.scala", () => {
  it.each([
    { test: "Remove Single NaN", apply: removeNaNs },
    { test: "Remove Multiple NaN", apply: removeNaNs },
    { test: "Replace NANs", apply: (values: number[]) => replaceNaNs(values, 0.0) },
  ])("$test", ({ test, apply }) => {
    const { testData, truth } = transform(test);
    expect(apply(testData!)).toEqual(truth);
  });

  it("IQR Outlier Removal", () => {
    const { testData, truth } = transform("IQR Outlier Removal");
    expect(removeOutliers(testData!, iqrDetector(1.5))).toEqual(truth);
  });

  it("KSigma Outlier Removal", () => {
    const { testData, truth } = transform("KSigma Outlier Removal");
    expect(removeOutliers(testData!, kSigmaDetector(3.0))).toEqual(truth);
  });

  it("Add Gaussian Noise", () => {
    const { testData } = transform("Add Gaussian Noise");
    const transformed = addGaussianNoise(testData!, 1.0, 1.0, javaGaussian(12345));
    expectWithin(mean(transformed), 1.0, 0.2);
    expectWithin(Math.sqrt(variance(transformed)), 1.0, 0.2);
    expect(transformed.length).toBe(testData!.length);
  });
});

describe("DetectorSuite.scala", () => {
  const flags = (indexes: number[], length: number) => Array.from({ length }, (_, i) => indexes.includes(i));

  it("KSigma Detection", () => {
    const { testData } = detector("KSigma Detection");
    expect(kSigmaDetector(3.0)(testData!)).toEqual(flags([5], 11));
  });

  it("KSigma Two Sided", () => {
    const { testData } = detector("KSigma Two Sided");
    expect(kSigmaDetector(1.0)(testData!)).toEqual(flags([3, 7], 8));
  });

  it("IQR Detection", () => {
    const { testData } = detector("IQR Detection");
    expect(iqrDetector(1.5)(testData!)).toEqual(flags([4], 8));
  });

  it("IQR Detect Two Sided", () => {
    const { testData } = detector("IQR Detect Two Sided");
    expect(iqrDetector(1.5)(testData!)).toEqual(flags([3, 7], 8));
  });

  it("IQR Empty Data", () => {
    const { testData } = detector("IQR Empty Data");
    expect(iqrDetector(1.5)(testData!)).toEqual([]);
  });

  it("IQR NIST Test", () => {
    const { testData } = detector("IQR NIST Test");
    expect(iqrDetector(1.5)(testData!)).toEqual(flags([testData!.length - 1], testData!.length));
  });
});

describe("UtilsSuite.scala: RandomUtils", () => {
  it("RandomUtils List of Random Samples (Zero Mean)", () => {
    const randomSample = normalSamples(123456789, 0.0, 1.0, 500);
    expectWithin(mean(randomSample), 0.0, 0.2);
    expectWithin(variance(randomSample), 1.0, 0.2);
    expect(randomSample.length).toBe(500);
  });

  it("RandomUtils List of Random Samples (Non-zero Mean)", () => {
    const randomSample = normalSamples(123456789, 10.0, 3.0, 1000);
    expectWithin(mean(randomSample), 10.0, 0.2);
    expectWithin(Math.sqrt(variance(randomSample)), 3.0, 0.2);
    expect(randomSample.length).toBe(1000);
  });

  it("RandomUtils Random Sample (Zero Variance)", () => {
    expect(normalSamples(1, 0.0, 0.0, 1)[0]).toBe(0.0);
  });
});

interface Reference {
  descriptive: {
    values: number[];
    iqrOutliers: boolean[];
    iqrOutliersReduced3: boolean[];
    kSigma2: boolean[];
  }[];
}
const reference: Reference = JSON.parse(
  readFileSync(new URL("../../../fixtures/judges/kayenta/reference.json", import.meta.url), "utf8"),
);

describe("against numpy", () => {
  it.each(reference.descriptive)("fences and k-sigma flags of $values.length values", (c) => {
    expect(iqrDetector(1.5)(c.values)).toEqual(c.iqrOutliers);
    // The judge's detector: factor 3, widened to the 1st and 99th percentiles.
    expect(iqrDetector(3, true)(c.values)).toEqual(c.iqrOutliersReduced3);
    expect(kSigmaDetector(2)(c.values)).toEqual(c.kSigma2);
  });

  it("refuses a factor or a k that is not positive, as Kayenta's detectors require", () => {
    expect(() => iqrDetector(0)).toThrow(/factor must be greater than zero/);
    expect(() => kSigmaDetector(-1)).toThrow(/k must be greater than zero/);
  });
});
