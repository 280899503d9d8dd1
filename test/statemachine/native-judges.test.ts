import { judgedRollout } from "@sfn-rollouts/test-support/judged-rollout";
import { describe, expect, it } from "vitest";
import {
  compile,
  loadRollout,
  type Metric,
  parseRollout,
  parseSources,
  type RolloutSpec,
  SpecError,
} from "../../statemachine/index.ts";

const analyses = (spec: RolloutSpec): Metric[][] =>
  spec.steps.flatMap((s) => (s.kind === "analysis" ? [s.analysis.templates.flatMap((t) => t.metrics)] : []));

function problemsOf(file: string, text: string): string[] {
  try {
    parseRollout([{ file, text }]);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).problems.map((p) => `${p.path ?? ""}: ${p.message}`);
  }
  throw new Error("expected a SpecError");
}

describe("the native reference's descriptor layout, read unchanged", () => {
  it("reads envconfig/shop/shop/prod.yml: the application from the path, the gate read through each bake", async () => {
    const { spec } = await loadRollout(["examples/envconfig/shop/shop/prod.yml"]);
    expect(spec).toMatchObject({
      name: "shop",
      source: "native",
      trafficRouting: true,
      scaleDownDelaySeconds: 1800,
      onFailure: "rollback",
      testers: { header: "x-canary", value: "always" },
    });
    expect(spec.steps.map((s) => (s.kind === "setWeight" ? s.weight : s.kind))).toEqual([
      "setHeaderRoute",
      1,
      "analysis",
      5,
      "analysis",
      25,
      "analysis",
      "pause",
      50,
      "analysis",
      100,
    ]);
    // A reading every minute through the 10-minute bake; the last one at its end decides.
    const [errors] = analyses(spec)[0] ?? [];
    expect(errors).toMatchObject({ name: "errors", interval: 60, initialDelay: 60, count: 10 });
    const judge = errors?.provider.judge;
    if (judge?.test !== "comparative") throw new Error("not comparative");
    expect(judge).toMatchObject({ data: "value", maxRatio: 1.5, minSamples: 200, direction: "increase" });
    expect(judge.candidate.value?.provider.prometheus?.query).toBe(
      'sum(rate(http_requests_total{app="shop",track="{{rollout.latest}}",code=~"5.."}[5m])) / sum(rate(http_requests_total{app="shop",track="{{rollout.latest}}"}[5m]))',
    );
    expect(judge.stable.value?.provider.prometheus?.query).toContain('track="{{rollout.stable}}"');
    expect(judge.candidate.n?.provider.prometheus?.query).toBe(
      'sum(increase(http_requests_total{app="shop",track="{{rollout.latest}}"}[5m]))',
    );
  });

  it("scores the canary analysis: series over the step, weights, a critical metric, CloudWatch", async () => {
    const { spec } = await loadRollout(["examples/envconfig/shop/shop/canary-analysis.yml"]);
    const [health] = analyses(spec)[0] ?? [];
    expect(health).toMatchObject({ name: "health", interval: 60, count: 15 });
    const judge = health?.provider.judge;
    if (judge?.test !== "score") throw new Error("not a score");
    expect(judge).toMatchObject({ pass: 95, marginal: 75 });
    expect(judge.metrics.map((m) => [m.name, m.weight, m.critical, m.check.test])).toEqual([
      ["errors", 1, true, "comparative"],
      ["latency-p99", 2, false, "comparative"],
      ["throughput", 1, false, "comparative"],
    ]);
    const errors = judge.metrics[0]?.check;
    if (errors?.test !== "comparative") throw new Error("not comparative");
    expect(errors.data).toBe("series");
    expect(errors.candidate.value?.provider.prometheus?.query).toMatch(
      /^\(sum\(rate\(.*\)\)\[\{\{judge\.elapsed\}\}:15s\]$/,
    );
    const throughput = judge.metrics[2]?.check;
    if (throughput?.test !== "comparative") throw new Error("not comparative");
    expect(throughput).toMatchObject({ direction: "decrease", minRatio: 0.8, data: "series" });
    expect(throughput.candidate.value).toMatchObject({
      expression: "result[0].Values",
      sinceStart: true,
      provider: {
        cloudWatch: {
          metricDataQueries: [
            {
              id: "m",
              // The default step, 15 s, rounded up to a period CloudWatch accepts.
              period: 30,
              expression: `SELECT SUM(RequestCount) FROM "AWS/ApplicationELB" WHERE TargetGroup = 'shop-{{rollout.latest}}'`,
            },
          ],
        },
      },
    });
  });

  it("refuses the metric systems it cannot read by name, and what only other platforms have", () => {
    const lines = problemsOf(
      "envconfig/shop/shop/prod.yml",
      `rollout:
  strategy: traffic
  waves: [{name: eu, select: "region=eu-1"}]
  traffic: {steps: [5, 100], bake: 1m, testers: {tag: canary}}
  health:
    metrics:
      - name: latency-p99
        provider: datadog
        compare: stable
        query: 'p99:trace.http.request.duration{service:{application},track:{track}}'
      - name: errors
        query: 'x'
`,
    );
    expect(lines).toEqual([
      "rollout.traffic.testers.tag: testers.tag routes by a Cloud Run revision tag: on AWS targets give testers.header",
    ]);
    const health = problemsOf(
      "envconfig/shop/shop/prod.yml",
      `rollout:
  strategy: traffic
  traffic: {steps: [5, 100], bake: 1m}
  health:
    metrics:
      - name: latency-p99
        provider: datadog
        compare: stable
        query: 'p99:trace.http.request.duration{service:{application},track:{track}}'
      - name: errors
        query: 'x'
      - name: t
        compare: stable
        query: y
        step: 30s
`,
    );
    expect(health).toEqual([
      "rollout.health.metrics[0].provider: the datadog provider is not supported: health metrics read prometheus or cloudwatch",
      "rollout.health.metrics[1].compare: only compare: stable metrics are read (the candidate against the stable version)",
      "rollout.health.metrics[2].step: step applies to analysis: mann-whitney",
    ]);
  });

  it("names what is wrong at the descriptor's own paths and notes what it skipped", () => {
    expect(
      problemsOf(
        "prod.yml",
        `rollout:
  strategy: blue-green
  traffic: {steps: [5, 50, 40]}
  approvalsBetween: ["7"]
`,
      ),
    ).toEqual([
      'rollout.strategy: strategy "blue-green" is not read here: the percentage rollout is strategy: traffic',
      "name: the descriptor does not name its application: add `name: shop` beside `rollout:` (or keep it at envconfig/<team>/<application>/<environment>.yml)",
    ]);
    expect(
      problemsOf(
        "prod.yml",
        `name: shop
rollout:
  strategy: traffic
  traffic: {steps: [5, 50, 40]}
  approvalsBetween: ["7"]
`,
      ),
    ).toEqual([
      "rollout.traffic.steps[2]: percentages must increase: 40 after 50",
      "rollout.traffic.steps[2]: the last percentage must be 100",
      'rollout.approvalsBetween: "7" is not "0" nor the percentage of a step before the last (5, 50)',
    ]);
    const loaded = parseSources([
      {
        file: "prod.yml",
        text: `name: shop
targets: [{host: 10.0.1.10, labels: {slot: a}}]
traffic: {router: {provider: aws-alb}}
rollout: {strategy: traffic, traffic: {steps: [100], replicas: proportional}}
`,
      },
    ]);
    expect(loaded.notes).toEqual([
      "prod.yml: document 1: skipped targets, traffic (the environment: addRollout's target describes it)",
      "prod.yml: document 1: rollout.traffic.replicas: proportional has no effect: AWS targets size the candidate themselves",
    ]);
  });
});

describe("the flat native form's health block and judges", () => {
  const flat = `
apiVersion: sfn-rollouts/v1
name: shop
steps: [10, 50, 100]
bake: 5m
onDrift: ignore
health:
  interval: 30s
  metrics:
    - name: errors
      compare: stable
      query: 'sum(rate(errors_total{version="{track}"}[1m]))'
      maxRatio: 1.5
  judge:
    - name: errors-live
      test: sequential-rate
      label: errors
      candidate:
        bad: {prometheus: {query: 'sum(increase(errors_total{version="{{rollout.latest}}"}[{{judge.elapsed}}]))'}}
        n: {prometheus: {query: 'sum(increase(requests_total{version="{{rollout.latest}}"}[{{judge.elapsed}}]))'}}
      stable:
        bad: {prometheus: {query: 'sum(increase(errors_total{version="{{rollout.stable}}"}[{{judge.elapsed}}]))'}}
        n: {prometheus: {query: 'sum(increase(requests_total{version="{{rollout.stable}}"}[{{judge.elapsed}}]))'}}
`;

  it("runs the gate and the sequential judge together through each bake, and overwrites drift", () => {
    const { spec } = parseRollout([{ file: "shop.yaml", text: flat }]);
    const [first] = analyses(spec);
    expect(first?.map((m) => [m.name, m.interval, m.count, m.provider.judge?.test])).toEqual([
      ["errors", 30, 10, "comparative"],
      ["errors-live", 30, 10, "sequential-rate"],
    ]);
    expect(spec.onDrift).toBe("ignore");
    const asl = compile(spec);
    const setWeight = asl.States["Step01-SetWeight-10"] as { Parameters: { Payload: { onDrift?: string } } };
    expect(setWeight.Parameters.Payload.onDrift).toBe("ignore");
  });

  it("gives the same run as the same gate written as an Argo plugin entry", () => {
    const { spec: native } = parseRollout([{ file: "shop.yaml", text: flat }]);
    const { spec: argo } = parseRollout([
      {
        file: "rollout.yaml",
        text: `${judgedRollout({ template: "gates", weights: [10] })}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: gates}
spec:
  metrics:
    - name: errors
      interval: 30s
      initialDelay: 30s
      count: 10
      provider:
        plugin:
          sfn-rollouts/judge:
            test: comparative
            maxRatio: 1.5
            candidate: {prometheus: {query: 'sum(rate(errors_total{version="{{rollout.latest}}"}[1m]))'}}
            stable: {prometheus: {query: 'sum(rate(errors_total{version="{{rollout.stable}}"}[1m]))'}}
`,
      },
    ]);
    expect(analyses(argo)[0]?.[0]).toEqual(analyses(native)[0]?.[0]);
  });

  it("refuses a health block with an explicit step list, and a health block with nothing in it", () => {
    expect(
      problemsOf(
        "shop.yaml",
        "name: shop\nsteps: [{setWeight: 10}]\nhealth: {metrics: [{name: e, compare: stable, query: x}]}\n",
      ),
    ).toEqual([
      "health: bake, health and approvalsBetween apply to percentage steps; with an explicit step list use pause and analysis steps",
    ]);
    expect(problemsOf("shop.yaml", "name: shop\nsteps: [10, 100]\nhealth: {interval: 1m}\n")).toEqual([
      "health: a health block needs metrics or judge entries",
    ]);
  });
});
