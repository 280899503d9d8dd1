import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../../cli/main.ts";
import { checkSchema, judge, runCheck } from "../../../functions/judges/index.ts";
import { expectClose, reference } from "./reference.ts";

const dir = mkdtempSync(join(tmpdir(), "rollouts-judge-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const latencyFixture = reference.mannWhitney[3]!; // candidate +10%, p ≈ 6.6e-4 one-sided

const healthy = {
  checks: [
    {
      name: "latency",
      test: "mann-whitney",
      candidate: latencyFixture.primary,
      primary: latencyFixture.primary,
      minEffect: 5,
      minSamples: 100,
    },
    {
      name: "errors",
      test: "two-proportion",
      candidate: { bad: 11, n: 1000 },
      primary: { bad: 10, n: 1000 },
      minEffect: 0.02,
    },
    {
      name: "disagreement",
      test: "one-proportion",
      candidate: { bad: 30, n: 1000 },
      limit: 0.1,
      method: "exact",
    },
  ],
};

describe("runCheck and judge", () => {
  it("reports scipy's numbers for a Mann-Whitney check and fails it beyond the minimum effect", () => {
    const check = checkSchema.parse({
      name: "latency",
      test: "mann-whitney",
      candidate: latencyFixture.candidate,
      primary: latencyFixture.primary,
      alpha: 0.01,
      minEffect: 5,
      minSamples: 150,
    });
    const result = runCheck(check);
    expectClose(result.statistic, latencyFixture.results.greater.u);
    expectClose(result.z, latencyFixture.results.greater.z);
    expectClose(result.pValue, latencyFixture.results.greater.p);
    expect(result.effect).toBeGreaterThan(5);
    expect(result.verdict).toBe("FAIL");
    expect(result.message).toMatch(
      /^latency: FAIL: worse by \d+(\.\d+)? ms, beyond minEffect 5 ms, and p = 6\.6e-04 < alpha 0\.01; mann-whitney effect \+\d/,
    );
  });

  it("is INSUFFICIENT below minSamples and with an empty side, without throwing", () => {
    const few = runCheck(
      checkSchema.parse({
        name: "l",
        test: "mann-whitney",
        candidate: [1, 2],
        primary: [1, 2],
        minSamples: 10,
      }),
    );
    expect(few.verdict).toBe("INSUFFICIENT");
    expect(few.message).toBe(
      "l: INSUFFICIENT: the candidate has 2 samples and the primary 2, fewer than minSamples 10; mann-whitney effect +0 (minEffect 0), z=-0.433 p=0.6675 (alpha 0.05)",
    );
    const empty = runCheck(
      checkSchema.parse({ name: "l", test: "mann-whitney", candidate: [], primary: [1] }),
    );
    expect(empty).toMatchObject({ verdict: "INSUFFICIENT", pValue: null, statistic: null });
    const noTraffic = runCheck(
      checkSchema.parse({
        name: "e",
        test: "two-proportion",
        candidate: { bad: 0, n: 0 },
        primary: { bad: 0, n: 10 },
      }),
    );
    expect(noTraffic.verdict).toBe("INSUFFICIENT");
  });

  it("one-proportion uses the limit as its minimum effect, as the shadow check does", () => {
    const result = runCheck(
      checkSchema.parse({
        name: "disagreement",
        test: "one-proportion",
        candidate: { bad: 150, n: 414 },
        limit: 0.1,
      }),
    );
    expect(result.verdict).toBe("FAIL");
    expect(result.pValue!.toExponential(1)).toBe("4.1e-71");
    const under = runCheck(
      checkSchema.parse({
        name: "disagreement",
        test: "one-proportion",
        candidate: { bad: 9, n: 100 },
        limit: 0.1,
      }),
    );
    expect(under.verdict).toBe("PASS");
  });

  it("plugs the sequential tests into the same verdicts", () => {
    const rate = runCheck(
      checkSchema.parse({
        name: "errors",
        test: "sequential-rate",
        candidate: { bad: 40, n: 2000 },
        primary: { bad: 10, n: 2000 },
        alpha: 0.05,
      }),
    );
    expect(rate.verdict).toBe("FAIL");
    expect(rate.z).toBeNull();
    const latency = runCheck(
      checkSchema.parse({
        name: "latency",
        test: "sequential-latency",
        candidate: latencyFixture.candidate,
        primary: latencyFixture.primary,
        previousPValue: 0.5,
      }),
    );
    expect(latency.pValue).toBeLessThanOrEqual(0.5);
    expect(["FAIL", "SUSPECT"]).toContain(latency.verdict);
  });

  it("says why a significantly worse check within minEffect passes", () => {
    const fixture = reference.twoProportion.find((c) => c.candidate.bad === 38 && c.primary.bad === 21);
    const result = runCheck(
      checkSchema.parse({
        name: "quality",
        test: "two-proportion",
        candidate: fixture?.candidate,
        primary: fixture?.primary,
        minEffect: 0.05,
      }),
    );
    expectClose(result.pValue, fixture?.p.greater ?? Number.NaN);
    expect(result.verdict).toBe("PASS");
    // 5.43% against 3.0% bad, scipy's one-sided p = 0.01187
    expect(result.message).toBe(
      "quality: PASS: worse by 2.429 points, within minEffect 5 points: not a finding even though p = 0.01187 < alpha 0.05; two-proportion effect +0.02429 (minEffect 0.05), z=2.261 p=0.01187 (alpha 0.05)",
    );
  });

  it("decides over all checks", () => {
    const checks = healthy.checks.map((c) => checkSchema.parse(c));
    expect(judge(checks).decision).toBe("promote");
    const slow = checkSchema.parse({
      name: "latency",
      test: "mann-whitney",
      candidate: latencyFixture.candidate,
      primary: latencyFixture.primary,
      minEffect: 1,
    });
    expect(judge([...checks, slow]).decision).toBe("rollback");
  });
});

describe("rollouts judge FILE [--json]", () => {
  it("exits 0 on promote and prints the JSON report", async () => {
    const result = await run("judge", file("healthy.json", healthy), "--json");
    expect(result.code).toBe(0);
    const report = JSON.parse(result.out);
    expect(report.decision).toBe("promote");
    expect(report.checks.map((c: { verdict: string }) => c.verdict)).toEqual(["PASS", "PASS", "PASS"]);
    for (const check of report.checks) {
      expect(Object.keys(check)).toEqual(
        expect.arrayContaining(["name", "test", "statistic", "z", "pValue", "effect", "verdict", "guard"]),
      );
      expect(check.guard).toBeNull();
    }
  });

  it("prints a guard's figures in the JSON report", async () => {
    const guarded = {
      checks: [
        { ...healthy.checks[0], maxP95Ms: 100 },
        { ...healthy.checks[1], maxBadRate: 0.05 },
      ],
    };
    const result = await run("judge", file("guarded.json", guarded), "--json");
    expect(result.code).toBe(1);
    const report = JSON.parse(result.out);
    // numpy.percentile(primary, 95, method="inverted_cdf") of the 250 samples
    expect(report.checks[0].guard).toEqual({ measure: "p95", value: 252.594, limit: 100, breached: true });
    expect(report.checks[0].message).toMatch(/^latency: FAIL: p95 252\.6 ms above the 100 ms guard; /);
    expect(report.checks[1].guard).toEqual({
      measure: "badRate",
      value: 0.011,
      limit: 0.05,
      breached: false,
    });
  });

  it("exits 1 on rollback, with a readable line per check", async () => {
    const bad = {
      checks: [
        ...healthy.checks,
        {
          name: "quality",
          test: "two-proportion",
          candidate: { bad: 284, n: 1000 },
          primary: { bad: 53, n: 1000 },
          minEffect: 0.1,
        },
      ],
    };
    const result = await run("judge", file("bad.json", bad));
    expect(result.code).toBe(1);
    expect(result.out).toContain("decision: rollback");
    expect(result.out).toContain(
      "quality: FAIL: worse by 23.1 points, beyond minEffect 10 points, and p = 1.3e-43 < alpha 0.05; two-proportion effect +0.231 (minEffect 0.1), z=13.8 p=1.3e-43 (alpha 0.05)",
    );
  });

  it("exits 3 on hold (too few samples)", async () => {
    const cold = {
      checks: [
        {
          name: "errors",
          test: "two-proportion",
          candidate: { bad: 1, n: 20 },
          primary: { bad: 0, n: 25 },
          minSamples: 150,
        },
      ],
    };
    const result = await run("judge", file("cold.json", cold), "--json");
    expect(result.code).toBe(3);
    expect(JSON.parse(result.out).checks[0].verdict).toBe("INSUFFICIENT");
  });

  it.each([
    [
      "a wrong test name",
      { checks: [{ name: "x", test: "t-test", candidate: [], primary: [] }] },
      "checks[0].test",
    ],
    [
      "bad above n",
      {
        checks: [
          { name: "x", test: "two-proportion", candidate: { bad: 5, n: 2 }, primary: { bad: 0, n: 1 } },
        ],
      },
      "checks[0].candidate.bad",
    ],
    [
      "a string among the samples",
      { checks: [{ name: "x", test: "mann-whitney", candidate: [1, "2"], primary: [1] }] },
      "checks[0].candidate[1]",
    ],
    [
      "a misspelt field",
      { checks: [{ name: "x", test: "mann-whitney", candidate: [1], primary: [1], minSample: 3 }] },
      "minSample",
    ],
    [
      "alpha out of range",
      { checks: [{ name: "x", test: "mann-whitney", candidate: [1], primary: [1], alpha: 5 }] },
      "checks[0].alpha",
    ],
    [
      "a zero latency for the log test",
      { checks: [{ name: "x", test: "sequential-latency", candidate: [0], primary: [1] }] },
      "checks[0].candidate[0]",
    ],
    ["no checks", { checks: [] }, "checks"],
    [
      "a bad-rate ceiling on the one-proportion test (its limit already is one)",
      {
        checks: [
          { name: "x", test: "one-proportion", candidate: { bad: 0, n: 1 }, limit: 0.1, maxBadRate: 0.2 },
        ],
      },
      "maxBadRate",
    ],
    [
      "a two-sided sequential rate test (it is one-sided by construction)",
      {
        checks: [
          {
            name: "x",
            test: "sequential-rate",
            candidate: { bad: 0, n: 1 },
            primary: { bad: 0, n: 1 },
            alternative: "two-sided",
          },
        ],
      },
      "checks[0].alternative",
    ],
  ])("exits 2 on %s, naming the field path", async (_, content, path) => {
    const result = await run("judge", file("invalid.json", content));
    expect(result.code).toBe(2);
    expect(result.err).toContain(path);
    expect(result.err).toContain("invalid.json");
    expect(result.out).toBe("");
  });

  it("exits 2 on a file that is missing or not JSON", async () => {
    expect((await run("judge", join(dir, "nope.json"))).code).toBe(2);
    const notJson = await run("judge", file("broken.json", "{checks:"));
    expect(notJson.code).toBe(2);
    expect(notJson.err).toContain("not valid JSON");
  });
});
