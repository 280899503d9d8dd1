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
  it.each([["skywalking: {address: 'http://s', query: x}", "skywalking", "SkyWalking"]])(
    "%s is refused with its reason",
    async (provider, name, reason) => {
      const problems = await templateProblems(template(provider));
      expect(problems).toEqual([
        expect.stringContaining(`spec.metrics[0].provider.${name}: the ${name} provider is not supported: `),
      ]);
      expect(problems[0]).toContain(reason);
    },
  );

  it("job loads with Argo's fields; a field Argo's JobMetric lacks is refused at its path", async () => {
    expect(
      await templateProblems(
        template(
          "job: {metadata: {labels: {app: smoke}}, spec: {backoffLimit: 0, template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox, command: [sh, -c, 'exit 0']}]}}}}",
        ),
      ),
    ).toEqual([]);
    const problems = await templateProblems(template("job: {spec: {}, image: busybox}"));
    expect(problems).toEqual([expect.stringContaining("spec.metrics[0].provider.job")]);
    expect(problems[0]).toContain("image");
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
