import { CloudWatchClient, DescribeAlarmsCommand } from "@aws-sdk/client-cloudwatch";
import { EXEC, runningRollout } from "@sfn-rollouts/test-support/running-rollout";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { RecordingTaskTokens, RolloutAbortedError } from "../../../functions/abort/index.ts";
import { CloudWatchAlarms } from "../../../functions/alarms/cloudwatch.ts";
import { AlarmReadError, abortOnAlarm } from "../../../functions/alarms/index.ts";
import { MemoryAlarms } from "../../../functions/alarms/memory.ts";
import { AlarmCheckError, checkAlarms } from "../../../functions/workflow/check-alarms.ts";
import type { WorkflowDeps } from "../../../functions/workflow/deps.ts";
import type { CheckAlarmsPayload } from "../../../functions/workflow/payloads.ts";

const cw = mockClient(CloudWatchClient);
beforeEach(() => cw.reset());
const adapter = () => new CloudWatchAlarms(new CloudWatchClient({ region: "eu-west-1" }));

describe("CloudWatchAlarms", () => {
  it("reads metric and composite alarms by name, page after page", async () => {
    cw.on(DescribeAlarmsCommand)
      .resolvesOnce({
        MetricAlarms: [{ AlarmName: "shop-5xx", StateValue: "OK", StateReason: "fine" }],
        NextToken: "page-2",
      })
      .resolvesOnce({
        CompositeAlarms: [
          { AlarmName: "shop-health", StateValue: "ALARM", StateReason: "children in ALARM" },
        ],
      });
    const states = await adapter().describe(["shop-5xx", "shop-health", "gone"]);
    expect(states).toEqual([
      { name: "shop-5xx", value: "OK", reason: "fine" },
      { name: "shop-health", value: "ALARM", reason: "children in ALARM" },
    ]);
    const calls = cw.commandCalls(DescribeAlarmsCommand).map((c) => c.args[0].input);
    expect(calls).toEqual([
      { AlarmNames: ["shop-5xx", "shop-health", "gone"], AlarmTypes: ["MetricAlarm", "CompositeAlarm"] },
      {
        AlarmNames: ["shop-5xx", "shop-health", "gone"],
        AlarmTypes: ["MetricAlarm", "CompositeAlarm"],
        NextToken: "page-2",
      },
    ]);
  });

  it("turns a failed call into an AlarmReadError naming the alarms and the cause", async () => {
    cw.on(DescribeAlarmsCommand).rejects(Object.assign(new Error("Rate exceeded"), { name: "Throttling" }));
    await expect(adapter().describe(["shop-5xx"])).rejects.toThrow(
      new AlarmReadError("DescribeAlarms of shop-5xx failed: Throttling: Rate exceeded"),
    );
  });
});

describe("checkAlarms (a step boundary)", () => {
  const payload = (ignore = false): CheckAlarmsPayload => ({
    context: {
      rollout: "web",
      revision: 2,
      image: "web:2",
      digest: "sha256:x",
      tag: "2",
      executionArn: EXEC,
    },
    rollout: { name: "web", revision: "abcdef0123", strategy: "canary", stepCount: 3 },
    stepIndex: 1,
    alarms: ["web-5xx", "web-p99"],
    ignorePollAlarmFailure: ignore,
  });
  const deps = async () => {
    const { store, clock } = await runningRollout({
      phase: "Progressing",
      currentTaskToken: null,
      waitingFor: null,
    });
    return { store, clock, alarms: adapter() } as Partial<WorkflowDeps> as WorkflowDeps;
  };

  it("lets the step go on when every alarm is OK or has too little data", async () => {
    cw.on(DescribeAlarmsCommand).resolves({
      MetricAlarms: [
        { AlarmName: "web-5xx", StateValue: "OK" },
        { AlarmName: "web-p99", StateValue: "INSUFFICIENT_DATA" },
      ],
    });
    expect(await checkAlarms(await deps(), payload())).toEqual({ checked: 2, unchecked: [] });
  });

  it("aborts with the alarm's name and reason when one is in ALARM", async () => {
    cw.on(DescribeAlarmsCommand).resolves({
      MetricAlarms: [
        { AlarmName: "web-5xx", StateValue: "OK" },
        { AlarmName: "web-p99", StateValue: "ALARM", StateReason: "p99 1.2 s > 0.8 s" },
      ],
    });
    const error = await checkAlarms(await deps(), payload()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutAbortedError);
    expect((error as Error).message).toBe('CloudWatch alarm "web-p99" is in ALARM: p99 1.2 s > 0.8 s');
  });

  it("refuses a missing alarm and a failed read, unless ignorePollAlarmFailure", async () => {
    cw.on(DescribeAlarmsCommand).resolves({ MetricAlarms: [{ AlarmName: "web-5xx", StateValue: "OK" }] });
    await expect(checkAlarms(await deps(), payload())).rejects.toThrow(
      new AlarmCheckError(
        'CloudWatch alarm "web-p99" not found: a rollout cannot be guarded by an alarm that does not exist (create it, fix the name, or set ignorePollAlarmFailure)',
      ),
    );
    expect(await checkAlarms(await deps(), payload(true))).toEqual({ checked: 1, unchecked: ["web-p99"] });

    cw.reset();
    cw.on(DescribeAlarmsCommand).rejects(
      Object.assign(new Error("not authorized"), { name: "AccessDenied" }),
    );
    await expect(checkAlarms(await deps(), payload())).rejects.toThrow(
      /DescribeAlarms of web-5xx, web-p99 failed: AccessDenied/,
    );
    expect(await checkAlarms(await deps(), payload(true))).toEqual({
      checked: 0,
      unchecked: ["web-5xx", "web-p99"],
    });
  });
});

describe("abortOnAlarm (the alarm rule's target)", () => {
  const event = (alarmName: string, value: string, reason = "Threshold Crossed") => ({
    version: "0",
    id: "e-1",
    source: "aws.cloudwatch",
    "detail-type": "CloudWatch Alarm State Change",
    resources: [`arn:aws:cloudwatch:eu-west-1:123456789012:alarm:${alarmName}`],
    detail: { alarmName, state: { value, reason }, previousState: { value: "OK" } },
  });

  it("aborts every running rollout that watches the alarm, through the abort channel, with the alarm's reason", async () => {
    const { store, clock } = await runningRollout();
    const tokens = new RecordingTaskTokens();
    tokens.live.add("token-pause");
    const routes = [
      { rollout: "web", alarms: ["web-5xx"] },
      { rollout: "other", alarms: ["other-5xx"] },
    ];
    const result = await abortOnAlarm(
      { store, tokens, clock, routes },
      event("web-5xx", "ALARM", "3 of 3 > 5%"),
    );
    expect(result).toMatchObject({
      status: "handled",
      alarm: "web-5xx",
      rollouts: [{ rollout: "web", outcome: "signalled" }],
    });
    expect(tokens.failures).toEqual([
      {
        token: "token-pause",
        error: "RolloutAborted",
        cause: 'CloudWatch alarm "web-5xx" is in ALARM: 3 of 3 > 5%',
      },
    ]);
  });

  it("ignores a change to OK, and leaves a rollout that is not running alone", async () => {
    const { store, clock } = await runningRollout({ phase: "Healthy" });
    const tokens = new RecordingTaskTokens();
    const routes = [{ rollout: "web", alarms: ["web-5xx"] }];
    expect(await abortOnAlarm({ store, tokens, clock, routes }, event("web-5xx", "OK"))).toMatchObject({
      status: "ignored",
    });
    expect(await abortOnAlarm({ store, tokens, clock, routes }, event("web-5xx", "ALARM"))).toMatchObject({
      rollouts: [{ rollout: "web", outcome: "not-running" }],
    });
    expect(tokens.failures).toEqual([]);
  });
});

describe("MemoryAlarms", () => {
  it("answers only the alarms that exist", async () => {
    const alarms = new MemoryAlarms();
    alarms.set("a", "ALARM", "why");
    expect(await alarms.describe(["a", "b"])).toEqual([{ name: "a", value: "ALARM", reason: "why" }]);
  });
});
