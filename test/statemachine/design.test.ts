import { describe, expect, it } from "vitest";
import { BUCKETS } from "../../local/simulate/traffic.ts";
import { assess, candidateSpec, candidateYaml, PRUNE_REASONS } from "../../statemachine/design/arithmetic.ts";
import {
  type Candidate,
  candidatesOf,
  FIRST_WEIGHTS,
  GROWTHS,
  INTERVALS,
  LOOKS,
  podWeights,
  shortForm,
  weightsOf,
} from "../../statemachine/design/candidates.ts";
import {
  choose,
  MIN_SIMULATED,
  type RunOutcome,
  type Simulated,
  searchDone,
  simulationOrder,
  type Tried,
  verdictOf,
} from "../../statemachine/design/choose.ts";
import { failureModes, falseRollbackBound } from "../../statemachine/design/failure-modes.ts";
import {
  type DesignInput,
  DesignInputError,
  defaultExposureBudget,
  metricNamesOf,
  SIMULATOR_METRICS,
} from "../../statemachine/design/input.ts";
import {
  bucketCdf,
  HISTOGRAM_BUCKETS,
  histogramP95,
  LOOK_ALPHA,
  LOOK_POWER,
  latencyCdf,
  thresholdsOf,
  trueP95,
} from "../../statemachine/design/thresholds.ts";
import { exposures } from "../../statemachine/exposure.ts";
import { parseRollout, plan } from "../../statemachine/index.ts";
import { samplesOneProportion } from "../../statemachine/sample-size.ts";

/** The demo's traffic (local/demo/main.ts: 800 rps, a good version failing 1%) against a 5% SLO. */
const DEMO: DesignInput = {
  name: "shop",
  rps: 800,
  sloErrorRate: 0.05,
  sloP95Ms: 300,
  baselineErrorRate: 0.01,
  replicas: 4,
  router: "alb",
  metrics: SIMULATOR_METRICS,
  exposureBudget: 2000,
  maxDurationSeconds: 3600,
  scrapeIntervalSeconds: 1,
};

const candidate = (over: Partial<Candidate> = {}): Candidate => ({
  id: "w10-x2-30s-c1-f0",
  growth: "x2",
  weights: [10, 20, 40, 80],
  intervalSeconds: 30,
  count: 1,
  failureLimit: 0,
  tooManySteps: false,
  ...over,
});

const run = (over: Partial<RunOutcome> = {}): RunOutcome => ({
  outcome: "aborted",
  at: 5,
  message: null,
  newRequests: 400,
  newErrors: 20,
  cost: { total: 0.0004 },
  ...over,
});

describe("design: candidates", () => {
  it("grows the weight ×2, ×2.5 or linearly from the first, until 100", () => {
    expect(weightsOf(5, "x2").weights).toEqual([5, 10, 20, 40, 80]);
    expect(weightsOf(2, "x2.5").weights).toEqual([2, 5, 13, 33, 83]);
    expect(weightsOf(20, "linear").weights).toEqual([20, 40, 60, 80]);
    expect(weightsOf(10, "linear")).toEqual({
      weights: [10, 20, 30, 40, 50, 60, 70, 80, 90],
      tooManySteps: false,
    });
    // Linear from 5% would take 19 steps: past the limit, marked for pruning.
    expect(weightsOf(5, "linear").tooManySteps).toBe(true);
  });

  it("enumerates the whole family once: first weight × growth × interval × looks", () => {
    const all = candidatesOf({ router: "alb", replicas: 4 });
    expect(all).toHaveLength(FIRST_WEIGHTS.length * GROWTHS.length * INTERVALS.length * LOOKS.length);
    expect(new Set(all.map((c) => c.id)).size).toBe(all.length);
    for (const c of all) expect(c.count).toBeGreaterThan(c.failureLimit);
  });

  it("without a router, uses only the weights whole pods give (Argo's rounding with the default surge)", () => {
    // 4 replicas, surge 1: 1 of 5 = 20%, 1 of 4 = 25%, 2 of 5 = 40%, 2 of 4, 3 of 5, 3 of 4, 4 of 5.
    expect(podWeights(4)).toEqual([20, 25, 40, 50, 60, 75, 80]);
    const pods = candidatesOf({ router: "none", replicas: 4 });
    expect(new Set(pods.map((c) => c.weights.join(",")))).toEqual(
      new Set(["20,40,80", "20,50", "20,40,60,80"]),
    );
    // The plan's share of each weight (pod rounding) is the weight itself.
    const input = { ...DEMO, router: "none" as const };
    const t = thresholdsOf(input);
    for (const c of pods.slice(0, 12)) {
      const spec = candidateSpec(input, t, c);
      expect(spec.trafficRouting).toBe(false);
      const shares = plan(spec)
        .steps.filter((s) => s.kind === "setWeight")
        .map((s) => s.share);
      expect(shares).toEqual(c.weights);
    }
  });
});

describe("design: each look's conditions", () => {
  it("needs the one-proportion sample size at alpha 0.001 and power 0.95, and puts the error condition at its critical value", () => {
    const t = thresholdsOf(DEMO);
    // scipy: za, zb = norm.ppf(0.999), norm.ppf(0.95);
    // ((za*sqrt(.01*.99) + zb*sqrt(.05*.95)) / .04)**2 = 277.19 → 278;
    // .01 + za*sqrt(.01*.99/278) = 0.028441 → 0.0284
    expect(t.errorSamples).toBe(
      samplesOneProportion({ limit: 0.01, candidate: 0.05, alpha: LOOK_ALPHA, power: LOOK_POWER }),
    );
    expect(t.lookSamples).toBe(278);
    expect(t.errorRate).toBe(0.0284);
    expect(t.errorRate).toBeGreaterThan(DEMO.baselineErrorRate);
    expect(t.errorRate).toBeLessThan(DEMO.sloErrorRate);
    expect(t.p95Seconds).toBe(0.3);
  });

  it("reads latency through the simulation's buckets as histogram_quantile interpolates them", () => {
    expect([...HISTOGRAM_BUCKETS]).toEqual([...BUCKETS]);
    for (const le of HISTOGRAM_BUCKETS) expect(bucketCdf(le, 2)).toBeCloseTo(latencyCdf(le, 2), 12);
    // The good version: median 50 ms, σ 0.5 → a true p95 of 113.8 ms, read as 159.9 ms in 0.1–0.25 s.
    expect(trueP95(1) * 1000).toBeCloseTo(113.8, 1);
    expect(histogramP95(1) * 1000).toBeCloseTo(159.9, 1);
    const t = thresholdsOf(DEMO);
    // The bad latency version has the share over the SLO a look sees with power 0.95.
    expect(1 - bucketCdf(0.3, t.badLatencyFactor)).toBeCloseTo(t.badSlowShare, 9);
    expect(histogramP95(t.badLatencyFactor)).toBeGreaterThan(0.3);
    expect(t.bucket).toEqual({ lower: 0.25, upper: 0.5 });
    // The buckets read a true p95 of 264 ms as 300 ms.
    expect(t.bucketBlindP95 * 1000).toBeCloseTo(263.8, 1);
  });

  it("refuses an SLO the simulated good version does not meet, or the histogram cannot place, naming the flag", () => {
    expect(() => thresholdsOf({ ...DEMO, sloP95Ms: 150 })).toThrow(/^--slo-p95 must be above 160 ms/);
    expect(() => thresholdsOf({ ...DEMO, sloP95Ms: 10_000 })).toThrow(/^--slo-p95 must be under 10000 ms/);
    expect(() => thresholdsOf({ ...DEMO, baselineErrorRate: 0.05 })).toThrow(
      /^--baseline-error-rate must be/,
    );
    expect(() => thresholdsOf({ ...DEMO, sloP95Ms: 150 })).toThrow(DesignInputError);
  });

  it("defaults the budget to 0.1% of the 30-day error budget spent at the SLO's rate: 2,592 × rps", () => {
    expect(defaultExposureBudget(800)).toBe(2_073_600);
    expect(defaultExposureBudget(1)).toBe(2592);
  });
});

describe("design: the YAML", () => {
  const t = thresholdsOf(DEMO);
  const c = candidate({ weights: [10, 25], intervalSeconds: 10, count: 2, failureLimit: 1 });

  it("is Argo objects the project's loader loads, each analysis selecting the new version by its arg", () => {
    const text = candidateYaml(DEMO, t, c);
    const { spec } = parseRollout([{ file: "design.yaml", text }]);
    expect(spec.name).toBe("shop");
    expect(spec.trafficRouting).toBe(true);
    expect(spec.steps.map((s) => s.kind)).toEqual(["setWeight", "analysis", "setWeight", "analysis"]);
    expect(text).toContain("podTemplateHashValue: Latest");
    const analysis = spec.steps[1];
    if (analysis?.kind !== "analysis") throw new Error("no analysis");
    const [errors, latency] = analysis.analysis.templates.flatMap((x) => x.metrics);
    expect(errors).toMatchObject({
      name: "error-ratio",
      initialDelay: 10,
      interval: 10,
      count: 2,
      failureLimit: 1,
    });
    expect(errors?.successCondition).toBe("result[0] <= 0.0284");
    expect(latency?.successCondition).toBe("result[0] <= 0.3");
  });

  it("wraps the error ratio in `or vector(0)`, so a version with no failed request reads 0, not an empty vector", () => {
    const text = candidateYaml(DEMO, t, c);
    expect(text).toMatch(/\) or vector\(0\)/);
    expect(text).toContain('sum(rate(http_requests_total{version="{{args.version}}",code=~"5.."}[10s]))');
    expect(text).toContain(
      'histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{version="{{args.version}}"}[10s])))',
    );
  });

  it("writes the names of a --metrics file, and refuses what is not a name or a matcher", () => {
    const names = metricNamesOf(
      {
        requests: "shop_requests_total",
        errors: 'status=~"5..",path!="/health"',
        latency: "shop_latency_seconds_bucket",
        version: "release",
      },
      "m.yaml",
    );
    const text = candidateYaml(DEMO, t, c, names);
    expect(text).toContain(
      'sum(rate(shop_requests_total{release="{{args.version}}",status=~"5..",path!="/health"}[10s]))',
    );
    expect(text).toContain('rate(shop_latency_seconds_bucket{release="{{args.version}}"}[10s])');
    expect(() => parseRollout([{ file: "d.yaml", text }])).not.toThrow();
    expect(() => metricNamesOf({ errors: 'code=~"5.."} or vector(1)' }, "m.yaml")).toThrow(
      /^--metrics m.yaml: errors:/,
    );
    expect(() => metricNamesOf({ requests: "a-b" }, "m.yaml")).toThrow(/requests: a Prometheus metric name/);
    expect(() => metricNamesOf({ histogram: "x" }, "m.yaml")).toThrow(/unknown field "histogram"/);
  });

  it("writes each router's traffic routing, and none for pods", () => {
    for (const router of ["alb", "lambda", "gateway", "istio", "nginx"] as const) {
      expect(candidateSpec({ ...DEMO, router }, t, c).trafficRouting).toBe(true);
    }
    expect(
      candidateSpec({ ...DEMO, router: "none" }, t, candidate({ weights: [20, 50] })).trafficRouting,
    ).toBe(false);
  });
});

describe("design: pruning by the arithmetic", () => {
  const t = thresholdsOf(DEMO);

  it("prunes on each reason, and keeps the plan's exposure arithmetic for the others", () => {
    const cases: Array<[Candidate, string | undefined]> = [
      [candidate({ tooManySteps: true }), "steps"],
      [candidate({ intervalSeconds: 5 }), undefined],
      [candidate({ weights: [1, 2, 4], intervalSeconds: 5 }), "samples"],
      [candidate({ weights: [20, 50], intervalSeconds: 3600, count: 3, failureLimit: 1 }), "duration"],
      [candidate({ weights: [20, 50], intervalSeconds: 30 }), "exposure"],
    ];
    const assessed = assess(
      DEMO,
      t,
      cases.map(([c]) => c),
    );
    expect(assessed.map((a) => a.pruned)).toEqual(cases.map(([, reason]) => reason));
    expect(
      assess({ ...DEMO, scrapeIntervalSeconds: 15 }, t, [candidate({ intervalSeconds: 30 })])[0]?.pruned,
    ).toBe("scrape");
    for (const reason of Object.keys(PRUNE_REASONS))
      expect(PRUNE_REASONS[reason as keyof typeof PRUNE_REASONS]).toBeTruthy();
  });

  it("takes each step's exposure from rollouts plan's own function, and a good version's time from the analyses", () => {
    const c = candidate({ weights: [10, 20, 40, 80], intervalSeconds: 5, count: 2, failureLimit: 1 });
    const [a] = assess(DEMO, t, [c]);
    const spec = candidateSpec(DEMO, t, c);
    const expected = exposures(spec, plan(spec, { rps: 800 }).steps, 800, 0.05).filter(
      (e) => e !== undefined,
    );
    expect(a?.steps?.map((s) => s.exposure)).toEqual(expected);
    // Caught at the second failed look of the 10% step: 800 × 10% × 10 s.
    expect(a?.steps?.[0]?.exposure).toEqual({ abortAfter: 10, at: 10, requests: 800, failed: 40 });
    expect(a?.promoteSeconds).toBe(4 * 10);
    expect(a?.steps?.map((s) => [s.weight, s.share, s.candidateRps, s.seconds])).toEqual([
      [10, 10, 80, 10],
      [20, 20, 160, 10],
      [40, 40, 320, 10],
      [80, 80, 640, 10],
    ]);
  });
});

describe("design: the choice", () => {
  const t = thresholdsOf(DEMO);
  const sim = (over: Partial<Simulated> = {}): Simulated => ({
    good: run({ outcome: "promoted", at: 40, newRequests: 9000 }),
    errors: run(),
    latency: run({ newRequests: 500 }),
    ...over,
  });

  it("accepts a candidate that stops both bad versions within the budget and promotes the good one", () => {
    expect(verdictOf(sim(), 2000, 3600)).toEqual({ accepted: true, promoteSeconds: 40, exposure: 500 });
    expect(verdictOf(sim(), 450, 3600)).toMatchObject({
      accepted: false,
      reason: "a bad version served 500 requests, more than the budget of 450",
    });
    expect(verdictOf(sim({ errors: run({ outcome: "promoted", at: 40 }) }), 2000, 3600)).toMatchObject({
      accepted: false,
      reason: "the error version was promoted at 40s",
      exposure: null,
    });
    expect(verdictOf(sim({ good: run({ message: "Metric failed" }) }), 2000, 3600)).toMatchObject({
      accepted: false,
      reason: "the good version was aborted at 5s: Metric failed",
    });
    expect(verdictOf(sim(), 2000, 30).accepted).toBe(false);
  });

  it("chooses the fastest, then the least exposed; searches in the arithmetic's order and stops when nothing left can be faster", () => {
    const assessed = assess({ ...DEMO, exposureBudget: 10_000 }, t, [
      candidate({ id: "slow", weights: [10, 20], intervalSeconds: 60 }),
      candidate({ id: "fast", weights: [10, 20], intervalSeconds: 5 }),
      candidate({ id: "fast-big", weights: [20, 40], intervalSeconds: 5 }),
    ]);
    expect(simulationOrder(assessed).map((a) => a.candidate.id)).toEqual(["fast", "fast-big", "slow"]);
    const tried = (a: (typeof assessed)[number], at: number, exposure: number): Tried => {
      const simulated = sim({
        good: run({ outcome: "promoted", at }),
        errors: run({ newRequests: exposure }),
      });
      return { assessed: a, simulated, verdict: verdictOf(simulated, 2000, 3600) };
    };
    const [slow, fast, big] = assessed as [
      (typeof assessed)[number],
      (typeof assessed)[number],
      (typeof assessed)[number],
    ];
    expect(
      choose([tried(slow, 120, 100), tried(big, 10, 800), tried(fast, 10, 400)])?.assessed.candidate.id,
    ).toBe("fast");
    const six = Array.from({ length: MIN_SIMULATED }, () => tried(fast, 10, 400));
    expect(searchDone(six, [slow])).toBe(true);
    expect(searchDone(six.slice(1), [slow])).toBe(false);
    expect(searchDone([...six, tried(big, 10, 5000)].slice(0, MIN_SIMULATED), [big])).toBe(false);
    expect(searchDone([], [])).toBe(true);
  });
});

describe("design: the failure modes it accepts", () => {
  const t = thresholdsOf(DEMO);

  it("names each with its figures", () => {
    const c = candidate({ weights: [20, 50], intervalSeconds: 5 });
    const subtle = {
      errorRate: 0.025,
      run: run({ outcome: "promoted", at: 10, newRequests: 2800, newErrors: 70 }),
    };
    const modes = Object.fromEntries(failureModes(DEMO, t, c, subtle).map((m) => [m.name, m.text]));
    expect(modes["errors-under-threshold"]).toContain("under 2.84% of its requests");
    expect(modes["latency-buckets"]).toContain("between 264 ms and 300 ms as over the SLO");
    expect(modes["small-paths"]).toContain("a path carrying under 1.84% of the requests");
    expect(modes["no-traffic"]).toContain("or vector(0)");
    // 800 rps × 2.5% × 86,400 s; half the SLO's pace: the 30-day budget lasts 60 days.
    expect(modes["subtle-regression"]).toContain("1,728,000 failed requests a day");
    expect(modes["subtle-regression"]).toContain("would last 60 days");
    expect(modes["false-rollback"]).toContain("at most 0.399%");
  });

  it("bounds a false rollback by the binomial chance of failing past failureLimit, per metric and step", () => {
    // One look, failureLimit 0, 2 metrics × 2 steps: 1 − 0.999⁴.
    expect(falseRollbackBound(candidate({ weights: [20, 50] }))).toBeCloseTo(1 - 0.999 ** 4, 12);
    // Three looks tolerating one: 1 − P(at most one of 3) per metric.
    const perMetric = 1 - (0.999 ** 3 + 3 * 0.001 * 0.999 ** 2);
    expect(falseRollbackBound(candidate({ weights: [20], count: 3, failureLimit: 1 }))).toBeCloseTo(
      1 - (1 - perMetric) ** 2,
      12,
    );
  });
});

describe("design: the short form", () => {
  it("is simulate's --plan", () => {
    expect(shortForm({ weights: [5, 10] })).toBe("5%,analysis,10%,analysis");
  });
});
