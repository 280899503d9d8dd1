import { startServer } from "@sfn-rollouts/test-support/http-server";
import {
  type PrometheusRangeServer,
  startPrometheusRange,
} from "@sfn-rollouts/test-support/prometheus-range";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, type Measurement, tick } from "../../functions/analysis/index.ts";
import { PrometheusMetricProvider } from "../../functions/metrics/prometheus.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

/**
 * `rangeQuery`: the Prometheus provider asks `/api/v1/query_range` from `start` to `end` (time
 * expressions evaluated at the measurement's time) every `step`, and the matrix it gets back is
 * the flattened list of its samples. The cases of Argo Rollouts' range queries are ported from
 * `metricproviders/prometheus/prometheus_test.go` (TestRunSuccessfullyWithRangeQuery,
 * TestRunUnparsableStartTime, TestRunUnparsableEndTime, TestRunUnparsableStep): there against a
 * mock of the Go client answering `newMatrix(10)`, here against a local server answering the same
 * matrix over HTTP, and against one that evaluates the range as Prometheus does.
 */

/** Argo's `newMatrix(10)`: two series, samples 11, 12 and 13, 14. */
const NEW_MATRIX_10 = JSON.stringify({
  status: "success",
  data: {
    resultType: "matrix",
    result: [
      {
        metric: {},
        values: [
          [1.234, "11"],
          [1.234, "12"],
        ],
      },
      {
        metric: {},
        values: [
          [1.234, "13"],
          [1.234, "14"],
        ],
      },
    ],
  },
});

const AUG_14 = `date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC")`;

let canned: Awaited<ReturnType<typeof startServer>>;
let prometheus: PrometheusRangeServer;

/** The error ratio of `version`: v1 0.1% all along, v2 0.1% until 12:05 then 8%. */
const BREAKS_AT = Date.UTC(2026, 0, 1, 12, 5) / 1000;

beforeAll(async () => {
  canned = await startServer((req, res) => {
    if (req.url.startsWith("/get-only/") && req.method === "POST") {
      res.writeHead(405).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(NEW_MATRIX_10);
  });
  prometheus = await startPrometheusRange((query) => {
    const version = /version="(v\d)"/.exec(query)?.[1];
    if (!version) return [];
    return [
      {
        metric: { version },
        at: (t) => (version === "v2" && t >= BREAKS_AT ? 0.08 : 0.001),
      },
    ];
  });
});
afterAll(async () => {
  await canned?.close();
  await prometheus?.close();
});

function metric(
  address: string,
  rangeQuery: Record<string, string>,
  extra: Record<string, unknown> = {},
): Metric {
  return MetricSchema.parse({
    name: "foo",
    successCondition: "all(result, # > 10)",
    failureCondition: "all(result, # < 10)",
    provider: { prometheus: { address, query: "test", rangeQuery } },
    ...extra,
  });
}

/** One measurement taken at `now`, as a tick takes it (the conditions evaluated at `now` too). */
async function measure(m: Metric, now: Date): Promise<Measurement> {
  const run = await tick(
    createRun({ templates: [{ name: "t", kind: "AnalysisTemplate", metrics: [m] }] }, now),
    now,
    new PrometheusMetricProvider(),
  );
  const taken = run.metricResults[0]?.measurements[0];
  if (!taken) throw new Error("no measurement was taken");
  return taken;
}

const lastForm = (server: { requests: Array<{ body: string }> }) =>
  new URLSearchParams(server.requests.at(-1)?.body);

describe("rangeQuery (Argo's prometheus_test.go)", () => {
  it("TestRunSuccessfullyWithRangeQuery: queries the range, flattens the matrix, prints it as Argo does", async () => {
    const m = metric(canned.url, { start: `${AUG_14} - duration("1h")`, end: AUG_14, step: "1m" });
    const taken = await measure(m, new Date());
    expect(taken.phase).toBe("Successful");
    expect(taken.value).toBe("[11,12,13,14]");
    const req = canned.requests.at(-1);
    expect(req?.method).toBe("POST");
    expect(req?.url).toBe("/api/v1/query_range");
    expect(req?.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    // 2023-08-13 23:00:00 UTC, 2023-08-14 00:00:00 UTC, 1m0s: as the Go client prints them, keys sorted.
    expect(req?.body).toBe("end=1691971200&query=test&start=1691967600&step=60");
  });

  it("TestRunUnparsableStartTime: Argo's error, no value, nothing asked", async () => {
    const before = canned.requests.length;
    const m = metric(canned.url, { start: 'now() - duration("??")', end: AUG_14, step: "1m" });
    const taken = await measure(m, new Date());
    expect(taken.phase).toBe("Error");
    expect(taken.message).toBe('failed to parse rangeQuery.start as time: time: invalid duration "??"');
    expect(taken.value).toBeUndefined();
    expect(canned.requests.length).toBe(before);
  });

  it("TestRunUnparsableEndTime", async () => {
    const m = metric(canned.url, {
      start: `${AUG_14} - duration("1h")`,
      end: 'now() - duration("??")',
      step: "1m",
    });
    const taken = await measure(m, new Date());
    expect(taken.phase).toBe("Error");
    expect(taken.message).toBe('failed to parse rangeQuery.end as time: time: invalid duration "??"');
    expect(taken.value).toBeUndefined();
  });

  it("TestRunUnparsableStep", async () => {
    const m = metric(canned.url, { start: `${AUG_14} - duration("1h")`, end: AUG_14, step: "??" });
    const taken = await measure(m, new Date());
    expect(taken.phase).toBe("Error");
    expect(taken.message).toBe('failed to parse rangeQuery.step as duration: time: invalid duration "??"');
    expect(taken.value).toBeUndefined();
  });
});

describe("rangeQuery over HTTP", () => {
  it("start and end that are not times are errors saying what they were", async () => {
    const start = await measure(metric(canned.url, { start: "1", end: AUG_14, step: "1m" }), new Date());
    expect(start.message).toBe("failed to parse rangeQuery.start as time: expected time.Time, but got int");
    const end = await measure(metric(canned.url, { start: AUG_14, end: "nope", step: "1m" }), new Date());
    expect(end.message).toBe("failed to parse rangeQuery.end as time: unknown name nope");
  });

  it("prints sub-second times and steps as the Go client does", async () => {
    const m = metric(canned.url, {
      start: 'date("2023-08-14T00:00:00.25Z")',
      end: 'date("2023-08-14T00:00:00.25Z") + duration("1m30s")',
      step: "1.5s",
    });
    await measure(m, new Date());
    expect(lastForm(canned).get("start")).toBe("1691971200.25");
    expect(lastForm(canned).get("end")).toBe("1691971290.25");
    expect(lastForm(canned).get("step")).toBe("1.5");
  });

  it("falls back to GET on 405 with the same parameters in the URL", async () => {
    const m = metric(`${canned.url}/get-only/`, {
      start: `${AUG_14} - duration("1h")`,
      end: AUG_14,
      step: "1m",
    });
    const taken = await measure(m, new Date());
    expect(taken.value).toBe("[11,12,13,14]");
    const [post, get] = canned.requests.slice(-2);
    expect(post?.method).toBe("POST");
    expect(get?.method).toBe("GET");
    expect(get?.url).toBe("/get-only/api/v1/query_range?end=1691971200&query=test&start=1691967600&step=60");
  });

  it("the range is the measurement's: now() is the tick's time, so the window moves with it", async () => {
    const query = 'sum(rate(errors{version="v2"}[1m])) / sum(rate(requests{version="v2"}[1m]))';
    const m = MetricSchema.parse({
      name: "error-ratio",
      successCondition: "all(result, # < 0.01)",
      provider: {
        prometheus: {
          address: prometheus.url,
          query,
          rangeQuery: { start: 'now() - duration("2m")', end: "now()", step: "1m" },
        },
      },
    });
    const at = (hh: number, mm: number) => new Date(Date.UTC(2026, 0, 1, hh, mm));
    const before = await measure(m, at(12, 4));
    expect(before).toMatchObject({ phase: "Successful", value: "[0.001,0.001,0.001]" });
    expect(prometheus.queries.at(-1)).toEqual({
      query,
      start: at(12, 2).getTime() / 1000,
      end: at(12, 4).getTime() / 1000,
      step: 60,
    });
    const after = await measure(m, at(12, 6));
    expect(after).toMatchObject({ phase: "Failed", value: "[0.001,0.08,0.08]" });
    expect(prometheus.queries.at(-1)?.end).toBe(at(12, 6).getTime() / 1000);
  });

  it("a range Prometheus refuses is an Error with its message", async () => {
    const backwards = MetricSchema.parse({
      name: "m",
      provider: {
        prometheus: {
          address: prometheus.url,
          query: 'x{version="v1"}',
          rangeQuery: { start: "now()", end: 'now() - duration("1h")', step: "1m" },
        },
      },
    });
    const taken = await measure(backwards, new Date(Date.UTC(2026, 0, 1, 12)));
    expect(taken.phase).toBe("Error");
    expect(taken.message).toBe(
      'bad_data: invalid parameter "end": end timestamp must not be before start time',
    );
  });

  it("a range with no samples is an empty list: all() holds for it, as in Argo, unless the condition asks for data", async () => {
    const m = (successCondition: string) =>
      MetricSchema.parse({
        name: "m",
        successCondition,
        provider: {
          prometheus: {
            address: prometheus.url,
            query: "absent_series",
            rangeQuery: { start: 'now() - duration("5m")', end: "now()", step: "1m" },
          },
        },
      });
    const noon = new Date(Date.UTC(2026, 0, 1, 12));
    expect(await measure(m("all(result, # < 0.01)"), noon)).toMatchObject({
      phase: "Successful",
      value: "[]",
    });
    expect(await measure(m("len(result) > 0 && all(result, # < 0.01)"), noon)).toMatchObject({
      phase: "Failed",
      value: "[]",
    });
  });
});
