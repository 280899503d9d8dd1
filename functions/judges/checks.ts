import { z } from "zod";
import { formatNumber } from "./comparative.ts";
import { badRateGuard, p95Guard } from "./guards.ts";
import { mannWhitney } from "./mann-whitney.ts";
import { oneProportion, twoProportion } from "./proportions.ts";
import { sequentialLatency } from "./sequential-latency.ts";
import { sequentialRate } from "./sequential-rate.ts";
import type { TestResult } from "./types.ts";
import {
  type Decision,
  decide,
  type EffectStyle,
  explainCheck,
  type GuardReading,
  type Verdict,
  worseEffect,
} from "./verdict.ts";

const samples = z.array(z.number());
const positiveSamples = z.array(z.number().positive());
const counts = z
  .strictObject({ bad: z.int().min(0), n: z.int().min(0) })
  .refine((c) => c.bad <= c.n, { message: "bad must not exceed n", path: ["bad"] });

const common = {
  name: z.string().min(1),
  alternative: z.enum(["greater", "less", "two-sided"]).default("greater"),
  alpha: z.number().gt(0).lt(1).default(0.05),
  minSamples: z.int().min(0).default(1),
};

/**
 * An absolute p95 in ms (a service-level objective): a candidate whose nearest-rank p95 is above
 * it fails once it has `minSamples` samples, whatever the primary does.
 */
const maxP95Ms = z.number().positive().optional();
/**
 * A ceiling on the candidate's observed bad rate (bad / n, 0 to 1): above it the check fails once
 * the candidate has `minSamples`, whatever the primary does.
 */
const maxBadRate = z.number().min(0).lt(1).optional();

/**
 * One check of `rollouts judge` (and of any caller that judges a window): which test, the two
 * sides' data, and the thresholds of the model-rollout judge. Strict, so a misspelt `minSample` is an
 * error with its path rather than a silently ignored guard.
 */
export const checkSchema = z.discriminatedUnion("test", [
  z.strictObject({
    ...common,
    test: z.literal("mann-whitney"),
    candidate: samples,
    primary: samples,
    /** In the metric's unit: the difference of medians (e.g. 50 ms). */
    minEffect: z.number().min(0).default(0),
    maxP95Ms,
  }),
  z.strictObject({
    ...common,
    test: z.literal("two-proportion"),
    candidate: counts,
    primary: counts,
    minEffect: z.number().min(0).default(0),
    maxBadRate,
  }),
  z.strictObject({
    ...common,
    test: z.literal("one-proportion"),
    candidate: counts,
    limit: z.number().gt(0).lt(1),
    method: z.enum(["normal", "exact"]).default("normal"),
    /** Defaults to `limit`: the rate must exceed the limit to be worse. */
    minEffect: z.number().min(0).optional(),
  }),
  z.strictObject({
    ...common,
    test: z.literal("sequential-rate"),
    /** One-sided by construction (the prior lives on "candidate worse"): anything else is refused, not ignored. */
    alternative: z.literal("greater").default("greater"),
    candidate: counts,
    primary: counts,
    minEffect: z.number().min(0).default(0),
    maxBadRate,
    allocation: z.number().gt(0).lt(1).optional(),
    concentration: z.number().positive().optional(),
    previousPValue: z.number().min(0).max(1).optional(),
  }),
  z.strictObject({
    ...common,
    test: z.literal("sequential-latency"),
    candidate: positiveSamples,
    primary: positiveSamples,
    /** Relative change of the geometric mean (0.2 = 20% slower). */
    minEffect: z.number().min(0).default(0),
    maxP95Ms,
    g: z.number().positive().optional(),
    previousPValue: z.number().min(0).max(1).optional(),
  }),
]);

/** The input file of `rollouts judge`. */
export const judgeInputSchema = z.strictObject({ checks: z.array(checkSchema).min(1) });

/** A check as written (defaults optional). */
export type CheckInput = z.input<typeof checkSchema>;
/** A check with its defaults applied. */
export type Check = z.output<typeof checkSchema>;

/** One judged check, as `rollouts judge` prints it. */
export interface CheckResult {
  readonly name: string;
  readonly test: Check["test"];
  /** U for Mann-Whitney, χ² for two-proportion, the observed rate for one-proportion, ln BF for sequential tests; null when the test could not run. */
  readonly statistic: number | null;
  readonly z: number | null;
  readonly pValue: number | null;
  readonly effect: number | null;
  readonly verdict: Verdict;
  /** `name: VERDICT: what decided it; the test's figures`. */
  readonly message: string;
  /** The absolute guard (`maxP95Ms`, `maxBadRate`) and the candidate's figure; null without one. */
  readonly guard: GuardResult | null;
}

/** An absolute guard of a check as `rollouts judge --json` prints it. */
export interface GuardResult {
  readonly measure: "p95" | "badRate";
  /** The candidate's nearest-rank p95 in ms, or its bad / n; null without samples. */
  readonly value: number | null;
  readonly limit: number;
  /** The guard failed the check: the candidate had `minSamples` and was above the limit. */
  readonly breached: boolean;
}

/** The decision over every check. */
export interface JudgeReport {
  readonly decision: Decision;
  readonly checks: CheckResult[];
}

function sizes(check: Check): [number, number] {
  switch (check.test) {
    case "mann-whitney":
    case "sequential-latency":
      return [check.candidate.length, check.primary.length];
    case "one-proportion":
      // The primary of a one-proportion test is the limit itself: only the candidate needs samples.
      return [check.candidate.n, Number.POSITIVE_INFINITY];
    default:
      return [check.candidate.n, check.primary.n];
  }
}

function runTest(check: Check): TestResult {
  switch (check.test) {
    case "mann-whitney":
      return mannWhitney(check.candidate, check.primary, check.alternative);
    case "two-proportion":
      return twoProportion(check.candidate, check.primary, check.alternative);
    case "one-proportion":
      return oneProportion(check.candidate, check.limit, check.alternative, check.method);
    case "sequential-rate":
      return sequentialRate(check.candidate, check.primary, {
        allocation: check.allocation,
        concentration: check.concentration,
        previousPValue: check.previousPValue,
      });
    case "sequential-latency":
      return sequentialLatency(check.candidate, check.primary, {
        alternative: check.alternative,
        g: check.g,
        previousPValue: check.previousPValue,
      });
  }
}

/** How each test's reason writes its effect: its unit, and whether it is a difference. */
const STYLES: Record<Check["test"], EffectStyle> = {
  "mann-whitney": { unit: "ms" },
  "two-proportion": { unit: "points" },
  "one-proportion": { unit: "percent", measure: "rate" },
  "sequential-rate": { unit: "points" },
  "sequential-latency": { unit: "percent" },
};

function guardOf(check: Check): { measure: GuardResult["measure"]; reading: GuardReading } | null {
  switch (check.test) {
    case "mann-whitney":
    case "sequential-latency":
      return check.maxP95Ms === undefined
        ? null
        : { measure: "p95", reading: p95Guard(check.candidate, check.maxP95Ms) };
    case "two-proportion":
    case "sequential-rate":
      return check.maxBadRate === undefined
        ? null
        : { measure: "badRate", reading: badRateGuard(check.candidate, check.maxBadRate) };
    default:
      return null;
  }
}

function figures(check: Check, minEffect: number, result: TestResult): string {
  return (
    `${check.test} effect ${result.effect >= 0 ? "+" : ""}${formatNumber(result.effect)} ` +
    `(minEffect ${formatNumber(minEffect)}), ${result.z === null ? "" : `z=${formatNumber(result.z)} `}` +
    `p=${formatNumber(result.pValue)} (alpha ${check.alpha})`
  );
}

/**
 * Runs one check's test and gives it the model-rollout verdict with the comparison that decided
 * it. A side too small for the test to run at all is INSUFFICIENT with null numbers rather than an
 * exception (an empty window is a normal state of a young canary), unless the candidate alone
 * already breaks its guard.
 */
export function runCheck(check: Check): CheckResult {
  const [nCandidate, nPrimary] = sizes(check);
  const minEffect = check.test === "one-proportion" ? (check.minEffect ?? check.limit) : check.minEffect;
  let result: TestResult | null = null;
  let failure = "";
  try {
    result = runTest(check);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    failure = error.message;
  }
  const guard = guardOf(check);
  const judgement = explainCheck({
    nCandidate,
    nPrimary,
    worseBy: result === null ? Number.NaN : worseEffect(result.effect, check.alternative),
    minEffect,
    pValue: result?.pValue ?? Number.NaN,
    alpha: check.alpha,
    minSamples: check.minSamples,
    style: { ...STYLES[check.test], twoSided: check.alternative === "two-sided" },
    ...(guard === null ? {} : { guard: guard.reading }),
    ...(result === null ? { notRun: failure } : {}),
  });
  return {
    name: check.name,
    test: check.test,
    statistic: result?.statistic ?? null,
    z: result?.z ?? null,
    pValue: result?.pValue ?? null,
    effect: result?.effect ?? null,
    verdict: judgement.verdict,
    message:
      `${check.name}: ${judgement.verdict}: ${judgement.reason}; ` +
      (result === null ? `${check.test} not run: ${failure}` : figures(check, minEffect, result)),
    guard:
      guard === null
        ? null
        : {
            measure: guard.measure,
            value: guard.reading.value,
            limit: guard.reading.limit,
            breached: judgement.guardBreached,
          },
  };
}

/** Judges every check and decides: rollback if any FAIL, hold if any INSUFFICIENT or SUSPECT, else promote. */
export function judge(checks: readonly Check[]): JudgeReport {
  const results = checks.map(runCheck);
  return { decision: decide(results.map((r) => r.verdict)), checks: results };
}
