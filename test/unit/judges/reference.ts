import { readFileSync } from "node:fs";
import { expect } from "vitest";

type Alt = "greater" | "less" | "two-sided";
type PerAlt<T> = Record<Alt, T>;

/** The values test/fixtures/judges/make_reference.py computed with scipy (inputs included). */
export interface Reference {
  scipy: string;
  mannWhitney: {
    name: string;
    candidate: number[];
    primary: number[];
    medianCandidate: number;
    medianPrimary: number;
    meanRatio: number;
    results: PerAlt<{ u: number; z: number; p: number }>;
  }[];
  /** Cumulative buckets (`le` "Infinity" is +Inf) and scipy's figures for the bucket-index samples. */
  histograms: {
    name: string;
    bounds: Array<number | "Infinity">;
    candidateBuckets: { le: number | "Infinity"; count: number }[];
    primaryBuckets: { le: number | "Infinity"; count: number }[];
    results: PerAlt<{ u: number; z: number; p: number }>;
  }[];
  twoProportion: {
    candidate: { bad: number; n: number };
    primary: { bad: number; n: number };
    chi2: number;
    z: number;
    p: PerAlt<number>;
  }[];
  oneProportion: {
    candidate: { bad: number; n: number };
    limit: number;
    z: number;
    normal: PerAlt<number>;
    exact: PerAlt<number>;
  }[];
  normalSf: { z: number; sf: number }[];
  special: {
    gammaln: { x: number; value: number }[];
    betainc: { a: number; b: number; x: number; value: number }[];
  };
  sampleSize: {
    baseline: number;
    candidate: number;
    alpha: number;
    power: number;
    sides: 1 | 2;
    exact: number;
    n: number;
  }[];
  sampleSizeOneProportion: {
    limit: number;
    candidate: number;
    alpha: number;
    power: number;
    sides: 1 | 2;
    exact: number;
    n: number;
  }[];
  sequentialRate: {
    candidateBad: number;
    primaryBad: number;
    allocation: number;
    concentration: number;
    logBayesFactor: number;
  }[];
  sequentialLatency: {
    candidate: number[];
    primary: number[];
    g: number;
    t: number;
    logBayesFactor: number;
  }[];
  /** Latency samples in ms with a chosen nearest-rank p95, and scipy's Mann-Whitney of the pair. */
  guards: {
    name: string;
    candidate: number[];
    primary: number[];
    medianCandidate: number;
    medianPrimary: number;
    p95Candidate: number;
    p95Primary: number;
    results: PerAlt<{ u: number; z: number; p: number }>;
  }[];
  /** numpy's `percentile(values, q, method="inverted_cdf")`: the value at rank ceil(q/100 · n). */
  nearestRank: { values: number[]; percentiles: Record<string, number> }[];
}

export const reference: Reference = JSON.parse(
  readFileSync(new URL("../../fixtures/judges/reference.json", import.meta.url), "utf8"),
);

export const alternatives: Alt[] = ["greater", "less", "two-sided"];

/** |actual − expected| ≤ rel·|expected| (or ≤ abs when expected is 0): the 1e-9 relative. */
export function expectClose(
  actual: number | null | undefined,
  expected: number,
  rel = 1e-9,
  abs = 1e-12,
): void {
  expect(actual).toBeTypeOf("number");
  const a = actual as number;
  const tolerance = expected === 0 ? abs : Math.abs(expected) * rel;
  if (!(Math.abs(a - expected) <= tolerance)) {
    throw new Error(`expected ${a} to be within ${tolerance} of ${expected} (rel ${rel})`);
  }
}
