/**
 * Kayenta's NetflixACAJudge end to end: a canary config's metrics prepared, classified and scored.
 * Kayenta has no test suite of its own for this class; these follow NetflixACAJudge.scala and
 * ScoringHelper.scala (muted metrics left out of the score, an exception classified Error).
 */
import { describe, expect, it } from "vitest";
import * as kayenta from "../../../../functions/judges/kayenta/index.ts";

const { classifyMetric, judgeCanary } = kayenta;

const stable = [100, 102, 98, 101, 99, 103, 97, 100, 101, 99, 102, 98];
const slower = stable.map((v) => v * 1.3);

describe("the NetflixACAJudge", () => {
  it("classifies every metric and scores the groups by their weights", () => {
    const judgement = judgeCanary(
      {
        metrics: [
          { name: "latency", groups: ["latency"], direction: "increase" },
          { name: "errors", groups: ["errors"], direction: "increase", nanStrategy: "replace" },
        ],
        groupWeights: { latency: 60, errors: 40 },
        pass: 95,
        marginal: 75,
      },
      {
        latency: { experiment: slower, control: stable },
        errors: { experiment: [0, Number.NaN, 0, 0], control: [0, 0, Number.NaN, 0] },
      },
    );
    expect(judgement.metrics.map((m) => [m.name, m.classification])).toEqual([
      ["latency", "High"],
      ["errors", "Pass"],
    ]);
    expect(judgement.metrics[0]!.deviation).toBeCloseTo(1.3, 12);
    expect(judgement.groupScores.map((g) => [g.name, g.score])).toEqual([
      ["latency", 0],
      ["errors", 100],
    ]);
    expect(judgement).toMatchObject({ score: 40, classification: "Fail", reason: null });
  });

  it("defaults to Kayenta's direction, either: a faster candidate is Low, and fails its group", () => {
    const faster = stable.map((v) => v * 0.7);
    const result = classifyMetric({ name: "latency" }, { experiment: faster, control: stable });
    expect(result.classification).toBe("Low");
    expect(
      classifyMetric({ name: "latency", direction: "increase" }, { experiment: faster, control: stable }),
    ).toMatchObject({ classification: "Pass" });
  });

  it("removes NaN points by default, so a side of NaN only is Nodata; replaced, they are zeros", () => {
    const pair = { experiment: [Number.NaN, Number.NaN], control: [1, 2, 3] };
    expect(classifyMetric({ name: "m" }, pair)).toMatchObject({
      classification: "Nodata",
      reason: "Missing data for m",
      experiment: { count: 0 },
    });
    expect(classifyMetric({ name: "m", nanStrategy: "replace" }, pair).experiment).toMatchObject({
      count: 2,
      mean: 0,
    });
  });

  it("removes outliers beyond the IQR fences (widened to the 1st and 99th percentiles) when asked", () => {
    const spiky = [...stable.slice(0, 11), 5000];
    const kept = classifyMetric({ name: "latency" }, { experiment: spiky, control: stable });
    const removed = classifyMetric(
      { name: "latency", outliers: { strategy: "remove", outlierFactor: 3 } },
      { experiment: spiky, control: stable },
    );
    expect(kept.experiment.max).toBe(5000);
    expect(removed.experiment).toMatchObject({ count: 11, max: 103 });
  });

  it("classifies a metric whose classifier cannot run as Error, which no group counts", () => {
    const result = classifyMetric(
      { name: "m" },
      { experiment: [1, Number.POSITIVE_INFINITY], control: [1, 2] },
    );
    expect(result).toMatchObject({
      classification: "Error",
      reason: "Metric Classification Failed",
      critical: false,
    });
  });

  it("reports a muted metric and leaves it out of the score", () => {
    const judgement = judgeCanary(
      {
        metrics: [
          { name: "latency", groups: ["g"], muted: true },
          { name: "errors", groups: ["g"] },
        ],
        pass: 95,
        marginal: 75,
      },
      { latency: { experiment: slower, control: stable }, errors: { experiment: stable, control: stable } },
    );
    expect(judgement.metrics[0]).toMatchObject({ name: "latency", classification: "High", muted: true });
    expect(judgement.score).toBe(100);
    expect(judgement.classification).toBe("Pass");
  });

  it("fails the canary with a score of 0 on a critical High, whatever the other groups say", () => {
    const judgement = judgeCanary(
      {
        metrics: [
          { name: "latency", groups: ["latency"], critical: true, effectSize: { criticalIncrease: 1.2 } },
          { name: "a", groups: ["other"] },
          { name: "b", groups: ["other"] },
        ],
        pass: 95,
        marginal: 75,
      },
      {
        latency: { experiment: slower, control: stable },
        a: { experiment: stable, control: stable },
        b: { experiment: stable, control: stable },
      },
    );
    expect(judgement).toMatchObject({
      score: 0,
      classification: "Fail",
      reason: "Canary Failed: The metric latency was classified as High (Critical)",
    });
  });

  it("needs a series for every metric of the config", () => {
    expect(() => judgeCanary({ metrics: [{ name: "x" }], pass: 95, marginal: 75 }, {})).toThrow(
      "no series for metric x",
    );
  });
});
