/**
 * Kayenta's weighted-sum scorer, ported from its own suite:
 * kayenta-judge/src/test/scala/com/netflix/kayenta/judge/ScorerSuite.scala
 * (every test and assertion), then the rounding checked against Java's BigDecimal semantics
 * reproduced with Python's decimal (test/fixtures/judges/kayenta/make_reference.py).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as kayenta from "../../../../functions/judges/kayenta/index.ts";

const { classifyScore, roundHalfUp, weightedSumScore } = kayenta;

/** Kayenta's `CanaryAnalysisResult.builder()...build()`, with its defaults (not critical, no reason). */
const result = (
  name: string,
  classification: kayenta.MetricLabel,
  groups: string[],
  critical = false,
): kayenta.ScoredClassification => ({ name, classification, groups, critical, reason: null });

describe("ScorerSuite.scala", () => {
  it("Weighted Sum Group Scorer: Single Metric Pass", () => {
    const scores = weightedSumScore([result("test-metric-pass", "Pass", ["test-group"])], {});
    expect(scores.summaryScore).toBe(100.0);
  });

  it("Weighted Sum Group Scorer: Single Metric Fail", () => {
    const scores = weightedSumScore([result("test-metric-high", "High", ["test-group"])], {});
    expect(scores.summaryScore).toBe(0.0);
  });

  it("Weighted Sum Group Scorer: Single group Nodata", () => {
    const scores = weightedSumScore([result("test-metric-nodata", "Nodata", ["test-group-nodata"])], {});
    expect(scores.groupScores).toBeDefined();
    expect(scores.groupScores).toHaveLength(1);
    const nodataGroup = scores.groupScores[0]!;
    expect(nodataGroup.score).toBe(0.0);
    expect(scores.summaryScore).toBe(0.0);
  });

  it("Weighted Sum Group Scorer: Two Groups, one Pass, one Nodata", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass1a", "Pass", ["test-group-pass"]),
        result("test-metric-pass1b", "Pass", ["test-group-pass"]),
        result("test-metric-nodata", "Nodata", ["test-group-nodata"]),
      ],
      {},
    );
    expect(scores.groupScores).toBeDefined();
    expect(scores.groupScores).toHaveLength(2);
    expect(scores.groupScores.map((group) => group.score).sort((a, b) => a - b)).toEqual([0.0, 100.0]);
    expect(scores.summaryScore).toBe(100.0);
  });

  it("Weighted Sum Group Scorer: One Group, Two Metrics", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass", "Pass", ["test-group"]),
        result("test-metric-high", "High", ["test-group"]),
      ],
      {},
    );
    expect(scores.summaryScore).toBe(50.0);
  });

  it("Weighted Sum Group Scorer: One Group, Three Metrics", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass", "Pass", ["test-group"]),
        result("test-metric-high", "High", ["test-group"]),
        result("test-metric-low", "Low", ["test-group"]),
      ],
      {},
    );
    expect(scores.summaryScore).toBe(33.33);
  });

  it("Weighted Sum Group Scorer: Two Groups, Three Metrics", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass-1", "Pass", ["group-1"]),
        result("test-metric-pass-2", "Pass", ["group-1"]),
        result("test-metric-fail", "High", ["group-2"]),
      ],
      { "group-1": 75.0, "group-2": 25.0 },
    );
    expect(scores.summaryScore).toBe(75.0);
  });

  it("Weighted Sum Group Scorer: Two Groups, Three Metrics (Equal Weight)", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass", "Pass", ["group-1"]),
        result("test-metric-fail-1", "High", ["group-1"]),
        result("test-metric-fail-2", "High", ["group-2"]),
      ],
      { "group-1": 50.0, "group-2": 50.0 },
    );
    expect(scores.summaryScore).toBe(25.0);
  });

  it("Weighted Sum Group Scorer: Two Groups, Three Metrics (Equal Weight), one NoData", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass", "Pass", ["group-1"]),
        result("test-metric-nodata", "Nodata", ["group-1"]),
        result("test-metric-fail", "High", ["group-2"]),
      ],
      { "group-1": 50.0, "group-2": 50.0 },
    );
    expect(scores.summaryScore).toBe(50.0);
  });

  it("Weighted Sum Group Scorer: Two Metrics, one good (normal), one fail (critical)", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass", "Pass", ["test-group"]),
        result("test-metric-high", "High", ["test-group"], true),
      ],
      {},
    );
    expect(scores.summaryScore).toBe(0.0);
  });

  it("Weighted Sum Group Scorer: Two Metrics, one low (normal), one good (critical)", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-low", "Low", ["test-group"], false),
        result("test-metric-pass2", "Pass", ["test-group"], true),
      ],
      {},
    );
    expect(scores.summaryScore).toBe(50.0);
  });

  it("Weighted Sum Group Scorer: Two Metrics, one good (normal), one nodata (critical)", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-pass", "Pass", ["test-group"]),
        result("test-metric-nodata", "Nodata", ["test-group"], true),
      ],
      {},
    );
    expect(scores.summaryScore).toBe(0.0);
  });

  it("Weighted Sum Group Scorer: Two Groups (Unequal Weight), Four Metrics", () => {
    const scores = weightedSumScore(
      [
        result("test-metric-high", "High", ["group1"], false),
        result("test-metric-low", "Low", ["group1"], false),
        result("test-metric-pass", "Pass", ["group1"], false),
        result("test-metric-pass2", "High", ["group2"], false),
      ],
      { group1: 15.0, group2: 85.0 },
    );
    expect(scores.summaryScore).toBe(5.0);
  });
});

describe("the rest of Kayenta's scoring", () => {
  interface Reference {
    roundHalfUp: { x: number; rounded: number }[];
  }
  const reference: Reference = JSON.parse(
    readFileSync(new URL("../../../fixtures/judges/kayenta/reference.json", import.meta.url), "utf8"),
  );

  it.each(reference.roundHalfUp)("rounds $x half up on its decimal form to $rounded", ({ x, rounded }) => {
    expect(roundHalfUp(x, 2)).toBe(rounded);
  });

  it("says why a rule set the score to 0, naming the first critical failure", () => {
    const critical = {
      ...result("errors", "High", ["errors"], true),
      reason: "The metric errors was classified as High (Critical)",
    };
    expect(weightedSumScore([result("latency", "Pass", ["latency"]), critical]).reason).toBe(
      "Canary Failed: The metric errors was classified as High (Critical)",
    );
    expect(weightedSumScore([result("a", "Nodata", ["g"]), result("b", "Pass", ["g"])]).reason).toBe(
      "Canary Failed: 50% or more metrics returned NODATA",
    );
  });

  it("counts NodataFailMetric as a failure in its group, and an Error not at all", () => {
    const scores = weightedSumScore([
      result("a", "Pass", ["g"]),
      result("b", "NodataFailMetric", ["g"]),
      result("c", "Error", ["g"]),
    ]);
    expect(scores.groupScores[0]).toMatchObject({
      score: 50,
      labelCounts: { Pass: 1, NodataFailMetric: 1, Error: 1 },
    });
    expect(scores.summaryScore).toBe(50);
  });

  it("shares what the weights leave of 100 among the groups without one", () => {
    // 40 to group a (passing), the other 60 shared by b (failing) and c (passing): 40 + 0 + 30.
    const scores = weightedSumScore(
      [result("x", "Pass", ["a"]), result("y", "High", ["b"]), result("z", "Pass", ["c"])],
      { a: 40 },
    );
    expect(scores.summaryScore).toBe(70);
  });

  it("classifies the score from pass (Pass) and marginal (Marginal) up", () => {
    const thresholds = { pass: 95, marginal: 75 };
    expect(classifyScore(95, thresholds)).toBe("Pass");
    expect(classifyScore(94.99, thresholds)).toBe("Marginal");
    expect(classifyScore(75, thresholds)).toBe("Marginal");
    expect(classifyScore(74.99, thresholds)).toBe("Fail");
  });
});
