/**
 * CloudWatch against moto: the metric provider's `GetMetricData` over datapoints put into moto,
 * and the alarm reader's `DescribeAlarms` over metric alarms created and set there. moto answers
 * a metric math expression (`errors / requests`) with no values and has no `PutCompositeAlarm`,
 * so neither is tried here (`docs/runtime.md`, "The AWS peer: moto"). The SDK-mock twins are `test/metrics/cloudwatch.test.ts` and
 * `test/unit/alarms/alarms.test.ts`.
 */
import {
  CloudWatchClient,
  PutMetricAlarmCommand,
  PutMetricDataCommand,
  SetAlarmStateCommand,
} from "@aws-sdk/client-cloudwatch";
import { type Moto, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CloudWatchAlarms } from "../../functions/alarms/cloudwatch.ts";
import { CloudWatchMetricProvider } from "../../functions/metrics/cloudwatch.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

const NOW = new Date("2026-03-01T12:00:00.000Z");
const NAMESPACE = "Shop";
const DIMENSIONS = [{ Name: "Version", Value: "canary" }];

let moto: Moto;
let cloudwatch: CloudWatchClient;

beforeAll(async () => {
  moto = await startMoto();
  cloudwatch = new CloudWatchClient(moto.config);
});
afterAll(async () => {
  cloudwatch?.destroy();
  await moto?.close();
});
beforeEach(() => moto.reset());

/** Argo's CloudWatch metric: the canary's errors and requests per minute over the last `interval` seconds. */
function metric(interval = 600): Metric {
  const stat = (id: string, metricName: string) => ({
    id,
    label: id,
    metricStat: {
      metric: { namespace: NAMESPACE, metricName, dimensions: [{ name: "Version", value: "canary" }] },
      period: 60,
      stat: "Sum",
      unit: "Count",
    },
  });
  return MetricSchema.parse({
    name: "errors",
    successCondition: "all(result[0].Values, {# <= 5})",
    provider: {
      cloudWatch: { interval, metricDataQueries: [stat("errors", "Errors"), stat("requests", "Requests")] },
    },
  });
}

/** Per minute `minutesAgo` before NOW: `requests` requests of which `errors` failed. */
async function traffic(minutesAgo: number, requests: number, errors: number): Promise<void> {
  const at = new Date(NOW.getTime() - minutesAgo * 60_000 + 10_000);
  await cloudwatch.send(
    new PutMetricDataCommand({
      Namespace: NAMESPACE,
      MetricData: [
        { MetricName: "Requests", Dimensions: DIMENSIONS, Timestamp: at, Value: requests, Unit: "Count" },
        { MetricName: "Errors", Dimensions: DIMENSIONS, Timestamp: at, Value: errors, Unit: "Count" },
      ],
    }),
  );
}

describe("CloudWatchMetricProvider against moto", () => {
  it("reads each query's sums per minute over the interval, by the metric's dimensions", async () => {
    await traffic(3, 200, 2);
    await traffic(2, 100, 5);
    await traffic(30, 100, 90); // before the interval: not read
    await cloudwatch.send(
      new PutMetricDataCommand({
        Namespace: NAMESPACE,
        MetricData: [
          // Another version's errors: not the canary's.
          {
            MetricName: "Errors",
            Dimensions: [{ Name: "Version", Value: "stable" }],
            Timestamp: NOW,
            Value: 70,
          },
        ],
      }),
    );
    const out = await new CloudWatchMetricProvider(cloudwatch).measure(metric(), { now: NOW });
    if (!out.ok) throw new Error(out.message);
    const results = out.result as { Id: string; Label: string; Values: number[] }[];
    const sorted = (values: number[] | undefined) => [...(values ?? [])].sort((a, b) => a - b);
    expect(results.map((r) => [r.Id, r.Label])).toEqual([
      ["errors", "errors"],
      ["requests", "requests"],
    ]);
    expect(sorted(results[0]?.Values)).toEqual([2, 5]);
    expect(sorted(results[1]?.Values)).toEqual([100, 200]);
    expect(out.value).toMatch(/^\[\[\d \d\] \[\d+ \d+\]\]$/);
  });

  it("reads nothing when the interval holds no datapoints", async () => {
    await traffic(30, 100, 1);
    const out = await new CloudWatchMetricProvider(cloudwatch).measure(metric(300), { now: NOW });
    if (!out.ok) throw new Error(out.message);
    expect((out.result as { Values: number[] }[])[0]?.Values).toEqual([]);
  });
});

describe("CloudWatchAlarms against moto", () => {
  const alarm = (name: string) =>
    cloudwatch.send(
      new PutMetricAlarmCommand({
        AlarmName: name,
        Namespace: NAMESPACE,
        MetricName: "Errors",
        Dimensions: DIMENSIONS,
        Statistic: "Sum",
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 10,
        ComparisonOperator: "GreaterThanThreshold",
      }),
    );

  it("reads metric alarms by name, with their state and reason", async () => {
    await alarm("checkout-5xx");
    await alarm("checkout-latency");
    await alarm("checkout-new");
    await alarm("unrelated");
    await cloudwatch.send(
      new SetAlarmStateCommand({
        AlarmName: "checkout-5xx",
        StateValue: "ALARM",
        StateReason: "5xx over 10",
      }),
    );
    await cloudwatch.send(
      new SetAlarmStateCommand({ AlarmName: "checkout-latency", StateValue: "OK", StateReason: "fast" }),
    );
    // moto starts an alarm in OK, AWS in INSUFFICIENT_DATA: set it as AWS would have it.
    await cloudwatch.send(
      new SetAlarmStateCommand({
        AlarmName: "checkout-new",
        StateValue: "INSUFFICIENT_DATA",
        StateReason: "new",
      }),
    );
    const states = await new CloudWatchAlarms(cloudwatch).describe([
      "checkout-5xx",
      "checkout-latency",
      "checkout-new",
      "missing",
    ]);
    const byName = Object.fromEntries(states.map((s) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual(["checkout-5xx", "checkout-latency", "checkout-new"]);
    expect(byName["checkout-5xx"]).toEqual({ name: "checkout-5xx", value: "ALARM", reason: "5xx over 10" });
    expect(byName["checkout-latency"]).toEqual({ name: "checkout-latency", value: "OK", reason: "fast" });
    expect(byName["checkout-new"]).toEqual({
      name: "checkout-new",
      value: "INSUFFICIENT_DATA",
      reason: "new",
    });
  });
});
