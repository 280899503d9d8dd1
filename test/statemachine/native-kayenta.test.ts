import { describe, expect, it } from "vitest";
import {
  loadRollout,
  type Metric,
  parseRollout,
  type RolloutSpec,
  SpecError,
} from "../../statemachine/index.ts";
import { describeJudge } from "../../statemachine/judge-describe.ts";

/**
 * The native reference's descriptor with `analysis: kayenta`: the whole health block becomes one
 * `kayenta` judge named `health`, with Kayenta's settings read at the user's own field paths.
 */

const analyses = (spec: RolloutSpec): Metric[][] =>
  spec.steps.flatMap((s) => (s.kind === "analysis" ? [s.analysis.templates.flatMap((t) => t.metrics)] : []));

const descriptor = (metrics: string, analysis = "") => `rollout:
  strategy: traffic
  traffic: {steps: [5, 50, 100], bake: 10m}
  health:
    interval: 1m
${analysis}    metrics:
${metrics}`;

const metric = (name: string, extra = "", analysis = "kayenta") => `      - name: ${name}
        compare: stable
        analysis: ${analysis}
        query: '${name}{track="{track}"}'${extra ? `\n        ${extra.replace(/\n/g, "\n        ")}` : ""}
`;

function judgeOf(text: string) {
  const { spec } = parseRollout([{ file: "envconfig/shop/shop/prod.yml", text }]);
  const [health] = analyses(spec)[0] ?? [];
  return { metric: health, judge: health?.provider.judge };
}

function problemsOf(text: string): string[] {
  try {
    parseRollout([{ file: "envconfig/shop/shop/prod.yml", text }]);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).problems.map((p) => `${p.path ?? ""}: ${p.message}`);
  }
  throw new Error("expected a SpecError");
}

describe("analysis: kayenta in the native reference's descriptor", () => {
  it("reads examples/envconfig/shop/shop/kayenta.yml: one kayenta judge through each bake", async () => {
    const { spec } = await loadRollout(["examples/envconfig/shop/shop/kayenta.yml"]);
    const [health, ...others] = analyses(spec)[0] ?? [];
    expect(others).toEqual([]);
    expect(health).toMatchObject({ name: "health", interval: 60, count: 15 });
    const judge = health?.provider.judge;
    if (judge?.test !== "kayenta") throw new Error("not kayenta");
    expect(judge).toMatchObject({
      pass: 95,
      marginal: 75,
      groupWeights: { errors: 50, latency: 30, throughput: 20 },
      tolerance: 0.25,
      confidence: 0.98,
    });
    expect(
      judge.metrics.map((m) => [m.name, m.groups, m.direction, m.nanStrategy, m.critical, m.mustHaveData]),
    ).toEqual([
      ["errors", ["errors"], "increase", "replace", true, false],
      ["latency-p99", ["latency"], "increase", "remove", false, false],
      ["throughput", ["throughput"], "decrease", "remove", false, true],
    ]);
    expect(judge.metrics[0]?.effectSize).toMatchObject({ criticalIncrease: 2, allowedIncrease: 1 });
    expect(judge.metrics[1]).toMatchObject({
      outliers: { strategy: "remove", outlierFactor: 3 },
      effectSize: { allowedIncrease: 1.2 },
    });
    expect(judge.metrics[0]?.candidate.value?.provider.prometheus?.query).toMatch(
      /^\(sum\(rate\(.*track="\{\{rollout\.latest\}\}".*\)\[\{\{judge\.elapsed\}\}:15s\]$/,
    );
    expect(judge.metrics[2]?.stable.value).toMatchObject({
      expression: "result[0].Values",
      sinceStart: true,
      provider: { cloudWatch: { metricDataQueries: [{ id: "m", period: 30 }] } },
    });
  });

  it("uses Kayenta's defaults and thresholds without an analysis block, and the metrics' weights as their groups' shares", () => {
    const { judge } = judgeOf(descriptor(`${metric("errors", "weight: 3")}${metric("latency")}`));
    if (judge?.test !== "kayenta") throw new Error("not kayenta");
    expect(judge).toMatchObject({ pass: 95, marginal: 75, groupWeights: { errors: 75, latency: 25 } });
    expect(judge.metrics.map((m) => [m.groups, m.direction, m.nanStrategy])).toEqual([
      [["errors"], "either", "remove"],
      [["latency"], "either", "remove"],
    ]);
  });

  it("refuses a block that mixes analyses, and what only the other analysis reads, at the user's fields", () => {
    expect(
      problemsOf(
        descriptor(
          `${metric("errors", "maxRatio: 1.5\nalpha: 0.01")}${metric("latency", "", "mann-whitney")}`,
        ),
      ),
    ).toEqual([
      "rollout.health.metrics[0].maxRatio: maxRatio applies to analysis: mann-whitney; Kayenta fails a metric from effectSize.allowedIncrease",
      "rollout.health.metrics[0].alpha: alpha applies to analysis: mann-whitney; Kayenta decides by the shift's confidence interval, not a p-value",
      'rollout.health.metrics[1].analysis: metric "errors" is analysis: kayenta, which scores the whole health block: every metric must be analysis: kayenta',
    ]);
    expect(
      problemsOf(
        descriptor(
          metric("latency", "outliers: {strategy: remove}", "mann-whitney"),
          "    analysis: {groupWeights: {x: 100}}\n",
        ),
      ),
    ).toEqual([
      "rollout.health.metrics[0].outliers: outliers applies to analysis: kayenta",
      "rollout.health.analysis.groupWeights: groupWeights applies to metrics with analysis: kayenta",
    ]);
  });

  it("names Kayenta's own problems at the user's fields: thresholds, contradictions, group weights", () => {
    expect(
      problemsOf(
        descriptor(
          `${metric("errors", "direction: increase\neffectSize: {allowedDecrease: 0.5}")}${metric("latency", "mustHaveData: true\nnanStrategy: replace")}`,
        ),
      ),
    ).toEqual([
      "rollout.health.metrics[0].effectSize.allowedDecrease: allowedDecrease does not apply to direction: increase (a decrease never fails this metric)",
      "rollout.health.metrics[1].mustHaveData: with nanStrategy: replace a version without data passes (Kayenta): mustHaveData would never apply",
    ]);
    const grouped = `${metric("errors", "groups: [e]")}${metric("latency", "groups: [l]")}`;
    expect(problemsOf(descriptor(grouped, "    analysis: {groupWeights: {e: 100}}\n"))).toEqual([
      "rollout.health.analysis.groupWeights: the groups without a weight (l) share what the weights leave of 100, and they add up to 100",
    ]);
    expect(problemsOf(descriptor(`${metric("errors", "groups: [e]\nweight: 2")}`))).toEqual([
      "rollout.health.metrics[0].weight: Kayenta weighs groups, not metrics: with groups or analysis.groupWeights, weigh the groups in analysis.groupWeights",
    ]);
  });
});

describe("nanStrategy on the native reference's analysis: mann-whitney", () => {
  it("passes it to the series' comparison, and refuses it on a threshold of one reading", () => {
    const { judge } = judgeOf(descriptor(metric("errors", "nanStrategy: replace", "mann-whitney")));
    expect(judge).toMatchObject({ test: "comparative", data: "series", nanStrategy: "replace" });
    expect(judge && describeJudge(judge)).toBe(
      "against stable: Mann-Whitney over the step's series (p < 0.05 and ratio <= 1; at least 5 points); NaN points count as 0",
    );
    expect(
      problemsOf(`rollout:
  strategy: traffic
  traffic: {steps: [5, 50, 100], bake: 10m}
  health:
    metrics:
      - name: errors
        compare: stable
        query: x
        nanStrategy: replace
`),
    ).toEqual(["rollout.health.metrics[0].nanStrategy: nanStrategy applies to analysis: mann-whitney"]);
  });
});
