import { expectGolden } from "@sfn-rollouts/test-support/golden";
import validator from "asl-validator";
import { describe, expect, it } from "vitest";
import {
  FUNCTION_PLACEHOLDERS,
  HANDLER_FAULT_ERRORS,
  stepStateName,
  TIMER_SLACK_SECONDS,
} from "../../statemachine/compile.ts";
import {
  compile,
  loadRollout,
  parseRollout,
  type RolloutSpec,
  type StateMachineDefinition,
} from "../../statemachine/index.ts";
import { TIMER_LATEST_FIRING_SECONDS } from "../../statemachine/timer-delivery.ts";

/** Every example, compiled as the construct does for an ALB target with pods. */
const EXAMPLES: Record<string, string[]> = {
  canary: ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"],
  "blue-green": ["examples/blue-green.yaml"],
  native: ["examples/native.yaml"],
  "model-shadow": ["examples/model-shadow.yaml"],
  judged: ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"],
  descriptor: ["examples/envconfig/shop/shop/canary-analysis.yml"],
};

const golden = (name: string) => `test/statemachine/golden/${name}.golden.json`;

type State = Record<string, unknown> & { Type: string; Next?: string; Default?: string };
const states = (d: StateMachineDefinition) => d.States as Record<string, State>;

/** Every state reachable from StartAt through Next, Default, Choices and Catch. */
function reachable(d: StateMachineDefinition): Set<string> {
  const seen = new Set<string>();
  const todo = [d.StartAt];
  while (todo.length > 0) {
    const name = todo.pop() as string;
    if (seen.has(name)) continue;
    seen.add(name);
    const s = states(d)[name];
    if (!s) throw new Error(`${name} is referenced but not defined`);
    const next = [
      s.Next,
      s.Default,
      ...((s.Choices as Array<{ Next: string }> | undefined) ?? []).map((c) => c.Next),
      ...((s.Catch as Array<{ Next: string }> | undefined) ?? []).map((c) => c.Next),
    ];
    for (const n of next) if (n) todo.push(n);
  }
  return seen;
}

describe.each(Object.entries(EXAMPLES))("the %s example", (name, files) => {
  it("compiles to ASL that asl-validator accepts, matching its reviewed golden file", async () => {
    const { spec } = await loadRollout(files);
    const definition = compile(spec, { readinessChecks: true, target: { kind: "alb-ecs" } });
    const result = validator(definition);
    expect(result.errors).toEqual([]);
    expect(result.isValid).toBe(true);
    expectGolden(golden(name), `${JSON.stringify(definition, null, 2)}\n`);
  });

  it("reaches every state; every Task but Abort is caught into Abort, a superseded execution into Superseded", async () => {
    const { spec } = await loadRollout(files);
    const definition = compile(spec, { readinessChecks: true });
    expect([...reachable(definition)].sort()).toEqual(Object.keys(definition.States).sort());
    for (const [stateName, state] of Object.entries(states(definition))) {
      if (state.Type !== "Task" || stateName === "Abort" || stateName === "Begin") continue;
      // A hold (an Inconclusive background analysis) waits for a person in the step's -Held state.
      const catchers = (state.Catch as Array<{ ErrorEquals: string[]; Next: string }>).filter(
        (c) => c.ErrorEquals[0] !== "PauseRequested" || c.Next.endsWith("-Held"),
      );
      expect(
        catchers.map((c) => c.ErrorEquals[0]).filter((e) => e !== "PauseRequested"),
        stateName,
      ).toEqual(["ExecutionSuperseded", "RolloutAborted", "States.ALL"]);
      expect(
        catchers.filter((c) => c.ErrorEquals[0] !== "PauseRequested").map((c) => c.Next),
        stateName,
      ).toEqual(["Superseded", "Abort", "Abort"]);
    }
    // Begin has no context for Abort: a newer push makes it Superseded, anything else BeginFailed.
    const begin = states(definition).Begin as State;
    expect(
      (begin.Catch as Array<{ ErrorEquals: string[]; Next: string }>).map((c) => [c.ErrorEquals[0], c.Next]),
    ).toEqual([
      ["ExecutionSuperseded", "Superseded"],
      ["States.ALL", "BeginFailed"],
    ]);
  });

  it("is deterministic", async () => {
    const { spec } = await loadRollout(files);
    expect(JSON.stringify(compile(spec))).toBe(JSON.stringify(compile(structuredClone(spec))));
  });
});

describe("compile", () => {
  const seed = async () => (await loadRollout(EXAMPLES.canary as string[])).spec;
  const analysisOf = (step: RolloutSpec["steps"][number] | undefined) => {
    if (step?.kind !== "analysis") throw new Error("not an analysis step");
    return step.analysis;
  };

  it("holds every step from the background analysis's start, and Promote, in a -Held wait that runs the step again", async () => {
    const spec = await seed();
    const withBackground: RolloutSpec = {
      ...spec,
      backgroundAnalysis: { startingStep: 2, analysis: analysisOf(spec.steps[1]) },
    };
    const s = states(compile(withBackground, { readinessChecks: true }));
    const heldBy = (name: string) =>
      ((s[name]?.Catch ?? []) as Array<{ ErrorEquals: string[]; Next: string }>).find((c) =>
        c.ErrorEquals.includes("PauseRequested"),
      )?.Next;
    expect(heldBy("Step01-SetWeight-25")).toBeUndefined();
    expect(heldBy("Step03-SetWeight-50-StartBackgroundAnalysis")).toBe("Step03-SetWeight-50-Held");
    expect(heldBy("Step03-SetWeight-50")).toBe("Step03-SetWeight-50-Held");
    expect(heldBy("Step03-SetWeight-50-CheckReady")).toBe("Step03-SetWeight-50-Held");
    expect(heldBy("Step04-Pause-2s")).toBe("Step04-Pause-2s-Held");
    expect(heldBy("Step05-Analysis")).toBe("Step05-Analysis-Held");
    expect(heldBy("Promote")).toBe("Promote-Held");
    expect(s["Step04-Pause-2s-Held"]).toMatchObject({
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: { Payload: { stepIndex: 3, step: { kind: "approval", reason: "held" } } },
      Next: "Step04-Pause-2s-Held-Next",
    });
    // A person's promote runs the step again from its entry; promote --full skips to Promote.
    expect(s["Step04-Pause-2s-Held-Next"]).toMatchObject({ Type: "Choice", Default: "Step04-Pause-2s" });
    expect(s["Step03-SetWeight-50-Held-Next"]).toMatchObject({
      Default: "Step03-SetWeight-50-StartBackgroundAnalysis",
    });
    expect(s["Promote-Held-Next"]).toMatchObject({ Default: "Promote" });
  });

  it("names one state per step, deterministically", async () => {
    const spec = await seed();
    const names = spec.steps.map((_, i) => stepStateName(spec, i));
    const defined = compile(spec).States;
    for (const n of names) expect(defined[n], n).toBeDefined();
    expect(names).toEqual([
      "Step01-SetWeight-25",
      "Step02-Analysis",
      "Step03-SetWeight-50",
      "Step04-Pause-2s",
      "Step05-Analysis",
    ]);
  });

  it("sends the first revision straight to Promote", async () => {
    const d = compile(await seed());
    expect(d.StartAt).toBe("Begin");
    expect(states(d).Begin?.Next).toBe("Candidate-CheckReady");
    // A rule of the readiness Choice, not a Choice of its own: one state transition less.
    expect(states(d)["FirstRevision?"]).toBeUndefined();
    expect(states(d)["Candidate-Ready?"]).toMatchObject({
      Type: "Choice",
      Choices: [
        {
          And: [
            { Variable: "$.last.value.ready", BooleanEquals: true },
            { Variable: "$.begin.firstRevision", BooleanEquals: true },
          ],
          Next: "Promote",
        },
        { Variable: "$.last.value.ready", BooleanEquals: true, Next: "Step01-SetWeight-25" },
      ],
      Default: "Candidate-WaitReady",
    });
  });

  it("waits on task tokens for pauses and analyses, and chooses on the analysis phase", async () => {
    const s = states(compile(await seed()));
    expect(s["Step04-Pause-2s"]).toMatchObject({
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: {
        FunctionName: "${AwaitFunctionArn}",
        Payload: { "taskToken.$": "$$.Task.Token", stepIndex: 3 },
      },
      TimeoutSeconds: 2 + TIMER_SLACK_SECONDS,
    });
    // The pause's Task outlasts the latest its Timer firing can arrive (27 minutes after it is due,
    // Lambda's and the redelivery queue's retries spent) and the attempt that scheduled it: a late
    // firing that does come ends the pause, rather than the timeout aborting the rollout.
    expect(TIMER_SLACK_SECONDS).toBe(1680);
    expect(TIMER_SLACK_SECONDS).toBeGreaterThan(TIMER_LATEST_FIRING_SECONDS);
    expect(s["Step02-Analysis"]).toMatchObject({
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: { FunctionName: "${StartAnalysisFunctionArn}" },
    });
    // Successful goes on to the next step (promote --full: to Promote) without passing through
    // Step02-Analysis-Next, which only the Inconclusive approval goes through.
    expect(s["Step02-Analysis-Phase?"]).toMatchObject({
      Choices: [
        {
          And: [
            { Variable: "$.last.phase", StringEquals: "Successful" },
            { Variable: "$.last.outcome", IsPresent: true },
            { Variable: "$.last.outcome", StringEquals: "full" },
          ],
          Next: "Promote",
        },
        { Variable: "$.last.phase", StringEquals: "Successful", Next: "Step03-SetWeight-50" },
        { Variable: "$.last.phase", StringEquals: "Inconclusive", Next: "Step02-Analysis-Inconclusive" },
      ],
      Default: "Step02-Analysis-Failed",
    });
    expect(s["Step02-Analysis-Failed"]).toMatchObject({ Type: "Pass", Next: "Abort" });
    expect(s["Step02-Analysis-Inconclusive"]).toMatchObject({
      Parameters: { Payload: { step: { kind: "approval", reason: "Inconclusive" } } },
      Next: "Step02-Analysis-Next",
    });
    expect(s["Step05-Analysis-Next"]).toMatchObject({ Default: "Promote" });
  });

  it("embeds the step's parameters, so handlers need no spec store", async () => {
    const s = states(compile(await seed(), { target: { kind: "lambda-alias", functionName: "checkout" } }));
    const payload = (s["Step03-SetWeight-50"]!.Parameters as { Payload: Record<string, unknown> }).Payload;
    expect(payload).toMatchObject({
      "context.$": "$.begin.context",
      rollout: { name: "demo", stepCount: 5 },
      stepIndex: 2,
      step: { kind: "setWeight", weight: 50 },
      target: { kind: "lambda-alias", functionName: "checkout" },
    });
  });

  it("uses a placeholder for every function, and every placeholder it uses is known", async () => {
    // Alarms and hooks bring their own functions: a spec with both uses every placeholder.
    const guarded: RolloutSpec = {
      ...(await seed()),
      alarms: ["shop-5xx"],
      hooks: {
        beforeTraffic: {
          function: "arn:aws:lambda:eu-west-1:123456789012:function:smoke",
          timeoutSeconds: 600,
        },
      },
    };
    const text = JSON.stringify(compile(guarded, { readinessChecks: true }));
    const used = new Set([...text.matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]));
    expect([...used].sort()).toEqual(Object.values(FUNCTION_PLACEHOLDERS).sort());
  });

  it("waits for the candidate on every target, and after each weight only for targets with pods", async () => {
    const spec = await seed();
    const plain = states(compile(spec));
    expect(plain.Begin?.Next).toBe("Candidate-CheckReady");
    expect(plain["Candidate-Ready?"]).toMatchObject({
      Choices: [
        { And: [{ Variable: "$.last.value.ready", BooleanEquals: true }, {}], Next: "Promote" },
        { Variable: "$.last.value.ready", BooleanEquals: true, Next: "Step01-SetWeight-25" },
      ],
      Default: "Candidate-WaitReady",
    });
    expect(Object.keys(plain).filter((n) => n.includes("CheckReady"))).toEqual(["Candidate-CheckReady"]);
    const withPods = states(compile(spec, { readinessChecks: true }));
    expect(withPods["Step01-SetWeight-25-Applied?"]?.Default).toBe("Step01-SetWeight-25-CheckReady");
    expect(withPods["Step01-SetWeight-25-WaitReady"]).toMatchObject({
      Type: "Wait",
      Next: "Step01-SetWeight-25-CheckReady",
    });
    expect(withPods.Begin?.Next).toBe("Candidate-CheckReady");
  });

  it("pauses for a person on weight drift, then applies the step again", async () => {
    const s = states(compile(await seed()));
    expect(s["Step01-SetWeight-25-Applied?"]).toMatchObject({
      Choices: [{ Variable: "$.last.value.drift", BooleanEquals: true, Next: "Step01-SetWeight-25-Drift" }],
    });
    expect(s["Step01-SetWeight-25-Drift"]).toMatchObject({
      Parameters: { Payload: { step: { kind: "approval", reason: "paused-drift" } } },
      Next: "Step01-SetWeight-25",
    });
  });

  it("starts background analysis at its starting step", () => {
    const spec: RolloutSpec = parseRollout([
      {
        file: "r.yaml",
        text: `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: bg}
spec:
  template: {spec: {containers: [{name: a, image: a}]}}
  strategy:
    canary:
      analysis:
        startingStep: 1
        templates: [{templateName: t}]
      steps: [{setWeight: 10}, {setWeight: 50}]
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  metrics:
    - name: m
      interval: 30s
      successCondition: result[0] > 0
      provider: {web: {url: "http://x"}}
`,
      },
    ]).spec;
    const s = states(compile(spec));
    expect(s["Step01-SetWeight-10-Applied?"]?.Default).toBe("Step02-SetWeight-50-StartBackgroundAnalysis");
    expect(s["Step02-SetWeight-50-StartBackgroundAnalysis"]).toMatchObject({
      Resource: "arn:aws:states:::lambda:invoke",
      Parameters: {
        FunctionName: "${StartAnalysisFunctionArn}",
        Payload: { background: true, stepIndex: 1 },
      },
      Next: "Step02-SetWeight-50",
    });
  });

  it("goes from Abort to a Fail state named RolloutAborted", async () => {
    const s = states(compile(await seed()));
    expect(s.Abort).toMatchObject({
      Parameters: { Payload: { "error.$": "$.error", onFailure: "rollback" } },
      Next: "Aborted",
    });
    expect(s.Aborted).toMatchObject({ Type: "Fail", Error: "RolloutAborted" });
  });

  it("never retries an abort or a hold, and re-invokes a wait only on Lambda service errors and a handler's passing faults", async () => {
    const s = states(compile(await seed()));
    expect(
      (s["Step01-SetWeight-25"]!.Retry as Array<{ ErrorEquals: string[]; MaxAttempts: number }>)[0],
    ).toEqual({
      ErrorEquals: ["RolloutAborted", "ExecutionSuperseded", "PauseRequested"],
      MaxAttempts: 0,
    });
    const waitRetry = s["Step02-Analysis"]?.Retry as Array<{ ErrorEquals: string[] }>;
    const passing = new Set(HANDLER_FAULT_ERRORS);
    const retried = waitRetry.flatMap((r) => r.ErrorEquals);
    expect(retried.every((e) => e.startsWith("Lambda.") || passing.has(e))).toBe(true);
    expect(retried).toContain("StoreUnavailableError");
    expect(retried).not.toContain("States.ALL");
    expect(retried).not.toContain("RolloutAborted");
  });
});
