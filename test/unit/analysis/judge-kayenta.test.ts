import { readFileSync } from "node:fs";
import { driveAnalysis, judgeMetric } from "@sfn-rollouts/test-support/judge-stats";
import { judgedRollout } from "@sfn-rollouts/test-support/judged-rollout";
import { describe, expect, it } from "vitest";
import type { AnalysisRun } from "../../../functions/analysis/index.ts";
import { judgeLook } from "../../../functions/analysis/judge-look.ts";
import { MetricProviders } from "../../../functions/metrics/index.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import { type Metric, parseRollout } from "../../../statemachine/index.ts";
import { T0 } from "./helpers.ts";

/**
 * A `kayenta` judge through the analysis engine: the loader's spec, the judge's reader over a
 * Prometheus double that answers each query with a series, `tick` in virtual time. Kayenta's
 * decision rules: a score not above marginal rolls back at any look, the last look promotes from
 * pass up, and between the two the run is Inconclusive.
 */

/** A `kayenta` judge metric `canary` as the loader reads it: a look a minute, `count` looks. */
const kayentaMetric = (count: number, fields: string): Metric =>
  judgeMetric(`interval: 1m\ncount: ${count}`, `test: kayenta\n${fields}`, "canary");

const metric = (
  name: string,
  extra = "",
) => `  - name: ${name}${extra ? `\n    ${extra.replace(/\n/g, "\n    ")}` : ""}
    candidate: {prometheus: {query: "${name} v2"}}
    stable: {prometheus: {query: "${name} v1"}}`;

/** Answers `<name> v2|v1` with the series `series[name][version]`, or fails for "down". */
function seriesProvider(series: Record<string, { v2: unknown[] | "down"; v1: unknown[] }>): MetricProvider {
  return {
    async measure(m) {
      const [name, version] = (m.provider.prometheus?.query ?? "").split(" ") as [string, "v1" | "v2"];
      const points = series[name]?.[version];
      if (points === "down") return { ok: false, message: "server_error: server error: 503" };
      return { ok: true, result: points ?? [], value: JSON.stringify(points) };
    },
  };
}

/** The analysis of one metric over a Prometheus double, in virtual time. */
const drive = (metric: Metric, provider: MetricProvider) =>
  driveAnalysis(metric, new MetricProviders({ prometheus: provider }), 50, T0);

const phases = (run: AnalysisRun) => run.metricResults[0]?.measurements.map((m) => m.phase) ?? [];
const stable = [100, 102, 98, 101, 99, 103, 97, 100, 101, 99, 102, 98];
const slower = stable.map((v) => v * 1.3);

describe("a kayenta judge in an analysis", () => {
  it("holds while the score is above marginal and promotes at the last look from pass up", async () => {
    const run = await drive(
      kayentaMetric(3, `metrics:\n${metric("latency")}\n${metric("errors", "nanStrategy: replace")}`),
      seriesProvider({
        latency: { v2: stable, v1: [...stable].reverse() },
        errors: { v2: [0, "NaN", 0], v1: [0, 0, null] },
      }),
    );
    expect(phases(run)).toEqual(["Running", "Running", "Successful"]);
    expect(run.phase).toBe("Successful");
    const last = run.metricResults[0]?.measurements.at(-1);
    expect(last?.message).toBe('Gate "canary" passed: score 100 (Pass; pass 95, marginal 75)');
    expect(last?.value).toBe("score 100");
    expect(last?.judge?.metrics).toEqual([
      {
        name: "latency",
        status: "Pass",
        message: "metric latency: Pass: The Canary and Baseline data are identical (12 and 12 points)",
      },
      {
        name: "errors",
        status: "Pass",
        message: "metric errors: Pass: The Canary and Baseline data are identical (3 and 3 points)",
      },
    ]);
  });

  it("rolls back at the first look whose score is not above marginal, listing the metrics that failed", async () => {
    const run = await drive(
      kayentaMetric(5, `metrics:\n${metric("latency", "direction: increase")}\n${metric("errors")}`),
      seriesProvider({ latency: { v2: slower, v1: stable }, errors: { v2: stable, v1: stable } }),
    );
    expect(phases(run)).toEqual(["Failed"]);
    expect(run.message).toBe(
      'Gate "canary" rolled back: score 50 is not above marginal 75: metric latency: High: candidate 130, stable 100 (means of 12 and 12 points), ratio 1.3, shift +30 in [27.7, 32.3] (98%)',
    );
    expect(run.metricResults[0]?.measurements[0]?.judge).toMatchObject({
      score: 50,
      decision: "rollback",
      verdict: "Fail",
    });
  });

  it("scores a critical failure 0 with Kayenta's reason", async () => {
    const run = await drive(
      kayentaMetric(
        5,
        `metrics:\n${metric("latency", "critical: true")}\n${metric("a")}\n${metric("b")}\n${metric("c")}`,
      ),
      seriesProvider({
        latency: { v2: slower, v1: stable },
        a: { v2: stable, v1: stable },
        b: { v2: stable, v1: stable },
        c: { v2: stable, v1: stable },
      }),
    );
    expect(run.message).toMatch(
      /^Gate "canary" rolled back: score 0 is not above marginal 75: Canary Failed: The metric latency was classified as High \(Critical\); metric latency: High \(critical\): /,
    );
  });

  it("rolls back when half the metrics have no data, as Kayenta fails such a canary", async () => {
    const run = await drive(
      kayentaMetric(5, `metrics:\n${metric("latency")}\n${metric("errors")}`),
      seriesProvider({ latency: { v2: stable, v1: stable }, errors: { v2: ["NaN", "NaN"], v1: [] } }),
    );
    expect(run.message).toBe(
      'Gate "canary" rolled back: score 0 is not above marginal 75: Canary Failed: 50% or more metrics returned NODATA; metric errors: Nodata: Missing data for errors (0 and 0 points)',
    );
  });

  it("ends Inconclusive between marginal and pass at the last look (Kayenta fails it; a person decides)", async () => {
    // Four groups of one metric, one High: 75 is marginal, so marginal 70 holds and pass 95 is not reached.
    const run = await drive(
      kayentaMetric(
        2,
        `marginal: 70\nmetrics:\n${metric("latency", "direction: increase")}\n${metric("a")}\n${metric("b")}\n${metric("c")}`,
      ),
      seriesProvider({
        latency: { v2: slower, v1: stable },
        a: { v2: stable, v1: stable },
        b: { v2: stable, v1: stable },
        c: { v2: stable, v1: stable },
      }),
    );
    expect(phases(run)).toEqual(["Running", "Inconclusive"]);
    expect(run.phase).toBe("Inconclusive");
    expect(run.message).toMatch(
      /^Gate "canary" is inconclusive: score 75 < pass 95 at the end of the analysis: metric latency: High/,
    );
  });

  it("rolls back a score equal to marginal: Kayenta's analysis needs a score above it", async () => {
    const fourGroups = `metrics:\n${metric("latency", "direction: increase")}\n${metric("a")}\n${metric("b")}\n${metric("c")}`;
    const run = await drive(
      kayentaMetric(2, fourGroups),
      seriesProvider({
        latency: { v2: slower, v1: stable },
        a: { v2: stable, v1: stable },
        b: { v2: stable, v1: stable },
        c: { v2: stable, v1: stable },
      }),
    );
    expect(phases(run)).toEqual(["Failed"]);
    expect(run.message).toMatch(
      /^Gate "canary" rolled back: score 75 is not above marginal 75: metric latency: High/,
    );
  });

  it("holds on a reading that failed, and says which", async () => {
    const run = await drive(
      kayentaMetric(2, `metrics:\n${metric("latency")}`),
      seriesProvider({ latency: { v2: "down", v1: stable } }),
    );
    expect(phases(run)).toEqual(["Running", "Inconclusive"]);
    expect(run.message).toBe(
      'Gate "canary" is inconclusive: held until the end of the analysis: metric latency: the candidate\'s series failed: server_error: server error: 503',
    );
  });
});

describe("the worked example of docs/judges.md, Kayenta mode (examples/analysis-kayenta.yaml)", () => {
  const { spec } = parseRollout([
    { file: "r.yaml", text: judgedRollout({ template: "kayenta" }) },
    { file: "examples/analysis-kayenta.yaml", text: readFileSync("examples/analysis-kayenta.yaml", "utf8") },
  ]);
  const step = spec.steps[1];
  const judge =
    step?.kind === "analysis" ? step.analysis.templates[0]?.metrics[0]?.provider.judge : undefined;
  if (!judge) throw new Error("no judge in examples/analysis-kayenta.yaml");
  const series = {
    errors: {
      candidate: [0.011, 0.01, "NaN", 0.012, 0.009, 0.011, 0.01, 0.012, 0.013, 0.009, 0.01, 0.011],
      stable: [0.01, 0.012, 0.009, "NaN", 0.011, 0.01, 0.013, 0.008, 0.01, 0.011, 0.009, 0.012],
    },
    "latency-p99": {
      candidate: [241, 236, 250, 229, 1900, 240, 233, 252, 244, 238, 246, 237],
      stable: [212, 205, 220, 198, 215, 209, 203, 218, 211, 207, 214, 206],
    },
    cpu: {
      candidate: [0.42, 0.41, 0.43, 0.4, 0.42, 0.44, 0.41, 0.4, 0.42, 0.43, 0.41, 0.42],
      stable: [0.41, 0.43, 0.4, 0.42, 0.44, 0.41, 0.39, 0.42, 0.43, 0.4, 0.41, 0.42],
    },
  };
  const look = (latency: number[], final: boolean) => {
    const readings = Object.fromEntries(
      Object.entries({ ...series, "latency-p99": { ...series["latency-p99"], candidate: latency } }).flatMap(
        ([name, s]) => [
          [`${name}/candidate.value`, { ok: true, value: s.candidate }],
          [`${name}/stable.value`, { ok: true, value: s.stable }],
        ],
      ),
    );
    return judgeLook("canary", judge, { ok: true, result: readings, value: "" }, undefined, {
      index: 3,
      final,
    });
  };

  it("rolls back a candidate 15% slower: latency is High, the score 50 + 0 + 20 = 70 is not above 75", () => {
    const outcome = look(series["latency-p99"].candidate, false);
    expect(outcome.phase).toBe("Failed");
    expect(outcome.value).toBe("score 70");
    expect(outcome.figures.metrics).toEqual([
      {
        name: "errors",
        status: "Pass",
        message:
          "metric errors: Pass: candidate 0.009833, stable 0.009583 (means of 12 and 12 points), ratio 1.026, shift +9.5e-05 in [-0.001959, 0.002033] (98%)",
      },
      {
        name: "latency-p99",
        status: "High",
        message:
          "metric latency-p99: High: candidate 240.5, stable 209.8 (means of 11 and 12 points), ratio 1.146, shift +31 in [23, 38] (98%)",
      },
      {
        name: "cpu",
        status: "Pass",
        message:
          "metric cpu: Pass: candidate 0.4175, stable 0.415 (means of 12 and 12 points), ratio 1.006, shift +3.3e-05 in [-0.01003, 0.01998] (98%)",
      },
    ]);
    expect(outcome.message).toBe(
      'Gate "canary" rolled back: score 70 is not above marginal 75: metric latency-p99: High: candidate 240.5, stable 209.8 (means of 11 and 12 points), ratio 1.146, shift +31 in [23, 38] (98%)',
    );
  });

  it("holds a candidate 5% slower (a real shift, but under allowedIncrease 1.1) and promotes it at the last look", () => {
    const fivePercent = series["latency-p99"].stable.map((v) => v * 1.05);
    expect(look(fivePercent, false)).toMatchObject({ phase: "Running", value: "score 100" });
    const last = look(fivePercent, true);
    expect(last.phase).toBe("Successful");
    expect(last.message).toBe('Gate "canary" passed: score 100 (Pass; pass 95, marginal 75)');
    expect(last.figures.metrics?.[1]?.message).toMatch(/^metric latency-p99: Pass: .* ratio 1\.05, /);
  });
});
