import { describe, expect, it } from "vitest";
import { type Finding, type ReviewOptions, review, reviewSources } from "../../statemachine/review/index.ts";

/**
 * `rollouts review`'s checks, each with a rollout that fails it and one that passes, written
 * inline: a Rollout (4 replicas, no traffic router unless asked, the pod template carrying the
 * new version v2) and an AnalysisTemplate of one metric.
 */

interface RolloutShape {
  steps: string[];
  replicas?: number;
  routing?: boolean;
  args?: string;
  annotations?: string;
}

function rolloutYaml(r: RolloutShape): string {
  const analysisArgs = r.args ?? "";
  const steps = r.steps
    .map((s) =>
      s === "analysis"
        ? `        - analysis: {templates: [{templateName: t}]${analysisArgs}}`
        : `        - ${s}`,
    )
    .join("\n");
  return `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: shop${r.annotations ? `\n  annotations: ${r.annotations}` : ""}
spec:
  replicas: ${r.replicas ?? 4}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: app, image: "shop:v2", env: [{name: VERSION, value: v2}]}]}
  strategy:
    canary:${r.routing ? "\n      trafficRouting: {alb: {ingress: shop, servicePort: 80}}" : ""}
      steps:
${steps}
`;
}

/** A template `t` with one metric: its fields as YAML lines under `- name: m`. */
function templateYaml(metric: string, args = "[{name: version}]"): string {
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  args: ${args}
  metrics:
    - name: m
${metric
  .split("\n")
  .map((l) => `      ${l}`)
  .join("\n")}
`;
}

/** A Prometheus metric with this query (and a condition on result[0] unless told otherwise). */
function prometheus(query: string, extra = "successCondition: result[0] >= 0.95"): string {
  return `${extra}\nprovider:\n  prometheus:\n    address: http://prometheus:9090\n    query: '${query}'`;
}

const OK_QUERY =
  'sum(rate(http_requests_total{version="{{args.version}}",code=~"2.."}[1m])) / sum(rate(http_requests_total{version="{{args.version}}"}[1m]))';

function findings(
  r: RolloutShape,
  metric = prometheus(OK_QUERY, "initialDelay: 1m\nsuccessCondition: result[0] >= 0.95"),
  options: ReviewOptions = {},
  templateArgs?: string,
): Finding[] {
  const { subject } = reviewSources([
    { file: "rollout.yaml", text: rolloutYaml(r) },
    { file: "template.yaml", text: templateYaml(metric, templateArgs) },
  ]);
  return review(subject, options).filter((f) => f.id !== "check-skipped");
}

const ids = (fs: Finding[]) => fs.map((f) => f.id);
const V2 = ", args: [{name: version, value: v2}]";

describe("pod rounding (check 1)", () => {
  it("reports a weight whole pods cannot give, with the share it really gets and the weight they can", () => {
    const [f, ...rest] = findings({ steps: ["setWeight: 10", "analysis"], args: V2 });
    expect(rest).toEqual([]);
    expect(f).toMatchObject({
      id: "pod-rounding",
      severity: "warning",
      file: "rollout.yaml",
      document: 1,
      object: "Rollout shop",
      path: "spec.strategy.canary.steps[0].setWeight",
      step: 0,
    });
    expect(f?.message).toBe(
      "setWeight 10 with 4 replicas, maxSurge 1 is 1 pod beside 4 stable: the candidate gets 20% of connections, not 10%",
    );
    expect(f?.fix).toBe(
      "setWeight: 20 (what 4 replicas give exactly), replicas: 9, or a traffic router (trafficRouting) for an exact weight",
    );
  });

  it("reports a step that leaves the share where the step before left it", () => {
    const fs = findings({ steps: ["setWeight: 25", "analysis", "setWeight: 30", "analysis"], args: V2 });
    expect(fs).toHaveLength(1);
    expect(fs[0]).toMatchObject({
      id: "pod-rounding-no-change",
      severity: "warning",
      path: "spec.strategy.canary.steps[2].setWeight",
      step: 2,
    });
    expect(fs[0]?.message).toContain(
      "setWeight 30 leaves the candidate at 25% (1 pod), where step 0 (setWeight 25) left it",
    );
    expect(fs[0]?.fix).toBe("setWeight: 40, the next share 4 replicas give, or remove the step");
  });

  it("finds nothing for weights the pods give, nor behind a traffic router", () => {
    expect(findings({ steps: ["setWeight: 25", "analysis", "setWeight: 50", "analysis"], args: V2 })).toEqual(
      [],
    );
    expect(
      findings({
        steps: ["setWeight: 10", "analysis", "setWeight: 15", "analysis"],
        args: V2,
        routing: true,
      }),
    ).toEqual([]);
  });
});

describe("queries that do not select the candidate (check 2)", () => {
  const only = (fs: Finding[], id: string) => fs.filter((f) => f.id === id);

  it("reports a selector that only carries labels every version has, with the query fixed", () => {
    const fs = findings(
      { steps: ["setWeight: 25", "analysis"], routing: true },
      prometheus(
        'sum(rate(http_requests_total{app="shop",code=~"5.."}[1m]))',
        "initialDelay: 1m\nsuccessCondition: result[0] < 1",
      ),
      {},
      "[]",
    );
    const [f] = only(fs, "query-not-candidate");
    expect(f).toMatchObject({
      severity: "warning",
      file: "template.yaml",
      object: "AnalysisTemplate t",
      path: "spec.metrics[0].provider.prometheus.query",
      step: 1,
    });
    expect(f?.message).toBe(
      'metric "m": http_requests_total{app="shop",code=~"5.."} selects app by "shop", spec.selector.matchLabels.app, which every version carries; no matcher names the candidate alone',
    );
    expect(f?.fix).toContain(
      'sum(rate(http_requests_total{app="shop",code=~"5..",version="{{rollout.latest}}"}[1m]))',
    );
  });

  it("reports an argument that names the stable version", () => {
    const fs = findings(
      { steps: ["setWeight: 25", "analysis"], routing: true },
      undefined,
      {},
      "[{name: version, valueFrom: {podTemplateHashValue: Stable}}]",
    );
    const [f] = only(fs, "query-not-candidate");
    expect(f?.message).toContain(
      'selects version by args.version = "{{rollout.stable}}", the stable version\'s: the stable version, not the candidate',
    );
    expect(f?.fix).toContain("{name: version, valueFrom: {podTemplateHashValue: Latest}}");
  });

  it("says at info when a literal argument cannot be tied to the new version", () => {
    const fs = findings({
      steps: ["setWeight: 25", "analysis"],
      routing: true,
      args: ", args: [{name: version, value: blue}]",
    });
    const [f] = only(fs, "query-candidate-unknown");
    expect(f).toMatchObject({ severity: "info", path: "spec.metrics[0].provider.prometheus.query" });
    expect(f?.message).toContain('args.version = "blue", a literal the review cannot tie to the new version');
    expect(only(fs, "query-not-candidate")).toEqual([]);
  });

  it("accepts podTemplateHashValue: Latest, {{rollout.latest}}, and a literal the pod template carries", () => {
    const shape = { steps: ["setWeight: 25", "analysis"], routing: true };
    const candidate = (fs: Finding[]) => fs.filter((f) => f.id.startsWith("query-"));
    expect(
      candidate(
        findings(shape, undefined, {}, "[{name: version, valueFrom: {podTemplateHashValue: Latest}}]"),
      ),
    ).toEqual([]);
    expect(candidate(findings({ ...shape, args: V2 }))).toEqual([]);
    const direct = prometheus('sum(rate(x{version="{{rollout.latest}}"}[1m]))', "initialDelay: 1m");
    expect(candidate(findings(shape, direct, {}, "[]"))).toEqual([]);
  });
});

describe("the empty-numerator trap (check 3)", () => {
  const errorRatio = (numerator: string) =>
    `${numerator} / sum(rate(http_requests_total{version="{{args.version}}"}[1m]))`;
  const trap = errorRatio('sum(rate(http_requests_total{version="{{args.version}}",code=~"5.."}[1m]))');
  const shape = { steps: ["setWeight: 25", "analysis"], routing: true, args: V2 };

  it("is an error when the condition reads result[0], with the numerator wrapped in the fix", () => {
    const fs = findings(shape, prometheus(trap, "initialDelay: 1m\nsuccessCondition: result[0] <= 0.01"));
    expect(fs).toHaveLength(1);
    expect(fs[0]).toMatchObject({
      id: "empty-numerator",
      severity: "error",
      path: "spec.metrics[0].provider.prometheus.query",
      step: 1,
    });
    expect(fs[0]?.why).toContain("5 Errors in a row (consecutiveErrorLimit 4) abort a healthy version");
    expect(fs[0]?.fix).toBe(
      'wrap the numerator: (sum(rate(http_requests_total{version="{{args.version}}",code=~"5.."}[1m])) or vector(0)) / sum(rate(http_requests_total{version="{{args.version}}"}[1m]))',
    );
  });

  it("is a warning when the condition guards an empty result, and catches a negated success matcher", () => {
    const guarded = findings(
      shape,
      prometheus(trap, "initialDelay: 1m\nsuccessCondition: len(result) == 0 || result[0] <= 0.01"),
    );
    expect(guarded.map((f) => [f.id, f.severity])).toEqual([["empty-numerator", "warning"]]);
    const negated = errorRatio(
      'sum(rate(http_requests_total{version="{{args.version}}",status_code!~"2.."}[1m]))',
    );
    expect(ids(findings(shape, prometheus(negated, "initialDelay: 1m")))).toEqual(["empty-numerator"]);
  });

  it("finds nothing when the numerator is wrapped, or counts what a healthy version serves", () => {
    const wrapped = errorRatio(
      '(sum(rate(http_requests_total{version="{{args.version}}",code=~"5.."}[1m])) or on() vector(0))',
    );
    expect(findings(shape, prometheus(wrapped, "initialDelay: 1m"))).toEqual([]);
    expect(findings(shape)).toEqual([]);
  });
});

describe("rate windows (check 4)", () => {
  const query = (window: string) => `sum(rate(x{version="{{args.version}}"}[${window}]))`;
  const shape = { steps: ["setWeight: 25", "analysis"], routing: true, args: V2 };

  it("reports a window longer than the candidate has served at the first measurement", () => {
    const fs = findings(shape, prometheus(query("5m"), "initialDelay: 1m"));
    expect(fs).toHaveLength(1);
    expect(fs[0]).toMatchObject({ id: "window-initial-delay", severity: "warning", step: 1 });
    expect(fs[0]?.message).toBe(
      'metric "m": rate(…[5m]) averages 5m, but at the first measurement the candidate has served 1m (initialDelay 1m)',
    );
    expect(fs[0]?.fix).toBe('initialDelay: 5m on metric "m" (or a window of at most 1m)');
  });

  it("counts the time the candidate served before an inline analysis: a pause after the setWeight fills it", () => {
    const fs = findings(
      { ...shape, steps: ["setWeight: 25", "pause: {duration: 4m}", "analysis"] },
      prometheus(query("5m"), "initialDelay: 1m"),
    );
    expect(fs).toEqual([]);
  });

  it("reports a window shorter than two scrape intervals, and not with a faster scrape", () => {
    const fs = findings(shape, prometheus(query("20s"), "initialDelay: 20s"));
    expect(fs.map((f) => [f.id, f.severity])).toEqual([["window-scrape", "warning"]]);
    expect(fs[0]?.fix).toBe(
      'use windows of four scrape intervals: sum(rate(x{version="{{args.version}}"}[1m]))',
    );
    expect(
      findings(shape, prometheus(query("20s"), "initialDelay: 20s"), { scrapeIntervalSeconds: 5 }),
    ).toEqual([]);
  });
});

describe("exposure (check 5)", () => {
  const shape = { steps: ["setWeight: 20", "analysis"], routing: true, args: V2 };

  it("is skipped, naming --rps, without a request rate", () => {
    const { subject } = reviewSources([
      { file: "rollout.yaml", text: rolloutYaml(shape) },
      { file: "template.yaml", text: templateYaml(prometheus(OK_QUERY, "initialDelay: 1m")) },
    ]);
    const skipped = review(subject).find((f) => f.id === "check-skipped");
    expect(skipped?.message).toContain("needs --rps R");
  });

  it("reports the first step where a bad version passes the budget", () => {
    const fs = findings(shape, undefined, { rps: 100, exposureBudget: 1000 });
    expect(fs).toHaveLength(1);
    expect(fs[0]).toMatchObject({
      id: "exposure-budget",
      severity: "error",
      path: "spec.strategy.canary.steps[1]",
      step: 1,
    });
    expect(fs[0]?.message).toBe(
      "the analysis of step 1 stops a bad version no earlier than 1m after the push, when it has served 1,200 requests: more than the exposure budget of 1,000 bad requests",
    );
    expect(fs[0]?.fix).toContain("setWeight: 16 at step 0");
  });

  it("finds nothing within the budget, and only the figure without one", () => {
    expect(findings(shape, undefined, { rps: 100, errorRate: 0.5, exposureBudget: 1000 })).toEqual([]);
    const info = findings(shape, undefined, { rps: 100 });
    expect(info.map((f) => [f.id, f.severity])).toEqual([["exposure-budget", "info"]]);
  });
});

describe("judges (check 6)", () => {
  const judge = (test: string, timing: string) =>
    `${timing}\nprovider:\n  plugin:\n    sfn-rollouts/judge:\n      ${test}\n      candidate:\n        bad: {prometheus: {query: 'sum(increase(x{version="{{rollout.latest}}",code=~"5.."}[{{judge.elapsed}}]))'}}\n        n: {prometheus: {query: 'sum(increase(x{version="{{rollout.latest}}"}[{{judge.elapsed}}]))'}}\n      stable:\n        bad: {prometheus: {query: 'sum(increase(x{version="{{rollout.stable}}",code=~"5.."}[{{judge.elapsed}}]))'}}\n        n: {prometheus: {query: 'sum(increase(x{version="{{rollout.stable}}"}[{{judge.elapsed}}]))'}}`;
  const shape = { steps: ["setWeight: 10", "analysis"], routing: true };

  it("reports a gate that cannot reach its samples before its last look, with the count that would", () => {
    const fs = findings(
      shape,
      judge("test: two-proportion\n      samples: 1000", "interval: 10s\ncount: 3"),
      { rps: 10 },
      "[]",
    );
    const f = fs.find((x) => x.id === "gate-sample-size");
    expect(f).toMatchObject({ severity: "warning", path: "spec.metrics[0]", step: 1 });
    expect(f?.message).toBe(
      'gate "m" (two-proportion) needs 1000 samples per side: at 10 rps and 10% that takes 16m40s, after the last look at 20s, so it can only hold and the analysis ends Inconclusive',
    );
    expect(f?.fix).toBe(
      "count: 101 (the last look at 16m40s), a larger share at this step, or fewer samples",
    );
    expect(
      findings(
        shape,
        judge("test: two-proportion\n      samples: 1000", "interval: 10s\ncount: 120"),
        { rps: 10 },
        "[]",
      ).map((x) => x.id),
    ).not.toContain("gate-sample-size");
  });

  it("does not report a fixed-horizon gate that looks often: it decides once, and shares the budget", () => {
    const fs = findings(shape, judge("test: two-proportion", "interval: 10s\ncount: 20"), {}, "[]");
    expect(ids(fs)).toEqual([]);
    const sequential = findings(shape, judge("test: sequential-rate", "interval: 5s\ncount: 120"), {}, "[]");
    expect(ids(sequential)).toEqual([]);
  });

  it("reports a test at a fixed level taken again at every look, and the budget it overspends", () => {
    const series = `interval: 1m\ncount: 10\nprovider:\n  plugin:\n    sfn-rollouts/judge:\n      test: comparative\n      data: series\n      alpha: 0.05\n      candidate: {prometheus: {query: 'avg(x{version="{{rollout.latest}}"})[{{judge.elapsed}}:15s]'}}\n      stable: {prometheus: {query: 'avg(x{version="{{rollout.stable}}"})[{{judge.elapsed}}:15s]'}}`;
    const fs = findings(shape, series, {}, "[]");
    const repeated = fs.find((f) => f.id === "fixed-horizon-repeated");
    expect(repeated).toMatchObject({ severity: "warning", path: "spec.metrics[0]", step: 1 });
    expect(repeated?.message).toContain("tested again at each of its 10 looks");
    expect(repeated?.message).toContain("up to 0.5 by the union bound");
    expect(repeated?.fix).toContain("test: sequential-rate or sequential-latency");
    const overspent = fs.find((f) => f.id === "budget-overspent");
    expect(overspent).toMatchObject({
      severity: "error",
      file: "rollout.yaml",
      path: "metadata.annotations",
    });
    expect(overspent?.message).toContain(
      "the rollout's error budget is 0.05: no gate spends it, and tests outside it add 0.5",
    );
  });
});

describe("the examples", () => {
  it("the reference canary: its 20 s window against Prometheus' default scrape, and its first measurement at 5 s", async () => {
    const { loadReview } = await import("../../statemachine/review/index.ts");
    const { subject } = await loadReview(["examples/rollout.yaml", "examples/analysis-success-rate.yaml"]);
    expect(review(subject).map((f) => [f.id, f.severity, f.path ?? ""])).toEqual([
      ["check-skipped", "info", ""],
      ["window-scrape", "warning", "spec.metrics[0].provider.prometheus.query"],
      ["window-initial-delay", "warning", "spec.metrics[0].provider.prometheus.query"],
    ]);
    // The demo's Prometheus scrapes every second: only the window the first measurement has not filled is left.
    expect(review(subject, { scrapeIntervalSeconds: 1 }).map((f) => f.id)).toEqual([
      "check-skipped",
      "window-initial-delay",
    ]);
  });

  it.each([
    [["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"]],
    [["examples/blue-green.yaml"]],
    [["examples/native.yaml"]],
    [["examples/model-shadow.yaml"]],
  ])("%j is clean at warning", async (files) => {
    const { loadReview } = await import("../../statemachine/review/index.ts");
    const { subject } = await loadReview(files);
    expect(review(subject, { rps: 100 }).filter((f) => f.severity !== "info")).toEqual([]);
  });

  it("the native reference's descriptors: an error ratio whose numerator a healthy version never fills", async () => {
    const { loadReview } = await import("../../statemachine/review/index.ts");
    const { subject } = await loadReview(["examples/envconfig/shop/shop/prod.yml"]);
    const fs = review(subject).filter((f) => f.severity !== "info");
    expect(fs.map((f) => [f.id, f.path])).toEqual([
      ["empty-numerator", "rollout.health.metrics[0].query"],
      ["window-initial-delay", "rollout.health.metrics[0].query"],
    ]);
  });
});
