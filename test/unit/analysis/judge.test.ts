import {
  COUNTS_SIDES,
  driveAnalysis,
  judgeMetric,
  phasesOf,
  rates,
  statsWeb,
} from "@sfn-rollouts/test-support/judge-stats";
import { describe, expect, it } from "vitest";
import { createRun, nextTickAt, tick } from "../../../functions/analysis/index.ts";
import { normalCdf as normalCdfOf } from "../../../functions/judges/index.ts";
import { MetricProviders } from "../../../functions/metrics/index.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import type { Metric } from "../../../statemachine/index.ts";
import { reference } from "../judges/reference.ts";
import { T0 } from "./helpers.ts";

/**
 * Judge metrics through the analysis engine: the spec as the loader reads it, the real judge
 * provider reading both versions through a provider router, `tick` in virtual time.
 */

const drive = driveAnalysis;

const phases = phasesOf;

describe("a fixed-horizon judge decides once, at its planned sample size", () => {
  const fields = "initialDelay: 10s\ninterval: 10s\ncount: 20";
  const judge = `test: two-proportion\nlabel: errors\n${COUNTS_SIDES}`;

  it("holds while collecting, then rolls back 3% vs 1% errors with the figures (p from scipy: 7.2e-04)", async () => {
    const run = await drive(
      judgeMetric(fields, judge),
      new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }),
    );
    expect(run.phase).toBe("Failed");
    // 100, 200, 300, 400 candidate requests: below the 500 of the horizon, the judge holds.
    expect(phases(run)).toEqual(["Running", "Running", "Running", "Running", "Failed"]);
    expect(run.message).toBe(
      'Gate "errors" rolled back: candidate 3.0% vs stable 1.0% errors, p = 7.2e-04 < alpha 0.05 (two-proportion, n = 500/1500; alpha 0.05 is the whole of the rollout\'s error budget 0.05)',
    );
    const result = run.metricResults[0];
    expect(result).toMatchObject({ held: 4, failed: 1, consecutiveError: 0, count: 5 });
    expect(result?.measurements[0]?.message).toBe(
      'Gate "errors" holds: 100/500 samples per side (two-proportion decides at 500)',
    );
    const figures = result?.measurements.at(-1)?.judge;
    expect(figures).toMatchObject({
      test: "two-proportion",
      decision: "rollback",
      verdict: "FAIL",
      horizon: 500,
      alpha: 0.05,
      direction: "increase",
      candidate: { n: 500, value: 0.03 },
      stable: { n: 1500, value: 0.01 },
      look: 5,
    });
    expect(figures?.z).toBeCloseTo(3.18626493938583, 10);
    expect(figures?.pValue).toBeCloseTo(0.0007206127500027957, 12);
  });

  it("promotes identical versions at the horizon, ending the analysis early", async () => {
    const run = await drive(
      judgeMetric(fields, judge),
      new MetricProviders({ web: statsWeb(rates(0.01, 0.01)) }),
    );
    expect(run.phase).toBe("Successful");
    expect(phases(run)).toEqual(["Running", "Running", "Running", "Running", "Successful"]);
    expect(run.message).toMatch(
      /^Gate "errors" passed: candidate 1.0% vs stable 1.0% errors, p = 0.5 >= alpha 0.05 \(two-proportion, /,
    );
  });

  it("holds on a provider that is down, never errors, and ends Inconclusive at the last look", async () => {
    const web = statsWeb(() => "down");
    const run = await drive(
      judgeMetric("initialDelay: 10s\ninterval: 10s\ncount: 3", judge),
      new MetricProviders({ web }),
    );
    expect(run.phase).toBe("Inconclusive");
    expect(phases(run)).toEqual(["Running", "Running", "Inconclusive"]);
    expect(run.metricResults[0]).toMatchObject({ error: 0, consecutiveError: 0 });
    expect(run.message).toBe(
      `Gate "errors" is inconclusive: held until the end of the analysis: the candidate's reading "bad" failed: Get "http://stats/": connect ECONNREFUSED`,
    );
    // One call per version and look: the two readings of one side share their provider call.
    expect(web.calls).toBe(6);
  });

  it("holds until the end when the step is too short for the horizon", async () => {
    const run = await drive(
      judgeMetric("initialDelay: 10s\ninterval: 10s\ncount: 3", judge),
      new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) }),
    );
    expect(run.phase).toBe("Inconclusive");
    expect(run.message).toBe(
      'Gate "errors" is inconclusive: held until the end of the analysis: 300/500 samples per side (two-proportion decides at 500)',
    );
  });

  it("calls a real worsening beyond a positive minEffect that is not significant suspect: a person decides", async () => {
    // 2.4% vs 1% on 500 requests: p ≈ 0.009 from scipy would be significant at 0.05, so use alpha 0.001.
    const suspect = `test: two-proportion\nlabel: errors\nalpha: 0.001\nminEffect: 0.005\n${COUNTS_SIDES}`;
    const run = await drive(
      judgeMetric(fields, suspect),
      new MetricProviders({ web: statsWeb(rates(0.024, 0.01)) }),
    );
    expect(run.phase).toBe("Inconclusive");
    expect(run.message).toMatch(
      /^Gate "errors" is inconclusive: candidate 2.4% vs stable 1.0% errors, worse by 1.4 points, beyond minEffect 0.5 points, but p = .* >= alpha 0.001: too weak to decide \(two-proportion, n = 500\/1500; alpha 0.001 is the metric's own, counted against the rollout's error budget 0.05\)$/,
    );
  });
});

describe("a sequential judge may roll back at any look, and stays honest doing so", () => {
  const judge = `test: sequential-rate\nlabel: errors\nminSamples: 100\n${COUNTS_SIDES}`;

  it("rolls back 10% vs 1% errors as soon as the evidence is there, with the Bayes factor", async () => {
    const run = await drive(
      judgeMetric("interval: 10s\ncount: 30", judge),
      new MetricProviders({ web: statsWeb(rates(0.1, 0.01)) }),
    );
    expect(run.phase).toBe("Failed");
    const result = run.metricResults[0];
    expect(result?.count).toBeLessThan(5);
    expect(run.message).toMatch(
      /^Gate "errors" rolled back: candidate 10.0% vs stable 1.0% errors, p = .* < alpha 0.05 \(sequential-rate, Bayes factor .*, n = \d+\/\d+; alpha 0.05 is the whole of the rollout's error budget 0.05\)$/,
    );
    // Sufficient statistics, never samples: the counts of the last look.
    expect(result?.judge?.stats).toEqual({
      candidate: { bad: expect.any(Number), n: expect.any(Number) },
      stable: { bad: expect.any(Number), n: expect.any(Number) },
    });
  });

  it("holds without evidence of harm and promotes at the last look; its p-value never goes up", async () => {
    const ps: number[] = [];
    const web = statsWeb(rates(0.012, 0.01));
    const router = new MetricProviders({ web });
    let run = createRun(
      {
        templates: [
          {
            name: "gate",
            kind: "AnalysisTemplate",
            metrics: [judgeMetric("interval: 10s\ncount: 12", judge)],
          },
        ],
      },
      T0,
    );
    for (let at = nextTickAt(run); at; at = nextTickAt(run)) {
      run = await tick(run, at, router);
      const p = run.metricResults[0]?.judge?.pValue;
      if (p !== undefined && p !== null) ps.push(p);
    }
    expect(run.phase).toBe("Successful");
    expect(
      phases(run)
        .slice(0, -1)
        .every((p) => p === "Running"),
    ).toBe(true);
    expect(run.message).toMatch(/^Gate "errors" passed: candidate 1.2% vs stable 1.0% errors/);
    expect(ps.length).toBeGreaterThan(5);
    for (let i = 1; i < ps.length; i++) expect(ps[i]).toBeLessThanOrEqual(ps[i - 1] as number);
  });

  it("promotes at its planned sample size, before the step ends", async () => {
    const run = await drive(
      judgeMetric("initialDelay: 10s\ninterval: 10s\ncount: 30", `${judge}\nsamples: 300`),
      new MetricProviders({ web: statsWeb(rates(0.01, 0.01)) }),
    );
    expect(run.phase).toBe("Successful");
    expect(run.metricResults[0]?.count).toBe(3);
  });

  it("reads log-latency summaries for the latency test", async () => {
    const summary = (mean: number) => ({ n: 400, mean, m2: 400 * 0.25 });
    const web: MetricProvider = {
      async measure(metric) {
        const v2 = (metric.provider.web?.url ?? "").includes("v2");
        return { ok: true, result: summary(Math.log(v2 ? 130 : 100)), value: "" };
      },
    };
    const latency = judgeMetric(
      "interval: 10s\ncount: 5",
      `test: sequential-latency\ndata: summary\ncandidate: {web: {url: "http://s/v2"}}\nstable: {web: {url: "http://s/v1"}}`,
    );
    const run = await drive(latency, new MetricProviders({ web }));
    expect(run.phase).toBe("Failed");
    expect(run.message).toMatch(
      /^Gate "errors" rolled back: candidate geometric mean 130 vs stable 100 \(\+30.0%\), p = .* < alpha 0.05 \(sequential-latency, /,
    );
  });
});

describe("comparative gates and the score", () => {
  const values = (candidate: number | "down", stable: number, samples = 1000): MetricProvider => ({
    async measure(metric) {
      const q = metric.provider.prometheus?.query ?? "";
      const v = q.startsWith("n:") ? samples : q.includes("v2") ? candidate : stable;
      if (v === "down") return { ok: false, message: "server_error: server error: 503" };
      return { ok: true, result: [v], value: `[${v}]` };
    },
  });
  const comparative = `test: comparative
maxRatio: 1.5
minSamples: 200
candidate:
  value: {prometheus: {query: "errors v2"}}
  n: {prometheus: {query: "n: v2"}}
stable: {prometheus: {query: "errors v1"}}`;

  it("rolls back at the first red reading, with the ratio", async () => {
    const run = await drive(
      judgeMetric("interval: 1m\ncount: 5", comparative),
      new MetricProviders({ prometheus: values(0.04, 0.02) }),
    );
    expect(run.phase).toBe("Failed");
    expect(run.message).toBe(
      'Gate "errors" rolled back: candidate 0.04, stable 0.02: ratio 2 > maxRatio 1.5',
    );
  });

  it("stays green through the bake and promotes at its end", async () => {
    const run = await drive(
      judgeMetric("interval: 1m\ncount: 5", comparative),
      new MetricProviders({ prometheus: values(0.021, 0.02) }),
    );
    expect(phases(run)).toEqual(["Running", "Running", "Running", "Running", "Successful"]);
  });

  it("is not green without enough requests: Inconclusive at the end of the bake", async () => {
    const run = await drive(
      judgeMetric("interval: 1m\ncount: 3", comparative),
      new MetricProviders({ prometheus: values(0.021, 0.02, 150) }),
    );
    expect(run.phase).toBe("Inconclusive");
    expect(run.message).toBe(
      'Gate "errors" is inconclusive: held until the end of the analysis: 150 samples < minSamples 200',
    );
  });

  const score = `test: score
metrics:
  - name: errors
    test: comparative
    critical: true
    maxRatio: 1.5
    candidate: {prometheus: {query: "errors v2"}}
    stable: {prometheus: {query: "errors v1"}}
  - name: latency
    test: comparative
    maxRatio: 1.2
    weight: 3
    candidate: {prometheus: {query: "latency v2"}}
    stable: {prometheus: {query: "latency v1"}}`;

  it("scores the release: a failed critical metric is red whatever the score", async () => {
    const provider: MetricProvider = {
      async measure(metric) {
        const q = metric.provider.prometheus?.query ?? "";
        const v = q === "errors v2" ? 0.05 : q === "errors v1" ? 0.01 : 100;
        return { ok: true, result: [v], value: "" };
      },
    };
    const run = await drive(
      judgeMetric("interval: 1m\ncount: 5", score),
      new MetricProviders({ prometheus: provider }),
    );
    expect(run.phase).toBe("Failed");
    expect(run.message).toMatch(
      /^Gate "errors" rolled back: score 0: critical metric errors: candidate 0.05, stable 0.01: ratio 5 > maxRatio 1.5/,
    );
    expect(run.metricResults[0]?.measurements.at(-1)?.judge?.metrics).toEqual([
      { name: "errors", status: "fail", message: expect.stringContaining("ratio 5 > maxRatio 1.5") },
      { name: "latency", status: "pass", message: expect.stringContaining("ratio 1") },
    ]);
  });

  it("passes a marginal score during the bake but needs pass at its end", async () => {
    // latency fails (weight 3), errors passes (weight 1): 25, red at once.
    const provider: MetricProvider = {
      async measure(metric) {
        const q = metric.provider.prometheus?.query ?? "";
        const v = q === "latency v2" ? 130 : q === "latency v1" ? 100 : 0.01;
        return { ok: true, result: [v], value: "" };
      },
    };
    const run = await drive(
      judgeMetric("interval: 1m\ncount: 5", score),
      new MetricProviders({ prometheus: provider }),
    );
    expect(run.phase).toBe("Failed");
    expect(run.message).toMatch(/^Gate "errors" rolled back: score 25: score 25 < marginal 75/);
  });

  it("ends Inconclusive when a metric had no data at the end of the bake", async () => {
    const provider: MetricProvider = {
      async measure(metric) {
        const q = metric.provider.prometheus?.query ?? "";
        if (q.startsWith("latency")) return { ok: true, result: [], value: "[]" };
        return { ok: true, result: [0.01], value: "" };
      },
    };
    const run = await drive(
      judgeMetric("interval: 1m\ncount: 3", score),
      new MetricProviders({ prometheus: provider }),
    );
    expect(run.phase).toBe("Inconclusive");
    expect(run.message).toMatch(
      /^Gate "errors" is inconclusive: score 100: metric latency: .*returned no data/,
    );
  });
});

describe("the canary gate in a rollout", () => {
  const gate = `test: canary-gate
candidate:
  p95: {prometheus: {query: p95c}}
  errorRate: {prometheus: {query: errc}}
  n: {prometheus: {query: nc}}
stable:
  p95: {prometheus: {query: p95s}}`;
  const source = (values: Record<string, number>): MetricProvider => ({
    async measure(metric) {
      const v = values[metric.provider.prometheus?.query ?? ""];
      return v === undefined ? { ok: true, result: [], value: "[]" } : { ok: true, result: [v], value: "" };
    },
  });
  const metric = () => {
    const m = judgeMetric("interval: 1m\ncount: 3", gate);
    // The fingerprint is the pushed digest, filled in when the analysis starts.
    return {
      ...m,
      provider: { judge: { ...m.provider.judge, fingerprint: `sha256:${"a".repeat(64)}` } },
    } as Metric;
  };

  it("holds a cold window, then promotes a clean one", async () => {
    let n = 100;
    const provider: MetricProvider = {
      async measure(m) {
        const q = m.provider.prometheus?.query ?? "";
        const v = { p95c: 110, errc: 0.001, nc: n, p95s: 100 }[q] ?? 0;
        if (q === "nc") n += 1000;
        return { ok: true, result: [v], value: "" };
      },
    };
    const run = await drive(metric(), new MetricProviders({ prometheus: provider }));
    expect(phases(run)).toEqual(["Running", "Successful"]);
    expect(run.metricResults[0]?.measurements[0]?.message).toMatch(
      /^Gate "errors" holds: cold window: \d+ samples < 500$/,
    );
  });

  it("rolls back when p95 breaks the budget", async () => {
    const run = await drive(
      metric(),
      new MetricProviders({ prometheus: source({ p95c: 130, errc: 0, nc: 1000, p95s: 100 }) }),
    );
    expect(run.phase).toBe("Failed");
    expect(run.message).toBe('Gate "errors" rolled back: p95 130 ms > 1.2 × baseline 100 ms');
  });

  it("holds on an observation its schema refuses (a negative error rate), never deciding on it", async () => {
    const run = await drive(
      metric(),
      new MetricProviders({ prometheus: source({ p95c: 110, errc: -0.1, nc: 1000, p95s: 100 }) }),
    );
    expect(run.phase).toBe("Inconclusive");
    expect(run.message).toMatch(/invalid canary observation: candidate_error_rate: /);
  });
});

describe("a histogram judge", () => {
  it("ranks Prometheus buckets read by their le label", async () => {
    const bucketsOf = (shift: number) =>
      [0.05, 0.1, 0.25, 0.5, Number.POSITIVE_INFINITY].map((le, i) => ({
        labels: { le: le === Number.POSITIVE_INFINITY ? "+Inf" : String(le) },
        value: [100, 300, 600, 900, 1000][Math.min(4, i + shift)] as number,
      }));
    const provider: MetricProvider = {
      async measure(metric) {
        const v2 = (metric.provider.prometheus?.query ?? "").includes("v2");
        const series = bucketsOf(v2 ? 1 : 0);
        return { ok: true, result: series.map((s) => s.value), value: "", series };
      },
    };
    const run = await drive(
      judgeMetric(
        "interval: 1m\ncount: 2",
        `test: mann-whitney\ndata: histogram\ncandidate: {prometheus: {query: "b v2"}}\nstable: {prometheus: {query: "b v1"}}`,
      ),
      new MetricProviders({ prometheus: provider }),
    );
    // The candidate's cumulative counts fill the low buckets sooner: it is faster, no harm.
    expect(run.phase).toBe("Successful");
    expect(run.metricResults[0]?.measurements[0]?.judge).toMatchObject({
      candidate: { n: 1000 },
      stable: { n: 1000 },
    });
  });
});

/** A web provider answering `http://lat/v2` and `http://lat/v1` with each version's value. */
function versions(candidate: unknown, stable: unknown): MetricProvider {
  return {
    async measure(metric) {
      const v2 = (metric.provider.web?.url ?? "").includes("v2");
      return { ok: true, result: v2 ? candidate : stable, value: "" };
    },
  };
}

const LATENCY_SIDES = `candidate: {web: {url: "http://lat/v2"}}\nstable: {web: {url: "http://lat/v1"}}`;

describe("absolute guards in a rollout's judges (seed 002: a service-level objective is absolute)", () => {
  const [same, faster, few] = reference.guards;
  if (!(same && faster && few)) throw new Error("reference.json has no guard cases");
  const latency = (extra: string) =>
    judgeMetric(
      "interval: 10s\ncount: 3",
      `test: sequential-latency\nmaxP95Ms: 300\n${extra}${LATENCY_SIDES}`,
    );

  it("rolls back a candidate equal to the stable version whose p95 is 400 ms, above a 300 ms guard", async () => {
    const run = await drive(
      latency("minSamples: 150\n"),
      new MetricProviders({ web: versions(same.candidate, same.primary) }),
    );
    expect(run.phase).toBe("Failed");
    expect(phases(run)).toEqual(["Failed"]);
    // The guard decided; the test's result is beside it (the versions are equal: p = 1).
    expect(run.message).toBe(
      'Gate "errors" rolled back: p95 400 ms above the 300 ms guard (an absolute limit, outside the error budget); candidate geometric mean 204.9 vs stable 204.9 (+0.0%), p = 1 >= alpha 0.05 (sequential-latency, Bayes factor 0.3015, n = 200/200; alpha 0.05 is the whole of the rollout\'s error budget 0.05)',
    );
    expect(run.metricResults[0]?.measurements[0]?.judge).toMatchObject({
      verdict: "GUARD",
      decision: "rollback",
    });
  });

  it("passes a candidate at 250 ms beside a slower stable version, the guard shown next to the test", async () => {
    const run = await drive(
      latency("minSamples: 150\n"),
      new MetricProviders({ web: versions(faster.candidate, faster.primary) }),
    );
    expect(run.phase).toBe("Successful");
    expect(run.message).toMatch(
      /^Gate "errors" passed: p95 250 ms within the 300 ms guard; candidate geometric mean .* vs stable .* \(-\d+\.\d%\), p = 1 >= alpha 0.05 \(sequential-latency, /,
    );
  });

  it("holds with fewer samples than the minimum, whatever its p95", async () => {
    const run = await drive(
      latency("minSamples: 150\n"),
      new MetricProviders({ web: versions(few.candidate, few.primary) }),
    );
    expect(few.candidate).toHaveLength(100);
    expect(run.phase).toBe("Inconclusive");
    expect(phases(run)).toEqual(["Running", "Running", "Inconclusive"]);
    expect(run.message).toBe(
      'Gate "errors" is inconclusive: held until the end of the analysis: 100/150 samples per side before sequential-latency may decide',
    );
  });

  it("reads the p95 of a Prometheus histogram in seconds: above when the bucket starts past the guard", async () => {
    // Cumulative buckets in seconds: 95% of the candidate's requests are slower than 0.5 s.
    const slow = { "0.25": 2, "0.5": 4, "1": 200, "+Inf": 200 };
    const quick = { "0.25": 150, "0.5": 199, "1": 200, "+Inf": 200 };
    const histogram = (extra: string) =>
      judgeMetric(
        "interval: 10s\ncount: 2",
        `test: mann-whitney\ndata: histogram\nminSamples: 100\nsamples: 1000\nmaxP95Ms: ${extra}\n${LATENCY_SIDES}`,
      );
    const broken = await drive(histogram("400"), new MetricProviders({ web: versions(slow, quick) }));
    expect(broken.message).toBe(
      'Gate "errors" rolled back: p95 above 500 ms, above the 400 ms guard (an absolute limit, outside the error budget)',
    );
    // Within: the p95 bucket ends at the guard; the fixed-horizon test still waits for its 1000.
    const held = await drive(histogram("500"), new MetricProviders({ web: versions(quick, quick) }));
    expect(held.metricResults[0]?.measurements[0]?.message).toBe(
      'Gate "errors" holds: p95 at most 500 ms, within the 500 ms guard; 200/1000 samples per side (mann-whitney decides at 1000)',
    );
    // The guard inside the p95's bucket: interpolated as histogram_quantile does: rank 0.95 × 200 = 190, the
    // 186th of the 196 values in (0.5, 1] s: 0.5 + 0.5 × 186 / 196 s.
    // Past the last finite bucket: above its bound, 1 s.
    const tail = { "0.25": 100, "0.5": 150, "1": 180, "+Inf": 200 };
    const past = await drive(histogram("500"), new MetricProviders({ web: versions(tail, quick) }));
    expect(past.message).toMatch(/^Gate "errors" rolled back: p95 above 1000 ms, above the 500 ms guard/);
    const inside = await drive(histogram("600"), new MetricProviders({ web: versions(slow, quick) }));
    expect(inside.message).toMatch(
      /^Gate "errors" rolled back: p95 about 974\.5 ms \(between 500 ms and 1000 ms\), above the 600 ms guard/,
    );
  });

  it("rolls back a candidate whose error rate breaks maxBadRate once it has its minimum sample", async () => {
    const run = await drive(
      judgeMetric(
        "interval: 10s\ncount: 5",
        `test: sequential-rate\nlabel: errors\nminSamples: 100\nmaxBadRate: 0.05\n${COUNTS_SIDES}`,
      ),
      new MetricProviders({ web: statsWeb(rates(0.06, 0.06)) }),
    );
    expect(run.message).toMatch(
      /^Gate "errors" rolled back: candidate 6\.0% errors above the 5\.0% ceiling \(an absolute limit, outside the error budget\); candidate 6\.0% vs stable 6\.0% errors, p = 1 >= alpha 0\.05 \(sequential-rate, /,
    );
    expect(run.metricResults[0]?.measurements.at(-1)?.judge?.verdict).toBe("GUARD");
  });
});

describe("a sequential gate judges a Prometheus histogram, and carries its evidence between analyses", () => {
  it("tests the mean log latency of histogram buckets: 30% slower rolls back at the first look", async () => {
    const buckets = (scale: number) =>
      Object.fromEntries(
        [0.025, 0.05, 0.1, 0.25, 0.5].map((le) => [
          String(le),
          Math.round(400 * normalCdfOf(Math.log(le / (0.05 * scale)) / 0.5)),
        ]),
      );
    const run = await drive(
      judgeMetric("interval: 10s\ncount: 3", `test: sequential-latency\ndata: histogram\n${LATENCY_SIDES}`),
      new MetricProviders({
        web: versions({ ...buckets(1.3), "+Inf": 400 }, { ...buckets(1), "+Inf": 400 }),
      }),
    );
    expect(run.phase).toBe("Failed");
    expect(phases(run)).toEqual(["Failed"]);
    expect(run.message).toMatch(
      /^Gate "errors" rolled back: candidate geometric mean .* vs stable .* \(\+\d+\.\d%\), p = .* < alpha 0.05 \(sequential-latency, Bayes factor .*, n = 400\/400; /,
    );
  });

  it("multiplies a count gate's Bayes factor by the earlier analyses' and keeps their p-value", async () => {
    const metric = judgeMetric(
      "initialDelay: 10s\ninterval: 10s\ncount: 3",
      `test: sequential-rate\nlabel: errors\nminSamples: 100\n${COUNTS_SIDES}`,
    );
    const judge = metric.provider.judge;
    if (judge?.test !== "sequential-rate") throw new Error("not a sequential-rate judge");
    // 3% against 1%: alone, this analysis never reaches 1/alpha = 20 (its Bayes factors from scipy:
    // 1.632, 3.094, 6.214 at 100, 200 and 300 candidate requests) and promotes at its end.
    const source = () => new MetricProviders({ web: statsWeb(rates(0.03, 0.01)) });
    const alone = await drive(metric, source());
    expect(alone.phase).toBe("Successful");
    const factors = alone.metricResults[0]?.measurements.map((m) => m.judge?.bayesFactor as number) ?? [];
    expect(factors.map((f) => Number(f.toFixed(3)))).toEqual([1.632, 3.094, 6.214]);
    // An earlier analysis left a Bayes factor of 5 (ln 5): 5 × 6.214 crosses 20 at the third look.
    const carried = {
      analyses: 1,
      pValue: 0.2,
      n: { candidate: 600, stable: 1800 },
      logBayesFactor: Math.log(5),
    };
    const withEvidence = { ...metric, provider: { ...metric.provider, judge: { ...judge, carried } } };
    const run = await drive(withEvidence, source());
    expect(run.phase).toBe("Failed");
    expect(phases(run)).toEqual(["Running", "Running", "Failed"]);
    const looks = run.metricResults[0]?.measurements ?? [];
    for (const [i, m] of looks.entries()) {
      expect(m.judge?.bayesFactor).toBeCloseTo(5 * (factors[i] as number), 6);
    }
    expect(run.message).toMatch(/, Bayes factor 31\.07 over 2 analyses, n = 900\/2700; /);
    // The evidence to carry on: the product so far, and the counts of both analyses.
    expect(run.metricResults[0]?.judge?.evidence).toMatchObject({
      analyses: 2,
      n: { candidate: 900, stable: 2700 },
    });
    expect(run.metricResults[0]?.judge?.evidence?.logBayesFactor).toBeCloseTo(Math.log(5 * 6.214), 3);
    // Its p-value never goes above what the earlier analysis left (0.2), even at the first look (1/8.16).
    expect(looks[0]?.judge?.pValue).toBeCloseTo(1 / (5 * (factors[0] as number)), 6);
  });

  it("pools a latency gate's summaries with the earlier analyses' and promotes at this analysis's own samples", async () => {
    const summary = (mean: number, n: number) => ({ n, mean, m2: n * 0.25 });
    const metric = judgeMetric(
      "interval: 10s\ncount: 5",
      `test: sequential-latency\ndata: summary\nminSamples: 20\nsamples: 300\n${LATENCY_SIDES}`,
    );
    const judge = metric.provider.judge;
    if (judge?.test !== "sequential-latency") throw new Error("not a sequential-latency judge");
    const carried = {
      analyses: 1,
      pValue: 1,
      n: { candidate: 1000, stable: 1000 },
      candidate: summary(Math.log(100), 1000),
      stable: summary(Math.log(100), 1000),
    };
    const withEvidence = { ...metric, provider: { ...metric.provider, judge: { ...judge, carried } } };
    // This analysis reads 300 per side: `samples` counts them, not the 1,300 of the pooled test.
    const run = await drive(
      withEvidence,
      new MetricProviders({ web: versions(summary(Math.log(101), 300), summary(Math.log(100), 300)) }),
    );
    expect(run.phase).toBe("Successful");
    expect(phases(run)).toEqual(["Successful"]);
    expect(run.metricResults[0]?.judge?.evidence).toMatchObject({
      analyses: 2,
      n: { candidate: 1300, stable: 1300 },
    });
    expect(run.message).toMatch(/over 2 analyses, n = 1300\/1300;/);
  });
});
