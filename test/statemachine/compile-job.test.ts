import { describe, expect, it } from "vitest";
import { compile, parseRollout, SpecError } from "../../statemachine/index.ts";

/** A job metric runs only on the kubernetes target: compile refuses it on any other, by metric. */
const TEMPLATE = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: smoke}
spec:
  metrics:
    - name: smoke-test
      provider:
        job:
          spec:
            backoffLimit: 0
            template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox, command: [sh, -c, "exit 0"]}]}}
`;
const rollout = (strategy: string) => `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  replicas: 4
  template: {spec: {containers: [{name: app, image: shop}]}}
  strategy:
    canary:
${strategy}
`;
const STEP = rollout(`      steps:
        - setWeight: 25
        - analysis: {templates: [{templateName: smoke}]}`);
const BACKGROUND = rollout(`      analysis: {templates: [{templateName: smoke}]}
      steps:
        - setWeight: 25`);

const spec = (text: string) =>
  parseRollout([
    { file: "r.yaml", text },
    { file: "t.yaml", text: TEMPLATE },
  ]).spec;

const refusal = (text: string, target: Record<string, unknown>): string => {
  try {
    compile(spec(text), { target });
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).message;
  }
  throw new Error("compiled");
};

describe("a job metric and the target", () => {
  it("is refused on a lambda target, naming the metric and the sfn-rollouts/lambda plugin", () => {
    const message = refusal(STEP, { type: "lambda", functionName: "shop", alias: "live" });
    expect(message).toContain("steps[1].analysis");
    expect(message).toContain('metric "smoke-test" (template smoke) runs a Kubernetes Job');
    expect(message).toContain("this rollout's target is lambda");
    expect(message).toContain("sfn-rollouts/lambda");
  });

  it("is refused in a background analysis too", () => {
    expect(refusal(BACKGROUND, { type: "alb-ecs" })).toMatch(
      /analysis\.templates\[smoke\]\.metrics\[0\]\.provider\.job.*metric "smoke-test"/,
    );
  });

  it("compiles on the kubernetes target, the analysis Task carrying the target's settings", () => {
    const target = { type: "kubernetes", namespace: "shop", stableDeployment: "a", canaryDeployment: "b" };
    for (const text of [STEP, BACKGROUND]) {
      const definition = JSON.stringify(compile(spec(text), { target }));
      const analysis = Object.values(
        JSON.parse(definition).States as Record<string, { Parameters?: unknown }>,
      )
        .map((s) => JSON.stringify(s.Parameters ?? {}))
        .filter((p) => p.includes('"templates"'));
      expect(analysis.length).toBeGreaterThan(0);
      for (const p of analysis) expect(p).toContain('"namespace":"shop"');
    }
  });

  it("compiles without a target (rollouts plan)", () => {
    expect(() => compile(spec(STEP))).not.toThrow();
  });
});
