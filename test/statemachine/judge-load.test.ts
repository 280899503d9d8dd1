import { judgedRollout } from "@sfn-rollouts/test-support/judged-rollout";
import { describe, expect, it } from "vitest";
import { type JudgeSpec, type Metric, parseRollout, SpecError } from "../../statemachine/index.ts";

const ROLLOUT = judgedRollout({ template: "gates", weights: [25] });

const template = (metrics: string) => `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: gates}
spec:
  metrics:
${metrics}
`;

const ERRORS_JUDGE = `    - name: errors
      interval: 30s
      count: 20
      provider:
        plugin:
          sfn-rollouts/judge:
            test: two-proportion
            label: errors
            candidate:
              bad: {prometheus: {query: 'sum(increase(http_requests_total{version="{{rollout.latest}}",code=~"5.."}[{{judge.elapsed}}]))'}}
              n: {prometheus: {query: 'sum(increase(http_requests_total{version="{{rollout.latest}}"}[{{judge.elapsed}}]))'}}
            stable:
              bad: {prometheus: {query: 'sum(increase(http_requests_total{version="{{rollout.stable}}",code=~"5.."}[{{judge.elapsed}}]))'}}
              n: {prometheus: {query: 'sum(increase(http_requests_total{version="{{rollout.stable}}"}[{{judge.elapsed}}]))'}}
`;

function metricsOf(metrics: string): Metric[] {
  const { spec } = parseRollout([
    { file: "rollout.yaml", text: ROLLOUT },
    { file: "gates.yaml", text: template(metrics) },
  ]);
  const step = spec.steps[1];
  if (step?.kind !== "analysis") throw new Error("no analysis step");
  return step.analysis.templates.flatMap((t) => t.metrics);
}

function judgeOf(metrics: string): JudgeSpec {
  const judge = metricsOf(metrics)[0]?.provider.judge;
  if (!judge) throw new Error("no judge");
  return judge;
}

function problemsOf(metrics: string): string[] {
  try {
    metricsOf(metrics);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error("expected a SpecError");
}

describe("the sfn-rollouts/judge metric plugin (Argo form)", () => {
  it("reads a two-proportion gate with safe defaults: one-sided, alpha 0.05, 500 requests per side", () => {
    const [metric] = metricsOf(ERRORS_JUDGE);
    expect(metric).toMatchObject({
      name: "errors",
      interval: 30,
      count: 20,
      failureLimit: 0,
      consecutiveSuccessLimit: 1,
      inconclusiveLimit: 0,
    });
    const judge = metric?.provider.judge;
    expect(judge).toMatchObject({
      test: "two-proportion",
      alpha: 0.05,
      direction: "increase",
      minEffect: 0,
      minSamples: 500,
      horizon: 500,
      data: "counts",
      label: "errors",
    });
    expect(judge?.test === "two-proportion" && judge.candidate.bad?.provider.prometheus?.query).toContain(
      "{{rollout.latest}}",
    );
    expect(judge?.test === "two-proportion" && judge.stable.n?.provider.prometheus?.address).toBe("");
  });

  it("plans the sample size from the stable rate and the worsening to detect (1% → 3%: 605 per side)", () => {
    const judge = judgeOf(
      ERRORS_JUDGE.replace(
        "label: errors",
        "label: errors\n            baseline: 0.01\n            detect: 0.02",
      ),
    );
    expect(judge).toMatchObject({
      test: "two-proportion",
      horizon: 605,
      baseline: 0.01,
      detect: 0.02,
      power: 0.8,
    });
    // minEffect stays the practical threshold: a rollback needs the observed worsening beyond it.
    expect(judge).toMatchObject({ minEffect: 0 });
    expect(
      problemsOf(ERRORS_JUDGE.replace("label: errors", "label: errors\n            baseline: 0.01")),
    ).toEqual([
      "spec.metrics[0].provider.plugin.sfn-rollouts/judge.detect: baseline and detect go together: the stable version's rate and the worsening to detect with `power`",
    ]);
  });

  it("reads counts from one provider call with expressions over its answer", () => {
    const judge = judgeOf(`    - name: errors
      interval: 10s
      count: 6
      provider:
        plugin:
          sfn-rollouts/judge:
            test: sequential-rate
            candidate:
              web: {url: "http://proxy/admin/stats?version={{rollout.latest}}&window={{judge.elapsedSeconds}}", jsonPath: "{$}"}
              bad: result.requests - result.ok
              n: result.requests
            stable:
              web: {url: "http://proxy/admin/stats?version={{rollout.stable}}&window={{judge.elapsedSeconds}}", jsonPath: "{$}"}
`);
    // No minSamples: derived from the fast effect (10× a 1% stable rate) at the gate's alpha 0.05.
    expect(judge).toMatchObject({
      test: "sequential-rate",
      concentration: 2,
      minSamples: 89,
      fast: { ratio: 10, baseline: 0.01 },
    });
    if (judge.test !== "sequential-rate") throw new Error("wrong test");
    expect(judge.candidate.bad?.expression).toBe("result.requests - result.ok");
    expect(judge.candidate.n?.expression).toBe("result.requests");
    // No expressions: the answer is {bad, n} itself.
    expect(judge.stable.bad?.expression).toBe("result.bad");
    expect(judge.stable.n?.expression).toBe("result.n");
    expect(judge.stable.bad?.provider).toEqual(judge.stable.n?.provider);
  });

  it("judges a Prometheus histogram with Mann-Whitney, 150 samples per side by default", () => {
    const judge = judgeOf(`    - name: latency
      provider:
        plugin:
          sfn-rollouts/judge:
            test: mann-whitney
            data: histogram
            candidate: {prometheus: {query: 'sum by (le) (increase(latency_bucket{v="{{rollout.latest}}"}[{{judge.elapsed}}]))'}}
            stable: {prometheus: {query: 'sum by (le) (increase(latency_bucket{v="{{rollout.stable}}"}[{{judge.elapsed}}]))'}}
`);
    expect(judge).toMatchObject({ test: "mann-whitney", data: "histogram", minSamples: 150, horizon: 150 });
  });

  it("reads a score of comparative metrics, each with its weight and criticality", () => {
    const judge = judgeOf(`    - name: health
      interval: 1m
      count: 10
      provider:
        plugin:
          sfn-rollouts/judge:
            test: score
            pass: 90
            metrics:
              - name: errors
                test: comparative
                critical: true
                maxRatio: 1.5
                candidate: {prometheus: {query: x}}
                stable: {prometheus: {query: y}}
              - name: latency
                test: comparative
                data: series
                weight: 2
                candidate: {prometheus: {query: 'z[5m:15s]'}}
                stable: {prometheus: {query: 'w[5m:15s]'}}
`);
    expect(judge).toMatchObject({
      test: "score",
      pass: 90,
      marginal: 75,
      metrics: [
        {
          name: "errors",
          weight: 1,
          critical: true,
          check: { test: "comparative", data: "value", maxRatio: 1.5 },
        },
        {
          name: "latency",
          weight: 2,
          critical: false,
          check: { test: "comparative", data: "series", minPoints: 5 },
        },
      ],
    });
  });

  it("reads the canary gate with its policy, its fingerprint filled in when the analysis starts", () => {
    const judge = judgeOf(`    - name: gate
      interval: 1m
      count: 10
      provider:
        plugin:
          sfn-rollouts/judge:
            test: canary-gate
            rollbackCooldown: 30m
            candidate:
              p95: {prometheus: {query: p95c}}
              errorRate: {prometheus: {query: errc}}
              n: {prometheus: {query: nc}}
            stable:
              p95: {prometheus: {query: p95s}}
`);
    expect(judge).toMatchObject({
      test: "canary-gate",
      p95BudgetRatio: 1.2,
      errorRateCeiling: 0.005,
      minSampleCount: 500,
      fullRolloutDwell: 2,
      rollbackCooldownSeconds: 1800,
      fingerprint: "{{rollout.digest}}",
    });
  });
});

describe("bad judges are named at their field", () => {
  const base = "spec.metrics[0].provider.plugin.sfn-rollouts/judge";

  it("refuses another plugin by name", () => {
    expect(
      problemsOf(`    - name: x
      provider: {plugin: {argoproj-labs/metric-sample: {}}}
`),
    ).toEqual([
      'spec.metrics[0].provider.plugin.argoproj-labs/metric-sample: the metric plugin "argoproj-labs/metric-sample" is not supported: the plugins this controller runs are sfn-rollouts/judge and sfn-rollouts/lambda',
    ]);
  });

  it("names the test, fields that do not apply, missing sides, unknown readings and bad expressions together", () => {
    const lines = problemsOf(`    - name: a
      provider: {plugin: {sfn-rollouts/judge: {test: t-test}}}
    - name: b
      provider:
        plugin:
          sfn-rollouts/judge:
            test: two-proportion
            limit: 0.1
            candidate: {prometheus: {query: x}, bad: "result[0] +", total: "result[1]"}
    - name: c
      provider:
        plugin:
          sfn-rollouts/judge:
            test: sequential-latency
            data: counts
            candidate: {web: {url: "http://x/{{judge.window}}"}}
            stable: {web: {url: "http://x"}}
`);
    expect(lines).toContain(
      "spec.metrics[0].provider.plugin.sfn-rollouts/judge.test: test must be one of two-proportion, one-proportion, mann-whitney, sequential-rate, sequential-latency, comparative, score, canary-gate, kayenta",
    );
    expect(lines).toContain(
      `${base.replace("[0]", "[1]")}.limit: limit does not apply to the two-proportion test`,
    );
    expect(lines).toContain(
      `${base.replace("[0]", "[1]")}.candidate.total: unknown reading "total": the candidate side of two-proportion reads bad, n`,
    );
    expect(lines.find((l) => l.startsWith(`${base.replace("[0]", "[1]")}.candidate.bad:`))).toMatch(
      /unexpected token EOF \(1:11\)/,
    );
    expect(lines).toContain(
      `${base.replace("[0]", "[1]")}.stable: the judge needs to read the stable version: give a provider and what to read`,
    );
    expect(lines.find((l) => l.startsWith(`${base.replace("[0]", "[2]")}.data:`))).toMatch(
      /sequential-latency test judges samples or histogram or summary, not counts$/,
    );
  });

  it("refuses an unknown placeholder, an unknown provider field and a provider it cannot read with", () => {
    const lines = problemsOf(`    - name: a
      provider:
        plugin:
          sfn-rollouts/judge:
            test: comparative
            candidate: {web: {url: "http://x/{{judge.window}}"}}
            stable: {datadog: {query: x}}
    - name: b
      provider:
        plugin:
          sfn-rollouts/judge:
            test: comparative
            candidate: {prometheus: {query: x, step: 15s}}
            stable: {prometheus: {query: y}}
`);
    expect(lines).toContain(
      `${base}.candidate.web: unknown placeholder {{judge.window}}: use {{judge.elapsed}}, {{judge.elapsedSeconds}}, {{judge.since}}, {{judge.now}}`,
    );
    expect(lines).toContain(
      `${base}.stable.datadog: a judge reads through prometheus, web, cloudWatch or samples, not datadog`,
    );
    expect(lines).toContain(`${base.replace("[0]", "[1]")}.candidate.prometheus: unknown field "step"`);
  });

  it("keeps Argo's rules meaningful for a judge: a streak of one, a failure limit, no conditions", () => {
    const lines = problemsOf(`    - name: a
      consecutiveSuccessLimit: 0
      failureLimit: -1
      successCondition: result > 1
      provider:
        plugin:
          sfn-rollouts/judge:
            test: comparative
            candidate: {prometheus: {query: x}}
            stable: {prometheus: {query: y}}
`);
    expect(lines).toContain(
      "spec.metrics[0].consecutiveSuccessLimit: a judge ends on a promote decision: consecutiveSuccessLimit must be >= 1 (with 0 a judge that only held would end Successful)",
    );
    expect(lines).toContain(
      "spec.metrics[0].failureLimit: a judge that can never fail cannot roll back: use dryRun to watch one without acting",
    );
    expect(lines).toContain(
      "spec.metrics[0].successCondition: a judge decides by itself: remove successCondition",
    );
  });

  it("refuses a sequential rate test on a metric that is worse when it drops, and a horizon under minSamples", () => {
    const lines = problemsOf(`    - name: a
      provider:
        plugin:
          sfn-rollouts/judge:
            test: sequential-rate
            direction: decrease
            candidate: {web: {url: "http://x"}}
            stable: {web: {url: "http://y"}}
    - name: b
      provider:
        plugin:
          sfn-rollouts/judge:
            test: two-proportion
            samples: 100
            candidate: {web: {url: "http://x"}}
            stable: {web: {url: "http://y"}}
`);
    expect(lines.find((l) => l.startsWith(`${base}.direction:`))).toMatch(/bad events that increase/);
    expect(lines).toContain(
      `${base.replace("[0]", "[1]")}.samples: samples (100) is below minSamples (500): no decision before both`,
    );
  });

  it("refuses a score inside a score and a comparative minSamples without the candidate's n", () => {
    const lines = problemsOf(`    - name: a
      provider:
        plugin:
          sfn-rollouts/judge:
            test: score
            metrics:
              - {name: inner, test: score, metrics: []}
              - name: c
                test: comparative
                minSamples: 200
                candidate: {prometheus: {query: x}}
                stable: {prometheus: {query: y}}
`);
    expect(lines).toContain(
      `${base}.metrics[0].test: a score combines statistical and comparative judges; a score cannot be one of its metrics`,
    );
    expect(lines).toContain(
      `${base}.metrics[1].minSamples: minSamples needs the candidate's \`n\` reading (how many requests it served)`,
    );
  });
});

describe("the canary gate across a rollout", () => {
  const gate = (count: number) => `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: gate}
spec:
  metrics:
    - name: gate
      interval: 1m
      count: ${count}
      provider:
        plugin:
          sfn-rollouts/judge:
            test: canary-gate
            rollbackCooldown: 20m
            candidate:
              p95: {prometheus: {query: a}}
              errorRate: {prometheus: {query: b}}
              n: {prometheus: {query: c}}
            stable: {p95: {prometheus: {query: d}}}
`;
  const rollout = judgedRollout({ weights: [25, 100] });

  it("needs two clean windows in a row at 100%, one before, and records the cooldown for the trigger", () => {
    const { spec } = parseRollout([
      { file: "r.yaml", text: rollout },
      { file: "g.yaml", text: gate(5) },
    ]);
    const streak = (i: number) => {
      const step = spec.steps[i];
      return step?.kind === "analysis"
        ? step.analysis.templates[0]?.metrics[0]?.consecutiveSuccessLimit
        : undefined;
    };
    expect([streak(1), streak(3)]).toEqual([1, 2]);
    expect(spec.rollbackCooldown).toEqual({ seconds: 1200, maxPerHour: 3 });
  });

  it("refuses a count that cannot hold the clean windows at 100%", () => {
    expect(() =>
      parseRollout([
        { file: "r.yaml", text: rollout },
        { file: "g.yaml", text: gate(1) },
      ]),
    ).toThrow(
      'r.yaml: document 1 (Rollout shop): step 4: metric "gate": at 100% the canary gate needs 2 clean windows in a row: count (1) must be at least 2',
    );
  });
});
