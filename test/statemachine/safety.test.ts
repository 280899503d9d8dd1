import validator from "asl-validator";
import { describe, expect, it } from "vitest";
import { compile, parseRollout, SpecError, type StateMachineDefinition } from "../../statemachine/index.ts";

const SMOKE = "arn:aws:lambda:eu-west-1:123456789012:function:smoke";
const LOAD = "arn:aws:lambda:eu-west-1:123456789012:function:load-test:live";

const native = (extra: string) => `name: shop
image: shop:1
steps: [25, 100]
${extra}`;

const argo = (annotations: string) => `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: shop
  annotations:
${annotations}
spec:
  template: {spec: {containers: [{name: app, image: shop:1}]}}
  strategy:
    canary:
      steps: [{setWeight: 25}, {pause: {duration: 10s}}]
`;

const load = (text: string, file = "r.yaml") => parseRollout([{ file, text }]).spec;
const problems = (text: string): string[] => {
  try {
    load(text);
  } catch (error) {
    if (error instanceof SpecError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  throw new Error("loaded without a problem");
};

type State = Record<string, unknown> & { Type: string; Next?: string; Default?: string };
const states = (d: StateMachineDefinition) => d.States as Record<string, State>;

/** The Task and Choice states an execution goes through when nothing fails (the main path). */
function mainPath(d: StateMachineDefinition, firstRevision = false): string[] {
  const path: string[] = [];
  let name: string | undefined = d.StartAt;
  while (name && path.length < 200) {
    path.push(name);
    const s: State = states(d)[name] as State;
    const rules = (s.Choices ?? []) as Array<{ Next: string; And?: unknown[] }>;
    // The candidate's readiness Choice sends a first revision to Promote (its first rule), any
    // other to the first step (its last); an analysis's sends Successful on (its first plain rule).
    if (name === "Candidate-Ready?") name = firstRevision ? rules[0]?.Next : rules.at(-1)?.Next;
    else if (name.endsWith("Ready?")) name = rules[0]?.Next;
    else if (name.endsWith("-Phase?")) name = rules.find((r) => r.And === undefined)?.Next;
    else name = s.Next ?? s.Default;
  }
  return path;
}

describe("alarms and hooks in the spec", () => {
  it("reads them from the native form, a hook as an ARN or with its timeout and heartbeat", () => {
    const spec = load(
      native(`alarms: [shop-5xx, "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:shop-p99"]
ignorePollAlarmFailure: true
hooks:
  beforeTraffic: ${SMOKE}
  afterTraffic: {function: "${LOAD}", timeoutSeconds: 1800, heartbeatSeconds: 60}`),
    );
    expect(spec.alarms).toEqual(["shop-5xx", "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:shop-p99"]);
    expect(spec.ignorePollAlarmFailure).toBe(true);
    expect(spec.hooks).toEqual({
      beforeTraffic: { function: SMOKE, timeoutSeconds: 600 },
      afterTraffic: { function: LOAD, timeoutSeconds: 1800, heartbeatSeconds: 60 },
    });
  });

  it("reads them from an Argo Rollout's annotations, which Argo itself ignores", () => {
    const spec = load(
      argo(`    rollouts.sfn/alarms: "shop-5xx, shop-p99"
    rollouts.sfn/ignore-poll-alarm-failure: "false"
    rollouts.sfn/hook-before-traffic: ${SMOKE}
    rollouts.sfn/hook-after-promotion: ${LOAD}
    rollouts.sfn/hook-timeout: 15m`),
    );
    expect(spec.alarms).toEqual(["shop-5xx", "shop-p99"]);
    expect(spec.ignorePollAlarmFailure).toBe(false);
    expect(spec.hooks).toEqual({
      beforeTraffic: { function: SMOKE, timeoutSeconds: 900 },
      afterPromotion: { function: LOAD, timeoutSeconds: 900 },
    });
  });

  it("names every bad value at its path", () => {
    expect(
      problems(
        native(`alarms: [shop-5xx, shop-5xx, "arn:aws:cloudwatch:eu-west-1:1:alarm:x"]
hooks: {beforeTraffic: "smoke", afterTraffic: {function: "${SMOKE}", timeoutSeconds: 60, heartbeatSeconds: 60}}`),
      ),
    ).toEqual([
      'alarms[2]: "arn:aws:cloudwatch:eu-west-1:1:alarm:x" is not a CloudWatch alarm ARN (arn:aws:cloudwatch:REGION:ACCOUNT:alarm:NAME)',
      "alarms: an alarm is named twice",
      "hooks.beforeTraffic.function: must be a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME)",
      "hooks.afterTraffic.heartbeatSeconds: heartbeatSeconds must be less than timeoutSeconds",
    ]);
    expect(
      problems(
        argo(`    rollouts.sfn/alarms: ","
    rollouts.sfn/ignore-poll-alarm-failure: "yes"
    rollouts.sfn/hook-after-traffic: "not-an-arn"
    rollouts.sfn/hook-timeout: "ten minutes"`),
      ),
    ).toEqual([
      'metadata.annotations["rollouts.sfn/alarms"]: give at least one alarm, or leave alarms out',
      'metadata.annotations["rollouts.sfn/ignore-poll-alarm-failure"]: must be "true" or "false", not "yes"',
      expect.stringMatching(/^metadata\.annotations\["rollouts\.sfn\/hook-timeout"\]: /),
      'metadata.annotations["rollouts.sfn/hook-after-traffic"]: must be a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME)',
    ]);
  });
});

describe("alarms and hooks in the compiled workflow", () => {
  const guarded = load(
    native(`alarms: [shop-5xx, "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:shop-p99"]
hooks:
  beforeTraffic: ${SMOKE}
  afterTraffic: {function: "${LOAD}", timeoutSeconds: 1800, heartbeatSeconds: 60}
  afterPromotion: ${SMOKE}`),
  );

  it("is ASL that asl-validator accepts", () => {
    const result = validator(compile(guarded, { readinessChecks: true }));
    expect(result.errors).toEqual([]);
    expect(result.isValid).toBe(true);
  });

  it("checks the alarms before every step and before Promote; runs each hook at its point", () => {
    const d = compile(guarded);
    expect(mainPath(d)).toEqual([
      "Begin",
      "Candidate-CheckReady",
      "Candidate-Ready?",
      "Hook-BeforeTraffic",
      "Step01-SetWeight-25-CheckAlarms",
      "Step01-SetWeight-25",
      "Step01-SetWeight-25-Applied?",
      "Step01-SetWeight-25-Hook-AfterTraffic",
      "Step02-SetWeight-100-CheckAlarms",
      "Step02-SetWeight-100",
      "Step02-SetWeight-100-Applied?",
      "Step02-SetWeight-100-Hook-AfterTraffic",
      "Hook-AfterPromotion",
      "Promote-CheckAlarms",
      "Promote",
      "Healthy",
    ]);
    // The first revision has nothing to compare with or roll back to: no hook, no check.
    expect(mainPath(d, true)).toEqual([
      "Begin",
      "Candidate-CheckReady",
      "Candidate-Ready?",
      "Promote",
      "Healthy",
    ]);
    expect(states(d)["Step02-SetWeight-100-CheckAlarms"]).toMatchObject({
      Resource: "arn:aws:states:::lambda:invoke",
      Parameters: {
        FunctionName: "${CheckAlarmsFunctionArn}",
        Payload: { stepIndex: 1, alarms: ["shop-5xx", "shop-p99"], ignorePollAlarmFailure: false },
      },
      Catch: [
        { ErrorEquals: ["ExecutionSuperseded"], Next: "Superseded" },
        { ErrorEquals: ["RolloutAborted"], Next: "Abort" },
        { ErrorEquals: ["States.ALL"], Next: "Abort" },
      ],
    });
  });

  it("waits for a hook's verdict on a task token, with its timeout and heartbeat; a failure, a timeout or a lost heartbeat aborts naming the hook", () => {
    const d = compile(guarded);
    const hook = states(d)["Step01-SetWeight-25-Hook-AfterTraffic"];
    expect(hook).toMatchObject({
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: {
        FunctionName: "${HookFunctionArn}",
        Payload: {
          stepIndex: 0,
          hook: { point: "afterTraffic", function: LOAD, timeoutSeconds: 1800, heartbeatSeconds: 60 },
          "taskToken.$": "$$.Task.Token",
        },
      },
      TimeoutSeconds: 1800,
      HeartbeatSeconds: 60,
      Next: "Step02-SetWeight-100-CheckAlarms",
    });
    expect(
      ((hook?.Catch ?? []) as Array<{ ErrorEquals: string[]; Next: string }>).map((c) => [
        c.ErrorEquals[0],
        c.Next,
      ]),
    ).toEqual([
      ["ExecutionSuperseded", "Superseded"],
      ["RolloutAborted", "Abort"],
      ["States.Timeout", "Step01-SetWeight-25-Hook-AfterTraffic-TimedOut"],
      ["States.HeartbeatTimeout", "Step01-SetWeight-25-Hook-AfterTraffic-NoHeartbeat"],
      ["States.ALL", "Step01-SetWeight-25-Hook-AfterTraffic-Failed"],
    ]);
    expect(states(d)["Step01-SetWeight-25-Hook-AfterTraffic-TimedOut"]).toMatchObject({
      Type: "Pass",
      Parameters: { Error: "HookFailed", Cause: `afterTraffic hook ${LOAD} gave no verdict within 30m` },
      Next: "Abort",
    });
    expect(states(d)["Hook-BeforeTraffic"]).toMatchObject({ TimeoutSeconds: 600 });
    expect(states(d)["Hook-BeforeTraffic"]).not.toHaveProperty("HeartbeatSeconds");
  });

  it("sends promote --full through the afterPromotion hook and the alarm check, never straight to Promote", () => {
    const spec = load(
      argo(`    rollouts.sfn/alarms: shop-5xx
    rollouts.sfn/hook-after-promotion: ${SMOKE}`),
    );
    const fullRules = Object.entries(states(compile(spec))).flatMap(([name, s]) =>
      s.Type === "Choice"
        ? (s.Choices as Array<{ And?: Array<{ StringEquals?: string }>; Next: string }>)
            .filter((rule) => rule.And?.some((c) => c.StringEquals === "full"))
            .map((rule) => [name, rule.Next])
        : [],
    );
    expect(fullRules.length).toBeGreaterThan(0);
    for (const [name, next] of fullRules) expect(`${name} → ${next}`).toBe(`${name} → Hook-AfterPromotion`);
  });

  it("adds nothing to a rollout without alarms or hooks", () => {
    const plain = load(native(""));
    const text = JSON.stringify(compile(plain));
    expect(text).not.toContain("CheckAlarms");
    expect(text).not.toContain("Hook");
  });
});
