import { RolloutsError } from "../../statemachine/errors.ts";
import { formatLevel, levelText } from "../../statemachine/judge-describe.ts";
import type { CarriedEvidence, JudgeCheck, JudgeSpec, JudgeSpecOf } from "../../statemachine/spec.ts";
import {
  analyzeSeries,
  type CanaryPolicy,
  type Counts,
  compareWithStable,
  decideWindow,
  formatNumber,
  formatScore,
  type Histogram,
  histogramFromCumulative,
  histogramLogSummary,
  histogramQuantile,
  histogramRankBucket,
  histogramTotal,
  InvalidObservationError,
  type LogSummary,
  type MannWhitneyResult,
  type MetricStatus,
  mannWhitney,
  mannWhitneyHistograms,
  mergeLogSummaries,
  nearestRank,
  oneProportion,
  parseObservation,
  scoreGate,
  sequentialLatency,
  sequentialRate,
  summarizeLatencies,
  type TestResult,
  twoProportion,
  worseEffect,
} from "../judges/index.ts";
import type { JudgeReadings, ReadingValue } from "../metrics/judge-readings.ts";
import type { ProviderResult } from "../metrics/port.ts";
import { kayentaLook } from "./judge-kayenta.ts";
import type { AnalysisRun, GateFigures, JudgeState, MeasurementPhase } from "./types.ts";

/**
 * A judge metric's measurement: one look at both versions, decided by a statistical test.
 *
 * - **rollback** is a Failed measurement (the metric fails by Argo's `failureLimit`, 0 by default);
 * - **promote** is a Successful one (a streak of one ends the metric: the judge is done early);
 * - **hold** is a `Running` measurement: the metric goes on, and no limit counts it. Too few
 *   samples, a reading that failed, no evidence either way yet: a judge that cannot see holds,
 *   and never promotes. At the analysis's last look a hold is Inconclusive: a person decides.
 *
 * Fixed-horizon tests (two-proportion, one-proportion, Mann-Whitney) decide once, at the first look
 * that reaches their planned sample size, so their false-rollback rate is alpha; sequential tests
 * may roll back at any look (their always-valid p-value keeps that honest) and promote when
 * they reach their `samples` or the analysis ends without evidence of harm.
 */

/** Where a look stands in its analysis. */
export interface Look {
  /** 1 for the first look. */
  index: number;
  /** The analysis's last look (`count` reached with this one): a hold becomes Inconclusive. */
  final: boolean;
}

/** What a look produces: the measurement and the state for the next look. */
export interface JudgeOutcome {
  phase: MeasurementPhase;
  message: string;
  /** The measurement's short display value. */
  value: string;
  figures: GateFigures;
  state: JudgeState;
}

/** A check's outcome at this look, before it becomes a gate decision. */
interface CheckOutcome {
  /** pass: promote; fail: roll back; hold: look again; inconclusive: decided it cannot decide. */
  status: "pass" | "fail" | "hold" | "inconclusive";
  verdict: string;
  /** The decision in words, without the gate's name. */
  reason: string;
  figures: Partial<GateFigures>;
  /** A version had no data (a series with no point): a critical metric of a score fails on it. */
  noData?: boolean;
  /** Sufficient statistics of this look's readings. */
  stats?: Record<string, Record<string, number | null>>;
  /** The always-valid p-value after this look (sequential tests). */
  pValue?: number;
  /** A score's sequential metrics' p-values, by metric name. */
  pValues?: Record<string, number>;
  /** A sequential gate's evidence so far, for the next analysis of the rollout. */
  evidence?: CarriedEvidence;
}

/** A reading that cannot be used: the judge holds and says why. */
class Unusable extends RolloutsError {
  override readonly name = "Unusable";
}

const SIDE_NAMES = { candidate: "the candidate's", stable: "the stable version's" } as const;
type SideName = keyof typeof SIDE_NAMES;

const finite = (x: number | undefined | null): number | null =>
  x !== undefined && x !== null && Number.isFinite(x) ? x : null;

/** `2.9%`, `1.0%`, `0.050%`, `33.3%`. */
export function percent(rate: number): string {
  const v = rate * 100;
  return `${v >= 10 ? v.toFixed(1) : v.toPrecision(2)}%`;
}

const ALTERNATIVE = { increase: "greater", decrease: "less", either: "two-sided" } as const;

type Read = Extract<ReadingValue, { ok: true }>;

/** Reads one named reading of one side, or throws {@link Unusable} naming it. */
function reading(readings: JudgeReadings, prefix: string, side: SideName, name: string): Read {
  const value = readings[`${prefix}${side}.${name}`];
  if (!value) throw new Unusable(`${SIDE_NAMES[side]} reading "${name}" is missing`);
  if (!value.ok) throw new Unusable(`${SIDE_NAMES[side]} reading "${name}" failed: ${value.message}`);
  return value;
}

function describe(side: SideName, name: string, what: string, v: unknown): Unusable {
  const shown = JSON.stringify(v) ?? String(v);
  return new Unusable(
    `${SIDE_NAMES[side]} "${name}" is ${what}, got ${shown.length > 80 ? `${shown.slice(0, 80)}…` : shown}`,
  );
}

/** A number from a number, a one-element vector or a numeric string; NaN and ±Inf are "no value". */
function numberOf(v: Read, side: SideName, name: string, emptyIs?: number): number {
  let x: unknown = v.value;
  if (Array.isArray(x)) {
    if (x.length === 0) {
      if (emptyIs !== undefined) return emptyIs;
      throw new Unusable(`${SIDE_NAMES[side]} "${name}" returned no data`);
    }
    x = x[0];
  }
  if (typeof x === "string" && x.trim() !== "") x = Number(x);
  if (typeof x !== "number") throw describe(side, name, "not a number", v.value);
  if (!Number.isFinite(x)) throw new Unusable(`${SIDE_NAMES[side]} "${name}" has no value (${x})`);
  return x;
}

/**
 * Counts of one side. A count query that returns no series reads 0 (no error series exists until
 * the first error); `increase()` extrapolates, so counts are rounded, and `bad` read a moment
 * apart from `n` is capped at it.
 */
function countsOf(readings: JudgeReadings, prefix: string, side: SideName): Counts {
  const bad = numberOf(reading(readings, prefix, side, "bad"), side, "bad", 0);
  const n = numberOf(reading(readings, prefix, side, "n"), side, "n", 0);
  if (n < 0) throw describe(side, "n", "negative", n);
  if (bad < 0) throw describe(side, "bad", "negative", bad);
  const total = Math.round(n);
  return { bad: Math.min(Math.round(bad), total), n: total };
}

function samplesOf(readings: JudgeReadings, prefix: string, side: SideName, positive: boolean): number[] {
  const v = reading(readings, prefix, side, "value");
  if (!Array.isArray(v.value)) throw describe(side, "value", "not a list of samples", v.value);
  return v.value.map((x, i) => {
    const n = typeof x === "string" ? Number(x) : x;
    if (typeof n !== "number" || !Number.isFinite(n) || (positive && n <= 0)) {
      throw describe(side, `value[${i}]`, positive ? "not a positive number" : "not a finite number", x);
    }
    return n;
  });
}

/**
 * Points of a series. A NaN point (a 0/0 rate in a quiet second; null in a recorded reading) stays
 * NaN for the metric's `nanStrategy`; an infinite or non-numeric point is left out.
 */
function seriesOf(readings: JudgeReadings, prefix: string, side: SideName): number[] {
  const v = reading(readings, prefix, side, "value");
  if (!Array.isArray(v.value)) throw describe(side, "value", "not a series of points", v.value);
  const points: number[] = [];
  for (const x of v.value) {
    const n = typeof x === "string" ? Number(x) : x;
    if (n === null || Number.isNaN(n)) points.push(Number.NaN);
    else if (typeof n === "number" && Number.isFinite(n)) points.push(n);
  }
  return points;
}

/**
 * A histogram from a Prometheus vector labelled `le` (`sum by (le) (increase(..._bucket[...]))`),
 * a list of `{le, count}` or a `{"le": count}` map; counts are cumulative, as Prometheus keeps them.
 */
function histogramOf(readings: JudgeReadings, prefix: string, side: SideName): Histogram {
  const v = reading(readings, prefix, side, "value");
  const le = (x: unknown): number =>
    x === "+Inf" || x === "Inf" || x === "Infinity" ? Number.POSITIVE_INFINITY : Number(x);
  let buckets: Array<{ le: number; count: number }>;
  if (v.series && v.series.length > 0) {
    if (v.series.some((s) => s.labels.le === undefined)) {
      throw new Unusable(
        `${SIDE_NAMES[side]} histogram query returned series without an "le" label: sum it by (le)`,
      );
    }
    buckets = v.series.map((s) => ({ le: le(s.labels.le), count: s.value }));
  } else if (Array.isArray(v.value)) {
    buckets = v.value.map((b) => {
      const bucket = b as { le?: unknown; count?: unknown };
      return { le: le(bucket?.le), count: Number(bucket?.count) };
    });
  } else if (v.value !== null && typeof v.value === "object") {
    buckets = Object.entries(v.value as Record<string, unknown>).map(([k, c]) => ({
      le: le(k),
      count: Number(c),
    }));
  } else {
    throw describe(side, "value", "not histogram buckets", v.value);
  }
  if (buckets.length === 0) throw new Unusable(`${SIDE_NAMES[side]} histogram returned no buckets`);
  try {
    return histogramFromCumulative(buckets, `${SIDE_NAMES[side]} histogram`);
  } catch (error) {
    throw new Unusable((error as Error).message);
  }
}

function summaryOf(readings: JudgeReadings, prefix: string, side: SideName): LogSummary {
  const v = reading(readings, prefix, side, "value");
  const s = v.value as { n?: unknown; mean?: unknown; m2?: unknown } | null;
  const n = Number(s?.n);
  const mean = Number(s?.mean);
  const m2 = Number(s?.m2);
  if (!(Number.isInteger(n) && n >= 0 && Number.isFinite(mean) && Number.isFinite(m2) && m2 >= 0)) {
    throw describe(side, "value", "not a log-latency summary {n, mean, m2}", v.value);
  }
  return { n, mean, m2 };
}

/** A check with its level, direction and minimum effect: every statistical test. */
type Statistical = Extract<JudgeCheck, { alpha: number; direction: string; minEffect: number }>;

/** An effect (candidate − stable, oriented "worse") in the metric's words: points of a rate, a relative change, a difference. */
function effectText(check: Statistical, x: number): string {
  if (check.test === "sequential-latency") return `${formatNumber(Math.round(x * 1000) / 10)}%`;
  if ("data" in check && check.data === "counts") return `${formatNumber(Math.round(x * 1e4) / 100)} points`;
  return formatNumber(x);
}

/**
 * The judge's verdict on a test result, and what decided it in words: FAIL when worse by more than
 * `minEffect` and significant; SUSPECT when worse by more than a positive `minEffect` but not
 * significant (a person should look); else PASS, saying why (not significant, or worse only within
 * the minimum that matters). With `minEffect` 0 there is no band to be suspicious of.
 */
function verdictOf(
  result: TestResult,
  check: Statistical,
): { verdict: "FAIL" | "SUSPECT" | "PASS"; why: string } {
  const worseBy = worseEffect(result.effect, ALTERNATIVE[check.direction]);
  const worse = worseBy > check.minEffect;
  const significant = result.pValue < check.alpha;
  const p = `p = ${formatNumber(result.pValue)} ${significant ? "<" : ">="} alpha ${formatLevel(check.alpha)}`;
  const effect = effectText(check, worseBy);
  const minEffect = effectText(check, check.minEffect);
  if (worse && significant) {
    return {
      verdict: "FAIL",
      why: check.minEffect > 0 ? `worse by ${effect}, beyond minEffect ${minEffect}, ${p}` : p,
    };
  }
  if (worse && check.minEffect > 0) {
    return {
      verdict: "SUSPECT",
      why: `worse by ${effect}, beyond minEffect ${minEffect}, but ${p}: too weak to decide`,
    };
  }
  if (significant && worseBy > 0) {
    return {
      verdict: "PASS",
      why: `worse by ${effect} but within minEffect ${minEffect}, so not a finding although ${p}`,
    };
  }
  if (significant) return { verdict: "PASS", why: `${p}, but the effect is not worse (${effect})` };
  return { verdict: "PASS", why: p };
}

const statusOfVerdict = { FAIL: "fail", PASS: "pass", SUSPECT: "inconclusive" } as const;

/** The test's particulars after its result: `(two-proportion, n = 500/1500; alpha 0.025 is half of …)`. */
function particulars(check: Statistical, details: string): string {
  const level = levelText(check.alpha, "budget" in check ? check.budget : undefined);
  return `(${check.test}, ${details}${level ? `; ${level}` : ""})`;
}

/** Figures common to every statistical test. */
function testFigures(
  check: Statistical,
  result: TestResult & { bayesFactor?: number },
  c: { n: number; value: number },
  s: { n: number; value: number } | null,
): Partial<GateFigures> {
  const budget = "budget" in check ? check.budget : undefined;
  return {
    statistic: finite(result.statistic),
    z: finite(result.z),
    bayesFactor: finite(result.bayesFactor),
    pValue: finite(result.pValue),
    effect: finite(result.effect),
    direction: check.direction,
    alpha: check.alpha,
    minEffect: check.minEffect,
    ...(budget && budget.gate !== "gate"
      ? { budget: { rollout: budget.rollout, share: budget.share, decisions: budget.decisions } }
      : {}),
    candidate: { n: c.n, value: finite(c.value) },
    ...(s ? { stable: { n: s.n, value: finite(s.value) } } : {}),
  };
}

/**
 * An absolute guard (a service-level objective): the candidate's nearest-rank p95 above
 * `maxP95Ms`, or its bad-event rate above `maxBadRate`, rolls back as soon as the candidate has its
 * minimum sample, whatever the stable version does. `text` is shown next to the test's result.
 */
interface GuardOutcome {
  broken: boolean;
  text: string;
}

function rateGuard(check: { maxBadRate?: number; label: string }, c: Counts): GuardOutcome | undefined {
  if (check.maxBadRate === undefined || c.n === 0) return undefined;
  const rate = c.bad / c.n;
  const broken = rate > check.maxBadRate;
  return {
    broken,
    text: `candidate ${percent(rate)} ${check.label} ${broken ? "above" : "within"} the ${percent(check.maxBadRate)} ceiling`,
  };
}

/** The p95 of a side in ms, or the bounds it lies in (a histogram's bucket), for the p95 guard. */
type P95 = { ms: number } | { lowerMs: number; upperMs: number; interpolatedMs: number };

function p95Guard(
  check: { maxP95Ms?: number; unit?: "ms" | "s" },
  p95: P95 | undefined,
): GuardOutcome | undefined {
  const guard = check.maxP95Ms;
  if (guard === undefined || p95 === undefined) return undefined;
  const ms = (x: number) => `${formatNumber(Math.round(x * 1000) / 1000)} ms`;
  if ("ms" in p95) {
    const broken = p95.ms > guard;
    return { broken, text: `p95 ${ms(p95.ms)} ${broken ? "above" : "within"} the ${ms(guard)} guard` };
  }
  if (p95.lowerMs >= guard) {
    return { broken: true, text: `p95 above ${ms(p95.lowerMs)}, above the ${ms(guard)} guard` };
  }
  if (p95.upperMs <= guard) {
    return { broken: false, text: `p95 at most ${ms(p95.upperMs)}, within the ${ms(guard)} guard` };
  }
  // The guard falls inside the bucket that holds the p95: interpolate in it, as histogram_quantile does.
  const broken = p95.interpolatedMs > guard;
  return {
    broken,
    text: `p95 about ${ms(p95.interpolatedMs)} (between ${ms(p95.lowerMs)} and ${ms(p95.upperMs)}), ${broken ? "above" : "within"} the ${ms(guard)} guard`,
  };
}

/**
 * A broken guard: the gate rolls back with the guard's words. When the test could decide too, its
 * result follows (`test`): its own FAIL is then the verdict (the test decided, the guard agrees),
 * anything else leaves the guard as what decided.
 */
function guardFailure(
  guard: GuardOutcome,
  figures: Partial<GateFigures>,
  test?: Omit<CheckOutcome, "status" | "reason"> & { text: string },
): CheckOutcome {
  const because = `${guard.text} (an absolute limit, outside the error budget)`;
  if (!test) return { status: "fail", verdict: "GUARD", reason: because, figures };
  const { text, ...rest } = test;
  return {
    ...rest,
    status: "fail",
    verdict: test.verdict === "FAIL" ? "FAIL" : "GUARD",
    reason: test.verdict === "FAIL" ? `${guard.text}; ${text}` : `${because}; ${text}`,
  };
}

/** A fixed-horizon test: hold until both sides reach the planned sample size, then decide once. */
function fixedHorizon(
  check: JudgeSpecOf<"two-proportion" | "one-proportion" | "mann-whitney">,
  n: { c: number; s: number | null },
  guard: GuardOutcome | undefined,
  run: () => { result: TestResult; c: number; s: number | null; compared: string },
): CheckOutcome {
  const smallest = n.s === null ? n.c : Math.min(n.c, n.s);
  const figuresN = {
    horizon: check.horizon,
    candidate: { n: n.c, value: null },
    ...(n.s === null ? {} : { stable: { n: n.s, value: null } }),
  };
  const guardBroken = guard?.broken === true && n.c >= Math.max(1, check.minSamples);
  const guarded = guard && n.c >= Math.max(1, check.minSamples) ? `${guard.text}; ` : "";
  if (smallest < check.horizon) {
    if (guardBroken && guard) return guardFailure(guard, figuresN);
    return {
      status: "hold",
      verdict: "INSUFFICIENT",
      reason: `${guarded}${smallest}/${check.horizon} samples per side (${check.test} decides at ${check.horizon})`,
      figures: figuresN,
    };
  }
  const { result, c, s, compared } = run();
  const { verdict, why } = verdictOf(result, check);
  const text = `${compared}, ${why} ${particulars(check, `n = ${n.c}${n.s === null ? "" : `/${n.s}`}`)}`;
  const figures = {
    ...testFigures(
      check,
      result,
      { n: n.c, value: c },
      n.s === null ? null : { n: n.s, value: s ?? Number.NaN },
    ),
    horizon: check.horizon,
  };
  if (guardBroken && guard) return guardFailure(guard, figures, { verdict, figures, text });
  return { status: statusOfVerdict[verdict], verdict, reason: `${guarded}${text}`, figures };
}

/** What a sequential look computed: the test on all the evidence, and the evidence to carry on. */
interface SequentialLook {
  result: TestResult & { bayesFactor: number };
  c: number;
  s: number;
  compared: string;
  evidence: CarriedEvidence;
}

/**
 * A sequential test: roll back at any look; promote at its `samples` or at the end of the analysis.
 * `n` is the samples per side of the whole gate so far (this analysis and the ones it carries on:
 * the evidence), `own` this analysis's (what `samples` counts: each step sees its own traffic).
 */
function sequential(
  check: JudgeSpecOf<"sequential-rate" | "sequential-latency">,
  n: { c: number; s: number },
  own: { c: number; s: number },
  final: boolean,
  guard: GuardOutcome | undefined,
  run: () => SequentialLook,
): CheckOutcome {
  const smallest = Math.min(n.c, n.s);
  const counted = { candidate: { n: n.c, value: null }, stable: { n: n.s, value: null } };
  const guardBroken = guard?.broken === true && n.c >= Math.max(1, check.minSamples);
  if (smallest < Math.max(1, check.minSamples)) {
    if (guardBroken && guard) return guardFailure(guard, counted);
    const why = check.fast
      ? ` (below it, not even a ${formatNumber(check.fast.ratio)}× regression could reach alpha ${formatLevel(check.alpha)})`
      : "";
    return {
      status: "hold",
      verdict: "INSUFFICIENT",
      reason: `${smallest}/${check.minSamples} samples per side before ${check.test} may decide${why}`,
      figures: counted,
      ...(check.carried ? { evidence: check.carried } : {}),
    };
  }
  const guarded = guard ? `${guard.text}; ` : "";
  const { result, c, s, compared, evidence } = run();
  const { verdict, why } = verdictOf(result, check);
  const reached = check.maxSamples !== undefined && Math.min(own.c, own.s) >= check.maxSamples;
  const over = evidence.analyses > 1 ? ` over ${evidence.analyses} analyses` : "";
  const details = particulars(
    check,
    `Bayes factor ${formatNumber(result.bayesFactor)}${over}, n = ${n.c}/${n.s}`,
  );
  const figures = testFigures(check, result, { n: n.c, value: c }, { n: n.s, value: s });
  const common = { figures, pValue: result.pValue, evidence };
  if (guardBroken && guard) {
    return guardFailure(guard, figures, { verdict, ...common, text: `${compared}, ${why} ${details}` });
  }
  if (verdict === "FAIL") {
    return { status: "fail", verdict, reason: `${guarded}${compared}, ${why} ${details}`, ...common };
  }
  if (!final && !reached) {
    return {
      status: "hold",
      verdict,
      reason: `${guarded}no evidence of harm yet: ${compared}, ${why} ${details}`,
      ...common,
    };
  }
  return {
    status: statusOfVerdict[verdict],
    verdict,
    reason: `${guarded}${compared}, ${why} ${details}`,
    ...common,
  };
}

/** The nearest-rank p95 of latency samples, in ms. */
function samplesP95(values: readonly number[], unit: "ms" | "s" | undefined): P95 | undefined {
  if (values.length === 0) return undefined;
  const scale = unit === "s" ? 1000 : 1;
  return {
    ms:
      (nearestRank(
        [...values].sort((a, b) => a - b),
        95,
      ) as number) * scale,
  };
}

/** The bucket that holds a histogram's nearest-rank p95, in ms. */
function histogramP95(h: Histogram, unit: "ms" | "s" | undefined): P95 | undefined {
  const bucket = histogramRankBucket(h, 0.95);
  if (!bucket) return undefined;
  const scale = unit === "s" ? 1000 : 1;
  // In the +Inf bucket the p95 is above the last bound: histogram_quantile answers that bound.
  if (!Number.isFinite(bucket.upper)) {
    return {
      lowerMs: bucket.lower * scale,
      upperMs: Number.POSITIVE_INFINITY,
      interpolatedMs: bucket.lower * scale,
    };
  }
  return {
    lowerMs: bucket.lower * scale,
    upperMs: bucket.upper * scale,
    interpolatedMs: histogramQuantile(h, 0.95) * scale,
  };
}

/** A judge check of one test. */
type CheckOf<T extends JudgeCheck["test"]> = Extract<JudgeCheck, { test: T }>;

/** One check of a judge at this look. `final`: the analysis's last look. */
function evaluate(
  check: JudgeCheck,
  readings: JudgeReadings,
  prefix: string,
  final: boolean,
  previousP: number | undefined,
): CheckOutcome {
  switch (check.test) {
    case "two-proportion":
      return twoProportionCheck(check, readings, prefix);
    case "one-proportion":
      return oneProportionCheck(check, readings, prefix);
    case "mann-whitney":
      return mannWhitneyCheck(check, readings, prefix);
    case "sequential-rate":
      return sequentialRateCheck(check, readings, prefix, final, previousP);
    case "sequential-latency":
      return sequentialLatencyCheck(check, readings, prefix, final, previousP);
    case "comparative":
      return comparative(check, readings, prefix, final);
  }
}

/** The candidate's bad rate against the stable version's, decided once at the planned sample size. */
function twoProportionCheck(
  check: CheckOf<"two-proportion">,
  readings: JudgeReadings,
  prefix: string,
): CheckOutcome {
  const c = countsOf(readings, prefix, "candidate");
  const s = countsOf(readings, prefix, "stable");
  return {
    ...fixedHorizon(check, { c: c.n, s: s.n }, rateGuard(check, c), () => {
      const result = twoProportion(c, s, ALTERNATIVE[check.direction]);
      return {
        result,
        c: result.rateCandidate,
        s: result.ratePrimary,
        compared: `candidate ${percent(result.rateCandidate)} vs stable ${percent(result.ratePrimary)} ${check.label}`,
      };
    }),
    stats: { candidate: { ...c }, stable: { ...s } },
  };
}

/** The candidate's bad rate against a fixed limit, decided once at the planned sample size. */
function oneProportionCheck(
  check: CheckOf<"one-proportion">,
  readings: JudgeReadings,
  prefix: string,
): CheckOutcome {
  const c = countsOf(readings, prefix, "candidate");
  return {
    ...fixedHorizon(check, { c: c.n, s: null }, undefined, () => {
      const result = oneProportion(c, check.limit, ALTERNATIVE[check.direction], check.method);
      return {
        result,
        c: result.statistic,
        s: null,
        compared: `candidate ${percent(result.statistic)} ${check.label} against the limit ${percent(check.limit)}`,
      };
    }),
    stats: { candidate: { ...c } },
  };
}

/**
 * The candidate's latencies ranked against the stable version's (samples or histograms), decided
 * once at the planned sample size, with the candidate's p95 as the guard.
 */
function mannWhitneyCheck(
  check: CheckOf<"mann-whitney">,
  readings: JudgeReadings,
  prefix: string,
): CheckOutcome {
  const alternative = ALTERNATIVE[check.direction];
  if (check.data === "histogram") {
    const c = histogramOf(readings, prefix, "candidate");
    const s = histogramOf(readings, prefix, "stable");
    const n = { c: Math.round(histogramTotal(c)), s: Math.round(histogramTotal(s)) };
    return ranked(check, n, p95Guard(check, histogramP95(c, check.unit)), () =>
      mannWhitneyHistograms(c, s, alternative),
    );
  }
  const c = samplesOf(readings, prefix, "candidate", false);
  const s = samplesOf(readings, prefix, "stable", false);
  return ranked(check, { c: c.length, s: s.length }, p95Guard(check, samplesP95(c, check.unit)), () =>
    mannWhitney(c, s, alternative),
  );
}

/** A Mann-Whitney test's decision, comparing the two versions' medians. */
function ranked(
  check: CheckOf<"mann-whitney">,
  n: { c: number; s: number },
  guard: GuardOutcome | undefined,
  test: () => MannWhitneyResult,
): CheckOutcome {
  return fixedHorizon(check, n, guard, () => {
    const result = test();
    return {
      result,
      c: result.medianCandidate,
      s: result.medianPrimary,
      compared: `candidate median ${formatNumber(result.medianCandidate)} vs stable ${formatNumber(result.medianPrimary)}`,
    };
  });
}

/**
 * The bad rates' sequential test, which may decide at any look, going on from the evidence the
 * rollout's earlier analyses carried.
 */
function sequentialRateCheck(
  check: CheckOf<"sequential-rate">,
  readings: JudgeReadings,
  prefix: string,
  final: boolean,
  previousP: number | undefined,
): CheckOutcome {
  const c = countsOf(readings, prefix, "candidate");
  const s = countsOf(readings, prefix, "stable");
  const carried = check.carried;
  const n = { c: c.n + (carried?.n.candidate ?? 0), s: s.n + (carried?.n.stable ?? 0) };
  return {
    ...sequential(check, n, { c: c.n, s: s.n }, final, rateGuard(check, c), () => {
      // This analysis is a test martingale of its own, started at 1: its Bayes factor times the
      // earlier analyses' final ones is the gate's evidence over the rollout.
      const step = sequentialRate(c, s, {
        ...(check.allocation !== undefined ? { allocation: check.allocation } : {}),
        concentration: check.concentration,
      });
      const logBayesFactor = step.statistic + (carried?.logBayesFactor ?? 0);
      const pValue = Math.min(1, previousP ?? 1, carried?.pValue ?? 1, Math.exp(-logBayesFactor));
      const result = {
        ...step,
        statistic: logBayesFactor,
        pValue,
        bayesFactor: Math.exp(logBayesFactor),
      };
      const rc = c.n > 0 ? c.bad / c.n : 0;
      const rs = s.n > 0 ? s.bad / s.n : 0;
      return {
        result,
        c: rc,
        s: rs,
        compared: `candidate ${percent(rc)} vs stable ${percent(rs)} ${check.label}${carried ? " in this analysis" : ""}`,
        evidence: {
          analyses: (carried?.analyses ?? 0) + 1,
          pValue,
          n: { candidate: n.c, stable: n.s },
          logBayesFactor,
        },
      };
    }),
    stats: { candidate: { ...c }, stable: { ...s } },
  };
}

/**
 * The latencies' sequential test on their log summaries, which may decide at any look, with the
 * candidate's p95 as the guard.
 */
function sequentialLatencyCheck(
  check: CheckOf<"sequential-latency">,
  readings: JudgeReadings,
  prefix: string,
  final: boolean,
  previousP: number | undefined,
): CheckOutcome {
  const carried = check.carried;
  const { summary: c, p95 } = latencySummary(check, readings, prefix, "candidate");
  const { summary: s } = latencySummary(check, readings, prefix, "stable");
  // One test over one longer stream: the earlier analyses' summaries pooled with this one's.
  const pc = carried?.candidate ? mergeLogSummaries(carried.candidate, c) : c;
  const ps = carried?.stable ? mergeLogSummaries(carried.stable, s) : s;
  return {
    ...sequential(check, { c: pc.n, s: ps.n }, { c: c.n, s: s.n }, final, p95Guard(check, p95), () => {
      const previous = Math.min(previousP ?? 1, carried?.pValue ?? 1);
      const result = sequentialLatency(pc, ps, {
        alternative: ALTERNATIVE[check.direction],
        g: check.g,
        previousPValue: previous,
      });
      const change = result.effect >= 0 ? `+${percent(result.effect)}` : `-${percent(-result.effect)}`;
      return {
        result,
        c: Math.exp(pc.mean),
        s: Math.exp(ps.mean),
        compared: `candidate geometric mean ${formatNumber(Math.exp(pc.mean))} vs stable ${formatNumber(Math.exp(ps.mean))} (${change})`,
        evidence: {
          analyses: (carried?.analyses ?? 0) + 1,
          pValue: result.pValue,
          n: { candidate: pc.n, stable: ps.n },
          candidate: pc,
          stable: ps,
        },
      };
    }),
    stats: { candidate: { ...c }, stable: { ...s } },
  };
}

/**
 * One side's latencies as a log summary (read as one, or from a histogram or samples), and for
 * the candidate its p95 for the guard (none from a summary); a reading that cannot be summarized
 * is {@link Unusable}.
 */
function latencySummary(
  check: CheckOf<"sequential-latency">,
  readings: JudgeReadings,
  prefix: string,
  side: SideName,
): { summary: LogSummary; p95: P95 | undefined } {
  if (check.data === "summary") return { summary: summaryOf(readings, prefix, side), p95: undefined };
  if (check.data === "histogram") {
    const h = histogramOf(readings, prefix, side);
    const p95 = side === "candidate" ? histogramP95(h, check.unit) : undefined;
    try {
      return { summary: histogramLogSummary(h, `${SIDE_NAMES[side]} histogram`), p95 };
    } catch (error) {
      throw new Unusable((error as Error).message);
    }
  }
  const values = samplesOf(readings, prefix, side, true);
  const p95 = side === "candidate" ? samplesP95(values, check.unit) : undefined;
  try {
    return { summary: summarizeLatencies(values, `${SIDE_NAMES[side]} samples`), p95 };
  } catch (error) {
    throw new Unusable((error as Error).message);
  }
}

function comparative(
  check: JudgeSpecOf<"comparative">,
  readings: JudgeReadings,
  prefix: string,
  final: boolean,
): CheckOutcome {
  const name = prefix ? prefix.slice(0, -1) : "gate";
  const tolerance = {
    direction: check.direction,
    ...(check.maxRatio !== undefined ? { maxRatio: check.maxRatio } : {}),
    ...(check.minRatio !== undefined ? { minRatio: check.minRatio } : {}),
    ...(check.maxDelta !== undefined ? { maxDelta: check.maxDelta } : {}),
  };
  let status: MetricStatus;
  let message: string;
  let figures: Partial<GateFigures>;
  let noData = false;
  if (check.data === "series") {
    const out = analyzeSeries({
      name,
      candidate: seriesOf(readings, prefix, "candidate"),
      stable: seriesOf(readings, prefix, "stable"),
      alpha: check.alpha,
      minPoints: check.minPoints,
      ...(check.nanStrategy !== undefined ? { nanStrategy: check.nanStrategy } : {}),
      ...tolerance,
    });
    status = out.status;
    message = out.message;
    noData = out.noData;
    figures = {
      pValue: finite(out.pValue),
      effect: finite(out.delta),
      alpha: check.alpha,
      direction: check.direction,
      candidate: { n: out.pointsCandidate, value: finite(out.candidate) },
      stable: { n: out.pointsStable, value: finite(out.stable) },
    };
  } else {
    const samples =
      readings[`${prefix}candidate.n`] !== undefined
        ? numberOf(reading(readings, prefix, "candidate", "n"), "candidate", "n", 0)
        : undefined;
    const candidate = numberOf(reading(readings, prefix, "candidate", "value"), "candidate", "value");
    const stable = numberOf(reading(readings, prefix, "stable", "value"), "stable", "value");
    const out = compareWithStable({
      name,
      candidate,
      stable,
      ...(samples !== undefined ? { samples } : {}),
      minSamples: check.minSamples,
      ...tolerance,
    });
    status = out.status;
    message = out.message;
    figures = {
      effect: finite(out.delta),
      direction: check.direction,
      candidate: { n: samples ?? null, value: candidate },
      stable: { n: null, value: stable },
    };
  }
  const text = message.replace(/^metric \S+: /, "");
  if (status === "fail") return { status: "fail", verdict: "fail", reason: text, figures };
  if (status === "inconclusive")
    return { status: "hold", verdict: "inconclusive", reason: text, figures, noData };
  return { status: final ? "pass" : "hold", verdict: "pass", reason: text, figures };
}

function score(
  spec: JudgeSpecOf<"score">,
  readings: JudgeReadings,
  final: boolean,
  previous: JudgeState | undefined,
): CheckOutcome {
  const pValues: Record<string, number> = {};
  const metrics = spec.metrics.map((m) => {
    let outcome: CheckOutcome;
    try {
      // A score's reading asks each metric for its status now; the score decides when to promote.
      outcome = evaluate(m.check, readings, `${m.name}/`, true, previous?.metricPValues[m.name]);
    } catch (error) {
      if (!(error instanceof Unusable)) throw error;
      outcome = { status: "hold", verdict: "INSUFFICIENT", reason: error.message, figures: {} };
    }
    if (outcome.pValue !== undefined) pValues[m.name] = outcome.pValue;
    const status: MetricStatus =
      outcome.status === "fail" ? "fail" : outcome.status === "pass" ? "pass" : "inconclusive";
    return {
      name: m.name,
      weight: m.weight,
      critical: m.critical,
      status,
      ...(outcome.noData ? { noData: true } : {}),
      message: `metric ${m.name}: ${outcome.reason}`,
    };
  });
  const out = scoreGate(metrics, { pass: spec.pass, marginal: spec.marginal }, final);
  const figures: Partial<GateFigures> = {
    score: finite(out.score ?? Number.NaN),
    metrics: metrics.map((m) => ({ name: m.name, status: m.status, message: m.message })),
  };
  const shown = out.score === null ? "no metric conclusive" : `score ${formatScore(out.score)}`;
  let result: CheckOutcome;
  if (out.green) {
    result = {
      status: final ? "pass" : "hold",
      verdict: out.grade,
      reason: `${shown} (${out.grade}; pass ${spec.pass}, marginal ${spec.marginal})`,
      figures,
    };
  } else {
    const onlyInconclusive =
      !out.criticalFailed && (out.score === null || out.score >= (final ? spec.pass : spec.marginal));
    result = {
      status: onlyInconclusive ? (final ? "inconclusive" : "hold") : "fail",
      verdict: onlyInconclusive ? "inconclusive" : "fail",
      reason: `${shown}: ${out.reasons.join("; ")}`,
      figures,
    };
  }
  return { ...result, pValues };
}

function canaryGate(spec: JudgeSpecOf<"canary-gate">, readings: JudgeReadings): CheckOutcome {
  const value = (side: SideName, name: string) => numberOf(reading(readings, "", side, name), side, name);
  const candidateP95 = value("candidate", "p95");
  const errorRate = value("candidate", "errorRate");
  const n = value("candidate", "n");
  const baseline = value("stable", "p95");
  const policy: CanaryPolicy = {
    stepSchedule: [100],
    p95BudgetRatio: spec.p95BudgetRatio,
    errorRateCeiling: spec.errorRateCeiling,
    minSampleCount: spec.minSampleCount,
    fullRolloutDwell: spec.fullRolloutDwell,
    rollbackCooldownSeconds: spec.rollbackCooldownSeconds,
    maxRollbacksPerHour: spec.maxRollbacksPerHour,
  };
  const figures: Partial<GateFigures> = {
    candidate: { n: Math.round(n), value: candidateP95 },
    stable: { n: null, value: baseline },
    effect: finite(candidateP95 - baseline),
  };
  let observation: ReturnType<typeof parseObservation>;
  try {
    observation = parseObservation(
      {
        query_hash: spec.fingerprint.replace(/^sha256:/, ""),
        verdict: "PASS",
        step_index: 0,
        baseline_p95_ms: baseline,
        candidate_p95_ms: candidateP95,
        candidate_error_rate: errorRate,
        sample_count: Math.round(n),
      },
      policy,
    );
  } catch (error) {
    if (!(error instanceof InvalidObservationError)) throw error;
    return { status: "hold", verdict: "invalid", reason: error.message, figures };
  }
  const window = decideWindow(observation, policy);
  const status = window.decision === "rollback" ? "fail" : window.decision === "promote" ? "pass" : "hold";
  return { status, verdict: window.decision, reason: window.reason, figures };
}

const VERB = {
  pass: "passed",
  fail: "rolled back",
  hold: "holds",
  inconclusive: "is inconclusive",
} as const;

/** The measurement's short display value. */
function shortValue(figures: Partial<GateFigures>, outcome: CheckOutcome): string {
  if (figures.score !== undefined)
    return `score ${figures.score === null ? "-" : formatScore(figures.score)}`;
  const parts: string[] = [];
  const c = figures.candidate;
  const s = figures.stable;
  if (c?.value !== null && c?.value !== undefined && s?.value !== null && s?.value !== undefined) {
    parts.push(`${formatNumber(c.value)} vs ${formatNumber(s.value)}`);
  }
  if (figures.pValue !== null && figures.pValue !== undefined)
    parts.push(`p=${formatNumber(figures.pValue)}`);
  if (c?.n !== null && c?.n !== undefined)
    parts.push(`n=${c.n}${s?.n !== null && s?.n !== undefined ? `/${s.n}` : ""}`);
  if (outcome.verdict === "INSUFFICIENT" && figures.horizon !== undefined)
    parts.push(`of ${figures.horizon}`);
  return parts.length > 0 ? parts.join(" ") : outcome.verdict.toLowerCase();
}

/**
 * One look of a judge metric: the provider's answer (its readings), the state of the previous
 * looks, and where this look stands; never throws for anything a reading can contain.
 */
export function judgeLook(
  metricName: string,
  spec: JudgeSpec,
  answer: ProviderResult,
  previous: JudgeState | undefined,
  look: Look,
): JudgeOutcome {
  let outcome: CheckOutcome;
  if (!answer.ok) {
    outcome = { status: "hold", verdict: "INSUFFICIENT", reason: answer.message, figures: {} };
  } else {
    const readings = answer.result as JudgeReadings;
    try {
      if (spec.test === "score") outcome = score(spec, readings, look.final, previous);
      else if (spec.test === "canary-gate") outcome = canaryGate(spec, readings);
      else if (spec.test === "kayenta") outcome = kayentaLook(spec, readings, look.final);
      else outcome = evaluate(spec, readings, "", look.final, previous?.pValue ?? undefined);
    } catch (error) {
      if (!(error instanceof Unusable || error instanceof RangeError)) throw error;
      outcome = { status: "hold", verdict: "INSUFFICIENT", reason: error.message, figures: {} };
    }
  }
  // A hold at the analysis's last look: nothing more will be seen, a person decides.
  const ended = outcome.status === "hold" && look.final;
  const status = ended ? "inconclusive" : outcome.status;
  const reason = ended ? `held until the end of the analysis: ${outcome.reason}` : outcome.reason;
  const message = `Gate "${metricName}" ${VERB[status]}: ${reason}`;
  const decision = status === "pass" ? "promote" : status === "fail" ? "rollback" : "hold";
  const figures: GateFigures = {
    test: spec.test,
    decision,
    verdict: outcome.verdict,
    reason: message,
    statistic: null,
    z: null,
    bayesFactor: null,
    pValue: null,
    effect: null,
    ...outcome.figures,
    look: look.index,
  };
  const state: JudgeState = {
    looks: look.index,
    pValue: outcome.pValue ?? previous?.pValue ?? null,
    metricPValues: { ...(previous?.metricPValues ?? {}), ...outcome.pValues },
    stats: outcome.stats ?? previous?.stats ?? {},
    ...((outcome.evidence ?? previous?.evidence) ? { evidence: outcome.evidence ?? previous?.evidence } : {}),
    last: figures,
  };
  const phase: MeasurementPhase =
    status === "pass"
      ? "Successful"
      : status === "fail"
        ? "Failed"
        : status === "inconclusive"
          ? "Inconclusive"
          : "Running";
  return { phase, message, value: shortValue(outcome.figures, outcome), figures, state };
}

/** A gate's latest decision, named by its metric. */
export type GateSummary = GateFigures & { metric: string };

/** The latest decision of every judge of a run, in metric order: what status tools and events show. */
export function gatesOf(run: AnalysisRun): GateSummary[] {
  const out: GateSummary[] = [];
  for (const metric of run.metrics) {
    const last = run.metricResults.find((r) => r.name === metric.name)?.judge?.last;
    if (metric.provider.judge && last) out.push({ metric: metric.name, ...last });
  }
  return out;
}
