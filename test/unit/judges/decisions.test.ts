import { describe, expect, it } from "vitest";
import {
  admitCanary,
  analyzeSeries,
  type CanaryObservation,
  compareWithStable,
  decide,
  decideWindow,
  defaultCanaryPolicy,
  explainCheck,
  InvalidObservationError,
  judgeCheck,
  observeWindow,
  parseObservation,
  scoreGate,
  startCanary,
  type Verdict,
  worseEffect,
} from "../../../functions/judges/index.ts";

describe("the model-rollout judge", () => {
  const base = { nCandidate: 500, nPrimary: 500, minEffect: 50, alpha: 0.01, minSamples: 150 };
  it.each([
    [
      "too few candidate samples, whatever the numbers",
      "INSUFFICIENT",
      { nCandidate: 149, worseBy: 500, pValue: 1e-12 },
    ],
    ["too few primary samples", "INSUFFICIENT", { nPrimary: 10, worseBy: 0, pValue: 1 }],
    ["worse beyond the effect and significant", "FAIL", { worseBy: 60, pValue: 0.001 }],
    ["worse beyond the effect, not significant: collect more", "SUSPECT", { worseBy: 60, pValue: 0.2 }],
    ["significant but smaller than the minimum effect", "PASS", { worseBy: 0.4, pValue: 1e-9 }],
    ["exactly at the minimum effect is not beyond it", "PASS", { worseBy: 50, pValue: 1e-9 }],
    ["better", "PASS", { worseBy: -30, pValue: 0.99 }],
    ["p exactly alpha is not significant", "SUSPECT", { worseBy: 60, pValue: 0.01 }],
  ] as const)("%s → %s", (_, verdict, input) => {
    expect(judgeCheck({ ...base, ...input })).toBe(verdict);
  });

  it("needs at least one sample even when minSamples is 0", () => {
    expect(judgeCheck({ ...base, minSamples: 0, nCandidate: 0, worseBy: 0, pValue: 1 })).toBe("INSUFFICIENT");
  });

  const ms = { ...base, style: { unit: "ms" } } as const;
  const points = { ...base, minEffect: 0.05, style: { unit: "points" } } as const;
  it.each([
    {
      name: "too few candidate samples",
      input: { ...ms, nCandidate: 149, worseBy: 500, pValue: 1e-12 },
      verdict: "INSUFFICIENT",
      reason: "the candidate has 149 samples, fewer than minSamples 150",
    },
    {
      name: "too few on both sides",
      input: { ...ms, nCandidate: 20, nPrimary: 25, worseBy: 0, pValue: 1 },
      verdict: "INSUFFICIENT",
      reason: "the candidate has 20 samples and the primary 25, fewer than minSamples 150",
    },
    {
      name: "too few primary samples",
      input: { ...ms, nPrimary: 10, worseBy: 0, pValue: 1 },
      verdict: "INSUFFICIENT",
      reason: "the primary has 10 samples, fewer than minSamples 150",
    },
    {
      name: "the test could not run",
      input: { ...ms, worseBy: Number.NaN, pValue: Number.NaN, notRun: "no variance" },
      verdict: "INSUFFICIENT",
      reason: "the test cannot run on these samples yet",
    },
    {
      name: "worse beyond the effect and significant",
      input: { ...ms, worseBy: 60, pValue: 0.001 },
      verdict: "FAIL",
      reason: "worse by 60 ms, beyond minEffect 50 ms, and p = 0.001 < alpha 0.01",
    },
    {
      name: "worse beyond the effect, not significant",
      input: { ...ms, worseBy: 60, pValue: 0.2 },
      verdict: "SUSPECT",
      reason: "worse by 60 ms, beyond minEffect 50 ms, but p = 0.2 is not below alpha 0.01: not proven yet",
    },
    {
      name: "significantly worse, within the minimum effect",
      input: { ...points, worseBy: 0.024, pValue: 0.0086 },
      verdict: "PASS",
      reason:
        "worse by 2.4 points, within minEffect 5 points: not a finding even though p = 0.0086 < alpha 0.01",
    },
    {
      name: "worse within the minimum effect, not significant",
      input: { ...points, worseBy: 0.004, pValue: 0.3 },
      verdict: "PASS",
      reason: "worse by 0.4 points, within minEffect 5 points",
    },
    {
      name: "better",
      input: { ...ms, worseBy: -30, pValue: 0.99 },
      verdict: "PASS",
      reason: "not worse (better by 30 ms)",
    },
    {
      name: "no difference",
      input: { ...base, minEffect: 0, worseBy: 0, pValue: 0.5 },
      verdict: "PASS",
      reason: "not worse (no difference)",
    },
    {
      name: "a relative change of latency",
      input: { ...base, minEffect: 0.2, style: { unit: "percent" }, worseBy: 0.35, pValue: 0.001 },
      verdict: "FAIL",
      reason: "worse by 35%, beyond minEffect 20%, and p = 0.001 < alpha 0.01",
    },
    {
      name: "a two-sided check names a difference, not a worsening",
      input: { ...ms, style: { unit: "ms", twoSided: true }, worseBy: 12, pValue: 0.001 },
      verdict: "PASS",
      reason: "differs by 12 ms, within minEffect 50 ms: not a finding even though p = 0.001 < alpha 0.01",
    },
    {
      name: "a rate against its limit (one-proportion)",
      input: {
        ...base,
        minEffect: 0.1,
        style: { unit: "percent", measure: "rate" },
        worseBy: 0.3623,
        pValue: 4.1e-71,
      },
      verdict: "FAIL",
      reason: "rate 36.23%, beyond minEffect 10%, and p = 4.1e-71 < alpha 0.01",
    },
    {
      name: "a guard above its limit decides before the test",
      input: {
        ...ms,
        worseBy: 0,
        pValue: 0.5,
        guard: { measure: "p95", value: 400, limit: 300, unit: "ms" },
      },
      verdict: "FAIL",
      reason: "p95 400 ms above the 300 ms guard",
    },
    {
      name: "a guard within its limit is said beside the deciding comparison",
      input: {
        ...points,
        worseBy: 0.001,
        pValue: 0.4,
        guard: { measure: "bad rate", value: 0.011, limit: 0.02, unit: "percent" },
      },
      verdict: "PASS",
      reason: "worse by 0.1 points, within minEffect 5 points; bad rate 1.1% within the 2% guard",
    },
    {
      name: "a guard is not judged below the sample floor",
      input: {
        ...ms,
        nCandidate: 100,
        worseBy: 0,
        pValue: 0.5,
        guard: { measure: "p95", value: 400, limit: 300, unit: "ms" },
      },
      verdict: "INSUFFICIENT",
      reason: "the candidate has 100 samples, fewer than minSamples 150",
    },
  ] as const)("$name → $verdict, saying why", ({ input, verdict, reason }) => {
    expect(explainCheck(input)).toEqual({
      verdict,
      reason,
      guardBreached: verdict === "FAIL" && "guard" in input,
    });
    expect(judgeCheck(input)).toBe(verdict);
  });

  it.each([
    [["PASS", "PASS"], "promote"],
    [["PASS", "FAIL", "INSUFFICIENT"], "rollback"],
    [["PASS", "SUSPECT"], "hold"],
    [["INSUFFICIENT", "PASS"], "hold"],
    [["SUSPECT", "FAIL"], "rollback"],
    [[], "hold"],
  ] as [Verdict[], string][])("decide(%j) → %s", (verdicts, decision) => {
    expect(decide(verdicts)).toBe(decision);
  });

  it("orients effects so that positive is worse", () => {
    expect(worseEffect(5, "greater")).toBe(5);
    expect(worseEffect(5, "less")).toBe(-5);
    expect(worseEffect(-5, "two-sided")).toBe(5);
  });
});

describe("comparative threshold gates (compare: stable)", () => {
  it("fails an error rate 1.6× the stable's with maxRatio 1.5 and enough samples", () => {
    const outcome = compareWithStable({
      name: "errors",
      candidate: 0.016,
      stable: 0.01,
      maxRatio: 1.5,
      samples: 400,
      minSamples: 200,
    });
    expect(outcome.status).toBe("fail");
    expect(outcome.ratio).toBeCloseTo(1.6, 12);
    expect(outcome.message).toBe("metric errors: candidate 0.016, stable 0.01: ratio 1.6 > maxRatio 1.5");
  });

  it("passes within the ratio, and is never green below minSamples", () => {
    const ok = compareWithStable({
      name: "errors",
      candidate: 0.012,
      stable: 0.01,
      maxRatio: 1.5,
      samples: 400,
      minSamples: 200,
    });
    expect(ok.status).toBe("pass");
    const cold = compareWithStable({
      name: "errors",
      candidate: 0,
      stable: 0.01,
      maxRatio: 1.5,
      samples: 150,
      minSamples: 200,
    });
    expect(cold.status).toBe("inconclusive");
    expect(cold.message).toContain("150 samples < minSamples 200");
    const unknown = compareWithStable({ name: "errors", candidate: 0, stable: 0.01, minSamples: 200 });
    expect(unknown.status).toBe("inconclusive");
  });

  it("applies maxDelta in the worse direction and minRatio for decreases", () => {
    expect(
      compareWithStable({ name: "p99", candidate: 180, stable: 150, maxRatio: 2, maxDelta: 20 }).status,
    ).toBe("fail");
    expect(
      compareWithStable({ name: "p99", candidate: 165, stable: 150, maxRatio: 2, maxDelta: 20 }).status,
    ).toBe("pass");
    const drop = compareWithStable({
      name: "throughput",
      candidate: 70,
      stable: 100,
      direction: "decrease",
      minRatio: 0.8,
    });
    expect(drop.status).toBe("fail");
    expect(drop.message).toContain("ratio 0.7 < minRatio 0.8");
    const rise = compareWithStable({
      name: "throughput",
      candidate: 300,
      stable: 100,
      direction: "decrease",
      minRatio: 0.8,
    });
    expect(rise.status).toBe("pass");
    const either = compareWithStable({
      name: "cpu",
      candidate: 40,
      stable: 100,
      direction: "either",
      maxRatio: 1.5,
      minRatio: 0.5,
    });
    expect(either.status).toBe("fail");
  });

  it("reads 0/0 as no change and x/0 as +Inf", () => {
    expect(compareWithStable({ name: "errors", candidate: 0, stable: 0 }).status).toBe("pass");
    const inf = compareWithStable({ name: "errors", candidate: 0.01, stable: 0, maxRatio: 1.5 });
    expect(inf.ratio).toBe(Number.POSITIVE_INFINITY);
    expect(inf.message).toContain("ratio +Inf");
  });
});

describe("the Mann-Whitney analysis of two series", () => {
  const stableErrors = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  const badErrors = [0.25, 0.3, 0.28, 0.27, 0.26, 0.29, 0.31, 0.24, 0.27, 0.28, 0.2871];

  it("fails a significant increase beyond the ratio and lists means, ratio and p-value", () => {
    const outcome = analyzeSeries({ name: "errors", candidate: badErrors, stable: stableErrors });
    expect(outcome.status).toBe("fail");
    expect(outcome.ratio).toBe(Number.POSITIVE_INFINITY);
    expect(outcome.pValue).toBeLessThan(0.001);
    expect(outcome.message).toMatch(
      /^metric errors: candidate 0\.2761, stable 0 \(means of 11 and 11 points\): ratio \+Inf, p=\d\.\de-0\d < 0\.05$/,
    );
  });

  it("tolerates a significant change inside maxRatio (+20% tolerated even if significant)", () => {
    const stable = [100, 101, 99, 100, 102, 98, 100, 101];
    const candidate = stable.map((v) => v * 1.15);
    const outcome = analyzeSeries({ name: "latency-p99", candidate, stable, maxRatio: 1.2 });
    expect(outcome.pValue).toBeLessThan(0.05);
    expect(outcome.status).toBe("pass");
    expect(outcome.message).toContain("within tolerance");
    expect(
      analyzeSeries({ name: "latency-p99", candidate: stable.map((v) => v * 1.3), stable, maxRatio: 1.2 })
        .status,
    ).toBe("fail");
  });

  it("does not fail a better candidate, and respects direction: decrease", () => {
    const stable = [100, 101, 99, 100, 102, 98, 100, 101];
    const faster = stable.map((v) => v * 0.5);
    expect(analyzeSeries({ name: "latency", candidate: faster, stable }).status).toBe("pass");
    expect(
      analyzeSeries({ name: "throughput", candidate: faster, stable, direction: "decrease", minRatio: 0.8 })
        .status,
    ).toBe("fail");
  });

  it("is inconclusive below minPoints, and a large but noisy difference passes only as not significant", () => {
    expect(analyzeSeries({ name: "errors", candidate: [1, 2, 3, 4], stable: [0, 0, 0, 0, 0] }).status).toBe(
      "inconclusive",
    );
    const noisy = analyzeSeries({
      name: "x",
      candidate: [1, 9, 2, 8, 3],
      stable: [5, 1, 6, 2, 4],
      alpha: 0.05,
    });
    expect(noisy.status).toBe("pass");
    expect(noisy.message).toContain("not significant");
  });
});

describe("the score", () => {
  it("is the weighted share of the non-inconclusive metrics that passed", () => {
    const outcome = scoreGate([
      { name: "errors", status: "pass" },
      { name: "latency-p99", status: "fail", weight: 2 },
      { name: "throughput", status: "pass" },
      { name: "saturation", status: "inconclusive", weight: 5 },
    ]);
    expect(outcome.score).toBe(50);
    expect(outcome.grade).toBe("fail");
    expect(outcome.green).toBe(false);
    expect(outcome.reasons[0]).toBe("score 50 < marginal 75");
  });

  it("is green from marginal up during the bake, and must reach pass at the end with nothing inconclusive", () => {
    const metrics = [
      { name: "a", status: "pass", weight: 4 },
      { name: "b", status: "fail", weight: 1 },
    ] as const;
    expect(scoreGate(metrics)).toMatchObject({ score: 80, grade: "marginal", green: true, reasons: [] });
    expect(scoreGate(metrics, {}, true)).toMatchObject({ score: 80, green: false });
    expect(scoreGate(metrics, { pass: 80 }, true)).toMatchObject({ grade: "pass", green: true });
    const withGap = [...metrics, { name: "c", status: "inconclusive" as const }];
    const final = scoreGate(withGap, { pass: 80 }, true);
    expect(final.green).toBe(false);
    expect(final.reasons.join("\n")).toContain("c");
  });

  it("turns red on a failed critical metric, whatever the score, and scores it 0 as Kayenta does", () => {
    const metrics = [
      ...Array.from({ length: 30 }, (_, i) => ({ name: `m${i}`, status: "pass" as const })),
      { name: "errors", status: "fail" as const, critical: true, message: "metric errors: ratio +Inf" },
    ];
    const outcome = scoreGate(metrics);
    expect(outcome.score).toBe(0);
    expect(outcome.criticalFailed).toBe(true);
    expect(outcome.green).toBe(false);
    expect(outcome.grade).toBe("fail");
    expect(outcome.reasons).toContain("critical metric errors: ratio +Inf");
  });

  it("has no score when nothing was conclusive, and is not green", () => {
    const outcome = scoreGate([{ name: "a", status: "inconclusive" }]);
    expect(outcome.score).toBeNull();
    expect(outcome.green).toBe(false);
    expect(outcome.reasons).toContain("no metric was conclusive");
  });
});

describe("the canary gate", () => {
  const hash = "a".repeat(64);
  const good: CanaryObservation = {
    query_hash: hash,
    verdict: "PASS",
    step_index: 0,
    baseline_p95_ms: 100,
    candidate_p95_ms: 110,
    candidate_error_rate: 0.001,
    sample_count: 800,
  };

  it("validates the payload before deciding: a missing sample_count is an error, never zero", () => {
    const { sample_count: _, ...missing } = good;
    expect(() => parseObservation(missing)).toThrow(InvalidObservationError);
    expect(() => parseObservation(missing)).toThrow(/sample_count/);
    expect(() => parseObservation({ ...good, extra: 1 })).toThrow(/extra/);
    expect(() => parseObservation({ ...good, query_hash: "XYZ" })).toThrow(/query_hash/);
    expect(() => parseObservation({ ...good, baseline_p95_ms: 0 })).toThrow(/baseline_p95_ms/);
    expect(() => parseObservation({ ...good, step_index: 4 })).toThrow(/step_index/);
    expect(() => parseObservation({ ...good, candidate_error_rate: 1.5 })).toThrow(/candidate_error_rate/);
    expect(parseObservation(good)).toEqual(good);
  });

  it("lets only PASS and WARN verdicts in", () => {
    expect(() => parseObservation({ ...good, verdict: "FAIL" })).toThrow(/verdict/);
    expect(parseObservation({ ...good, verdict: "WARN" }).verdict).toBe("WARN");
  });

  it.each([
    ["within budget", "promote", {}],
    ["p95 over 1.2× baseline", "rollback", { candidate_p95_ms: 121 }],
    ["p95 exactly at the budget", "promote", { candidate_p95_ms: 120 }],
    ["error rate at the ceiling", "rollback", { candidate_error_rate: 0.005 }],
    ["both breached: rollback dominates", "rollback", { candidate_p95_ms: 500, candidate_error_rate: 0.2 }],
    ["cold window", "hold", { sample_count: 499 }],
    [
      "cold window with a breach holds: hold dominates when cold",
      "hold",
      { sample_count: 3, candidate_error_rate: 0.33 },
    ],
  ] as const)("%s → %s", (_, decision, change) => {
    expect(decideWindow({ ...good, ...change }).decision).toBe(decision);
  });

  it("holds, never promotes, when the signal is missing", () => {
    expect(decideWindow(null)).toMatchObject({
      decision: "hold",
      reason: expect.stringContaining("signal unavailable"),
    });
    expect(decideWindow(undefined).decision).toBe("hold");
  });

  it("steps through 5, 25, 50, 100 and anchors only after two clean windows at 100%", () => {
    let state = startCanary(hash);
    const weights: number[] = [];
    for (let step = 0; step < 3; step++) {
      const result = observeWindow(state, { ...good, step_index: step });
      expect(result.decision).toBe("promote");
      state = result.state;
      weights.push(result.weight);
    }
    expect(weights).toEqual([25, 50, 100]);
    const first = observeWindow(state, { ...good, step_index: 3 });
    expect(first.state).toMatchObject({ stepIndex: 3, cleanWindowsAtFull: 1, status: "progressing" });
    const held = observeWindow(first.state, null);
    expect(held.decision).toBe("hold");
    expect(held.state).toEqual(first.state);
    const second = observeWindow(held.state, { ...good, step_index: 3 });
    expect(second.state.status).toBe("anchored");
    expect(second.weight).toBe(100);
    expect(observeWindow(second.state, { ...good, step_index: 3 }).reason).toContain("already anchored");
  });

  it("holds on an invalid payload and keeps the error; rolls back to weight 0 on a breach", () => {
    const state = startCanary(hash);
    const invalid = observeWindow(state, { ...good, sample_count: undefined });
    expect(invalid.decision).toBe("hold");
    expect(invalid.error).toMatch(/sample_count/);
    expect(invalid.state).toEqual(state);
    const stale = observeWindow(state, { ...good, step_index: 2 });
    expect(stale.decision).toBe("hold");
    expect(stale.reason).toContain("stale window");
    const rolled = observeWindow(state, { ...good, candidate_p95_ms: 400 });
    expect(rolled).toMatchObject({ decision: "rollback", weight: 0, state: { status: "rolled-back" } });
    expect(rolled.reason).toContain("p95 400 ms > 1.2 × baseline 100 ms");
  });

  it("refuses to re-canary a fingerprint inside the cooldown, and escalates after three rollbacks in an hour", () => {
    const now = Date.UTC(2026, 10, 30, 12);
    const minutes = (m: number) => now - m * 60_000;
    const candidate = { fingerprint: hash, verdict: "WARN" };
    expect(admitCanary(candidate, [], now).admitted).toBe(true);
    const recent = admitCanary(candidate, [{ fingerprint: hash, at: minutes(20) }], now);
    expect(recent).toMatchObject({ admitted: false, escalate: false });
    expect(recent.reason).toContain("cooldown, 2400 s left");
    expect(admitCanary(candidate, [{ fingerprint: hash, at: minutes(61) }], now).admitted).toBe(true);
    expect(admitCanary(candidate, [{ fingerprint: "b".repeat(64), at: minutes(1) }], now).admitted).toBe(
      true,
    );
    const storm = admitCanary(
      candidate,
      [minutes(50), minutes(30), minutes(10)].map((at) => ({ fingerprint: hash, at })),
      now,
    );
    expect(storm).toMatchObject({ admitted: false, escalate: true });
    expect(admitCanary({ fingerprint: hash, verdict: "FAIL" }, [], now)).toMatchObject({ admitted: false });
    const shortCooldown = { ...defaultCanaryPolicy, rollbackCooldownSeconds: 600 };
    expect(
      admitCanary(candidate, [{ fingerprint: hash, at: minutes(20) }], now, shortCooldown).admitted,
    ).toBe(true);
  });
});

describe("seed 004's analysis: mann-whitney, where the seed is silent, as Kayenta", () => {
  const stable = [98, 99, 100, 101, 102, 100, 100, 100];

  it("fails a ratio that reaches maxRatio, as Kayenta's effect size reaching allowedIncrease fails (>=)", () => {
    const atLimit = stable.map((v) => v + 20); // means 120 and 100: ratio 1.2 exactly, significant
    const outcome = analyzeSeries({ name: "latency-p99", candidate: atLimit, stable, maxRatio: 1.2 });
    expect(outcome.ratio).toBe(1.2);
    expect(outcome.pValue).toBeLessThan(0.05);
    expect(outcome.status).toBe("fail");
    expect(outcome.message).toContain("ratio 1.2, p=7.9e-04 < 0.05");
    const within = analyzeSeries({
      name: "latency-p99",
      candidate: atLimit.map((v) => v - 0.01),
      stable,
      maxRatio: 1.2,
    });
    expect(within.status).toBe("pass");
    // A decrease reaching minRatio fails the same way.
    const down = analyzeSeries({
      name: "throughput",
      candidate: stable.map((v) => v * 0.8),
      stable,
      direction: "decrease",
      minRatio: 0.8,
    });
    expect(down.ratio).toBeCloseTo(0.8, 12);
    expect(down.status).toBe(down.ratio <= 0.8 ? "fail" : "pass");
  });

  it("keeps a threshold on one reading's maxRatio a maximum: a ratio equal to it passes", () => {
    expect(compareWithStable({ name: "errors", candidate: 0.012, stable: 0.01, maxRatio: 1.2 }).status).toBe(
      "pass",
    );
    expect(compareWithStable({ name: "errors", candidate: 0.0121, stable: 0.01, maxRatio: 1.2 }).status).toBe(
      "fail",
    );
  });

  it("removes NaN points by default and counts them as 0 with nanStrategy: replace", () => {
    const candidate = [Number.NaN, Number.NaN, Number.NaN, 0, 0];
    const zeros = [0, 0, 0, 0, 0];
    expect(analyzeSeries({ name: "errors", candidate, stable: zeros })).toMatchObject({
      status: "inconclusive",
      pointsCandidate: 2,
      noData: false,
      message: "metric errors: 2 and 5 points < minPoints 5",
    });
    expect(analyzeSeries({ name: "errors", candidate, stable: zeros, nanStrategy: "replace" })).toMatchObject(
      {
        status: "pass",
        pointsCandidate: 5,
        pValue: 1,
      },
    );
  });

  it("says a version without any point has no data", () => {
    const outcome = analyzeSeries({ name: "errors", candidate: [Number.NaN], stable });
    expect(outcome).toMatchObject({ status: "inconclusive", noData: true });
    expect(outcome.message).toBe("metric errors: no data (0 and 8 points)");
  });

  it("fails a critical metric without data and scores 0, as Kayenta's critical Nodata; without critical it is left out", () => {
    const noData = {
      name: "errors",
      status: "inconclusive" as const,
      noData: true,
      message: "metric errors: no data",
    };
    const passing = { name: "latency", status: "pass" as const };
    const critical = scoreGate([passing, { ...noData, critical: true }]);
    expect(critical).toMatchObject({ score: 0, grade: "fail", green: false, criticalFailed: true });
    expect(critical.reasons).toEqual(["critical metric errors: no data"]);
    expect(scoreGate([passing, noData])).toMatchObject({ score: 100, green: true, criticalFailed: false });
  });

  it("rounds the score half up to 2 decimals as Kayenta does, compares that, and prints what it compared", () => {
    // 94.996 rounds to 95: the final reading passes at pass 95, as Kayenta's would.
    const rounded = scoreGate(
      [
        { name: "a", status: "pass", weight: 94.996 },
        { name: "b", status: "fail", weight: 5.004 },
      ],
      {},
      true,
    );
    expect(rounded).toMatchObject({ score: 95, grade: "pass", green: true });
    // 94.994 is 94.99: never shown as 95 beside "< pass 95".
    const below = scoreGate(
      [
        { name: "a", status: "pass", weight: 94.994 },
        { name: "b", status: "fail", weight: 5.006 },
      ],
      {},
      true,
    );
    expect(below).toMatchObject({ score: 94.99, grade: "marginal", green: false });
    expect(below.reasons[0]).toBe("score 94.99 < pass 95");
    expect(
      scoreGate([
        { name: "a", status: "pass", weight: 2 },
        { name: "b", status: "fail" },
      ]).score,
    ).toBe(66.67);
  });
});
