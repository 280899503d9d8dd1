import { describe, expect, it } from "vitest";
import { targetSpecProblems } from "../../functions/traffic/settings.ts";
import { compile } from "../../statemachine/compile.ts";
import { parseRollout, plan, SpecError } from "../../statemachine/index.ts";

/**
 * Argo's `experiment` step as it loads, compiles and plans: the subset that runs (templates from
 * the stable or the candidate's pod template with their replicas, a duration, analyses required
 * for completion) and a refusal naming the field for the rest. Shapes from Argo's
 * docs/features/experiment.md and the experiment examples under its examples/.
 */

const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: errors}
spec:
  args: [{name: version}, {name: limit, value: "0.01"}]
  metrics:
    - name: error-ratio
      interval: 1m
      count: 2
      successCondition: result[0] < {{args.limit}}
      provider: {prometheus: {address: "http://prom:9090", query: 'errors{version="{{args.version}}"}'}}
`;

const rollout = (experiment: string, extra = "") => `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: demo}
spec:
  replicas: 4
  template: {spec: {containers: [{name: app, image: "app:2"}]}}
  strategy:
    canary:
${extra}      steps:
        - setWeight: 25
        - experiment:
${experiment}
`;

function problemsOf(text: string): string[] {
  try {
    parseRollout([
      { file: "r.yaml", text },
      { file: "t.yaml", text: TEMPLATE },
    ]);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).message.split("\n");
  }
  throw new Error("expected a SpecError");
}

const WITH_ANALYSIS = `            templates:
              - {name: baseline, specRef: stable}
              - {name: canary, specRef: canary, replicas: 2}
            analyses:
              - name: errors
                templateName: errors
                requiredForCompletion: true
                args: [{name: version, valueFrom: {podTemplateHashValue: Latest}}, {name: limit, value: "0.05"}]`;

describe("experiment steps as they load", () => {
  it("templates, a duration, and analyses resolved with their own args", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout("            duration: 1h\n            templates: [{name: canary, specRef: canary}]"),
      },
    ]);
    expect(spec.steps[1]).toEqual({
      kind: "experiment",
      duration: 3600,
      templates: [{ name: "canary", specRef: "canary" }],
    });
    const analysed = parseRollout([
      { file: "r.yaml", text: rollout(WITH_ANALYSIS) },
      { file: "t.yaml", text: TEMPLATE },
    ]).spec.steps[1];
    if (analysed?.kind !== "experiment") throw new Error("an experiment step");
    expect(analysed.templates).toEqual([
      { name: "baseline", specRef: "stable" },
      { name: "canary", specRef: "canary", replicas: 2 },
    ]);
    const metric = analysed.analysis?.templates[0]?.metrics[0];
    expect(metric?.successCondition).toBe("result[0] < 0.05");
    // podTemplateHashValue: Latest is the candidate's version, filled in when the analysis starts.
    expect(JSON.stringify(metric?.provider)).toContain('errors{version=\\"{{rollout.latest}}\\"}');
  });

  it("refuses what needs more of Argo's experiment, naming the field", () => {
    const lines = problemsOf(
      rollout(`            templates:
              - {name: a, specRef: canary, weight: 5}
              - {name: b, specRef: stable, service: {name: b}}
              - {name: c, specRef: stable, selector: {matchLabels: {x: y}}, metadata: {labels: {x: y}}}
              - {name: Bad_Name, specRef: stable}
              - {name: a, specRef: stable}
            dryRun: [{metricName: error-ratio}]
            analyses:
              - {name: errors, templateName: errors, args: [{name: version, value: v2}]}
              - name: hashed
                templateName: errors
                requiredForCompletion: true
                args: [{name: version, value: "{{templates.missing.podTemplateHash}}"}]`),
    );
    const at = (path: string) =>
      lines.find((l) => l.includes(`spec.strategy.canary.steps[1].experiment.${path} (step 2)`));
    expect(at("templates[0].weight")).toContain(
      'experiment template "a": experiment template weight needs a Service per template',
    );
    expect(at("templates[1].service")).toContain("a Service per experiment template is not supported");
    expect(at("templates[2].selector")).toContain("a selector of its own is not supported");
    expect(at("templates[2].metadata")).toContain("labels and annotations of its own are not supported");
    expect(at("templates[3].name")).toContain('"Bad_Name": a DNS label');
    expect(at("templates[4].name")).toContain('experiment template "a" is defined twice');
    expect(at("dryRun")).toContain("an experiment's dryRun is not supported");
    expect(at("analyses[0].requiredForCompletion")).toContain(
      'experiment analysis "errors": only analyses with requiredForCompletion: true are supported',
    );
    expect(at("analyses[1].args[0].value")).toContain(
      "{{templates.missing.podTemplateHash}}: of the values only the experiment knows, {{templates.<name>.podTemplateHash}} of one of its templates (a, b, c, Bad_Name) is supported",
    );
    // And both analyses run the template's one metric: named in the next test.
    expect(at("analyses[1].templateName")).toContain('both have a metric "error-ratio"');
    expect(lines).toHaveLength(10);
  });

  it("keeps {{templates.<name>.podTemplateHash}} of one of its templates for the analysis's start", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: rollout(`            templates: [{name: canary, specRef: canary}]
            analyses:
              - name: errors
                templateName: errors
                requiredForCompletion: true
                args: [{name: version, value: "{{templates.canary.podTemplateHash}}"}]`),
      },
      { file: "t.yaml", text: TEMPLATE },
    ]);
    const step = spec.steps[1];
    if (step?.kind !== "experiment") throw new Error("an experiment step");
    expect(JSON.stringify(step.analysis?.templates[0]?.metrics[0]?.provider)).toContain(
      'errors{version=\\"{{templates.canary.podTemplateHash}}\\"}',
    );
    expect(
      problemsOf(
        rollout(`            templates: [{name: canary, specRef: canary}]
            analyses:
              - name: errors
                templateName: errors
                requiredForCompletion: true
                args: [{name: version, value: "{{experiment.availableAt}}"}]`),
      ),
    ).toEqual([
      expect.stringContaining(
        'experiment.analyses[0].args[0].value (step 2): step 2 of 2: experiment analysis "errors" arg "version": {{experiment.availableAt}}: of the values only the experiment knows',
      ),
    ]);
  });

  it("refuses two analyses with a metric of one name, and a template not in the files", () => {
    const lines = problemsOf(
      rollout(`            templates: [{name: canary, specRef: canary}]
            analyses:
              - {name: one, templateName: errors, requiredForCompletion: true, args: [{name: version, value: v1}]}
              - {name: two, templateName: errors, requiredForCompletion: true, args: [{name: version, value: v2}]}
              - {name: three, templateName: missing, requiredForCompletion: true}`),
    );
    expect(lines.join("\n")).toContain(
      'experiment.analyses[1].templateName (step 2): experiment analyses "one" and "two" both have a metric "error-ratio"',
    );
    expect(lines.join("\n")).toContain(
      'experiment.analyses[2].templateName (step 2): AnalysisTemplate "missing" not found',
    );
  });
});

describe("experiment steps compiled and planned", () => {
  const { spec } = parseRollout([
    { file: "r.yaml", text: rollout(WITH_ANALYSIS) },
    { file: "t.yaml", text: TEMPLATE },
  ]);

  it("start, availability, the analysis, stop; a failed analysis aborts, which deletes the ReplicaSets", () => {
    const { States } = compile(spec, { target: { type: "kubernetes" } });
    const stem = "Step02-Experiment-baseline-canary";
    const start = States[stem] as { Parameters: { Payload: Record<string, unknown> }; Next: string };
    expect(start.Parameters.Payload).toMatchObject({ experiment: "start", stepIndex: 1 });
    expect(start.Next).toBe(`${stem}-CheckReady`);
    expect(States[`${stem}-Ready?`]).toMatchObject({ Choices: [{ Next: `${stem}-Run` }] });
    const run = States[`${stem}-Run`] as {
      Resource: string;
      Parameters: { Payload: { step: { kind: string } } };
    };
    expect(run.Resource).toBe("arn:aws:states:::lambda:invoke.waitForTaskToken");
    expect(run.Parameters.Payload.step.kind).toBe("analysis");
    const phase = States[`${stem}-Run-Phase?`] as { Choices: Array<{ Next: string }>; Default: string };
    expect(phase.Choices.map((c) => c.Next)).toContain(`${stem}-Stop`);
    expect(phase.Default).toBe(`${stem}-Run-Failed`);
    expect(States[`${stem}-Run-Failed`]).toMatchObject({ Next: "Abort" });
    const stop = States[`${stem}-Stop`] as { Parameters: { Payload: Record<string, unknown> }; Next: string };
    expect(stop.Parameters.Payload).toMatchObject({ experiment: "stop", stepIndex: 1 });
    expect(stop.Next).toBe("Promote");
  });

  it("without analyses, the duration is a timed wait before the stop; without one, a person's promote", () => {
    for (const [duration, timed] of [
      ["            duration: 30s\n", true],
      ["", false],
    ] as const) {
      const { spec: s } = parseRollout([
        {
          file: "r.yaml",
          text: rollout(`${duration}            templates: [{name: canary, specRef: canary}]`),
        },
      ]);
      const { States } = compile(s);
      const run = States["Step02-Experiment-canary-Run"] as { TimeoutSeconds?: number; Next: string };
      expect(run.Next).toBe("Step02-Experiment-canary-Run-Next");
      expect(run.TimeoutSeconds !== undefined).toBe(timed);
      expect(States["Step02-Experiment-canary-Run-Next"]).toMatchObject({
        Default: "Step02-Experiment-canary-Stop",
      });
    }
  });

  it("plans the experiment's ReplicaSets beside the rollout's pods, and what ends it", () => {
    const rows = plan(spec).steps.map((s) => [s.detail, s.weight, s.canaryPods, s.stablePods]);
    expect(rows).toEqual([
      ["setWeight: 25", 25, 1, 3],
      ["experiment: baseline (stable, 1 pod), canary (canary, 2 pods), until analysis: errors", 25, 1, 3],
    ]);
    expect(plan(spec).steps[1]?.analysis).toEqual([expect.stringContaining("error-ratio")]);
  });

  it("is refused on the AWS targets and plugins, naming the step and the target; the kubernetes target runs it", () => {
    expect(targetSpecProblems("kubernetes", spec)).toEqual([]);
    for (const type of ["alb-ecs", "lambda-alias", "sagemaker", "plugin"]) {
      expect(targetSpecProblems(type, spec)).toEqual([
        `step 2: experiment baseline, canary: the ${type} target cannot run an experiment's ReplicaSets next to the rollout (targets that can: kubernetes)`,
      ]);
    }
  });
});
