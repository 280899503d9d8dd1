/**
 * The Scheduler timer against moto: the real adapter, a real SDK client, and the schedule read
 * back from moto (`GetSchedule`). moto keeps schedules and never fires them: the firing is the
 * embedded runtime's (`local/aws/scheduler.ts`). The SDK-mock twin is
 * `test/unit/timer/scheduler.test.ts`.
 */
import { CreateScheduleGroupCommand, GetScheduleCommand, SchedulerClient } from "@aws-sdk/client-scheduler";
import { MOTO_ACCOUNT, MOTO_REGION, type Moto, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { TIMER_DELIVERY } from "../../functions/config.ts";
import { TimerError } from "../../functions/timer/port.ts";
import { SchedulerTimer, scheduleName } from "../../functions/timer/scheduler.ts";

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const GROUP = "sfn-rollouts";
const RESUME = `arn:aws:lambda:${MOTO_REGION}:${MOTO_ACCOUNT}:function:resume`;
const ROLE = `arn:aws:iam::${MOTO_ACCOUNT}:role/scheduler`;
const DLQ = `arn:aws:sqs:${MOTO_REGION}:${MOTO_ACCOUNT}:timer-dlq`;

let moto: Moto;
let scheduler: SchedulerClient;

beforeAll(async () => {
  moto = await startMoto();
  scheduler = new SchedulerClient(moto.config);
});
afterAll(async () => {
  scheduler?.destroy();
  await moto?.close();
});
beforeEach(async () => {
  await moto.reset();
  await scheduler.send(new CreateScheduleGroupCommand({ Name: GROUP }));
});

const timer = (groupName = GROUP) =>
  new SchedulerTimer({
    client: scheduler,
    groupName,
    targetArn: RESUME,
    roleArn: ROLE,
    clock: new ManualClock(T0),
    deadLetterArn: DLQ,
  });

const read = (key: string) =>
  scheduler.send(new GetScheduleCommand({ Name: scheduleName(key), GroupName: GROUP }));

describe("SchedulerTimer against moto", () => {
  it("creates a one-time UTC schedule in the group whose target is resume with the firing", async () => {
    const key = "checkout#analysis#tick-3";
    const at = T0 + 5 * 60_000 + 250;
    const outcome = await timer().schedule({ key, at, payload: { run: "r-1" } });
    expect(outcome).toEqual({ via: "scheduler", name: scheduleName(key), created: true });
    const schedule = await read(key);
    expect(schedule.ScheduleExpression).toBe("at(2026-01-01T12:05:01)");
    expect(schedule.ScheduleExpressionTimezone).toBe("UTC");
    expect(schedule.FlexibleTimeWindow).toEqual({ Mode: "OFF" });
    expect(schedule.ActionAfterCompletion).toBe("DELETE");
    expect(schedule.GroupName).toBe(GROUP);
    expect(schedule.Target?.Arn).toBe(RESUME);
    expect(schedule.Target?.RoleArn).toBe(ROLE);
    expect(schedule.Target?.DeadLetterConfig?.Arn).toBe(DLQ);
    expect(schedule.Target?.RetryPolicy).toEqual({
      MaximumRetryAttempts: TIMER_DELIVERY.schedulerRetryAttempts,
      MaximumEventAgeInSeconds: TIMER_DELIVERY.schedulerMaximumEventAgeSeconds,
    });
    expect(JSON.parse(schedule.Target?.Input ?? "null")).toEqual({ key, at, payload: { run: "r-1" } });
  });

  it("keeps a minute's lead for a firing due sooner", async () => {
    await timer().schedule({ key: "soon", at: T0 + 1_000, payload: {} });
    expect((await read("soon")).ScheduleExpression).toBe("at(2026-01-01T12:01:00)");
  });

  it("takes a second schedule of a pending key as done (ConflictException), keeping the first", async () => {
    await timer().schedule({ key: "k", at: T0 + 120_000, payload: { n: 1 } });
    const again = await timer().schedule({ key: "k", at: T0 + 600_000, payload: { n: 2 } });
    expect(again.created).toBe(false);
    expect(JSON.parse((await read("k")).Target?.Input ?? "{}").payload).toEqual({ n: 1 });
  });

  it("deletes the schedule on cancel, and a second cancel is a no-op", async () => {
    await timer().schedule({ key: "gone", at: T0 + 120_000, payload: {} });
    await timer().cancel("gone");
    await expect(read("gone")).rejects.toMatchObject({ name: "ResourceNotFoundException" });
    await expect(timer().cancel("gone")).resolves.toBeUndefined();
  });

  it("reports a schedule Scheduler refuses as a TimerError", async () => {
    await expect(
      timer("no-such-group").schedule({ key: "x", at: T0 + 120_000, payload: {} }),
    ).rejects.toThrow(TimerError);
  });
});
