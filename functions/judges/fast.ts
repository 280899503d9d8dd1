import { logLatencyBayesFactor } from "./sequential-latency.ts";
import { logRateBayesFactor } from "./sequential-rate.ts";

/**
 * The fast path of a sequential judge: the fewest samples per side at which the largest regression
 * it must catch quickly would already cross its alpha. A sequential test is valid from its first
 * sample, so a minimum exists only to keep the first looks from deciding on a handful of requests;
 * derived this way it costs nothing against that regression (it could not have been caught
 * sooner), and below it only a still larger one could decide. Evaluated on the tests' own Bayes
 * factors at the regression's expected counts (or expected t statistic), both sides equally large.
 */

/** The most samples per side the search considers: an effect that needs more is not a fast one. */
export const MAX_FAST_SAMPLES = 1_000_000;

/** Smallest n in [1, MAX_FAST_SAMPLES] with `reached(n)`, for a `reached` that stays true once true. */
function smallest(reached: (n: number) => boolean): number {
  if (!reached(MAX_FAST_SAMPLES)) return MAX_FAST_SAMPLES;
  let low = 0;
  let high = MAX_FAST_SAMPLES;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (reached(mid)) high = mid;
    else low = mid;
  }
  return high;
}

function assertAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be between 0 and 1, got ${alpha}`);
}

/** What the counts fast path assumes: the stable version's rate and how many times worse is caught at once. */
export interface FastRateInput {
  /** The stable version's bad-event rate (0.01: 1% of requests fail). */
  readonly baseline: number;
  /** The regression to catch at once, a multiple of `baseline` (10: ten times the errors). */
  readonly ratio: number;
  readonly alpha: number;
  /** The sequential-rate prior's concentration (default 2). */
  readonly concentration?: number;
}

/**
 * Samples per side at which `sequential-rate` reaches 1/alpha on the expected counts of a candidate
 * failing `ratio` × `baseline` beside a stable version failing `baseline`, both sides equally large:
 * 89 at 1% and 10× with alpha 0.05, 107 with alpha 0.025.
 */
export function fastRateSamples(input: FastRateInput): number {
  const { baseline, ratio, alpha } = input;
  if (!(baseline > 0 && baseline < 1))
    throw new RangeError(`baseline must be between 0 and 1, got ${baseline}`);
  if (!(ratio > 1 && ratio * baseline < 1)) {
    throw new RangeError(`ratio must be above 1 and ratio × baseline below 1, got ${ratio} × ${baseline}`);
  }
  assertAlpha(alpha);
  const threshold = -Math.log(alpha);
  const k = input.concentration ?? 2;
  return smallest((n) => logRateBayesFactor(ratio * baseline * n, baseline * n, 0.5, k) >= threshold);
}

/** What the latency fast path assumes: how much slower is caught at once, and the spread of ln(latency). */
export interface FastLatencyInput {
  /** The regression to catch at once, a ratio of latencies (2: twice as slow). */
  readonly ratio: number;
  /** σ of ln(latency), the same for both versions (0.5 is typical of a web service). */
  readonly sigma: number;
  readonly alpha: number;
  /** The sequential-latency mixture variance (default 0.1). */
  readonly g?: number;
}

/**
 * Samples per side at which `sequential-latency` reaches 1/alpha at the expected t statistic of a
 * candidate `ratio` times slower than the stable version, both sides equally large: 22 for twice
 * as slow with σ 0.5 and alpha 0.025.
 */
export function fastLatencySamples(input: FastLatencyInput): number {
  const { ratio, sigma, alpha } = input;
  if (!(ratio > 1 && Number.isFinite(ratio))) throw new RangeError(`ratio must be above 1, got ${ratio}`);
  if (!(sigma > 0 && Number.isFinite(sigma))) throw new RangeError(`sigma must be above 0, got ${sigma}`);
  assertAlpha(alpha);
  const threshold = -Math.log(alpha);
  const g = input.g ?? 0.1;
  const d = Math.log(ratio) / sigma;
  // Two per side at least: the t statistic needs a degree of freedom.
  return Math.max(
    2,
    smallest((n) => {
      if (n < 2) return false;
      const nEff = n / 2;
      return logLatencyBayesFactor(d * Math.sqrt(nEff), 2 * n - 2, nEff, g) >= threshold;
    }),
  );
}
