import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Histogram, Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { PrometheusMetricProvider } from "../../functions/metrics/prometheus.ts";
import { type RunningPrometheus, startPrometheus } from "../../local/prometheus.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

/**
 * The Prometheus adapter against a real Prometheus (the Debian package), scraping a small app that
 * exports `http_requests_total{code,version}` and a latency histogram with prom-client. Every scrape
 * of the app counts 95 successes and 5 errors for v2 and 100 successes (no error series at all) for
 * v1, so the reference canary's success-rate query must give 0.95 for v2 and the error-ratio query for v1 must
 * be an empty vector.
 */

const SUCCESS_RATE = `sum(rate(http_requests_total{version="v2",code=~"2.."}[20s]))
/ sum(rate(http_requests_total{version="v2"}[20s]))`;
const ERROR_RATIO_V1 = `sum(rate(http_requests_total{version="v1",code=~"5.."}[20s]))
/ sum(rate(http_requests_total{version="v1"}[20s]))`;

let app: Server;
let prometheus: RunningPrometheus | undefined;
let address: string;

/** Polls until `probe` returns a value (readiness waits, not assertions on time). */
async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, limitMs = 45_000): Promise<T> {
  const until = Date.now() + limitMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function promMetric(query: string, overrides: Record<string, unknown> = {}): Metric {
  return MetricSchema.parse({
    name: "success-rate",
    successCondition: "result[0] >= 0.95",
    provider: { prometheus: { address, query } },
    ...overrides,
  });
}

beforeAll(async () => {
  const registry = new Registry();
  const requests = new Counter({
    name: "http_requests_total",
    help: "requests by status code and version",
    labelNames: ["code", "version"],
    registers: [registry],
  });
  const latency = new Histogram({
    name: "http_request_duration_seconds",
    help: "request latency",
    labelNames: ["version"],
    registers: [registry],
  });
  app = createServer(async (req, res) => {
    if (req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    requests.inc({ code: "200", version: "v2" }, 95);
    requests.inc({ code: "500", version: "v2" }, 5);
    requests.inc({ code: "200", version: "v1" }, 100);
    for (let i = 0; i < 10; i++) latency.observe({ version: "v2" }, 0.04);
    res.writeHead(200, { "content-type": registry.contentType }).end(await registry.metrics());
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  const appPort = (app.address() as AddressInfo).port;

  // It throws, naming the package to install, where there is no prometheus binary.
  prometheus = await startPrometheus({ targets: [`127.0.0.1:${appPort}`] });
  address = prometheus.url;
  // rate() needs two scrapes inside the window.
  await waitFor(async () => {
    const r = await new PrometheusMetricProvider().measure(promMetric(SUCCESS_RATE), { now: new Date() });
    return r.ok && Array.isArray(r.result) && r.result.length === 1 ? true : undefined;
  }, "the first rate() result");
}, 90_000);

afterAll(async () => {
  await prometheus?.close();
  await new Promise<void>((resolve) => (app ? app.close(() => resolve()) : resolve()));
});

describe("Prometheus provider against a real Prometheus", () => {
  it("the reference canary's success-rate query yields the ratio of the canary's 2xx to all its requests", async () => {
    const r = await new PrometheusMetricProvider().measure(promMetric(SUCCESS_RATE), { now: new Date() });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Array.isArray(r.result)).toBe(true);
    const [ratio] = r.result as number[];
    expect(ratio).toBeCloseTo(0.95, 9);
    expect(r.value).toMatch(/^\[0\.9(49|5)\d*\]$/);
  });

  it("the same query by GET gives the same answer", async () => {
    const r = await new PrometheusMetricProvider({ method: "GET" }).measure(promMetric(SUCCESS_RATE), {
      now: new Date(),
    });
    expect(r.ok && (r.result as number[])[0]).toBeCloseTo(0.95, 9);
  });

  it("through a run: a Successful measurement with the ratio as its value", async () => {
    const now = new Date();
    const run = await tick(
      createRun(
        { templates: [{ name: "t", kind: "AnalysisTemplate", metrics: [promMetric(SUCCESS_RATE)] }] },
        now,
      ),
      now,
      new PrometheusMetricProvider(),
    );
    const m = run.metricResults[0]?.measurements[0];
    expect(m?.value).toMatch(/^\[0\.9/);
    // 0.95 computed from two rates may land one ulp either side of 0.95; the verdict follows it.
    const value = Number(m?.value?.slice(1, -1));
    expect(m?.phase).toBe(value >= 0.95 ? "Successful" : "Failed");
    expect(run.phase).toBe(m?.phase);
  });

  it("the error ratio of a version without errors is an empty vector: an Error measurement", async () => {
    const metric = promMetric(ERROR_RATIO_V1, { successCondition: "result[0] <= 0.01" });
    const raw = await new PrometheusMetricProvider().measure(metric, { now: new Date() });
    expect(raw).toMatchObject({ ok: true, result: [], value: "[]" });
    const now = new Date();
    const run = await tick(
      createRun({ templates: [{ name: "t", kind: "AnalysisTemplate", metrics: [metric] }] }, now),
      now,
      new PrometheusMetricProvider(),
    );
    expect(run.metricResults[0]?.measurements[0]).toMatchObject({
      phase: "Error",
      message:
        'could not evaluate successCondition "result[0] <= 0.01": metric result is nil or empty: no data returned from the metric provider',
    });
    expect(run.phase).toBe("Running");
  });

  it("`or vector(0)` turns the empty vector into 0 and the measurement into a success", async () => {
    const metric = promMetric(`(${ERROR_RATIO_V1}) or vector(0)`, { successCondition: "result[0] <= 0.01" });
    const now = new Date();
    const run = await tick(
      createRun({ templates: [{ name: "t", kind: "AnalysisTemplate", metrics: [metric] }] }, now),
      now,
      new PrometheusMetricProvider(),
    );
    expect(run.metricResults[0]?.measurements[0]).toMatchObject({ phase: "Successful", value: "[0]" });
    expect(run.phase).toBe("Successful");
  });

  it("a rangeQuery reads the ratio at every step of the window (query_range), flattened", async () => {
    const metric = promMetric(SUCCESS_RATE, {
      successCondition: "len(result) > 0 && all(result, {# >= 0.9})",
      provider: {
        prometheus: {
          address,
          query: SUCCESS_RATE,
          rangeQuery: { start: 'now() - duration("6s")', end: "now()", step: "2s" },
        },
      },
    });
    const r = await new PrometheusMetricProvider().measure(metric, { now: new Date() });
    if (!r.ok) throw new Error(r.message);
    const values = r.result as number[];
    // At most the four steps of the window; a step before the first two scrapes has no rate yet.
    expect(values.length).toBeGreaterThan(0);
    expect(values.length).toBeLessThanOrEqual(4);
    for (const v of values) expect(v).toBeCloseTo(0.95, 9);
    expect(r.value).toBe(`[${values.join(",")}]`);
  });

  it("Prometheus' own refusal of a backwards range is the Error measurement's message", async () => {
    const metric = promMetric(SUCCESS_RATE, {
      provider: {
        prometheus: {
          address,
          query: SUCCESS_RATE,
          rangeQuery: { start: "now()", end: 'now() - duration("1m")', step: "15s" },
        },
      },
    });
    expect(await new PrometheusMetricProvider().measure(metric, { now: new Date() })).toEqual({
      ok: false,
      message: 'bad_data: invalid parameter "end": end timestamp must not be before start time',
    });
  });

  it("a latency quantile from the histogram falls in the observed bucket", async () => {
    const r = await new PrometheusMetricProvider().measure(
      promMetric(
        'histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{version="v2"}[20s])))',
      ),
      { now: new Date() },
    );
    expect(r.ok).toBe(true);
    const [p95] = (r.ok ? r.result : []) as number[];
    expect(p95).toBeGreaterThan(0.025);
    expect(p95).toBeLessThanOrEqual(0.05);
  });

  it("a scalar query is a number; NaN and Inf are kept", async () => {
    const provider = new PrometheusMetricProvider();
    const scalar = await provider.measure(promMetric("scalar(vector(0.5))"), { now: new Date() });
    expect(scalar).toMatchObject({ ok: true, result: 0.5, value: "0.5" });
    const nan = await provider.measure(promMetric("vector(0) / vector(0)"), { now: new Date() });
    expect(nan.ok).toBe(true);
    expect(Number.isNaN((nan.ok ? (nan.result as number[]) : [])[0])).toBe(true);
    expect(nan.ok && nan.value).toBe("[NaN]");
    const inf = await provider.measure(promMetric("vector(1) / vector(0)"), { now: new Date() });
    expect(inf).toMatchObject({ ok: true, result: [Number.POSITIVE_INFINITY], value: "[+Inf]" });
  });

  it("a query Prometheus cannot parse is an Error measurement with the server's bad_data message", async () => {
    const r = await new PrometheusMetricProvider().measure(promMetric("sum(rate(http_requests_total[1m])"), {
      now: new Date(),
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^bad_data: .*parse error/);
  });

  it("an HTTP error is an Error measurement with the status", async () => {
    const r = await new PrometheusMetricProvider().measure(
      MetricSchema.parse({
        name: "m",
        provider: { prometheus: { address: `${address}/no/such/prefix`, query: "up" } },
      }),
      { now: new Date() },
    );
    expect(r).toMatchObject({ ok: false });
    expect(!r.ok && r.message).toMatch(/^client_error: client error: 404/);
  });
});
