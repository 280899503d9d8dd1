import { driveAnalysis, judgeMetric } from "@sfn-rollouts/test-support/judge-stats";
import { describe, expect, it } from "vitest";
import { MetricProviders } from "../../../functions/metrics/index.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import { type Metric, SpecError } from "../../../statemachine/index.ts";
import { T0 } from "./helpers.ts";

/**
 * Seed 004's `analysis: mann-whitney` in a score, through the analysis engine, where the seed is
 * silent and Kayenta decides: a critical metric without data fails and scores 0, NaN points are
 * removed or counted as 0, and the score is compared and shown rounded to 2 decimals.
 */

/** A score judge metric `health` over `metrics` as the loader reads it: three looks a minute apart. */
const scoreMetric = (metrics: string): Metric =>
  judgeMetric("interval: 1m\ncount: 3", `test: score\nmetrics:\n${metrics.replace(/^/gm, "  ")}`, "health");

const series = (name: string, extra = "") => `- name: ${name}
  test: comparative
  data: series${extra ? `\n  ${extra.replace(/\n/g, "\n  ")}` : ""}
  candidate: {prometheus: {query: "${name} v2"}}
  stable: {prometheus: {query: "${name} v1"}}`;

function provider(points: Record<string, unknown[]>): MetricProvider {
  return {
    async measure(m) {
      const result = points[m.provider.prometheus?.query ?? ""] ?? [];
      return { ok: true, result, value: JSON.stringify(result) };
    },
  };
}

/** The analysis of one metric over a Prometheus double, in virtual time. */
const drive = (metric: Metric, source: MetricProvider) =>
  driveAnalysis(metric, new MetricProviders({ prometheus: source }), 20, T0);

function problemsOf(metrics: string): string[] {
  try {
    scoreMetric(metrics);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error("expected a SpecError");
}

const flat = [100, 101, 99, 100, 102, 98, 100, 101];

describe("a score of series (seed 004's analysis: mann-whitney)", () => {
  it("rolls back when a critical metric has no data, with a score of 0", async () => {
    const run = await drive(
      scoreMetric(`${series("errors", "critical: true")}\n${series("latency")}`),
      provider({ "errors v2": flat, "errors v1": [], "latency v2": flat, "latency v1": flat }),
    );
    expect(run.phase).toBe("Failed");
    expect(run.message).toBe(
      'Gate "health" rolled back: score 0: critical metric errors: no data (8 and 0 points)',
    );
  });

  it("leaves a metric without data out of the score when it is not critical, and the end is Inconclusive", async () => {
    const run = await drive(
      scoreMetric(`${series("errors")}\n${series("latency")}`),
      provider({ "errors v2": flat, "errors v1": [], "latency v2": flat, "latency v1": flat }),
    );
    expect(run.phase).toBe("Inconclusive");
    expect(run.message).toBe(
      'Gate "health" is inconclusive: score 100: metric errors: no data (8 and 0 points)',
    );
  });

  it("counts NaN points as 0 with nanStrategy: replace, and leaves them out by default", async () => {
    const quiet = ["NaN", "NaN", "NaN", "NaN", 0, 0, 0, 0];
    const zeros = [0, 0, 0, 0, 0, 0, 0, 0];
    const replaced = await drive(
      scoreMetric(series("errors", "nanStrategy: replace")),
      provider({ "errors v2": quiet, "errors v1": zeros }),
    );
    expect(replaced.phase).toBe("Successful");
    const removed = await drive(
      scoreMetric(series("errors")),
      provider({ "errors v2": quiet, "errors v1": zeros }),
    );
    expect(removed.phase).toBe("Inconclusive");
    expect(removed.message).toContain("metric errors: 4 and 8 points < minPoints 5");
  });

  it("refuses nanStrategy on a comparison of single values, at its field", () => {
    const single = `- name: errors
  test: comparative
  nanStrategy: replace
  candidate: {value: {prometheus: {query: "errors v2"}}}
  stable: {value: {prometheus: {query: "errors v1"}}}`;
    expect(problemsOf(single)).toEqual([
      "spec.metrics[0].provider.plugin.sfn-rollouts/judge.metrics[0].nanStrategy: nanStrategy applies to data: series (the points of a series without value)",
    ]);
  });
});
