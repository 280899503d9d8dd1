import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  ValidationException,
} from "@aws-sdk/client-scheduler";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import {
  atExpression,
  SchedulerTimer,
  scheduleName,
  TimerError,
  TimerFiringSchema,
} from "../../../functions/timer/index.ts";

const scheduler = mockClient(SchedulerClient);
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const clock = new ManualClock(NOW);
const timer = () =>
  new SchedulerTimer({
    client: new SchedulerClient({ region: "us-east-1" }),
    groupName: "sfn-rollouts",
    targetArn: "arn:aws:lambda:us-east-1:123456789012:function:resume",
    roleArn: "arn:aws:iam::123456789012:role/scheduler",
    clock,
  });

beforeEach(() => scheduler.reset());

describe("SchedulerTimer", () => {
  it("creates a one-time at() schedule in UTC, deleted after completion, invoking resume with the firing", async () => {
    scheduler.on(CreateScheduleCommand).resolves({ ScheduleArn: "arn:s" });
    const at = NOW + 5 * 60_000 + 250;
    const outcome = await timer().schedule({
      at,
      key: "checkout/run-1/tick-0001",
      payload: { runId: "run-1" },
    });
    expect(outcome).toEqual({
      via: "scheduler",
      name: scheduleName("checkout/run-1/tick-0001"),
      created: true,
    });

    const input = scheduler.commandCalls(CreateScheduleCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      Name: outcome.name,
      GroupName: "sfn-rollouts",
      ScheduleExpression: "at(2026-11-30T12:05:01)",
      ScheduleExpressionTimezone: "UTC",
      FlexibleTimeWindow: { Mode: "OFF" },
      ActionAfterCompletion: "DELETE",
      Target: {
        Arn: "arn:aws:lambda:us-east-1:123456789012:function:resume",
        RoleArn: "arn:aws:iam::123456789012:role/scheduler",
      },
    });
    const firing = TimerFiringSchema.parse(JSON.parse(input?.Target?.Input ?? "null"));
    expect(firing).toEqual({ key: "checkout/run-1/tick-0001", at, payload: { runId: "run-1" } });
  });

  it("names the dead-letter queue a firing goes to once Scheduler's retries are exhausted", async () => {
    scheduler.on(CreateScheduleCommand).resolves({ ScheduleArn: "arn:s" });
    const dlq = "arn:aws:sqs:us-east-1:123456789012:timer-dead-letters";
    await new SchedulerTimer({
      client: new SchedulerClient({ region: "us-east-1" }),
      groupName: "sfn-rollouts",
      targetArn: "arn:aws:lambda:us-east-1:123456789012:function:resume",
      roleArn: "arn:aws:iam::123456789012:role/scheduler",
      deadLetterArn: dlq,
      clock,
    }).schedule({ at: NOW + 120_000, key: "checkout/x/pause-1", payload: {} });
    const input = scheduler.commandCalls(CreateScheduleCommand)[0]?.args[0].input;
    expect(input?.Target?.DeadLetterConfig).toEqual({ Arn: dlq });
    // Retries of a failed invoke stop after 5 minutes: the watchdog's grace counts on it.
    expect(input?.Target?.RetryPolicy).toEqual({ MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 300 });
  });

  it("treats ConflictException (key already scheduled) as an idempotent no-op", async () => {
    scheduler
      .on(CreateScheduleCommand)
      .rejects(new ConflictException({ message: "exists", Message: "exists", $metadata: {} }));
    const outcome = await timer().schedule({ at: NOW + 120_000, key: "k", payload: null });
    expect(outcome.created).toBe(false);
  });

  it("throws a named TimerError with the cause for other failures", async () => {
    const cause = new ValidationException({ message: "bad", Message: "bad", $metadata: {} });
    scheduler.on(CreateScheduleCommand).rejects(cause);
    const error = await timer()
      .schedule({ at: NOW + 120_000, key: "k", payload: null })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimerError);
    expect(error).toMatchObject({ name: "TimerError", key: "k", cause });
  });

  it("never asks Scheduler for less than a minute ahead", async () => {
    scheduler.on(CreateScheduleCommand).resolves({});
    await timer().schedule({ at: NOW - 5_000, key: "late", payload: null });
    expect(scheduler.commandCalls(CreateScheduleCommand)[0]?.args[0].input.ScheduleExpression).toBe(
      "at(2026-11-30T12:01:00)",
    );
  });

  it("cancels by deleting the schedule, and ignores one that already fired", async () => {
    scheduler
      .on(DeleteScheduleCommand)
      .resolvesOnce({})
      .rejects(new ResourceNotFoundException({ message: "gone", Message: "gone", $metadata: {} }));
    await timer().cancel("k");
    await timer().cancel("k");
    const calls = scheduler.commandCalls(DeleteScheduleCommand);
    expect(calls).toHaveLength(2);
    expect(calls[0]?.args[0].input).toEqual({ Name: scheduleName("k"), GroupName: "sfn-rollouts" });
  });
});

describe("scheduleName", () => {
  it.each([
    ["short"],
    ["checkout/run-1/tick-0001"],
    ["x".repeat(300)],
    ["weird chars: ✓ {}[]<>?*/\\|"],
    ["---"],
  ])("is deterministic, valid and at most 64 characters: %s", (key) => {
    const name = scheduleName(key);
    expect(name).toBe(scheduleName(key));
    expect(name).toMatch(/^[0-9a-zA-Z_-]{1,64}$/);
  });

  it("distinguishes keys that differ only beyond the cut or in replaced characters", () => {
    const long = "a".repeat(100);
    expect(scheduleName(`${long}1`)).not.toBe(scheduleName(`${long}2`));
    expect(scheduleName("a/b")).not.toBe(scheduleName("a:b"));
  });
});

describe("atExpression", () => {
  it.each([
    [Date.UTC(2026, 0, 2, 3, 4, 5), "at(2026-01-02T03:04:05)"],
    [Date.UTC(2026, 0, 2, 3, 4, 5) + 1, "at(2026-01-02T03:04:06)"],
    [Date.UTC(2026, 11, 31, 23, 59, 59) + 999, "at(2027-01-01T00:00:00)"],
  ])("%d → %s", (ms, expected) => {
    expect(atExpression(ms)).toBe(expected);
  });
});
