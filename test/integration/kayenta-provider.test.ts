import { type LocalKayenta, startKayenta } from "@sfn-rollouts/test-support/kayenta";
import { decideThreePushes } from "@sfn-rollouts/test-support/provider-scenario";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultProviders } from "../../functions/metrics/index.ts";

/**
 * Argo's kayenta provider deciding a rollout: the compiled workflow in the embedded runtime, the
 * shipped handlers, the providers as `defaultProviders` composes them, and a local server speaking
 * Kayenta's REST API. Each canary execution is still running at its first read (the measurement is
 * stored Running and resumed at a later tick), then scores the version named in the experiment
 * scope (`{{args.version}}`, the pushed tag): v2 scores 95, v3 40.
 */

const SCORES: Record<string, number> = { v2: 95, v3: 40 };

let kayenta: LocalKayenta;
beforeAll(async () => {
  kayenta = await startKayenta({
    configs: [
      { id: "0b6f5a1e-shop", name: "shop-canary", applications: ["shop"] },
      { id: "7c1d2e3f-other", name: "other-canary", applications: ["shop"] },
    ],
    score: (request) =>
      SCORES[/version=(v\d+)/.exec(request.scopes.default?.experimentScope.scope ?? "")?.[1] ?? ""] ?? 0,
    readsBeforeComplete: 1,
  });
});
afterAll(async () => {
  await kayenta?.close();
});

const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: canary-score}
spec:
  args: [{name: version}]
  metrics:
    - name: kayenta-score
      interval: 1m
      count: 2
      provider:
        kayenta:
          address: KAYENTA_URL
          application: shop
          canaryConfigName: shop-canary
          metricsAccountName: prometheus
          configurationAccountName: configs
          storageAccountName: configs
          threshold: {pass: 90, marginal: 75}
          scopes:
            - name: default
              controlScope: {scope: "version=stable", region: eu-west-1, step: 60}
              experimentScope: {scope: "version={{args.version}}", region: eu-west-1, step: 60}
`;

describe("the kayenta provider decides a rollout on the embedded runtime", () => {
  it("promotes v2 (score 95) and aborts v3 (score 40), each execution resumed until complete", async () => {
    const { states, message, runs } = await decideThreePushes({
      templateName: "canary-score",
      template: TEMPLATE.replace("KAYENTA_URL", kayenta.url),
      providers: defaultProviders(),
    });
    expect(states).toEqual(["Healthy", "Healthy", "Aborted"]);
    expect(message).toMatch(/Metric "kayenta-score" assessed Failed/);
    expect(runs.map((r) => r.phase)).toEqual(["Successful", "Failed"]);
    const [good, failed] = runs;
    const measurements = (run: typeof good) => run?.metricResults[0]?.measurements ?? [];
    expect(measurements(good).map((m) => `${m.phase} ${m.value}`)).toEqual([
      "Successful 95",
      "Successful 95",
    ]);
    expect(measurements(failed).map((m) => `${m.phase} ${m.value}`)).toEqual(["Failed 40"]);
    // Each measurement ran over two ticks: started, then read once incomplete, then complete.
    for (const m of [...measurements(good), ...measurements(failed)]) {
      expect(m.resumeAt).toBeUndefined();
      expect(Date.parse(m.finishedAt) - Date.parse(m.startedAt)).toBeGreaterThanOrEqual(30_000);
      expect(kayenta.executions.get(m.metadata?.canaryExecutionId ?? "")?.reads).toBe(2);
    }
    // Three executions, each of the config named, with Argo's accounts, one scope per version.
    const started = [...kayenta.executions.values()];
    expect(started.map((e) => e.configId)).toEqual(["0b6f5a1e-shop", "0b6f5a1e-shop", "0b6f5a1e-shop"]);
    expect(Object.fromEntries(started[0]?.query ?? [])).toEqual({
      application: "shop",
      metricsAccountName: "prometheus",
      configurationAccountName: "configs",
      storageAccountName: "configs",
    });
    expect(
      started.map(
        (e) =>
          (e.request as { scopes: { default: { experimentScope: { scope: string } } } }).scopes.default
            .experimentScope.scope,
      ),
    ).toEqual(["version=v2", "version=v2", "version=v3"]);
  });
});
