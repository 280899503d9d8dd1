import {
  COUNTS_SIDES,
  judgeMetric,
  rates,
  type Source,
  statsWeb,
} from "@sfn-rollouts/test-support/judge-stats";
import { describe, expect, it } from "vitest";
import {
  type AnalysisRun,
  AnalysisRunSchema,
  createRun,
  measurementsTaken,
  nextTickAt,
  type RecordedMeasurement,
  replayMeasurements,
  replayMetrics,
  summarize,
  summaryLine,
  tick,
} from "../../../functions/analysis/index.ts";
import { MetricProviders } from "../../../functions/metrics/index.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import type { Metric } from "../../../statemachine/index.ts";
import { T0 } from "./helpers.ts";

/**
 * A judge's looks decided again: the looks are recorded by the analysis engine itself (`tick`
 * over the real judge provider, the run through JSON as the store keeps it), then replayed with
 * the same judge or a changed one. Expected p-values are scipy's.
 */

/** Every look of the run, as the workflow stores each one on its own item after a tick. */
async function record(metric: Metric, provider: MetricProvider): Promise<RecordedMeasurement[]> {
  let run: AnalysisRun = createRun(
    { templates: [{ name: "gate", kind: "AnalysisTemplate", metrics: [metric] }] },
    T0,
  );
  const looks: RecordedMeasurement[] = [];
  for (let at = nextTickAt(run); at; at = nextTickAt(run)) {
    const next = AnalysisRunSchema.parse(JSON.parse(JSON.stringify(await tick(run, at, provider))));
    looks.push(...measurementsTaken(run, next));
    run = next;
  }
  expect(looks).toHaveLength(run.metricResults[0]?.count ?? -1);
  return looks;
}

const FIELDS = "initialDelay: 10s\ninterval: 10s\ncount: 20";
const TWO_PROPORTION = `test: two-proportion\nlabel: errors\n${COUNTS_SIDES}`;
const SEQUENTIAL = `test: sequential-rate\nlabel: errors\nminSamples: 100\n${COUNTS_SIDES}`;

describe("a judge's looks are recorded with their readings", () => {
  it("keeps each look's counts on its measurement", async () => {
    const looks = await record(
      judgeMetric(FIELDS, TWO_PROPORTION),
      new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }),
    );
    expect(looks[0]?.measurement.readings).toEqual({
      ok: true,
      values: {
        "candidate.bad": { ok: true, value: 3 },
        "candidate.n": { ok: true, value: 100 },
        "stable.bad": { ok: true, value: 3 },
        "stable.n": { ok: true, value: 300 },
      },
    });
    expect(looks[0]?.measurement.truncated).toBeUndefined();
  });

  it("a run does not keep a list of samples past its bound: the look says it was cut, and is not re-decided from it", async () => {
    const samples: MetricProvider = {
      async measure(metric) {
        const v2 = (metric.provider.web?.url ?? "").includes("v2");
        const values = Array.from({ length: 400 }, (_, i) => (v2 ? 120 : 100) + (i % 37) / 7);
        return { ok: true, result: values, value: "" };
      },
    };
    const metric = judgeMetric(
      "interval: 10s\ncount: 2",
      `test: mann-whitney\ndata: samples\nminSamples: 100\ncandidate: {web: {url: "http://s/v2"}}\nstable: {web: {url: "http://s/v1"}}`,
    );
    const looks = await record(metric, new MetricProviders({ web: samples }));
    const first = looks[0]?.measurement;
    expect(first?.phase).toBe("Failed");
    expect(first?.readings).toBeUndefined();
    expect(first?.truncated?.readings).toBeGreaterThan(2048);
    const rows = replayMeasurements([metric], looks);
    expect(rows[0]).toMatchObject({ recorded: "Failed", replayed: null, differs: false });
    expect(rows[0]?.note).toMatch(/readings were cut to fit the store \(\d[\d,]* bytes\): not re-decided/);
  });
});

describe("replay of a fixed-horizon judge", () => {
  it("with its own definition re-decides every look the same, with the same figures", async () => {
    const metric = judgeMetric(FIELDS, TWO_PROPORTION);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }));
    const rows = replayMeasurements([metric], looks);
    expect(rows.map((r) => [r.index, r.recorded, r.replayed])).toEqual([
      [1, "Running", "Running"],
      [2, "Running", "Running"],
      [3, "Running", "Running"],
      [4, "Running", "Running"],
      [5, "Failed", "Failed"],
    ]);
    // scipy.stats.chi2_contingency([[15, 485], [15, 1485]], correction=False): z = sqrt(chi2), p = norm.sf(z).
    expect(rows[4]?.judge?.replayed?.pValue).toBeCloseTo(0.0007206127500027941, 12);
    expect(rows[4]?.judge?.recorded.pValue).toBe(rows[4]?.judge?.replayed?.pValue);
    expect(summaryLine(summarize(rows))).toBe("0 of 5 decisions differ");
  });

  it("with a much smaller alpha keeps the look that rolled back", async () => {
    const metric = judgeMetric(FIELDS, TWO_PROPORTION);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }));
    const strict = judgeMetric(FIELDS, `${TWO_PROPORTION}\nalpha: 0.0005`);
    const rows = replayMeasurements(replayMetrics([metric], [strict]), looks);
    expect(rows.map((r) => r.replayed)).toEqual(["Running", "Running", "Running", "Running", "Successful"]);
    const summary = summarize(rows);
    expect(summary).toMatchObject({ measurements: 5, replayed: 5, differ: 1 });
    expect(summary.firstChange).toMatchObject({ index: 5, recorded: "Failed", replayed: "Successful" });
    expect(rows[4]?.note).toMatch(/^Gate "errors" passed: .*alpha 0.0005/);
  });

  it("with a smaller horizon decides at the look that reaches it", async () => {
    const metric = judgeMetric(FIELDS, TWO_PROPORTION);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }));
    const sooner = judgeMetric(FIELDS, `${TWO_PROPORTION}\nminSamples: 300\nsamples: 300`);
    const rows = replayMeasurements(replayMetrics([metric], [sooner]), looks);
    expect(rows.map((r) => r.replayed)).toEqual(["Running", "Running", "Failed", "Failed", "Failed"]);
    expect(summarize(rows).firstChange).toMatchObject({ index: 3, recorded: "Running", replayed: "Failed" });
    // scipy.stats.chi2_contingency([[9, 291], [9, 891]], correction=False): p = norm.sf(sqrt(chi2)).
    expect(rows[2]?.judge?.replayed?.pValue).toBeCloseTo(0.006792183631355694, 12);
    expect(rows[2]?.judge?.recorded.pValue).toBeNull();
  });
});

describe("replay of a sequential judge carries its state from look to look", () => {
  it("re-decides every look with the recorded p-values and Bayes factors", async () => {
    const metric = judgeMetric("interval: 10s\ncount: 12", SEQUENTIAL);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.012, 0.01)) }));
    expect(looks.map((l) => l.measurement.phase).at(-1)).toBe("Successful");
    const rows = replayMeasurements([metric], looks);
    expect(rows.map((r) => r.replayed)).toEqual(looks.map((l) => l.measurement.phase));
    expect(rows.map((r) => r.judge?.replayed)).toEqual(rows.map((r) => r.judge?.recorded));
    expect(rows.some((r) => r.judge?.recorded.bayesFactor !== null)).toBe(true);
    expect(summarize(rows)).toMatchObject({ replayed: 12, differ: 0 });
  });

  it("keeps the smallest p-value so far when a candidate that looked worse recovers", async () => {
    // 3% errors for the first 20 s, then 1% like the stable version: the evidence fades.
    const recovering: Source = (version, elapsed) => {
      if (version !== "v2") return rates(0.01, 0.01)(version, elapsed);
      const requests = 10 * elapsed;
      const bad = Math.round(0.03 * Math.min(requests, 200) + 0.01 * Math.max(0, requests - 200));
      return { requests, ok: requests - bad };
    };
    const metric = judgeMetric("interval: 10s\ncount: 12", SEQUENTIAL);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(recovering) }));
    const ps = looks.map((l) => l.measurement.judge?.pValue ?? null);
    // Below minSamples at the first look, then the evidence peaks at the third and goes away: the
    // always-valid p-value stays at its low point to the end.
    expect(ps[0]).toBeNull();
    expect(ps[2]).toBeLessThan(ps[1] as number);
    expect(new Set(ps.slice(2)).size).toBe(1);
    const rows = replayMeasurements([metric], looks);
    expect(rows.map((r) => r.judge?.replayed?.pValue)).toEqual(ps);
    expect(summarize(rows)).toMatchObject({ replayed: 12, differ: 0 });
  });

  it("with a much smaller alpha holds where it rolled back", async () => {
    const metric = judgeMetric("interval: 10s\ncount: 30", SEQUENTIAL);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.1, 0.01)) }));
    const phases = looks.map((l) => l.measurement.phase);
    expect(phases.at(-1)).toBe("Failed");
    const strict = judgeMetric("interval: 10s\ncount: 30", `${SEQUENTIAL}\nalpha: 0.0000001`);
    const rows = replayMeasurements(replayMetrics([metric], [strict]), looks);
    expect(rows.map((r) => r.replayed)).toEqual(phases.map(() => "Running"));
    expect(summarize(rows).firstChange).toMatchObject({ index: looks.length, recorded: "Failed" });
  });
});

describe("readings JSON cannot hold", () => {
  it("a Prometheus sample that is NaN is stored as null, read back, and decided again the same", async () => {
    // A histogram whose candidate reads NaN in one bucket (a 0/0 the query did not guard against).
    const buckets = (nan: boolean) =>
      [0.05, 0.1, 0.25, 0.5, Number.POSITIVE_INFINITY].map((le, i) => ({
        labels: { le: le === Number.POSITIVE_INFINITY ? "+Inf" : String(le) },
        value: nan && i === 2 ? Number.NaN : ([100, 300, 600, 900, 1000][i] as number),
      }));
    const prometheus: MetricProvider = {
      async measure(metric) {
        const series = buckets((metric.provider.prometheus?.query ?? "").includes("v2"));
        return { ok: true, result: series.map((x) => x.value), value: "", series };
      },
    };
    const metric = judgeMetric(
      "interval: 1m\ncount: 2",
      `test: mann-whitney\ndata: histogram\nminSamples: 100\ncandidate: {prometheus: {query: "b v2"}}\nstable: {prometheus: {query: "b v1"}}`,
    );
    const looks = await record(metric, new MetricProviders({ prometheus }));
    expect(looks.map((l) => l.measurement.phase)).toEqual(["Running", "Inconclusive"]);
    const rows = replayMeasurements([metric], looks);
    expect(rows.map((r) => r.replayed)).toEqual(["Running", "Inconclusive"]);
    expect(rows.map((r) => r.note)).toEqual(looks.map((l) => l.measurement.message));
  });
});

describe("replay of a score", () => {
  const score = (maxRatio: number) => `test: score
metrics:
  - name: errors
    test: comparative
    critical: true
    maxRatio: ${maxRatio}
    candidate: {prometheus: {query: "errors v2"}}
    stable: {prometheus: {query: "errors v1"}}
  - name: latency
    test: comparative
    maxRatio: 1.2
    candidate: {prometheus: {query: "latency v2"}}
    stable: {prometheus: {query: "latency v1"}}`;
  // Errors 30% higher on the candidate, latency the same.
  const prometheus: MetricProvider = {
    async measure(metric) {
      const q = metric.provider.prometheus?.query ?? "";
      const v = q === "errors v2" ? 0.013 : q === "errors v1" ? 0.01 : 100;
      return { ok: true, result: [v], value: "" };
    },
  };

  it("re-decides each metric of the score: a tighter critical ratio rolls back from the first look", async () => {
    const metric = judgeMetric("interval: 1m\ncount: 5", score(1.5));
    const looks = await record(metric, new MetricProviders({ prometheus }));
    expect(looks.map((l) => l.measurement.phase)).toEqual([
      "Running",
      "Running",
      "Running",
      "Running",
      "Successful",
    ]);
    expect(summarize(replayMeasurements([metric], looks))).toMatchObject({ replayed: 5, differ: 0 });
    const tighter = judgeMetric("interval: 1m\ncount: 5", score(1.2));
    const rows = replayMeasurements(replayMetrics([metric], [tighter]), looks);
    expect(rows.map((r) => r.replayed)).toEqual(["Failed", "Failed", "Failed", "Failed", "Failed"]);
    expect(summarize(rows).firstChange).toMatchObject({ index: 1, recorded: "Running", replayed: "Failed" });
    expect(rows[0]?.note).toMatch(
      /critical metric errors: candidate 0.013, stable 0.01: ratio 1.3 > maxRatio 1.2/,
    );
  });
});

describe("looks that cannot be decided again", () => {
  it("a look recorded without its readings, and every later look of that judge, say why", async () => {
    const metric = judgeMetric(FIELDS, TWO_PROPORTION);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }));
    const older = looks.map((l, i) => {
      if (i !== 1) return l;
      const { readings: _r, ...rest } = l.measurement;
      return { ...l, measurement: rest };
    });
    const rows = replayMeasurements([metric], older);
    expect(rows.map((r) => r.replayed)).toEqual(["Running", null, null, null, null]);
    expect(rows[1]?.note).toMatch(/recorded without its readings: not re-decided/);
    expect(rows[2]?.note).toMatch(/look #2 could not be decided again/);
    expect(summaryLine(summarize(rows))).toBe("0 of 1 decisions differ (4 not re-decided)");
  });

  it("a template whose judge reads what the looks did not record says which reading", async () => {
    const metric = judgeMetric(FIELDS, TWO_PROPORTION);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }));
    const other = judgeMetric(
      FIELDS,
      `test: mann-whitney\ndata: samples\ncandidate: {web: {url: "http://s/v2"}}\nstable: {web: {url: "http://s/v1"}}`,
    );
    const rows = replayMeasurements(replayMetrics([metric], [other]), looks);
    expect(rows[0]?.replayed).toBeNull();
    expect(rows[0]?.note).toMatch(/the look has no reading "candidate.value"/);
  });

  it("a template whose judge reads a side differently is refused: the recorded values answer the old query", async () => {
    const metric = judgeMetric(FIELDS, TWO_PROPORTION);
    const looks = await record(metric, new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }));
    const other = judgeMetric(
      FIELDS,
      TWO_PROPORTION.replace("bad: result.requests - result.ok", "bad: result.ok"),
    );
    const rows = replayMeasurements(replayMetrics([metric], [other]), looks, [metric]);
    expect(rows.map((r) => r.replayed)).toEqual([null, null, null, null, null]);
    expect(rows[0]?.note).toMatch(
      /the judge reads "candidate.bad" otherwise than the run did \(its query or expression changed\): not re-decided/,
    );
  });
});
