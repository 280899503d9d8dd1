import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { MetricProviders } from "../../functions/metrics/index.ts";
import { LambdaMetricProvider } from "../../functions/metrics/lambda.ts";
import { parseRollout } from "../../statemachine/index.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

const lambda = mockClient(LambdaClient);
beforeEach(() => lambda.reset());
const now = new Date("2026-03-01T12:00:00.000Z");
const encode = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));
const FN = "arn:aws:lambda:eu-west-1:123456789012:function:checkout-test";

function metric(overrides: Record<string, unknown> = {}): Metric {
  return MetricSchema.parse({
    name: "checkout-test",
    successCondition: "result.passed == result.total",
    provider: { lambda: { function: FN, payload: { version: "v2", cases: 20 } } },
    ...overrides,
  });
}
const provider = () => new LambdaMetricProvider(new LambdaClient({ region: "eu-west-1" }));

describe("the sfn-rollouts/lambda provider", () => {
  it("invokes the function synchronously with the payload; the returned JSON is the measurement", async () => {
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: encode({ passed: 20, total: 20 }) as never });
    const out = await provider().measure(metric(), { now });
    expect(out).toEqual({ ok: true, result: { passed: 20, total: 20 }, value: '{"passed":20,"total":20}' });
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(input?.FunctionName).toBe(FN);
    expect(input?.InvocationType).toBe("RequestResponse");
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual({
      version: "v2",
      cases: 20,
    });
  });

  it("a function that throws, answers what is not JSON, or cannot be invoked is an Error measurement with its message", async () => {
    lambda
      .on(InvokeCommand)
      .resolvesOnce({
        StatusCode: 200,
        FunctionError: "Unhandled",
        Payload: encode({ errorType: "TimeoutError", errorMessage: "checkout did not answer" }) as never,
      })
      .resolvesOnce({ StatusCode: 200, Payload: encode("passed") as never })
      .rejectsOnce(Object.assign(new Error("no such function"), { name: "ResourceNotFoundException" }));
    expect(await provider().measure(metric(), { now })).toEqual({
      ok: false,
      message: `${FN} failed (Unhandled): TimeoutError: checkout did not answer`,
    });
    expect(await provider().measure(metric(), { now })).toEqual({
      ok: false,
      message: `${FN} returned what is not JSON: passed`,
    });
    expect(await provider().measure(metric(), { now })).toEqual({
      ok: false,
      message: `invoke ${FN}: ResourceNotFoundException: no such function`,
    });
  });

  it("conditions decide on the returned JSON through a run, as with the web provider", async () => {
    lambda
      .on(InvokeCommand)
      .resolvesOnce({ StatusCode: 200, Payload: encode({ passed: 20, total: 20 }) as never })
      .resolvesOnce({ StatusCode: 200, Payload: encode({ passed: 17, total: 20 }) as never });
    const router = new MetricProviders({ lambda: provider() });
    const spec = { templates: [{ name: "t", kind: "AnalysisTemplate" as const, metrics: [metric()] }] };
    expect((await tick(createRun(spec, now), now, router)).phase).toBe("Successful");
    const bad = await tick(createRun(spec, now), now, router);
    expect(bad.phase).toBe("Failed");
    expect(bad.metricResults[0]?.measurements[0]?.value).toBe('{"passed":17,"total":20}');
  });

  it("is loaded from an AnalysisTemplate's plugin entry, args substituted in the payload", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  template: {spec: {containers: [{name: app, image: shop:1}]}}
  strategy:
    canary:
      steps:
        - setWeight: 25
        - analysis: {templates: [{templateName: smoke}], args: [{name: version, value: v2}]}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: smoke}
spec:
  args: [{name: version}]
  metrics:
    - name: smoke
      successCondition: result.passed == result.total
      provider:
        plugin:
          sfn-rollouts/lambda:
            function: ${FN}
            payload: {version: "{{args.version}}", cases: 20}
`,
      },
    ]);
    const step = spec.steps[1];
    if (step?.kind !== "analysis") throw new Error("no analysis step");
    expect(step.analysis.templates[0]?.metrics[0]?.provider).toEqual({
      lambda: { function: FN, payload: { version: "v2", cases: 20 } },
    });
  });
});
