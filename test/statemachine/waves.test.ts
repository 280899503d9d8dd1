import validator from "asl-validator";
import { describe, expect, it } from "vitest";
import {
  compile,
  formatProblem,
  loadRollout,
  parseRollout,
  passSpec,
  passStepName,
  plan,
  resolveWaves,
  SpecError,
  type StateMachineDefinition,
} from "../../statemachine/index.ts";
import { compileWaves, START_EXECUTION_SYNC } from "../../statemachine/waves-compile.ts";

const problemsOf = (file: string, text: string): string[] => {
  try {
    parseRollout([{ file, text }]);
  } catch (error) {
    if (error instanceof SpecError) return error.problems.map(formatProblem);
    throw error;
  }
  return [];
};

const REGIONS = [
  { region: "eu-west-1" },
  { region: "us-east-1", account: "222222222222" },
  { region: "ap-southeast-2", labels: { tier: "small" } },
];

type State = Record<string, unknown> & { Type: string; Next?: string; Default?: string };
const states = (d: StateMachineDefinition) => d.States as Record<string, State>;

describe("waves in the native form", () => {
  it("reads waves, the wave names of approvalsBetween and onFailure", async () => {
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    expect(spec.waves).toEqual({
      onFailure: "rollback-all",
      list: [
        { name: "eu", targets: [{ region: "eu-west-1" }], approval: true, bakeSeconds: 1800 },
        {
          name: "rest",
          select: [{ key: "region", op: "!=", value: "eu-west-1" }],
          approval: false,
          bakeSeconds: 0,
        },
      ],
    });
    // "eu" is a wave: it pauses between waves, not after a step.
    expect(spec.steps.filter((s) => s.kind === "pause" && s.reason === "Approval")).toEqual([]);
    expect(spec.onFailure).toBe("rollback");
  });

  it("the plan shows the waves, in order, with what comes between them", async () => {
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    expect(plan(spec).waves).toEqual({
      onFailure: "rollback-all",
      waves: [
        "1  eu: eu-west-1; then a 30m bake, then an approval (rollouts promote on the next wave's first target)",
        "2  rest: select region!=eu-west-1",
      ],
    });
  });

  it("names every bad field of a wave by its path", () => {
    const lines = problemsOf(
      "w.yaml",
      `name: shop
steps: [5, 100]
waves:
  - {name: EU, targets: [eu-west-1]}
  - {name: rest}
  - {name: eu2, select: "region", targets: [x y]}
  - {name: eu3, targets: [{region: us-east-1, account: "12"}], bake: 1x, colour: red}
  - {name: last, select: "tier=a", bake: 5m}
approvalsBetween: ["last", "7"]
onFailure: rollback-everything
`,
    );
    expect(lines).toEqual([
      'w.yaml: document 1: onFailure: Invalid option: expected one of "rollback"|"stop"|"rollback-wave"|"rollback-all"',
    ]);
    const fixed = problemsOf(
      "w.yaml",
      `name: shop
steps: [5, 100]
waves:
  - {name: EU, targets: [eu-west-1]}
  - {name: rest}
  - {name: eu2, select: "region", targets: [eu-west-2]}
  - {name: eu3, targets: [{region: us-east-1, account: "12"}], bake: 1x}
  - {name: eu4, targets: [eu-west-1], colour: red}
  - {name: last, select: "tier=a", bake: 5m}
approvalsBetween: ["last", "7"]
onFailure: rollback-all
`,
    );
    expect(fixed).toEqual([
      'w.yaml: document 1 (Rollout shop): waves[0].name: "EU" is not a wave name: up to 20 lowercase letters, digits and "-", starting and ending with a letter or digit',
      "w.yaml: document 1 (Rollout shop): waves[1]: a wave needs either targets (regions, or {region, account}) or select (label conditions), not both",
      "w.yaml: document 1 (Rollout shop): waves[2]: a wave needs either targets (regions, or {region, account}) or select (label conditions), not both",
      "w.yaml: document 1 (Rollout shop): waves[3].targets[0].account: a 12-digit AWS account id",
      expect.stringMatching(/^w\.yaml: document 1 \(Rollout shop\): waves\[3\]\.bake: unknown unit "x"/),
      'w.yaml: document 1 (Rollout shop): waves[4]: unknown field "colour"',
      'w.yaml: document 1 (Rollout shop): approvalsBetween: "last" is the last wave: an approval between waves needs a wave after it',
      "w.yaml: document 1 (Rollout shop): waves[5].bake: the last wave has no wave after it to bake before",
      'w.yaml: document 1 (Rollout shop): approvalsBetween: "7" is not "0" nor the percentage of a step before the last (5)',
    ]);
  });

  it("rollback-wave and rollback-all need waves", () => {
    expect(problemsOf("w.yaml", "name: shop\nsteps: [5, 100]\nonFailure: rollback-all\n")).toEqual([
      "w.yaml: document 1 (Rollout shop): onFailure: rollback-all applies to a release in waves: without waves give rollback (or stop)",
    ]);
  });
});

describe("waves in the native reference's descriptor layout", () => {
  it("reads rollout.waves with select and by, rollback-all by default", () => {
    const { spec } = parseRollout([
      {
        file: "envconfig/shop/shop/prod.yml",
        text: `rollout:
  strategy: traffic
  waves:
    - {name: eu, select: "region=eu-west-1"}
    - {name: rest, select: "region!=eu-west-1", by: region}
  traffic: {steps: [5, 25, 100], bake: 15m}
  approvalsBetween: ["eu", "25"]
`,
      },
    ]);
    expect(spec.waves?.onFailure).toBe("rollback-all");
    expect(spec.waves?.list.map((w) => [w.name, w.approval])).toEqual([
      ["eu", true],
      ["rest", false],
    ]);
    expect(plan(spec).steps.filter((s) => s.detail.includes("Approval") || s.kind === "pause").length).toBe(
      3,
    );
  });

  it("names the descriptor's path in a wave's problem", () => {
    expect(
      problemsOf(
        "envconfig/shop/shop/prod.yml",
        `rollout:
  strategy: traffic
  waves: [{name: eu, select: "region"}, {name: rest, select: "a=b", by: cluster}]
  traffic: {steps: [5, 100]}
`,
      ),
    ).toEqual([
      expect.stringContaining('rollout.waves[0].select: "region" is not a label condition'),
      expect.stringContaining('rollout.waves[1].by: only "region": each target of a wave is one region'),
    ]);
  });
});

describe("resolving waves against the deployment's targets", () => {
  it("orders the passes wave by wave, names them, and carries approvals and bakes to the next wave", async () => {
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    const { passes, problems } = resolveWaves(spec.waves!, REGIONS);
    expect(problems).toEqual([]);
    expect(passes.map((p) => [p.pass, p.wave, p.index, p.approvalBefore, p.bakeBefore])).toEqual([
      ["eu", "eu", 0, false, 0],
      ["rest-us-east-1", "rest", 1, true, 1800],
      ["rest-ap-southeast-2", "rest", 2, false, 0],
    ]);
  });

  it("refuses a target in no wave, in two, or a wave that reaches nothing", async () => {
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    const only = resolveWaves(spec.waves!, [{ region: "eu-west-1" }]);
    expect(only.problems).toEqual(['waves[1] (rest): select "region!=eu-west-1" matches no target']);
    const missing = resolveWaves(spec.waves!, [{ region: "us-east-1" }]);
    expect(missing.problems).toEqual(["waves[0] (eu): no target in eu-west-1"]);
  });

  it("a pass's rollout: an approval first after an approval wave, stages named after the pass, onFailure kept as the pass's own", async () => {
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    const { passes } = resolveWaves(spec.waves!, REGIONS);
    const second = passSpec(spec, passes[1]!);
    expect(second.waves).toBeUndefined();
    expect(second.pass).toBe("rest-us-east-1");
    expect(second.steps[0]).toEqual({ kind: "pause", reason: "Approval" });
    expect(second.steps.slice(1)).toEqual(spec.steps);
    const first = passSpec(spec, passes[0]!);
    expect(first.steps).toEqual(spec.steps);
    const definition = compile(first);
    const labels = (states(definition).Begin!.Parameters as { Payload: { stepLabels: string[] } }).Payload
      .stepLabels;
    expect(labels).toContain("eu/5%");
    expect(labels).toContain("eu/25%");
    expect(labels.at(-1)).toBe("eu/100%");
    // Lifecycle events name each step with its pass, as the native reference does.
    const names = (states(definition).Begin!.Parameters as { Payload: { stepNames: string[] } }).Payload
      .stepNames;
    expect(names).toEqual(first.steps.map((step) => passStepName("eu", step)));
    expect(compile(second).States.Begin).toMatchObject({
      Parameters: { Payload: { stepNames: expect.arrayContaining(["approval@rest-us-east-1"]) } },
    });
    // A rollout outside waves keeps the payload it had.
    const { spec: plain } = await loadRollout(["examples/native.yaml"]);
    expect(JSON.stringify(compile(plain).States.Begin)).not.toContain("stepNames");
  });

  it("a pass with an approval first starts its background analysis at the same real step", async () => {
    const { spec: canary } = await loadRollout([
      "examples/rollout.yaml",
      "examples/analysis-success-rate.yaml",
    ]);
    const analysis = canary.steps.find((step) => step.kind === "analysis")?.analysis;
    if (!analysis) throw new Error("the canary example has no analysis step");
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    const { passes } = resolveWaves(spec.waves!, REGIONS);
    for (const startingStep of [0, 1, spec.steps.length]) {
      const release = { ...spec, backgroundAnalysis: { startingStep, analysis } };
      const first = passSpec(release, passes[0]!);
      expect(first.backgroundAnalysis?.startingStep).toBe(startingStep);
      const second = passSpec(release, passes[1]!);
      // One step (the approval) comes first: the analysis starts with the same step as in the spec.
      expect(second.backgroundAnalysis?.startingStep).toBe(startingStep + 1);
      expect(second.steps[startingStep + 1]).toEqual(spec.steps[startingStep]);
      expect(second.backgroundAnalysis?.analysis).toEqual(analysis);
    }
    // In the compiled pass, the approval runs with no analysis yet; the first traffic step starts it.
    const second = passSpec({ ...spec, backgroundAnalysis: { startingStep: 0, analysis } }, passes[1]!);
    const started = Object.entries(states(compile(second)))
      .filter(([name]) => name.endsWith("-StartBackgroundAnalysis"))
      .map(([, state]) => (state.Parameters as { Payload: { stepIndex: number } }).Payload.stepIndex);
    expect(started).toEqual([1]);
  });

  it("names each kind of step with its pass: traffic@25@eu", () => {
    expect(passStepName("eu", { kind: "setWeight", weight: 25 })).toBe("traffic@25@eu");
    expect(passStepName("eu", { kind: "pause", duration: 600, reason: "CanaryPauseStep" })).toBe(
      "pause@10m@eu",
    );
    expect(passStepName("eu", { kind: "pause", reason: "CanaryPauseStep" })).toBe("pause@eu");
    expect(passStepName("us", { kind: "pause", reason: "Approval" })).toBe("approval@us");
    expect(passStepName("us", { kind: "preview" })).toBe("preview@us");
    expect(passStepName("us", { kind: "setHeaderRoute", name: "testers" })).toBe("header@testers@us");
    expect(passStepName("eu", { kind: "setCanaryScale", replicas: 3 })).toBe("scale@3@eu");
    expect(passStepName("eu", { kind: "setCanaryScale", weight: 50 })).toBe("scale@50%@eu");
    expect(passStepName("eu", { kind: "setCanaryScale", weight: 50, matchTrafficWeight: true })).toBe(
      "scale@traffic@eu",
    );
  });
});

describe("the wave coordinator", () => {
  it("compiles to ASL that asl-validator accepts: one startExecution.sync:2 per pass, a bake Wait, a rollback chain newest first", async () => {
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    const { passes } = resolveWaves(spec.waves!, REGIONS);
    const coordinated = passes.map((p) => ({
      ...p,
      target: { ...p.target, crossAccount: p.target.account !== undefined },
    }));
    const definition = compileWaves(spec, coordinated);
    const result = validator(definition);
    expect(result.errors).toEqual([]);
    expect(result.isValid).toBe(true);
    const s = states(definition);
    expect(definition.StartAt).toBe("Pass01-eu");
    expect(s["Pass01-eu"]).toMatchObject({
      Resource: START_EXECUTION_SYNC,
      Parameters: { StateMachineArn: "${WavePass1StateMachineArn}", "Name.$": "$$.Execution.Name" },
      Next: "Pass02-rest-us-east-1-Bake",
    });
    expect(s["Pass01-eu"]?.Credentials).toBeUndefined();
    expect(s["Pass02-rest-us-east-1"]?.Credentials).toEqual({ RoleArn: "${WavePass2RoleArn}" });
    expect(s["Pass02-rest-us-east-1-Bake"]).toMatchObject({
      Type: "Wait",
      Seconds: 1800,
      Next: "Pass02-rest-us-east-1",
    });
    expect(s["Pass03-rest-ap-southeast-2"]?.Next).toBe("Released");
    // The third pass failing undoes the second, then the first, then fails the release.
    // …unless a newer release took the pass over: it owns the passes before, nothing is undone.
    expect(s["Pass03-rest-ap-southeast-2-Failed"]?.Next).toBe("Pass03-rest-ap-southeast-2-Superseded?");
    expect(s["Pass03-rest-ap-southeast-2-Superseded?"]).toMatchObject({
      Type: "Choice",
      Choices: [{ Next: "ReleaseSuperseded" }],
      Default: "Undo-Pass02-rest-us-east-1?",
    });
    expect(s.ReleaseSuperseded).toMatchObject({ Type: "Fail", Error: "WaveSuperseded" });
    expect(s["Undo-Pass02-rest-us-east-1"]?.Next).toBe("Undo-Pass01-eu?");
    expect(s["Undo-Pass01-eu"]?.Next).toBe("ReleaseFailed");
    expect(s["Pass01-eu-Superseded?"]?.Default).toBe("ReleaseFailed");
    // Each undo names the execution the release ran there: refused if another has taken over since.
    expect((s["Undo-Pass01-eu"]!.Parameters as { Input: Record<string, unknown> }).Input).toMatchObject({
      rollback: true,
      revision: { "digest.$": "$.passes.p01.previous.digest" },
      "undoes.$": "$.passes.p01.executionArn",
    });
  });

  it("with rollback-wave or stop a failed pass ends the release, undoing nothing", async () => {
    const { spec } = await loadRollout(["examples/waves.yaml"]);
    const { passes } = resolveWaves(spec.waves!, REGIONS);
    for (const onFailure of ["rollback-wave", "stop"] as const) {
      const definition = compileWaves({ ...spec, waves: { ...spec.waves!, onFailure } }, passes);
      expect(validator(definition).isValid).toBe(true);
      expect(Object.keys(definition.States).filter((n) => n.startsWith("Undo-"))).toEqual([]);
      expect(states(definition)["Pass03-rest-ap-southeast-2-Superseded?"]?.Default).toBe("ReleaseFailed");
    }
  });
});
