import { judgedRollout } from "@sfn-rollouts/test-support/judged-rollout";
import { describe, expect, it } from "vitest";
import {
  type JudgeSpec,
  type Metric,
  parseRollout,
  providersRead,
  SpecError,
} from "../../statemachine/index.ts";
import { describeJudge, judgeSamplesNeeded } from "../../statemachine/judge-describe.ts";

const ROLLOUT = judgedRollout({ template: "canary", weights: [25] });
const base = "spec.metrics[0].provider.plugin.sfn-rollouts/judge";

/** A template with one `kayenta` judge whose fields are `fields` (YAML, indented for the plugin entry). */
const template = (fields: string) => `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: canary}
spec:
  metrics:
    - name: canary
      interval: 1m
      count: 15
      provider:
        plugin:
          sfn-rollouts/judge:
            test: kayenta
${fields}
`;

/** A metric reading the series of both versions through Prometheus subqueries. */
const metric = (name: string, extra = "") => `              - name: ${name}${extra}
                candidate: {prometheus: {query: '(${name}{version="{{rollout.latest}}"})[{{judge.elapsed}}:15s]'}}
                stable: {prometheus: {query: '(${name}{version="{{rollout.stable}}"})[{{judge.elapsed}}:15s]'}}`;

function metricsOf(fields: string): Metric[] {
  const { spec } = parseRollout([
    { file: "rollout.yaml", text: ROLLOUT },
    { file: "canary.yaml", text: template(fields) },
  ]);
  const step = spec.steps[1];
  if (step?.kind !== "analysis") throw new Error("no analysis step");
  return step.analysis.templates.flatMap((t) => t.metrics);
}

function judgeOf(fields: string): JudgeSpec {
  const judge = metricsOf(fields)[0]?.provider.judge;
  if (!judge) throw new Error("no judge");
  return judge;
}

function problemsOf(fields: string): string[] {
  try {
    metricsOf(fields);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error("expected a SpecError");
}

describe("a kayenta judge (Argo form)", () => {
  it("reads a whole canary config with Kayenta's defaults: either way, NaN removed, outliers kept, 0.25 and 98%", () => {
    const judge = judgeOf(`            metrics:
${metric("latency", "\n                groups: [latency]")}
${metric("errors", "\n                groups: [errors]\n                direction: increase\n                critical: true\n                nanStrategy: replace")}
            groupWeights: {latency: 60, errors: 40}`);
    expect(judge).toMatchObject({
      test: "kayenta",
      groupWeights: { latency: 60, errors: 40 },
      pass: 95,
      marginal: 75,
      tolerance: 0.25,
      confidence: 0.98,
    });
    if (judge.test !== "kayenta") throw new Error("not kayenta");
    expect(judge.metrics[0]).toMatchObject({
      name: "latency",
      groups: ["latency"],
      direction: "either",
      nanStrategy: "remove",
      outliers: { strategy: "keep", outlierFactor: 3 },
      effectSize: {
        measure: "meanRatio",
        allowedIncrease: 1,
        allowedDecrease: 1,
        criticalIncrease: 1,
        criticalDecrease: 1,
      },
      critical: false,
      mustHaveData: false,
      muted: false,
    });
    expect(judge.metrics[0]?.candidate.value?.provider.prometheus?.query).toContain("{{judge.elapsed}}:15s");
    expect(judge.metrics[1]).toMatchObject({ direction: "increase", critical: true, nanStrategy: "replace" });
  });

  it("says in the plan what it judges and how it decides, and counts no requests", () => {
    const judge = judgeOf(`            metrics:
${metric("latency")}
${metric("errors", "\n                critical: true")}
${metric("cpu", "\n                muted: true")}`);
    expect(describeJudge(judge)).toBe(
      "Kayenta judge of latency, errors (critical), cpu (muted) (Mann-Whitney over the step's series, 98% interval): rolls back at a score <= marginal 75, promotes at pass 95 at its end",
    );
    expect(judgeSamplesNeeded(judge)).toBeUndefined();
  });

  it("reads through every metric's providers, so the construct grants what each reading needs", () => {
    const [canary] = metricsOf(`            metrics:
${metric("latency")}
${metric("errors")}`);
    expect(providersRead(canary!.provider).map((p) => p.prometheus?.query)).toEqual([
      '(latency{version="{{rollout.latest}}"})[{{judge.elapsed}}:15s]',
      '(latency{version="{{rollout.stable}}"})[{{judge.elapsed}}:15s]',
      '(errors{version="{{rollout.latest}}"})[{{judge.elapsed}}:15s]',
      '(errors{version="{{rollout.stable}}"})[{{judge.elapsed}}:15s]',
    ]);
  });

  it("puts a metric without groups in a group of its own, and takes CLES thresholds around 0.5", () => {
    const judge = judgeOf(`            metrics:
${metric("latency", "\n                effectSize: {measure: cles, allowedIncrease: 0.8}")}
            pass: 90
            marginal: 50
            tolerance: 0.1
            confidence: 0.95`);
    expect(judge).toMatchObject({
      pass: 90,
      marginal: 50,
      tolerance: 0.1,
      confidence: 0.95,
      groupWeights: {},
      metrics: [
        {
          groups: ["latency"],
          effectSize: { measure: "cles", allowedIncrease: 0.8, allowedDecrease: 0.5, criticalIncrease: 0.5 },
        },
      ],
    });
  });
});

describe("a bad kayenta judge is named at its field", () => {
  it("refuses thresholds for a change the metric never fails on, or critical ones on a metric that is not", () => {
    const lines = problemsOf(`            metrics:
${metric("latency", "\n                direction: increase\n                effectSize: {allowedDecrease: 0.9, criticalIncrease: 2}")}`);
    expect(lines).toEqual([
      `${base}.metrics[0].effectSize.criticalIncrease: criticalIncrease applies to a critical metric: add critical: true`,
      `${base}.metrics[0].effectSize.allowedDecrease: allowedDecrease does not apply to direction: increase (a decrease never fails this metric)`,
    ]);
  });

  it("refuses thresholds on the wrong side of no change, in the measure's own terms", () => {
    const lines = problemsOf(`            metrics:
${metric("a", "\n                effectSize: {allowedIncrease: 0.9}")}
${metric("b", "\n                effectSize: {measure: cles, allowedDecrease: 0.6}")}`);
    expect(lines).toEqual([
      `${base}.metrics[0].effectSize.allowedIncrease: allowedIncrease is a ratio of the means (1 is no change): from 1 up, got 0.9`,
      `${base}.metrics[1].effectSize.allowedDecrease: allowedDecrease is a common language effect size (0.5 is no change): from 0 to 0.5, got 0.6`,
    ]);
  });

  it("refuses contradictions: an outlier factor kept, a muted critical, mustHaveData with NaN replaced", () => {
    const lines = problemsOf(`            metrics:
${metric("a", "\n                outliers: {outlierFactor: 2}")}
${metric("b", "\n                muted: true\n                critical: true")}
${metric("c", "\n                mustHaveData: true\n                nanStrategy: replace")}`);
    expect(lines).toEqual([
      `${base}.metrics[0].outliers.outlierFactor: outlierFactor applies to outliers.strategy: remove`,
      `${base}.metrics[1].critical: a muted metric is left out of the score: it cannot fail the canary as critical`,
      `${base}.metrics[2].mustHaveData: with nanStrategy: replace a version without data passes (Kayenta): mustHaveData would never apply`,
    ]);
  });

  it("refuses group weights that name no group or do not share out 100", () => {
    const two = `            metrics:
${metric("a", "\n                groups: [x]")}
${metric("b", "\n                groups: [y]")}`;
    expect(problemsOf(`${two}\n            groupWeights: {x: 50, z: 50}`)).toEqual([
      `${base}.groupWeights.z: no scored metric is in group "z" (groups: x, y)`,
    ]);
    expect(problemsOf(`${two}\n            groupWeights: {x: 50, y: 40}`)).toEqual([
      `${base}.groupWeights: the group weights are percentages of the score: they add up to 90, not 100`,
    ]);
    expect(problemsOf(`${two}\n            groupWeights: {x: 100}`)).toEqual([
      `${base}.groupWeights: the groups without a weight (y) share what the weights leave of 100, and they add up to 100`,
    ]);
    expect(problemsOf(`${two}\n            groupWeights: {x: -5}`)).toEqual([
      `${base}.groupWeights.x: Too small: expected number to be >=0`,
    ]);
  });

  it("names unknown fields, a metric twice, marginal above pass, every metric muted, and a metric inside a score", () => {
    expect(
      problemsOf(`            metrics:
${metric("a", "\n                weight: 2")}
${metric("a")}
            marginal: 99`),
    ).toEqual([
      `${base}.marginal: marginal (99) must not exceed pass (95)`,
      `${base}.metrics[0]: unknown field "weight"`,
      `${base}.metrics[1].name: metric "a" appears twice`,
    ]);
    expect(
      problemsOf(`            metrics:
${metric("a", "\n                muted: true")}`),
    ).toEqual([`${base}.metrics: every metric is muted: nothing would be scored`]);
    expect(
      problemsOf(`            alpha: 0.05
            metrics:
${metric("a")}`),
    ).toEqual([`${base}.alpha: alpha does not apply to the kayenta test`]);
  });

  it("refuses a side that does not read a series value", () => {
    expect(
      problemsOf(`            metrics:
              - name: a
                candidate: {bad: {prometheus: {query: x}}}
                stable: {value: {prometheus: {query: y}}}`),
    ).toEqual([
      `${base}.metrics[0].candidate.bad: unknown reading "bad": the candidate side of kayenta reads value`,
    ]);
  });
});
