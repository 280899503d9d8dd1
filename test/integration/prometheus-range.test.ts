import { T0 } from "@sfn-rollouts/test-support/embedded-rollout";
import {
  type PrometheusRangeServer,
  startPrometheusRange,
} from "@sfn-rollouts/test-support/prometheus-range";
import { decideThreePushes } from "@sfn-rollouts/test-support/provider-scenario";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultProviders } from "../../functions/metrics/index.ts";

/**
 * A Prometheus `rangeQuery` deciding a rollout: the compiled workflow in the embedded runtime, in
 * virtual time, the shipped handlers and the Prometheus provider as `defaultProviders` composes
 * it, against a local server speaking Prometheus' range query API. The series exist only in the
 * virtual hours the test covers (from T0 on): a range taken at the wall clock would find no
 * samples, and the condition asks for every one of the window's three. v2's error ratio is 0.1%,
 * v3's 8%.
 */

const RATIO: Record<string, number> = { v2: 0.001, v3: 0.08 };
const FROM = T0 / 1000 - 600;
const UNTIL = T0 / 1000 + 6 * 3600;

let prometheus: PrometheusRangeServer;
beforeAll(async () => {
  prometheus = await startPrometheusRange((query) => {
    const version = /version="(v\d+)"/.exec(query)?.[1] ?? "";
    const ratio = RATIO[version];
    if (ratio === undefined) return [];
    return [{ metric: { version }, at: (t) => (t >= FROM && t <= UNTIL ? ratio : undefined) }];
  });
});
afterAll(async () => {
  await prometheus?.close();
});

const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: error-ratio}
spec:
  args:
    - name: version
    - name: lookback
      value: 2m
  metrics:
    - name: error-ratio
      interval: 1m
      count: 2
      successCondition: 'len(result) == 3 && all(result, # < 0.01)'
      provider:
        prometheus:
          address: PROMETHEUS_URL
          query: sum(rate(http_errors_total{version="{{args.version}}"}[1m])) / sum(rate(http_requests_total{version="{{args.version}}"}[1m]))
          rangeQuery:
            start: now() - duration("{{args.lookback}}")
            end: now()
            step: 1m
`;

describe("a Prometheus rangeQuery decides a rollout on the embedded runtime", () => {
  it("promotes v2 (0.1% errors) and aborts v3 (8%), each window ending at the virtual time of its measurement", async () => {
    const { states, message, runs } = await decideThreePushes({
      templateName: "error-ratio",
      template: TEMPLATE.replace("PROMETHEUS_URL", prometheus.url),
      providers: defaultProviders(),
    });
    expect(states).toEqual(["Healthy", "Healthy", "Aborted"]);
    expect(message).toMatch(/Metric "error-ratio" assessed Failed/);
    expect(runs.map((r) => r.phase)).toEqual(["Successful", "Failed"]);
    const measurements = runs.flatMap((r) => r.metricResults[0]?.measurements ?? []);
    expect(measurements.map((m) => `${m.phase} ${m.value}`)).toEqual([
      "Successful [0.001,0.001,0.001]",
      "Successful [0.001,0.001,0.001]",
      "Failed [0.08,0.08,0.08]",
    ]);
    // Every window is the two minutes up to its measurement's (virtual) time, a step a minute.
    expect(prometheus.queries).toHaveLength(3);
    prometheus.queries.forEach((q, i) => {
      const at = Date.parse(measurements[i]?.startedAt ?? "") / 1000;
      expect(q).toMatchObject({ start: at - 120, end: at, step: 60 });
      expect(at).toBeGreaterThanOrEqual(T0 / 1000);
      expect(at).toBeLessThan(UNTIL);
    });
    expect(prometheus.queries.map((q) => q.query)).toEqual([
      expect.stringContaining('version="v2"'),
      expect.stringContaining('version="v2"'),
      expect.stringContaining('version="v3"'),
    ]);
  });
});
