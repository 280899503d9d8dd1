import { describe, expect, it } from "vitest";
import { compileCondition } from "../../statemachine/conditions.ts";
import { loadAnalysisTemplates } from "../../statemachine/load.ts";

/**
 * The ready-made Lambda templates must load with the project's own Argo parser, select one
 * version with FunctionName + Resource + ExecutedVersion, and judge CloudWatch results the way
 * the analysis will: a breach fails, healthy points pass, no data is neither (Inconclusive).
 */
const ARGS = { "function-name": "checkout", alias: "live", version: "8" };
const FILES = {
  errors: "examples/templates/lambda-errors.yaml",
  throttles: "examples/templates/lambda-throttles.yaml",
  p95: "examples/templates/lambda-duration-p95.yaml",
};

const series = (values: number[]) => [
  { Id: "q", Label: "q", StatusCode: "Complete", Timestamps: [], Values: values, Messages: [] },
];

describe.each(Object.entries(FILES))("%s template", (_name, file) => {
  it("loads, substitutes the arguments and selects the version by ExecutedVersion", async () => {
    const spec = await loadAnalysisTemplates([file], ARGS);
    const metric = spec.templates[0]?.metrics[0];
    const cw = metric?.provider.cloudWatch;
    expect(cw?.interval).toBe(300);
    const stats = (cw?.metricDataQueries ?? []).filter((q) => q.metricStat);
    expect(stats.length).toBeGreaterThan(0);
    for (const q of stats) {
      expect(q.metricStat?.metric.namespace).toBe("AWS/Lambda");
      expect(q.metricStat?.period).toBe(60);
      expect(q.metricStat?.metric.dimensions).toEqual([
        { name: "FunctionName", value: "checkout" },
        { name: "Resource", value: "checkout:live" },
        { name: "ExecutedVersion", value: "8" },
      ]);
    }
    // Exactly one query returns data: result[0] is the judged series.
    const returned = (cw?.metricDataQueries ?? []).filter((q) => q.returnData !== false);
    expect(returned).toHaveLength(1);
    expect(JSON.stringify(metric)).not.toContain("{{");
  });

  it("fails on a breach, passes healthy points and is Inconclusive without data", async () => {
    const spec = await loadAnalysisTemplates([file], ARGS);
    const metric = spec.templates[0]?.metrics[0];
    const success = compileCondition(metric?.successCondition ?? "");
    const failure = compileCondition(metric?.failureCondition ?? "");
    const limit = file.includes("p95") ? 500 : file.includes("throttles") ? 0.005 : 0.01;
    const healthy = series([0, limit / 2, limit]);
    const breach = series([0, limit * 1.5]);
    expect([success.evaluate(healthy), failure.evaluate(healthy)]).toEqual([true, false]);
    expect([success.evaluate(breach), failure.evaluate(breach)]).toEqual([false, true]);
    expect([success.evaluate(series([])), failure.evaluate(series([]))]).toEqual([false, false]);
  });
});

it("takes a custom limit through its argument", async () => {
  const spec = await loadAnalysisTemplates([FILES.errors], { ...ARGS, "max-error-rate": "0.05" });
  const success = compileCondition(spec.templates[0]?.metrics[0]?.successCondition ?? "");
  expect(success.evaluate(series([0.04]))).toBe(true);
  expect(success.evaluate(series([0.06]))).toBe(false);
});
