import type { Counts } from "./types.ts";
import type { GuardReading } from "./verdict.ts";

/**
 * The nearest-rank percentile of sorted values: the value at rank ceil(percent/100 · n), one of
 * the samples, never an interpolation (numpy's `percentile(..., method="inverted_cdf")`). `percent`
 * is a whole number, so the rank is computed without the rounding of 0.95 · n. Null without values.
 */
export function nearestRank(sorted: readonly number[], percent: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((percent * sorted.length) / 100);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** The candidate's nearest-rank p95 (in ms) against `maxP95Ms`. */
export function p95Guard(candidate: readonly number[], maxP95Ms: number): GuardReading {
  const sorted = [...candidate].sort((a, b) => a - b);
  return { measure: "p95", value: nearestRank(sorted, 95), limit: maxP95Ms, unit: "ms" };
}

/** The candidate's observed bad / n against `maxBadRate`. */
export function badRateGuard(candidate: Counts, maxBadRate: number): GuardReading {
  return {
    measure: "bad rate",
    value: candidate.n === 0 ? null : candidate.bad / candidate.n,
    limit: maxBadRate,
    unit: "percent",
  };
}
