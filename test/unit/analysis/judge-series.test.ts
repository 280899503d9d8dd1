import { describe, expect, it } from "vitest";
import {
  type AnalysisRun,
  AnalysisRunSchema,
  createRun,
  nextTickAt,
  tick,
} from "../../../functions/analysis/index.ts";
import { ProviderRouter } from "../../../functions/metrics/index.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import { type Metric, parseRollout, SpecError } from "../../../statemachine/index.ts";
import { judgedRollout } from "../../support/judged-rollout.ts";
import { T0 } from "./helpers.ts";

/**
 * Seed 004's `analysis: mann-whitney` in a score, through the analysis engine, where the seed is
 * silent and Kayenta decides: a critical metric without data fails and scores 0, NaN points are
 * removed or counted as 0, and the score is compared and shown rounded to 2 decimals.
 */

function scoreMetric(metrics: string): Metric {
  const template = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: gate}
spec:
  metrics:
    - name: health
      interval: 1m
      count: 3
      provider:
        plugin:
          sfn-rollouts/judge:
            test: score
            metrics:
${metrics.replace(/^/gm, "              ")}
`;
  const { spec } = parseRollout([
    { file: "r.yaml", text: judgedRollout() },
    { file: "t.yaml", text: template },
  ]);
  const step = spec.steps[1];
  if (step?.kind !== "analysis") throw new Error("no analysis");
  return step.analysis.templates[0]?.metrics[0] as Metric;
}

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

async function drive(metric: Metric, source: MetricProvider): Promise<AnalysisRun> {
  let run = createRun({ templates: [{ name: "gate", kind: "AnalysisTemplate", metrics: [metric] }] }, T0);
  for (let i = 0; i < 20; i++) {
    const at = nextTickAt(run);
    if (!at) break;
    run = await tick(run, at, new ProviderRouter({ prometheus: source }));
    run = AnalysisRunSchema.parse(JSON.parse(JSON.stringify(run)));
  }
  return run;
}

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
