import { InvokeCommand, type InvokeCommandOutput, type LambdaClient } from "@aws-sdk/client-lambda";
import type { Metric } from "../../statemachine/spec.ts";
import type { MeasureContext, MetricProvider, ProviderResult } from "./port.ts";

/**
 * The `sfn-rollouts/lambda` provider (what Argo's `job` provider becomes): the function is invoked
 * synchronously (`RequestResponse`) with the metric's `payload`, and the JSON it returns is the
 * measurement — `result` in the conditions, as a web provider's decoded JSON is. A function that
 * throws, answers what is not JSON, or cannot be invoked gives an Error measurement with its
 * message, never an exception.
 */
export class LambdaMetricProvider implements MetricProvider {
  constructor(private readonly client: Pick<LambdaClient, "send">) {}

  async measure(metric: Metric, ctx: MeasureContext): Promise<ProviderResult> {
    const spec = metric.provider.lambda;
    if (!spec) return { ok: false, message: `metric "${metric.name}" has no lambda provider` };
    let output: InvokeCommandOutput;
    try {
      output = await this.client.send(
        new InvokeCommand({
          FunctionName: spec.function,
          InvocationType: "RequestResponse",
          Payload: new TextEncoder().encode(JSON.stringify(spec.payload ?? {})),
        }),
        ctx.signal ? { abortSignal: ctx.signal } : {},
      );
    } catch (e) {
      const err = e as { name?: string; message?: string };
      return {
        ok: false,
        message: `invoke ${spec.function}: ${err.name ?? "Error"}: ${err.message ?? String(e)}`,
      };
    }
    const text = output.Payload ? new TextDecoder().decode(output.Payload) : "";
    if (output.FunctionError) {
      let message = text;
      try {
        const parsed = JSON.parse(text) as { errorType?: string; errorMessage?: string };
        if (parsed.errorMessage !== undefined)
          message = `${parsed.errorType ?? "Error"}: ${parsed.errorMessage}`;
      } catch {
        // Not JSON: the payload as it came.
      }
      return { ok: false, message: `${spec.function} failed (${output.FunctionError}): ${message}` };
    }
    let result: unknown;
    try {
      result = text === "" ? null : JSON.parse(text);
    } catch {
      return { ok: false, message: `${spec.function} returned what is not JSON: ${text.slice(0, 200)}` };
    }
    return { ok: true, result, value: JSON.stringify(result) };
  }
}
