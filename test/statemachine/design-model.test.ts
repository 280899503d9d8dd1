import { describe, expect, it } from "vitest";
import { MODEL_ALPHA, type ModelSignal, modelPlan, signalSamples } from "../../statemachine/design/model.ts";
import { yamlDocuments } from "../../statemachine/design/yaml.ts";
import { parseRollout, plan } from "../../statemachine/index.ts";
import { samplesPerSide } from "../../statemachine/sample-size.ts";

const errors: ModelSignal = { name: "errors", delaySeconds: 0, baseline: 0.01, minEffect: 0.02 };
const feedback: ModelSignal = { name: "feedback", delaySeconds: 600, baseline: 0.05, minEffect: 0.05 };
const latency: ModelSignal = { name: "latency", delaySeconds: 0, minEffect: 0.1 };
const disagreement: ModelSignal = { name: "disagreement", delaySeconds: 0, baseline: 0.02, minEffect: 0.02 };

const loaded = (p: ReturnType<typeof modelPlan>) =>
  parseRollout([
    {
      file: "model.yaml",
      text: yamlDocuments([{ value: p.rollout }, ...p.templates.map((value) => ({ value }))]),
    },
  ]).spec;

describe("design --model: samples per step", () => {
  it("takes the pooled two-proportion sample size of sample-size.ts, as scipy computes it", () => {
    // scipy: za, zb = norm.ppf(1 - 0.01), norm.ppf(0.8); pbar = (p1 + p2) / 2
    // n = (za*sqrt(2*pbar*(1-pbar)) + zb*sqrt(p1*(1-p1) + p2*(1-p2)))**2 / (p1 - p2)**2
    // p1, p2 = 0.01, 0.03 → 982.196 → 983;  p1, p2 = 0.05, 0.10 → 555.664 → 556 (the reference's
    // 556 for a 5-point drop from 0.95). statsmodels' NormalIndPower().solve_power(
    // proportion_effectsize(p2, p1), alpha=0.01, power=0.8, alternative="larger"), i.e.
    // 2 * ((za + zb) / h)**2 on Cohen's arcsine h, gives 918.5 and 541.8: the arcsine
    // approximation, within 7% and 3% of the pooled formula the judges plan with.
    expect(signalSamples(errors)).toMatchObject({
      test: "two-proportion",
      samples: 983,
      from: 0.01,
      to: 0.03,
    });
    expect(signalSamples(feedback).samples).toBe(556);
    expect(signalSamples(feedback).samples).toBe(
      samplesPerSide({ baseline: 0.05, candidate: 0.1, alpha: MODEL_ALPHA, power: 0.8 }),
    );
  });

  it("plans latency as the share of answers past the stable's p95 that a slower p95 raises", () => {
    // A p95 10% slower (log-normal, σ 0.5): 1 − Φ(1.6449 − ln 1.1 / 0.5) = 7.29% past the old p95.
    const s = signalSamples(latency);
    expect(s.test).toBe("comparative");
    expect(s.to).toBeCloseTo(0.0729, 4);
    expect(s.samples).toBe(
      samplesPerSide({ baseline: 0.05, candidate: s.to, alpha: MODEL_ALPHA, power: 0.8 }),
    );
  });

  it("writes judges whose planned size, as the loader computes it, is the one the design states", () => {
    const p = modelPlan({ name: "ranker", rps: 60, signals: [errors, feedback], maxDurationSeconds: 7200 });
    const spec = loaded(p);
    const horizons = spec.steps.flatMap((s) =>
      s.kind === "analysis"
        ? s.analysis.templates.flatMap((t) =>
            t.metrics.map((m) => [
              m.name,
              m.provider.judge && "horizon" in m.provider.judge ? m.provider.judge.horizon : 0,
            ]),
          )
        : [],
    );
    expect(horizons).toEqual([
      ["errors", 983],
      ["errors", 983],
      ["feedback", 556],
      ["errors", 983],
      ["feedback", 556],
    ]);
  });
});

describe("design --model: the shadow", () => {
  it("is worth it when a signal is read on the mirrored copies: errors and latency yes", () => {
    const p = modelPlan({
      name: "ranker",
      rps: 60,
      signals: [errors, latency, feedback],
      maxDurationSeconds: 7200,
    });
    expect(p.shadow.worth).toBe(true);
    expect(p.steps.map((s) => [s.kind, s.weight, s.signals.map((x) => x.name)])).toEqual([
      ["shadow", 0, ["errors", "latency"]],
      ["canary", 25, ["errors", "latency", "feedback"]],
      ["canary", 50, ["errors", "latency", "feedback"]],
    ]);
    const steps = loaded(p).steps.map((s) => s.kind);
    expect(steps.slice(0, 3)).toEqual(["setMirrorRoute", "analysis", "setMirrorRoute"]);
  });

  it("is not worth it for feedback alone: nobody saw the shadow's answers", () => {
    const p = modelPlan({ name: "ranker", rps: 60, signals: [feedback], maxDurationSeconds: 7200 });
    expect(p.shadow.worth).toBe(false);
    expect(p.shadow.why).toContain("feedback need users");
    expect(p.steps.map((s) => s.kind)).toEqual(["canary", "canary"]);
    expect(loaded(p).steps.some((s) => s.kind === "setMirrorRoute")).toBe(false);
  });

  it("judges the disagreement on the shadow only", () => {
    const p = modelPlan({
      name: "ranker",
      rps: 60,
      signals: [disagreement, feedback],
      maxDurationSeconds: 7200,
    });
    expect(p.steps[0]?.signals.map((s) => s.name)).toEqual(["disagreement"]);
    expect(p.steps[1]?.signals.map((s) => s.name)).toEqual(["feedback"]);
  });
});

describe("design --model: time to a decision", () => {
  it("is the signal's delay plus rollouts plan's seconds to the samples at the step's share", () => {
    const p = modelPlan({ name: "ranker", rps: 60, signals: [errors, feedback], maxDurationSeconds: 7200 });
    const [shadow, quarter, half] = p.steps;
    // The shadow: 983 mirrored copies of 60 rps, 16.4 s → 17 s.
    expect(shadow?.decisionSeconds).toBe(17);
    // 25%: 556 feedbacks per side at 15 rps after 10 minutes of delay.
    expect(quarter?.signals.find((s) => s.name === "feedback")?.decisionSeconds).toBe(
      600 + Math.ceil(556 / 15),
    );
    expect(half?.signals.find((s) => s.name === "errors")?.decisionSeconds).toBe(Math.ceil(983 / 30));
    // The analyses last past it: the last look of each metric is at least 1.5 × its decision.
    const gates = plan(loaded(p), { rps: 60 }).steps.flatMap((s) => s.gates ?? []);
    const feedbackGate = gates.find((g) => g.metric === "feedback");
    expect(feedbackGate?.lastLookSeconds).toBeGreaterThanOrEqual(1.5 * (600 + 556 / 15));
  });

  it("splits the rollout's error budget when the gates' alphas would spend more, and warns of what it cannot do", () => {
    const p = modelPlan({
      name: "ranker",
      rps: 1,
      signals: [errors, disagreement, feedback],
      maxDurationSeconds: 3600,
    });
    // Six fixed-horizon decisions: errors at three steps, the disagreement once, feedback twice.
    expect(p.alpha).toBe(0.00833);
    expect(() => loaded(p)).not.toThrow();
    expect(p.warnings.some((w) => w.startsWith("the canary at 25% needs"))).toBe(true);
    const blind = modelPlan({ name: "ranker", rps: 60, signals: [errors], maxDurationSeconds: 3600 });
    expect(blind.warnings[0]).toMatch(/^no quality signal/);
  });
});
