import {
  ExecutionAlreadyExists,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from "@aws-sdk/client-sfn";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import {
  executionArnFor,
  RoutingTimer,
  routeFor,
  type ScheduleRequest,
  TickerTimer,
  type Timer,
  tickerExecutionName,
} from "../../../functions/timer/index.ts";

const sfn = mockClient(SFNClient);
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const SM = "arn:aws:states:us-east-1:123456789012:stateMachine:rollouts-ticker";
const ticker = (clock = new ManualClock(NOW)) =>
  new TickerTimer({ client: new SFNClient({ region: "us-east-1" }), stateMachineArn: SM, clock });

beforeEach(() => sfn.reset());

describe("TickerTimer", () => {
  it("starts the ticker state machine with {seconds, payload}, named after the key", async () => {
    sfn.on(StartExecutionCommand).resolves({ executionArn: "arn:x", startDate: new Date() });
    const outcome = await ticker().schedule({ at: NOW + 10_400, key: "web/run-1/tick-2", payload: { n: 2 } });
    expect(outcome).toEqual({ via: "ticker", name: tickerExecutionName("web/run-1/tick-2"), created: true });
    const input = sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input;
    expect(input?.stateMachineArn).toBe(SM);
    expect(input?.name).toBe(outcome.name);
    expect(JSON.parse(input?.input ?? "")).toEqual({
      seconds: 11,
      payload: { key: "web/run-1/tick-2", at: NOW + 10_400, payload: { n: 2 } },
    });
  });

  it("waits 0 seconds for a time already past", async () => {
    sfn.on(StartExecutionCommand).resolves({});
    await ticker().schedule({ at: NOW - 3_000, key: "k", payload: null });
    expect(JSON.parse(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.input ?? "").seconds).toBe(0);
  });

  it("treats ExecutionAlreadyExists as an idempotent no-op", async () => {
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: "exists", $metadata: {} }));
    expect((await ticker().schedule({ at: NOW + 1_000, key: "k", payload: null })).created).toBe(false);
  });

  it("cancels nothing: an Express execution cannot be stopped, and resume refuses a firing it no longer owns", async () => {
    await ticker().cancel("k");
    expect(sfn.commandCalls(StopExecutionCommand)).toHaveLength(0);
  });

  it("derives execution names ≤ 80 chars of valid characters", () => {
    const name = tickerExecutionName(`rollout/${"x".repeat(200)} ${"{}"}`);
    expect(name).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(() => executionArnFor("arn:aws:lambda:us-east-1:1:function:f", "n")).toThrow(RangeError);
  });
});

class RecordingTimer implements Timer {
  readonly scheduled: ScheduleRequest[] = [];
  readonly cancelled: string[] = [];
  constructor(readonly via: "scheduler" | "ticker") {}
  async schedule(request: ScheduleRequest) {
    this.scheduled.push(request);
    return { via: this.via, name: request.key, created: true };
  }
  async cancel(key: string) {
    this.cancelled.push(key);
  }
}

describe("RoutingTimer", () => {
  it.each([
    [0, "ticker"],
    [59_999, "ticker"],
    [60_000, "scheduler"],
    [3_600_000, "scheduler"],
  ] as const)("a delay of %d ms goes to the %s", async (delay, expected) => {
    expect(routeFor(delay)).toBe(expected);
    const clock = new ManualClock(NOW);
    const scheduler = new RecordingTimer("scheduler");
    const tick = new RecordingTimer("ticker");
    const timer = new RoutingTimer({ scheduler, ticker: tick, clock });
    const outcome = await timer.schedule({ at: NOW + delay, key: "k", payload: null });
    expect(outcome.via).toBe(expected);
    expect(scheduler.scheduled).toHaveLength(expected === "scheduler" ? 1 : 0);
    expect(tick.scheduled).toHaveLength(expected === "ticker" ? 1 : 0);
  });

  it("cancels on both backends", async () => {
    const scheduler = new RecordingTimer("scheduler");
    const tick = new RecordingTimer("ticker");
    await new RoutingTimer({ scheduler, ticker: tick, clock: new ManualClock(NOW) }).cancel("k");
    expect([scheduler.cancelled, tick.cancelled]).toEqual([["k"], ["k"]]);
  });
});
