import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { localFunctionArn, localStateMachineArn } from "../../../local/asl/intrinsics.ts";
import { type Runtime, startRuntime } from "../../../local/runtime.ts";

const START = Date.parse("2026-01-01T00:00:00Z");

/** A child that waits (virtual time must move while its parent waits for it), then answers or fails. */
const child = {
  StartAt: "Wait",
  States: {
    Wait: { Type: "Wait", Seconds: 600, Next: "Work" },
    Work: {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke",
      Parameters: { FunctionName: "${WorkFunctionArn}", "Payload.$": "$" },
      ResultSelector: { "value.$": "$.Payload" },
      ResultPath: "$.last",
      End: true,
    },
  },
};

const parent = {
  StartAt: "Run",
  States: {
    Run: {
      Type: "Task",
      Resource: "arn:aws:states:::states:startExecution.sync:2",
      Parameters: {
        StateMachineArn: localStateMachineArn("child"),
        "Name.$": "$$.Execution.Name",
        Input: { "n.$": "$.n", fixed: "x" },
      },
      Credentials: { RoleArn: "arn:aws:iam::111111111111:role/other-account" },
      ResultSelector: { "status.$": "$.Status", "doubled.$": "$.Output.last.value.doubled" },
      ResultPath: "$.child",
      Catch: [{ ErrorEquals: ["States.TaskFailed"], ResultPath: "$.failure", Next: "ChildFailed" }],
      End: true,
    },
    ChildFailed: { Type: "Pass", End: true },
  },
};

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

async function start() {
  runtime = await startRuntime({
    clock: new ManualClock(START),
    definitions: [
      { name: "child", definition: child, substitutions: { WorkFunctionArn: localFunctionArn("work") } },
      { name: "parent", definition: parent },
    ],
    functions: {
      work: {
        handler: async (event) => {
          const n = (event as { n: number }).n;
          if (n < 0) throw new RangeError("negative");
          return { doubled: 2 * n };
        },
      },
    },
  });
  return runtime;
}

describe("states:startExecution.sync:2 on the local engine", () => {
  it("starts the child under the given name, waits for it in virtual time and answers its output as JSON", async () => {
    const rt = await start();
    const { executionArn } = rt.startExecution({
      stateMachineArn: rt.stateMachineArn("parent"),
      name: "release-1",
      input: { n: 21 },
    });
    const done = await rt.waitForExecution(executionArn);
    expect(done.status).toBe("SUCCEEDED");
    expect(JSON.parse(done.output ?? "{}")).toEqual({ n: 21, child: { status: "SUCCEEDED", doubled: 42 } });
    expect(done.stopDate).toBe(START + 600_000);
    const childRun = rt.sfn.describeExecution(
      executionArn.replace(":execution:parent:", ":execution:child:"),
    );
    expect(childRun).toMatchObject({ name: "release-1", status: "SUCCEEDED" });
    expect(JSON.parse(childRun.input)).toEqual({ n: 21, fixed: "x" });
    const types = rt.sfn.getExecutionHistory(executionArn).map((e) => e.type);
    expect(types).toContain("TaskSucceeded");
  });

  it("a failed child is States.TaskFailed whose cause is the child's description", async () => {
    const rt = await start();
    const { executionArn } = rt.startExecution({
      stateMachineArn: rt.stateMachineArn("parent"),
      name: "release-2",
      input: { n: -1 },
    });
    const done = await rt.waitForExecution(executionArn);
    expect(done.status).toBe("SUCCEEDED");
    const out = JSON.parse(done.output ?? "{}") as { failure: { Error: string; Cause: string } };
    expect(out.failure.Error).toBe("States.TaskFailed");
    expect(JSON.parse(out.failure.Cause)).toMatchObject({
      Name: "release-2",
      Status: "FAILED",
      Error: "RangeError",
      Cause: expect.stringContaining("negative"),
    });
  });
});
