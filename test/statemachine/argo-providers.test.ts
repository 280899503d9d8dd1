import { templateProblems } from "@sfn-rollouts/test-support/analysis-template";
import { describe, expect, it } from "vitest";

/** Argo's providers this controller does not run are refused when loaded, each with its reason (docs/analysis.md). */
const template = (provider: string) => `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  metrics:
    - name: m
      successCondition: result > 0
      provider: {${provider}}
`;

describe("Argo's providers that are refused", () => {
  it.each([
    ["skywalking: {address: 'http://s', query: x}", "skywalking", "SkyWalking"],
    ["job: {spec: {}}", "job", "sfn-rollouts/lambda plugin"],
  ])("%s is refused with its reason", async (provider, name, reason) => {
    const problems = await templateProblems(template(provider));
    expect(problems).toEqual([
      expect.stringContaining(`spec.metrics[0].provider.${name}: the ${name} provider is not supported: `),
    ]);
    expect(problems[0]).toContain(reason);
  });

  it("datadog, newRelic, graphite, influxdb, wavefront and kayenta load", async () => {
    expect(await templateProblems(template("kayenta: {address: 'http://k', application: a}"))).toEqual([]);
    expect(await templateProblems(template("wavefront: {address: w.example, query: x}"))).toEqual([]);
    expect(await templateProblems(template("influxdb: {profile: p, query: x}"))).toEqual([]);
    expect(
      await templateProblems(template("graphite: {address: 'http://graphite:8080', query: 'target=x'}")),
    ).toEqual([]);
    expect(await templateProblems(template("datadog: {query: 'avg:cpu{*}'}"))).toEqual([]);
    expect(await templateProblems(template("newRelic: {query: 'SELECT count(*) FROM Transaction'}"))).toEqual(
      [],
    );
  });
});
