import { normalCdf, normalSf } from "./normal.ts";
import { logGamma } from "./special.ts";
import { type Alternative, assertCounts, type Counts, type TestResult } from "./types.ts";

/** Turns a z oriented "candidate minus reference" into a p-value for the chosen alternative. */
export function pValueFromZ(z: number, alternative: Alternative): number {
  if (alternative === "greater") return normalSf(z);
  if (alternative === "less") return normalCdf(z);
  return Math.min(1, 2 * normalSf(Math.abs(z)));
}

/** Result of the pooled two-proportion z-test. */
export interface TwoProportionResult extends TestResult {
  /** The chi-square statistic of the 2×2 table without Yates' correction (= z²). */
  readonly statistic: number;
  /** (candidate rate − primary rate) / pooled standard error; positive when the candidate is worse. */
  readonly z: number;
  /** candidate rate − primary rate. */
  readonly effect: number;
  readonly rateCandidate: number;
  readonly ratePrimary: number;
}

/**
 * Pooled two-proportion z-test: is the candidate's bad rate (errors, negative feedback) higher
 * than the primary's beyond chance? z² equals `scipy.stats.chi2_contingency(table,
 * correction=False)`'s statistic. No events on either side (or all events) is "no evidence":
 * z = 0, p = 1, never NaN — a quiet canary must not crash the judge.
 */
export function twoProportion(
  candidate: Counts,
  primary: Counts,
  alternative: Alternative = "greater",
): TwoProportionResult {
  assertCounts(candidate, "candidate");
  assertCounts(primary, "primary");
  if (candidate.n === 0 || primary.n === 0) {
    throw new RangeError("the two-proportion z-test needs at least one observation on each side");
  }
  const rateCandidate = candidate.bad / candidate.n;
  const ratePrimary = primary.bad / primary.n;
  const effect = rateCandidate - ratePrimary;
  const pooled = (candidate.bad + primary.bad) / (candidate.n + primary.n);
  const variance = pooled * (1 - pooled) * (1 / candidate.n + 1 / primary.n);
  if (!(variance > 0)) {
    return { statistic: 0, z: 0, pValue: 1, effect, rateCandidate, ratePrimary };
  }
  const z = effect / Math.sqrt(variance);
  return { statistic: z * z, z, pValue: pValueFromZ(z, alternative), effect, rateCandidate, ratePrimary };
}

/** How the one-proportion test computes its p-value. */
export type OneProportionMethod = "normal" | "exact";

/** Result of a one-proportion test against a limit. */
export interface OneProportionResult extends TestResult {
  /** The observed rate bad / n. */
  readonly statistic: number;
  /** (rate − limit) / sqrt(limit (1 − limit) / n), the score statistic under the null. */
  readonly z: number;
  /** The observed rate: measured against the limit, the primary's rate is 0 by definition (it agrees with itself). */
  readonly effect: number;
}

/** log P(X = k) for X ~ Binomial(n, p), 0 < p < 1. */
function logBinomialPmf(k: number, n: number, p: number): number {
  return logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1) + k * Math.log(p) + (n - k) * Math.log1p(-p);
}

/**
 * Sums binomial probabilities of the outcomes `from..to` (inclusive) in log space, relative to the
 * largest term, so tails of 1e-200 keep their digits where `1 - cdf` would give 0.
 */
function binomialRangeSum(
  from: number,
  to: number,
  n: number,
  p: number,
  keep?: (logPmf: number) => boolean,
) {
  if (from > to) return 0;
  const logs: number[] = [];
  let max = Number.NEGATIVE_INFINITY;
  for (let k = from; k <= to; k++) {
    const lp = logBinomialPmf(k, n, p);
    if (keep && !keep(lp)) continue;
    logs.push(lp);
    if (lp > max) max = lp;
  }
  if (logs.length === 0) return 0;
  let sum = 0;
  for (const lp of logs) sum += Math.exp(lp - max);
  return Math.exp(max + Math.log(sum));
}

/**
 * Exact binomial p-value, as `scipy.stats.binomtest(k, n, p).pvalue`: one-sided tails, and for
 * two-sided the sum of the outcomes no more likely than the observed one (scipy's relative
 * tolerance 1e-7 included). O(n); shadows see thousands of requests, not billions.
 */
export function binomialTestPValue(k: number, n: number, p: number, alternative: Alternative): number {
  if (alternative === "greater") return k <= 0 ? 1 : Math.min(1, binomialRangeSum(k, n, n, p));
  if (alternative === "less") return k >= n ? 1 : Math.min(1, binomialRangeSum(0, k, n, p));
  if (k === p * n) return 1;
  const threshold = logBinomialPmf(k, n, p) + Math.log1p(1e-7);
  return Math.min(
    1,
    binomialRangeSum(0, n, n, p, (lp) => lp <= threshold),
  );
}

/**
 * One-proportion test of a shadow's disagreement (or any bad rate) against a limit: a shadow has
 * no feedback and the primary agrees with itself, so the only comparison is with the limit you
 * set. `normal` is the score z-test (variance under the null); `exact` is the binomial test,
 * right for small n or a limit near 0.
 */
export function oneProportion(
  candidate: Counts,
  limit: number,
  alternative: Alternative = "greater",
  method: OneProportionMethod = "normal",
): OneProportionResult {
  assertCounts(candidate, "candidate");
  if (candidate.n === 0) throw new RangeError("the one-proportion test needs at least one observation");
  if (!(limit > 0 && limit < 1))
    throw new RangeError(`the limit must be strictly between 0 and 1, got ${limit}`);
  const rate = candidate.bad / candidate.n;
  const z = (rate - limit) / Math.sqrt((limit * (1 - limit)) / candidate.n);
  const pValue =
    method === "exact"
      ? binomialTestPValue(candidate.bad, candidate.n, limit, alternative)
      : pValueFromZ(z, alternative);
  return { statistic: rate, z, pValue, effect: rate };
}
