import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { type Runtime, startRuntime } from "../../../local/runtime.ts";

/** The context object (`$$`) as the embedded runtime gives it: times on the runtime's clock. */

const START = Date.parse("2026-01-01T00:00:00Z");

const definition = {
  StartAt: "Settle",
  States: {
    Settle: { Type: "Wait", Seconds: 90, Next: "Read" },
    Read: {
      Type: "Pass",
      Parameters: {
        "name.$": "$$.Execution.Name",
        "startTime.$": "$$.Execution.StartTime",
        "said.$": "States.Format('started at {}', $$.Execution.StartTime)",
      },
      Next: "Started?",
    },
    "Started?": {
      Type: "Choice",
      Choices: [
        { Variable: "$$.Execution.StartTime", StringEquals: "2026-01-01T00:00:05.000Z", Next: "Done" },
      ],
      Default: "Elsewhen",
    },
    Elsewhen: { Type: "Fail", Error: "Elsewhen" },
    Done: { Type: "Succeed" },
  },
};

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

describe("the context object of the embedded runtime", () => {
  it("$$.Execution.StartTime is when the execution started on the runtime's clock, in every state", async () => {
    const clock = new ManualClock(START);
    runtime = await startRuntime({ clock, definitions: [{ name: "ctx", definition }] });
    await runtime.advanceBy(5_000);
    const { executionArn } = runtime.startExecution({
      stateMachineArn: runtime.stateMachineArn("ctx"),
      name: "run-1",
      input: {},
    });
    const done = await runtime.waitForExecution(executionArn);
    expect(done.status).toBe("SUCCEEDED");
    // Read after the 90 s wait: still the start, not the time of the state.
    expect(JSON.parse(done.output ?? "null")).toEqual({
      name: "run-1",
      startTime: "2026-01-01T00:00:05.000Z",
      said: "started at 2026-01-01T00:00:05.000Z",
    });
  });
});
