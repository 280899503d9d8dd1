import { z } from "zod";
import { formatNumber } from "./comparative.ts";
import { mannWhitney } from "./mann-whitney.ts";
import { oneProportion, twoProportion } from "./proportions.ts";
import { sequentialLatency } from "./sequential-latency.ts";
import { sequentialRate } from "./sequential-rate.ts";
import type { TestResult } from "./types.ts";
import { type Decision, decide, judgeCheck, type Verdict, worseEffect } from "./verdict.ts";

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
  }),
  z.strictObject({
    ...common,
    test: z.literal("two-proportion"),
    candidate: counts,
    primary: counts,
    minEffect: z.number().min(0).default(0),
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
  readonly message: string;
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

/**
 * Runs one check's test and gives it the model-rollout verdict. A side too small for the test to run
 * at all is INSUFFICIENT with null numbers rather than an exception: an empty window is a normal
 * state of a young canary.
 */
export function runCheck(check: Check): CheckResult {
  const [nCandidate, nPrimary] = sizes(check);
  const minEffect = check.test === "one-proportion" ? (check.minEffect ?? check.limit) : check.minEffect;
  const alternative = check.alternative;
  let result: TestResult | null = null;
  let failure = "";
  try {
    result = runTest(check);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    failure = error.message;
  }
  if (result === null) {
    return {
      name: check.name,
      test: check.test,
      statistic: null,
      z: null,
      pValue: null,
      effect: null,
      verdict: "INSUFFICIENT",
      message: `${check.name}: INSUFFICIENT: ${failure}`,
    };
  }
  const verdict = judgeCheck({
    nCandidate,
    nPrimary,
    worseBy: worseEffect(result.effect, alternative),
    minEffect,
    pValue: result.pValue,
    alpha: check.alpha,
    minSamples: check.minSamples,
  });
  const counted =
    verdict === "INSUFFICIENT"
      ? `, ${Math.min(nCandidate, nPrimary)} samples < minSamples ${Math.max(1, check.minSamples)}`
      : "";
  const message =
    `${check.name}: ${verdict}: ${check.test} effect ${result.effect >= 0 ? "+" : ""}${formatNumber(result.effect)} ` +
    `(minEffect ${formatNumber(minEffect)}), ${result.z === null ? "" : `z=${formatNumber(result.z)} `}` +
    `p=${formatNumber(result.pValue)} (alpha ${check.alpha})${counted}`;
  return {
    name: check.name,
    test: check.test,
    statistic: result.statistic,
    z: result.z,
    pValue: result.pValue,
    effect: result.effect,
    verdict,
    message,
  };
}

/** Judges every check and decides: rollback if any FAIL, hold if any INSUFFICIENT or SUSPECT, else promote. */
export function judge(checks: readonly Check[]): JudgeReport {
  const results = checks.map(runCheck);
  return { decision: decide(results.map((r) => r.verdict)), checks: results };
}
