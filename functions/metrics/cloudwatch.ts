import {
  type CloudWatchClient,
  GetMetricDataCommand,
  type MetricDataQuery,
  type StandardUnit,
} from "@aws-sdk/client-cloudwatch";
import type { CloudWatchProvider as CloudWatchSpec, Metric } from "../../statemachine/spec.ts";
import { goFloatV } from "./go-fmt.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";

/**
 * The CloudWatch provider: one `GetMetricData` call over the last `interval` (default 5 minutes),
 * with Argo's `metricDataQueries` schema. The condition's `result` is what Argo passes: the list of
 * `MetricDataResults` with the SDK's field names, so Argo templates such as
 * `len(result[0].Values) >= 5 and all(result[0].Values, {# <= 0.01})` work unchanged. An SDK error
 * (throttling, access denied, a bad expression) is an Error measurement with the service's message.
 */
export class CloudWatchMetricProvider implements MetricProvider {
  constructor(private readonly client: Pick<CloudWatchClient, "send">) {}

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const spec = metric.provider.cloudWatch;
    if (!spec) return { ok: false, message: `metric "${metric.name}" has no cloudWatch provider` };
    const end = ctx.now;
    const start = new Date(end.getTime() - spec.interval * 1000);
    let output: Awaited<ReturnType<typeof this.query>>;
    try {
      output = await this.query(spec, start, end, ctx.signal);
    } catch (e) {
      const err = e as { name?: string; message?: string };
      return { ok: false, message: err.message ? `${err.name ?? "Error"}: ${err.message}` : String(e) };
    }
    const results = (output.MetricDataResults ?? []).map((r) => ({
      Id: r.Id ?? null,
      Label: r.Label ?? null,
      StatusCode: r.StatusCode ?? null,
      Timestamps: (r.Timestamps ?? []).map((t) => t.toISOString()),
      Values: r.Values ?? [],
      Messages: (r.Messages ?? []).map((m) => ({ Code: m.Code ?? null, Value: m.Value ?? null })),
    }));
    const out: ProviderResult = {
      ok: true,
      result: results,
      value: `[${results.map((r) => `[${r.Values.map(goFloatV).join(" ")}]`).join(" ")}]`,
    };
    if (output.Messages && output.Messages.length > 0) {
      out.metadata = { messages: JSON.stringify(output.Messages) };
    }
    return out;
  }

  private query(spec: CloudWatchSpec, start: Date, end: Date, signal?: AbortSignal) {
    return this.client.send(
      new GetMetricDataCommand({
        StartTime: start,
        EndTime: end,
        MetricDataQueries: toQueries(spec),
      }),
      signal ? { abortSignal: signal } : {},
    );
  }
}

/** Argo's `convertType`: the template's camelCase queries to the SDK's shape. */
export function toQueries(spec: CloudWatchSpec): MetricDataQuery[] {
  return spec.metricDataQueries.map((q) => ({
    Id: q.id,
    ...(q.expression !== undefined ? { Expression: q.expression } : {}),
    ...(q.label !== undefined ? { Label: q.label } : {}),
    ...(q.period !== undefined ? { Period: q.period } : {}),
    ...(q.returnData !== undefined ? { ReturnData: q.returnData } : {}),
    ...(q.metricStat
      ? {
          MetricStat: {
            Metric: {
              ...(q.metricStat.metric.namespace !== undefined
                ? { Namespace: q.metricStat.metric.namespace }
                : {}),
              ...(q.metricStat.metric.metricName !== undefined
                ? { MetricName: q.metricStat.metric.metricName }
                : {}),
              ...(q.metricStat.metric.dimensions.length > 0
                ? {
                    Dimensions: q.metricStat.metric.dimensions.map((d) => ({ Name: d.name, Value: d.value })),
                  }
                : {}),
            },
            Period: q.metricStat.period,
            Stat: q.metricStat.stat,
            ...(q.metricStat.unit !== undefined ? { Unit: q.metricStat.unit as StandardUnit } : {}),
          },
        }
      : {}),
  }));
}
