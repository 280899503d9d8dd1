import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fastLatencySamples, fastRateSamples } from "../../functions/judges/fast.ts";
import {
  budgetOf,
  type JudgeSpec,
  type Metric,
  parseRollout,
  type RolloutSpec,
  SpecError,
} from "../../statemachine/index.ts";
import { samplesPerSide } from "../../statemachine/sample-size.ts";

/**
 * The rollout's error budget (`statemachine/error-budget.ts`): one false-rollback budget per
 * rollout, shared between its statistical gates when the whole rollout is read, in both input forms.
 */

const counts = (version: "latest" | "stable") =>
  `{web: {url: "http://stats/{{rollout.${version}}}?w={{judge.elapsedSeconds}}"}, bad: result.bad, n: result.n}`;
const samples = (version: "latest" | "stable") => `{web: {url: "http://lat/{{rollout.${version}}}"}}`;

/** A judge metric of the template `gates`, written as the plugin's fields. */
const gate = (name: string, fields: string, timing = "interval: 10s\n      count: 10") => `    - name: ${name}
      ${timing}
      provider:
        plugin:
          sfn-rollouts/judge:
${fields
  .trim()
  .split("\n")
  .map((l) => `            ${l}`)
  .join("\n")}`;

const rate = (extra = "") =>
  `test: sequential-rate\nlabel: errors\ncandidate: ${counts("latest")}\nstable: ${counts("stable")}\n${extra}`;
const latency = (extra = "") =>
  `test: sequential-latency\ncandidate: ${samples("latest")}\nstable: ${samples("stable")}\n${extra}`;
const twoProportion = (extra = "") =>
  `test: two-proportion\nlabel: errors\ncandidate: ${counts("latest")}\nstable: ${counts("stable")}\n${extra}`;

function files(options: {
  metrics: string[];
  weights?: number[];
  annotations?: string;
  background?: string[];
}): Array<{ file: string; text: string }> {
  const steps = (options.weights ?? [25, 50]).flatMap((w) => [
    `        - setWeight: ${w}`,
    "        - analysis: {templates: [{templateName: gates}]}",
  ]);
  const background = options.background ? `      analysis: {templates: [{templateName: watch}]}\n` : "";
  const rollout = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: shop
${options.annotations ? `  annotations:\n${options.annotations}\n` : ""}spec:
  template: {spec: {containers: [{name: app, image: "shop:2"}]}}
  strategy:
    canary:
      trafficRouting: {alb: {ingress: shop}}
${background}      steps:
${steps.join("\n")}
`;
  const template = (name: string, metrics: string[]) => `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: ${name}}
spec:
  metrics:
${metrics.join("\n")}
`;
  return [
    { file: "rollout.yaml", text: rollout },
    { file: "gates.yaml", text: template("gates", options.metrics) },
    ...(options.background ? [{ file: "watch.yaml", text: template("watch", options.background) }] : []),
  ];
}

/** Every judge of the rollout, by where it is: `step N/metric` (from 1) or `background/metric`. */
function judges(spec: RolloutSpec): Record<string, JudgeSpec> {
  const out: Record<string, JudgeSpec> = {};
  const add = (where: string, metrics: Metric[]) => {
    for (const m of metrics) if (m.provider.judge) out[`${where}/${m.name}`] = m.provider.judge;
  };
  spec.steps.forEach((step, i) => {
    if (step.kind === "analysis")
      add(
        `step ${i + 1}`,
        step.analysis.templates.flatMap((t) => t.metrics),
      );
  });
  if (spec.backgroundAnalysis)
    add(
      "background",
      spec.backgroundAnalysis.analysis.templates.flatMap((t) => t.metrics),
    );
  return out;
}

function problems(sources: Array<{ file: string; text: string }>): string[] {
  try {
    parseRollout(sources);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).problems.map((p) => `${p.path ? `${p.path}: ` : ""}${p.message}`);
  }
  throw new Error("expected a SpecError");
}

describe("one error budget per rollout", () => {
  it("shares 0.05 between the flagship example's two gates, each one sequential test over both steps", () => {
    const { spec } = parseRollout(
      ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"].map((file) => ({
        file,
        text: readFileSync(file, "utf8"),
      })),
    );
    const all = judges(spec);
    expect(Object.keys(all)).toEqual(["step 2/errors", "step 2/latency", "step 4/errors", "step 4/latency"]);
    for (const judge of Object.values(all)) expect(judge).toMatchObject({ alpha: 0.025 });
    expect(all["step 2/errors"]).toMatchObject({
      budget: { rollout: 0.05, gate: "errors", share: 0.025, decisions: 1, given: false, carriedFrom: [] },
      // The fast path at the gate's share: ten times a 1% error rate crosses alpha 0.025 at 107 per side.
      minSamples: fastRateSamples({ baseline: 0.01, ratio: 10, alpha: 0.025 }),
    });
    expect(all["step 2/errors"]?.test === "sequential-rate" && all["step 2/errors"].minSamples).toBe(107);
    // The 50% step goes on from the 25% step's evidence (step index 1, from 0).
    expect(all["step 4/errors"]).toMatchObject({ budget: { gate: "errors", carriedFrom: [1] } });
    expect(all["step 4/latency"]).toMatchObject({
      budget: { gate: "latency", share: 0.025, carriedFrom: [1] },
      minSamples: fastLatencySamples({ ratio: 2, sigma: 0.5, alpha: 0.025 }),
    });
    expect(budgetOf(spec)).toEqual({
      budget: 0.05,
      shares: [
        { gate: "errors", test: "sequential-rate", share: 0.025, alpha: 0.025, decisions: 1, given: false },
        {
          gate: "latency",
          test: "sequential-latency",
          share: 0.025,
          alpha: 0.025,
          decisions: 1,
          given: false,
        },
      ],
      unspent: 0,
    });
  });

  it("reads the budget from the Rollout's annotation, and names a bad one at it", () => {
    const { spec } = parseRollout(
      files({
        metrics: [gate("errors", rate()), gate("latency", latency())],
        annotations: '    rollouts.sfn/error-budget: "0.01"',
      }),
    );
    expect(spec.errorBudget).toBe(0.01);
    expect(judges(spec)["step 2/errors"]).toMatchObject({
      alpha: 0.005,
      budget: { rollout: 0.01, share: 0.005 },
    });
    for (const bad of ['"1.5"', '"five percent"', '"0"', '""']) {
      expect(
        problems(
          files({ metrics: [gate("errors", rate())], annotations: `    rollouts.sfn/error-budget: ${bad}` }),
        ),
      ).toEqual([
        `metadata.annotations["rollouts.sfn/error-budget"]: the error budget is a probability strictly between 0 and 1 (0.05: one identical release in twenty may be rolled back), not "${JSON.parse(bad)}"`,
      ]);
    }
  });

  it("spreads a fixed-horizon gate's share over the analyses it decides in, and plans its sample size at that alpha", () => {
    const { spec } = parseRollout(
      files({
        metrics: [gate("errors", twoProportion("baseline: 0.01\ndetect: 0.02")), gate("latency", latency())],
      }),
    );
    const all = judges(spec);
    // Two gates: 0.025 each; the fixed-horizon one decides at 25% and at 50%: 0.0125 at each.
    expect(all["step 2/errors"]).toMatchObject({
      alpha: 0.0125,
      budget: { share: 0.025, decisions: 2, carriedFrom: [] },
      horizon: samplesPerSide({ baseline: 0.01, candidate: 0.03, alpha: 0.0125, power: 0.8 }),
    });
    expect(all["step 4/errors"]).toMatchObject({ alpha: 0.0125, budget: { carriedFrom: [] } });
    expect(all["step 4/latency"]).toMatchObject({ alpha: 0.025, budget: { carriedFrom: [1] } });
    // The same test at 0.05 needs fewer: the horizon was planned again, not kept from the loader.
    expect(samplesPerSide({ baseline: 0.01, candidate: 0.03, alpha: 0.05, power: 0.8 })).toBeLessThan(
      (all["step 2/errors"] as { horizon: number }).horizon,
    );
  });

  it("keeps a gate's own alpha and counts it; the others share what is left", () => {
    const { spec } = parseRollout(
      files({
        metrics: [gate("errors", rate("alpha: 0.01")), gate("latency", latency()), gate("p99", latency())],
      }),
    );
    const all = judges(spec);
    expect(all["step 2/errors"]).toMatchObject({ alpha: 0.01, budget: { given: true, share: 0.01 } });
    expect(all["step 2/latency"]).toMatchObject({ alpha: 0.02, budget: { given: false, share: 0.02 } });
    expect(all["step 2/p99"]).toMatchObject({ alpha: 0.02 });
  });

  it("refuses gates whose own alphas spend more than the budget, or all of it, with the numbers", () => {
    expect(
      problems(
        files({
          metrics: [
            gate("errors", rate("alpha: 0.05")),
            gate("latency", twoProportion("alpha: 0.02\nsamples: 600")),
          ],
        }),
      ),
    ).toEqual([
      "error budget: the gates' own alphas spend 0.09 (errors 0.05, latency 0.04), more than the rollout's error budget 0.05: lower them, or raise the budget",
    ]);
    expect(
      problems(files({ metrics: [gate("errors", rate("alpha: 0.05")), gate("latency", latency())] })),
    ).toEqual([
      "error budget: the gates' own alphas spend all of the rollout's error budget 0.05 (errors 0.05), leaving nothing for latency: lower them, or raise the budget",
    ]);
  });

  it("gives the background analysis gates of their own, and leaves thresholds, scores and dry runs out", () => {
    const comparative = `test: comparative\ncandidate: {value: {web: {url: "http://v/{{rollout.latest}}"}}}\nstable: {value: {web: {url: "http://v/{{rollout.stable}}"}}}\nmaxRatio: 1.5`;
    const sources = files({
      metrics: [gate("errors", rate()), gate("ratio", comparative), gate("watching", rate())],
      background: [gate("errors", rate(), "interval: 30s")],
    });
    // Argo's dry run is a list of metric names beside the template's metrics.
    sources[1] = {
      file: "gates.yaml",
      text: (sources[1]?.text ?? "").replace("spec:\n", "spec:\n  dryRun: [{metricName: watching}]\n"),
    };
    const { spec } = parseRollout(sources);
    const all = judges(spec);
    expect(all["background/errors"]).toMatchObject({
      alpha: 0.025,
      budget: { gate: "background/errors", share: 0.025, carriedFrom: [] },
    });
    expect(all["step 2/errors"]).toMatchObject({ alpha: 0.025, budget: { gate: "errors" } });
    expect(all["step 2/ratio"]).not.toHaveProperty("budget");
    // A dry run never rolls back: it keeps a budget of its own and spends none of the rollout's.
    expect(all["step 2/watching"]).toMatchObject({ alpha: 0.05, budget: { gate: "gate" } });
    expect(budgetOf(spec).shares.map((s) => s.gate)).toEqual(["errors", "background/errors"]);
  });

  it("makes the same name with another test another gate: evidence carries only between like tests", () => {
    const sources = files({ metrics: [gate("errors", rate())] });
    // The 50% step reads the template `other`, whose `errors` is a two-proportion test.
    sources[0] = {
      file: "rollout.yaml",
      text: (sources[0]?.text ?? "").replace(
        "        - setWeight: 50\n        - analysis: {templates: [{templateName: gates}]}",
        "        - setWeight: 50\n        - analysis: {templates: [{templateName: other}]}",
      ),
    };
    sources.push({
      file: "other.yaml",
      text: `apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: other}\nspec:\n  metrics:\n${gate("errors", twoProportion("samples: 500"))}\n`,
    });
    const { spec } = parseRollout(sources);
    const all = judges(spec);
    expect(all["step 2/errors"]).toMatchObject({ budget: { gate: "errors", share: 0.025 } });
    expect(all["step 4/errors"]).toMatchObject({
      budget: { gate: "errors#2", share: 0.025, carriedFrom: [] },
    });
  });

  it("derives a sequential gate's minimum sample from its fast effect, unless minSamples is given", () => {
    const { spec } = parseRollout(
      files({
        metrics: [
          gate("errors", rate("fast: 20\nbaseline: 0.001")),
          gate("latency", latency("minSamples: 40")),
        ],
      }),
    );
    const all = judges(spec);
    expect(all["step 2/errors"]).toMatchObject({
      fast: { ratio: 20, baseline: 0.001 },
      minSamples: fastRateSamples({ baseline: 0.001, ratio: 20, alpha: 0.025 }),
    });
    expect(all["step 2/latency"]).toMatchObject({ minSamples: 40 });
    expect(all["step 2/latency"]).not.toHaveProperty("fast");
    expect(problems(files({ metrics: [gate("errors", rate("minSamples: 100\nfast: 5"))] }))).toContain(
      "spec.metrics[0].provider.plugin.sfn-rollouts/judge.fast: fast derives the minimum sample when minSamples is not given: give minSamples or fast, not both",
    );
    // Promoting at fewer samples than the derived minimum could never happen.
    expect(
      problems(files({ metrics: [gate("errors", rate("samples: 100")), gate("other", rate())] })),
    ).toEqual([
      'metric "errors": samples (100) is below the minimum sample 107 derived from fast at the gate\'s alpha 0.025: raise samples, or give minSamples',
      'metric "errors": samples (100) is below the minimum sample 107 derived from fast at the gate\'s alpha 0.025: raise samples, or give minSamples',
    ]);
  });

  it("reads the native form's errorBudget, and refuses one out of range at its field", () => {
    const native = (budget: string) => [
      {
        file: "shop.yaml",
        text: `apiVersion: sfn-rollouts/v1
name: shop
steps: [10, 50, 100]
bake: 1m
errorBudget: ${budget}
health:
  interval: 10s
  judge:
    - name: errors
      test: sequential-rate
      candidate: ${counts("latest")}
      stable: ${counts("stable")}
`,
      },
    ];
    const { spec } = parseRollout(native("0.02"));
    expect(spec.errorBudget).toBe(0.02);
    expect(Object.values(judges(spec))[0]).toMatchObject({
      alpha: 0.02,
      budget: { rollout: 0.02, gate: "errors" },
    });
    expect(problems(native("2"))).toEqual(["errorBudget: errorBudget must be below 1"]);
  });
});
