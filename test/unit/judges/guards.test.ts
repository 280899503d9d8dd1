import { describe, expect, it } from "vitest";
import {
  type CheckInput,
  checkSchema,
  judge,
  nearestRank,
  runCheck,
} from "../../../functions/judges/index.ts";
import { expectClose, reference } from "./reference.ts";

/**
 * The absolute guards of `rollouts judge`: a service-level objective holds whatever the primary
 * does, so a candidate above it fails as soon as it has `minSamples`, and below that it holds.
 */

const [same, faster, few] = reference.guards;
if (!(same && faster && few)) throw new Error("reference.json has no guard cases: run make_reference.py");

describe("nearest-rank percentiles", () => {
  it.each(reference.nearestRank.map((c) => ({ ...c, n: c.values.length })))(
    "match numpy's inverted_cdf on $n values",
    ({ values, percentiles }) => {
      const sorted = [...values].sort((a, b) => a - b);
      for (const [percent, value] of Object.entries(percentiles)) {
        expect(nearestRank(sorted, Number(percent))).toBe(value);
      }
    },
  );

  it("is the value at rank ceil(0.95 n) where 0.95 n is a whole number", () => {
    const sorted = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(nearestRank(sorted, 95)).toBe(19);
    expect(nearestRank([7], 95)).toBe(7);
  });

  it("is null without values", () => {
    expect(nearestRank([], 95)).toBeNull();
  });
});

describe("the p95 guard (maxP95Ms) on the latency checks", () => {
  it.each([
    { test: "mann-whitney", case: same, p95: 400 },
    { test: "sequential-latency", case: same, p95: 400 },
    { test: "mann-whitney", case: faster, p95: 250 },
  ] as const)("$test reports the candidate's nearest-rank p95 ($p95 ms)", ({ test, case: c, p95 }) => {
    expect(c.p95Candidate).toBe(p95);
    const result = runCheck(
      checkSchema.parse({ name: "latency", test, candidate: c.candidate, primary: c.primary, maxP95Ms: 300 }),
    );
    expect(result.guard).toEqual({ measure: "p95", value: p95, limit: 300, breached: p95 > 300 });
  });

  it("rolls back a candidate equal to the primary whose p95 is 400 ms with a 300 ms guard", () => {
    const check = checkSchema.parse({
      name: "latency",
      test: "mann-whitney",
      candidate: same.candidate,
      primary: same.primary,
      minEffect: 5,
      minSamples: 150,
      maxP95Ms: 300,
    });
    const result = runCheck(check);
    expectClose(result.pValue, same.results.greater.p);
    expectClose(result.z, same.results.greater.z);
    expect(result.effect).toBe(0);
    expect(result.verdict).toBe("FAIL");
    // z and p are scipy's (-4.325e-4, 0.50017) as the message writes them
    expect(result.message).toBe(
      "latency: FAIL: p95 400 ms above the 300 ms guard; mann-whitney effect +0 (minEffect 5), z=-4.3e-04 p=0.5002 (alpha 0.05)",
    );
    expect(judge([check]).decision).toBe("rollback");
  });

  it("passes a candidate at 250 ms against a slower primary, and says the guard held", () => {
    const check = checkSchema.parse({
      name: "latency",
      test: "mann-whitney",
      candidate: faster.candidate,
      primary: faster.primary,
      minEffect: 5,
      minSamples: 150,
      maxP95Ms: 300,
    });
    const result = runCheck(check);
    expectClose(result.pValue, faster.results.greater.p);
    expect(result.verdict).toBe("PASS");
    // medians 155.05 and 269.85 ms; scipy: z = -14.10, p = 1
    expect(result.message).toBe(
      "latency: PASS: not worse (better by 114.8 ms); p95 250 ms within the 300 ms guard; mann-whitney effect -114.8 (minEffect 5), z=-14.1 p=1 (alpha 0.05)",
    );
    expect(judge([check]).decision).toBe("promote");
  });

  it.each([{ test: "mann-whitney" }, { test: "sequential-latency" }] as const)(
    "$test holds below minSamples, whatever the p95",
    ({ test }) => {
      expect(few.p95Candidate).toBe(400);
      const check = checkSchema.parse({
        name: "latency",
        test,
        candidate: few.candidate,
        primary: few.primary,
        minSamples: 150,
        maxP95Ms: 300,
      });
      const result = runCheck(check);
      expect(result.verdict).toBe("INSUFFICIENT");
      expect(result.message).toMatch(
        /^latency: INSUFFICIENT: the candidate has 100 samples and the primary 100, fewer than minSamples 150; /,
      );
      expect(result.guard).toEqual({ measure: "p95", value: 400, limit: 300, breached: false });
      expect(judge([check]).decision).toBe("hold");
    },
  );

  it("fails on the candidate's samples alone: a short or empty primary does not protect it", () => {
    const short = runCheck(
      checkSchema.parse({
        name: "latency",
        test: "mann-whitney",
        candidate: same.candidate,
        primary: same.primary.slice(0, 10),
        minSamples: 150,
        maxP95Ms: 300,
      }),
    );
    expect(short.verdict).toBe("FAIL");
    expect(short.message).toMatch(/^latency: FAIL: p95 400 ms above the 300 ms guard; mann-whitney effect /);
    const empty = runCheck(
      checkSchema.parse({
        name: "latency",
        test: "sequential-latency",
        candidate: same.candidate,
        primary: [],
        minSamples: 150,
        maxP95Ms: 300,
      }),
    );
    expect(empty).toMatchObject({ verdict: "FAIL", pValue: null, effect: null });
    expect(empty.message).toBe(
      "latency: FAIL: p95 400 ms above the 300 ms guard; sequential-latency not run: the sequential latency test needs at least one value per side and three in total",
    );
  });

  it("holds when the guard holds but the primary is short", () => {
    const result = runCheck(
      checkSchema.parse({
        name: "latency",
        test: "mann-whitney",
        candidate: faster.candidate,
        primary: faster.primary.slice(0, 10),
        minSamples: 150,
        maxP95Ms: 300,
      }),
    );
    expect(result.verdict).toBe("INSUFFICIENT");
    expect(result.message).toMatch(
      /^latency: INSUFFICIENT: the primary has 10 samples, fewer than minSamples 150; p95 250 ms within the 300 ms guard; mann-whitney effect /,
    );
  });

  it("a p95 exactly at the guard is within it", () => {
    const result = runCheck(
      checkSchema.parse({
        name: "latency",
        test: "mann-whitney",
        candidate: same.candidate,
        primary: same.primary,
        maxP95Ms: 400,
      }),
    );
    expect(result.verdict).toBe("PASS");
    expect(result.message).toContain("p95 400 ms within the 400 ms guard");
  });
});

describe("the bad-rate ceiling (maxBadRate) on the count checks", () => {
  const equal = { bad: 30, n: 1000 };
  it.each([{ test: "two-proportion" }, { test: "sequential-rate" }] as const)(
    "$test rolls back a candidate at 3% with a 2% ceiling, even equal to the primary",
    ({ test }) => {
      const check = checkSchema.parse({
        name: "errors",
        test,
        candidate: equal,
        primary: equal,
        minSamples: 500,
        maxBadRate: 0.02,
      });
      const result = runCheck(check);
      expect(result.verdict).toBe("FAIL");
      expect(result.message).toMatch(
        new RegExp(`^errors: FAIL: bad rate 3% above the 2% guard; ${test} effect \\+0 `),
      );
      expect(result.guard).toEqual({ measure: "badRate", value: 0.03, limit: 0.02, breached: true });
      expect(judge([check]).decision).toBe("rollback");
    },
  );

  it("passes a candidate under the ceiling and better than the primary, saying so", () => {
    const fixture = reference.twoProportion[0]; // 30/1000 against 10/1000: here the other way round
    const result = runCheck(
      checkSchema.parse({
        name: "errors",
        test: "two-proportion",
        candidate: fixture?.primary,
        primary: fixture?.candidate,
        maxBadRate: 0.02,
      }),
    );
    expectClose(result.pValue, fixture?.p.less ?? Number.NaN);
    expect(result.verdict).toBe("PASS");
    expect(result.message).toMatch(
      /^errors: PASS: not worse \(better by 2 points\); bad rate 1% within the 2% guard; two-proportion effect -0\.02 /,
    );
  });

  it("holds below minSamples, whatever the rate", () => {
    const result = runCheck(
      checkSchema.parse({
        name: "errors",
        test: "sequential-rate",
        candidate: { bad: 40, n: 100 },
        primary: { bad: 0, n: 1000 },
        minSamples: 500,
        maxBadRate: 0.02,
      }),
    );
    expect(result.verdict).toBe("INSUFFICIENT");
    expect(result.message).toMatch(
      /^errors: INSUFFICIENT: the candidate has 100 samples, fewer than minSamples 500; /,
    );
  });

  it("has no guard unless one is given", () => {
    const result = runCheck(
      checkSchema.parse({ name: "errors", test: "two-proportion", candidate: equal, primary: equal }),
    );
    expect(result.guard).toBeNull();
    expect(result.message).not.toContain("guard");
  });

  it.each([
    { field: "maxBadRate", check: { test: "one-proportion", candidate: equal, limit: 0.1, maxBadRate: 0.2 } },
    { field: "maxBadRate", check: { test: "mann-whitney", candidate: [1], primary: [1], maxBadRate: 0.2 } },
    { field: "maxP95Ms", check: { test: "two-proportion", candidate: equal, primary: equal, maxP95Ms: 300 } },
    { field: "maxP95Ms", check: { test: "mann-whitney", candidate: [1], primary: [1], maxP95Ms: 0 } },
    {
      field: "maxBadRate",
      check: { test: "sequential-rate", candidate: equal, primary: equal, maxBadRate: 1 },
    },
  ])("refuses $field where it does not apply or is out of range ($check.test)", ({ field, check }) => {
    const parsed = checkSchema.safeParse({ name: "x", ...check } as CheckInput);
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain(field);
  });
});
