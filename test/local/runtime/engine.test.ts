import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { GetScheduleCommand, ResourceNotFoundException, SchedulerClient } from "@aws-sdk/client-scheduler";
import {
  InvalidToken,
  SendTaskHeartbeatCommand,
  SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
  TaskDoesNotExist,
  TaskTimedOut,
} from "@aws-sdk/client-sfn";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { localFunctionArn } from "../../../local/asl/intrinsics.ts";
import { ExecutionStuckError, type Runtime, startRuntime } from "../../../local/runtime.ts";
import { clientConfig } from "./fakes.ts";

const START = Date.parse("2026-01-01T00:00:00Z");

/** Wait, then a token task with a heartbeat whose timeout is caught, then the token's output. */
const definition = {
  StartAt: "Settle",
  TimeoutSeconds: 3600,
  States: {
    Settle: { Type: "Wait", SecondsPath: "$.seconds", Next: "Approve" },
    Approve: {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: { FunctionName: "${ApproveFunctionArn}", Payload: { "taskToken.$": "$$.Task.Token" } },
      HeartbeatSeconds: 10,
      ResultPath: "$.approval",
      Catch: [{ ErrorEquals: ["States.HeartbeatTimeout"], ResultPath: "$.error", Next: "Silent" }],
      Next: "Done",
    },
    Silent: { Type: "Fail", Error: "NoHeartbeat", Cause: "nobody answered" },
    Done: { Type: "Succeed" },
  },
};

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

async function start() {
  const clock = new ManualClock(START);
  const tokens: string[] = [];
  runtime = await startRuntime({
    clock,
    definitions: [
      { name: "approval", definition, substitutions: { ApproveFunctionArn: localFunctionArn("approve") } },
    ],
    functions: {
      approve: {
        handler: async (event) => {
          tokens.push((event as { taskToken: string }).taskToken);
          return null;
        },
      },
      echo: {
        env: { GREETING: "hello" },
        handler: async (event) => ({ event, greeting: process.env.GREETING }),
      },
      broken: {
        handler: async () => {
          throw new TypeError("bad input");
        },
      },
    },
  });
  const sfn = new SFNClient(clientConfig(runtime.facadeUrl));
  return { runtime, clock, tokens, sfn, arn: runtime.stateMachineArn("approval") };
}

describe("the local engine", () => {
  it("waits SecondsPath on the clock and ends a token task whose heartbeats stop", async () => {
    const { runtime, clock, tokens, sfn, arn } = await start();
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, input: { seconds: 30 } });
    await runtime.settle();
    expect(tokens).toHaveLength(0);
    await runtime.advanceBy(30_000);
    expect(tokens).toHaveLength(1);
    await runtime.advanceBy(8_000);
    await sfn.send(new SendTaskHeartbeatCommand({ taskToken: tokens[0]! }));
    await runtime.advanceBy(8_000);
    expect(runtime.sfn.describeExecution(executionArn).status).toBe("RUNNING");
    const done = await runtime.waitForExecution(executionArn);
    expect(done).toMatchObject({ status: "FAILED", error: "NoHeartbeat" });
    expect(clock.now()).toBe(START + 30_000 + 8_000 + 10_000);
    await expect(sfn.send(new SendTaskHeartbeatCommand({ taskToken: tokens[0]! }))).rejects.toBeInstanceOf(
      TaskTimedOut,
    );
    const types = runtime.sfn.getExecutionHistory(executionArn).map((e) => e.type);
    expect(types).toContain("WaitStateEntered");
    expect(types).toContain("TaskSubmitted");
    expect(types).toContain("TaskTimedOut");
    expect(types).toContain("FailStateEntered");
  });

  it("stops an execution waiting on a token: the token is then gone", async () => {
    const { runtime, tokens, sfn, arn } = await start();
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, input: { seconds: 0 } });
    await runtime.settle();
    expect(tokens).toHaveLength(1);
    await sfn.send(
      new StopExecutionCommand({ executionArn, error: "Superseded", cause: "a newer revision" }),
    );
    expect(await runtime.waitForExecution(executionArn)).toMatchObject({
      status: "ABORTED",
      error: "Superseded",
    });
    await expect(sfn.send(new SendTaskHeartbeatCommand({ taskToken: tokens[0]! }))).rejects.toBeInstanceOf(
      TaskDoesNotExist,
    );
    await expect(sfn.send(new SendTaskHeartbeatCommand({ taskToken: "garbage" }))).rejects.toBeInstanceOf(
      InvalidToken,
    );
    expect(runtime.sfn.getExecutionHistory(executionArn).at(-1)?.type).toBe("ExecutionAborted");
  });

  it("refuses an unknown state machine and reports a token nobody will send as stuck", async () => {
    const { runtime, sfn, arn } = await start();
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: `${arn}-nope`, input: "{}" })),
    ).rejects.toBeInstanceOf(StateMachineDoesNotExist);
    const stuck = {
      StartAt: "Forever",
      States: {
        Forever: {
          Type: "Task",
          Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
          Parameters: { FunctionName: localFunctionArn("approve"), Payload: { "t.$": "$$.Task.Token" } },
          End: true,
        },
      },
    };
    const record = runtime.sfn.createStateMachine({ name: "stuck", definition: stuck });
    const { executionArn } = runtime.startExecution({ stateMachineArn: record.stateMachineArn });
    await expect(runtime.waitForExecution(executionArn)).rejects.toBeInstanceOf(ExecutionStuckError);
  });

  it("times a whole execution out at its TimeoutSeconds", async () => {
    const { runtime, clock, arn } = await start();
    const { executionArn } = runtime.startExecution({ stateMachineArn: arn, input: { seconds: 7200 } });
    const done = await runtime.waitForExecution(executionArn);
    expect(done.status).toBe("TIMED_OUT");
    expect(clock.now()).toBe(START + 3_600_000);
    expect(runtime.sfn.getExecutionHistory(executionArn).at(-1)?.type).toBe("ExecutionTimedOut");
  });

  it("invokes functions through the Lambda API with their own env and Lambda's error shape", async () => {
    const { runtime } = await start();
    const lambda = new LambdaClient(clientConfig(runtime.facadeUrl));
    const ok = await lambda.send(
      new InvokeCommand({ FunctionName: "echo", Payload: new TextEncoder().encode('{"a":1}') }),
    );
    expect(ok.StatusCode).toBe(200);
    expect(ok.FunctionError).toBeUndefined();
    expect(JSON.parse(new TextDecoder().decode(ok.Payload))).toEqual({ event: { a: 1 }, greeting: "hello" });
    const failed = await lambda.send(new InvokeCommand({ FunctionName: localFunctionArn("broken") }));
    expect(failed.FunctionError).toBe("Unhandled");
    expect(JSON.parse(new TextDecoder().decode(failed.Payload))).toMatchObject({
      errorType: "TypeError",
      errorMessage: "bad input",
    });
    await expect(lambda.send(new InvokeCommand({ FunctionName: "missing" }))).rejects.toMatchObject({
      name: "ResourceNotFoundException",
    });
    const scheduler = new SchedulerClient(clientConfig(runtime.facadeUrl));
    await expect(
      scheduler.send(new GetScheduleCommand({ Name: "none", GroupName: "g" })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
  });
});
