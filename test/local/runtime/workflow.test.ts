import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  GetExecutionHistoryCommand,
  ListExecutionsCommand,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  TaskTimedOut,
} from "@aws-sdk/client-sfn";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { type Runtime, startRuntime } from "../../../local/runtime.ts";
import { TIMER_SLACK_SECONDS } from "../../../statemachine/compile.ts";
import { canaryDefinition, clientConfig, type FakeOptions, fakeFunctions, substitutions } from "./fakes.ts";

const START = Date.parse("2026-01-01T00:00:00Z");

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

async function start(options: Partial<FakeOptions> = {}) {
  const clock = new ManualClock(START);
  const { functions, log } = fakeFunctions({ clock, ...options });
  runtime = await startRuntime({
    clock,
    definitions: [{ name: "demo", definition: await canaryDefinition(), substitutions: substitutions() }],
    functions,
    rules: [
      {
        logicalId: "EcrPush",
        name: "demo-ecr-push",
        eventBusName: "default",
        enabled: true,
        scheduleExpression: undefined,
        eventPattern: {
          source: ["aws.ecr"],
          "detail-type": ["ECR Image Action"],
          detail: { "action-type": ["PUSH"], result: ["SUCCESS"], "repository-name": ["demo"] },
        },
        targets: [{ id: "Target0", arn: "arn:aws:states:local:000000000000:stateMachine:demo" }],
      },
    ],
  });
  const sfn = new SFNClient(clientConfig(runtime.facadeUrl));
  return { runtime, clock, log, sfn, arn: runtime.stateMachineArn("demo") };
}

describe("the compiled canary on the embedded runtime", () => {
  it("walks every step through lambda:invoke, task tokens and a timed pause, in virtual time", async () => {
    const { runtime, clock, log, sfn, arn } = await start();
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, name: "demo-rev2", input: {} });
    await runtime.settle();
    expect(log.analysisTokens).toHaveLength(1);
    await sfn.send(
      new SendTaskSuccessCommand({
        taskToken: log.analysisTokens[0]!,
        output: JSON.stringify({ phase: "Successful" }),
      }),
    );
    // 50%, then the 2 s pause: a Scheduler schedule fires `resume`, which sends the token.
    // (`runUntilIdle` would go on to time the second analysis out: its timeout is a timer too.)
    await runtime.advanceBy(2000);
    expect(log.calls.filter((c) => c.fn === "resume")).toHaveLength(1);
    expect(clock.now()).toBe(START + 2000);
    expect(log.analysisTokens).toHaveLength(2);
    await sfn.send(
      new SendTaskSuccessCommand({
        taskToken: log.analysisTokens[1]!,
        output: JSON.stringify({ phase: "Successful" }),
      }),
    );
    const done = await runtime.waitForExecution(executionArn);
    expect(done.status).toBe("SUCCEEDED");
    const output = JSON.parse(done.output ?? "null");
    // lambda:invoke's Payload reaches $.last.value through ResultSelector.
    expect(output.last).toEqual({ value: { phase: "Healthy", table: "rollouts-local" } });
    expect(output.begin).toEqual({ context: { revision: 2 }, firstRevision: false });
    expect(
      log.calls.filter((c) => c.fn === "setWeight").map((c) => (c.event.step as { weight: number }).weight),
    ).toEqual([25, 50]);
    // Every handler saw its own environment through process.env.
    expect(new Set(log.calls.map((c) => c.env))).toEqual(new Set(["rollouts-local"]));
    expect(process.env.ROLLOUTS_TABLE).toBeUndefined();
  });

  it("answers GetExecutionHistory with AWS-shaped events", async () => {
    const { runtime, sfn, arn } = await start({ firstRevision: true });
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, name: "first", input: {} });
    await runtime.waitForExecution(executionArn);
    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn }));
    const types = (history.events ?? []).map((event) => event.type);
    const task = ["TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited"];
    expect(types).toEqual([
      "ExecutionStarted",
      ...task, // Begin
      ...task, // Candidate-CheckReady
      "ChoiceStateEntered", // Candidate-Ready?: ready, and the first revision goes to Promote
      "ChoiceStateExited",
      "TaskStateEntered",
      "TaskScheduled",
      "TaskStarted",
      "TaskSucceeded",
      "TaskStateExited",
      "SucceedStateEntered",
      "SucceedStateExited",
      "ExecutionSucceeded",
    ]);
    const first = history.events?.[0];
    expect(first?.timestamp).toEqual(new Date(START));
    expect(history.events?.[1]?.stateEnteredEventDetails?.name).toBe("Begin");
    expect(history.events?.at(-1)?.id).toBe(21);
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(described.status).toBe("SUCCEEDED");
  });

  it("catches SendTaskFailure(RolloutAborted) into Abort", async () => {
    const { runtime, log, sfn, arn } = await start();
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, name: "aborted", input: {} });
    await runtime.settle();
    await sfn.send(
      new SendTaskFailureCommand({
        taskToken: log.analysisTokens[0]!,
        error: "RolloutAborted",
        cause: "Metric success-rate assessed Failed",
      }),
    );
    const done = await runtime.waitForExecution(executionArn);
    expect(done.status).toBe("FAILED");
    expect(done.error).toBe("RolloutAborted");
    const abort = log.calls.find((c) => c.fn === "abort");
    expect(abort?.event.error).toEqual({
      Error: "RolloutAborted",
      Cause: "Metric success-rate assessed Failed",
    });
    expect(log.calls.some((c) => c.fn === "promote")).toBe(false);
  });

  it("times an unanswered analysis out with States.Timeout in virtual time", async () => {
    const { runtime, clock, log, sfn, arn } = await start();
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, name: "timeout", input: {} });
    const done = await runtime.waitForExecution(executionArn);
    expect(done.status).toBe("FAILED");
    // Step02-Analysis has TimeoutSeconds 1902: twice its worst case (111 s) and the Timer's slack.
    expect(clock.now()).toBe(START + (2 * 111 + TIMER_SLACK_SECONDS) * 1000);
    expect(clock.now()).toBe(START + 1_902_000);
    const abort = log.calls.find((c) => c.fn === "abort");
    expect(abort?.event.error).toMatchObject({ Error: "States.Timeout" });
    await expect(
      sfn.send(new SendTaskSuccessCommand({ taskToken: log.analysisTokens[0]!, output: "{}" })),
    ).rejects.toBeInstanceOf(TaskTimedOut);
    const history = runtime.sfn.getExecutionHistory(executionArn).map((e) => e.type);
    expect(history).toContain("TaskTimedOut");
  });

  it("retries a function that throws Lambda.ServiceException once", async () => {
    const { runtime, log, arn } = await start({
      firstRevision: true,
      beginThrowsOnce: "Lambda.ServiceException",
    });
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, name: "retried", input: {} });
    const done = await runtime.waitForExecution(executionArn);
    expect(done.status).toBe("SUCCEEDED");
    expect(log.calls.filter((c) => c.fn === "begin")).toHaveLength(2);
    const events = runtime.sfn.getExecutionHistory(executionArn);
    const failed = events.find((e) => e.type === "TaskFailed");
    expect(failed?.taskFailedEventDetails?.error).toBe("Lambda.ServiceException");
    expect(JSON.parse(String(failed?.taskFailedEventDetails?.cause))).toMatchObject({
      errorType: "Lambda.ServiceException",
      errorMessage: "the service hiccuped",
    });
  });

  it("starts the rollout from an ECR push put through the real EventBridge client", async () => {
    const { runtime, sfn, arn } = await start({ firstRevision: true });
    const events = new EventBridgeClient(clientConfig(runtime.facadeUrl));
    const push = (repository: string, action: string) => ({
      Source: "aws.ecr",
      DetailType: "ECR Image Action",
      Detail: JSON.stringify({
        "action-type": action,
        result: "SUCCESS",
        "repository-name": repository,
        "image-digest": "sha256:abc",
        "image-tag": "v2",
      }),
    });
    const put = await events.send(
      new PutEventsCommand({
        Entries: [push("demo", "PUSH"), push("other", "PUSH"), push("demo", "DELETE")],
      }),
    );
    expect(put.FailedEntryCount).toBe(0);
    const listed = await sfn.send(new ListExecutionsCommand({ stateMachineArn: arn }));
    expect(listed.executions).toHaveLength(1);
    const executionArn = listed.executions?.[0]?.executionArn ?? "";
    const input = JSON.parse(runtime.sfn.describeExecution(executionArn).input);
    expect(input).toMatchObject({
      version: "0",
      source: "aws.ecr",
      "detail-type": "ECR Image Action",
      account: "000000000000",
      detail: { "action-type": "PUSH", "repository-name": "demo", "image-digest": "sha256:abc" },
    });
    expect(input.time).toBe("2026-01-01T00:00:00Z");
    expect((await runtime.waitForExecution(executionArn)).status).toBe("SUCCEEDED");
  });

  it("starts nothing for a duplicate execution name", async () => {
    const { runtime, sfn, arn, log } = await start();
    const first = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: arn, name: "demo-sha256-abc", input: '{"digest":"abc"}' }),
    );
    const again = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: arn, name: "demo-sha256-abc", input: '{"digest":"abc"}' }),
    );
    expect(again.executionArn).toBe(first.executionArn);
    await expect(
      sfn.send(
        new StartExecutionCommand({ stateMachineArn: arn, name: "demo-sha256-abc", input: '{"digest":"x"}' }),
      ),
    ).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    await runtime.settle();
    expect(log.calls.filter((c) => c.fn === "begin")).toHaveLength(1);
    const listed = await sfn.send(new ListExecutionsCommand({ stateMachineArn: arn }));
    expect(listed.executions).toHaveLength(1);
  });
});
