import { CloudWatchClient, GetMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { CloudWatchMetricProvider, toQueries } from "../../functions/metrics/cloudwatch.ts";
import { goFloatV } from "../../functions/metrics/go-fmt.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

const cw = mockClient(CloudWatchClient);
const now = new Date("2026-03-01T12:00:00.000Z");

function metric(overrides: Record<string, unknown> = {}): Metric {
  return MetricSchema.parse({
    name: "errors",
    successCondition: "len(result[0].Values) >= 2 and all(result[0].Values, {# <= 0.01})",
    provider: {
      cloudWatch: {
        interval: 600,
        metricDataQueries: [
          {
            id: "rate",
            expression: "errors / requests",
            label: "error rate",
            returnData: true,
          },
          {
            id: "errors",
            metricStat: {
              metric: {
                namespace: "AWS/ApplicationELB",
                metricName: "HTTPCode_Target_5XX_Count",
                dimensions: [{ name: "TargetGroup", value: "targetgroup/canary/abc" }],
              },
              period: 60,
              stat: "Sum",
              unit: "Count",
            },
            returnData: false,
          },
        ],
      },
    },
    ...overrides,
  });
}

beforeEach(() => {
  cw.reset();
});

describe("CloudWatch provider with aws-sdk-client-mock", () => {
  it("sends Argo's queries over [now - interval, now]", async () => {
    cw.on(GetMetricDataCommand).resolves({ MetricDataResults: [] });
    await new CloudWatchMetricProvider(new CloudWatchClient({})).measure(metric(), { now });
    const input = cw.commandCalls(GetMetricDataCommand)[0]?.args[0].input;
    expect(input?.StartTime).toEqual(new Date("2026-03-01T11:50:00.000Z"));
    expect(input?.EndTime).toEqual(now);
    expect(input?.MetricDataQueries).toEqual([
      { Id: "rate", Expression: "errors / requests", Label: "error rate", ReturnData: true },
      {
        Id: "errors",
        ReturnData: false,
        MetricStat: {
          Metric: {
            Namespace: "AWS/ApplicationELB",
            MetricName: "HTTPCode_Target_5XX_Count",
            Dimensions: [{ Name: "TargetGroup", Value: "targetgroup/canary/abc" }],
          },
          Period: 60,
          Stat: "Sum",
          Unit: "Count",
        },
      },
    ]);
  });

  it("exposes MetricDataResults with the SDK's field names, as Argo does", async () => {
    cw.on(GetMetricDataCommand).resolves({
      MetricDataResults: [
        {
          Id: "rate",
          Label: "error rate",
          StatusCode: "Complete",
          Timestamps: [new Date("2026-03-01T11:59:00Z"), new Date("2026-03-01T11:58:00Z")],
          Values: [0.005, 0.0001],
        },
      ],
    });
    const r = await new CloudWatchMetricProvider(new CloudWatchClient({})).measure(metric(), { now });
    expect(r).toEqual({
      ok: true,
      result: [
        {
          Id: "rate",
          Label: "error rate",
          StatusCode: "Complete",
          Timestamps: ["2026-03-01T11:59:00.000Z", "2026-03-01T11:58:00.000Z"],
          Values: [0.005, 0.0001],
          Messages: [],
        },
      ],
      value: "[[0.005 0.0001]]",
    });
  });

  it("Argo's documented condition decides through a run", async () => {
    cw.on(GetMetricDataCommand)
      .resolvesOnce({ MetricDataResults: [{ Id: "rate", Values: [0.005, 0.002] }] })
      .resolvesOnce({ MetricDataResults: [{ Id: "rate", Values: [0.05, 0.002] }] });
    const provider = new CloudWatchMetricProvider(new CloudWatchClient({}));
    const spec = { templates: [{ name: "t", kind: "AnalysisTemplate" as const, metrics: [metric()] }] };
    const ok = await tick(createRun(spec, now), now, provider);
    expect(ok.phase).toBe("Successful");
    const bad = await tick(createRun(spec, now), now, provider);
    expect(bad.phase).toBe("Failed");
    expect(bad.metricResults[0]?.measurements[0]?.value).toBe("[[0.05 0.002]]");
  });

  it("no data points: the condition sees an empty Values list, not an error", async () => {
    cw.on(GetMetricDataCommand).resolves({ MetricDataResults: [{ Id: "rate", Values: [] }] });
    const spec = { templates: [{ name: "t", kind: "AnalysisTemplate" as const, metrics: [metric()] }] };
    const run = await tick(createRun(spec, now), now, new CloudWatchMetricProvider(new CloudWatchClient({})));
    expect(run.metricResults[0]?.measurements[0]).toMatchObject({ phase: "Failed", value: "[[]]" });
  });

  it("an SDK error is an Error measurement with the service's message", async () => {
    cw.on(GetMetricDataCommand).rejects(
      Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }),
    );
    const r = await new CloudWatchMetricProvider(new CloudWatchClient({})).measure(metric(), { now });
    expect(r).toEqual({ ok: false, message: "ThrottlingException: Rate exceeded" });
  });

  it("service messages are kept as metadata", async () => {
    cw.on(GetMetricDataCommand).resolves({
      MetricDataResults: [{ Id: "rate", Values: [0] }],
      Messages: [{ Code: "MaxQueryTimeRangeExceed", Value: "too long" }],
    });
    const r = await new CloudWatchMetricProvider(new CloudWatchClient({})).measure(metric(), { now });
    expect(r.metadata).toEqual({ messages: '[{"Code":"MaxQueryTimeRangeExceed","Value":"too long"}]' });
  });
});

describe("toQueries and Go's %v", () => {
  it("omits what the template does not set", () => {
    const m = metric();
    const spec = m.provider.cloudWatch;
    if (!spec) throw new Error("fixture");
    expect(toQueries({ ...spec, metricDataQueries: [{ id: "a", expression: "SUM(x)" }] })).toEqual([
      { Id: "a", Expression: "SUM(x)" },
    ]);
  });

  it.each([
    [0.5, "0.5"],
    [3, "3"],
    [123456, "123456"],
    [1234567, "1.234567e+06"],
    [0.0001, "0.0001"],
    [0.00001, "1e-05"],
    [Number.NaN, "NaN"],
    [Number.POSITIVE_INFINITY, "+Inf"],
  ])("%s prints as %s", (v, s) => {
    expect(goFloatV(v)).toBe(s);
  });
});
