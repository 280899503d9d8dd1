import { logBeta, logRegularizedBetaUpper } from "./special.ts";
import { assertCounts, type Counts, type TestResult } from "./types.ts";

/** Options of the Poisson-process Bayes factor for counts. */
export interface SequentialRateOptions {
  /**
   * The candidate's share of the traffic the counts come from (the canary weight / 100). Under
   * "no difference" each bad event is the candidate's with this probability. Defaults to
   * nCandidate / (nCandidate + nPrimary), which is exact when both sides receive equal, fixed
   * shares; pass the configured weight when the split is known.
   */
  readonly allocation?: number;
  /** Total concentration k of the Beta(k·ρ, k·(1−ρ)) prior on the candidate's share of bad events (default 2). */
  readonly concentration?: number;
  /** The always-valid p-value of the previous look, so this one can only go down (default 1). */
  readonly previousPValue?: number;
}

/** A sequential test's outcome: a Bayes factor and the always-valid p-value it implies. */
export interface SequentialResult extends TestResult {
  /** Natural log of the Bayes factor at this look (finite even when the factor overflows a double). */
  readonly statistic: number;
  readonly z: null;
  /** min(1, previous p, 1 / BF): valid however often, and whenever, you look. */
  readonly pValue: number;
  readonly bayesFactor: number;
}

/**
 * Anytime-valid one-sided test that the candidate's bad-event rate exceeds the primary's
 * (Lindon & Malek 2022, "Anytime-valid inference for multinomial count data"). Bad events of
 * both versions are two Poisson processes; given that an event happened, it is the candidate's
 * with probability θ, and θ = ρ (the candidate's traffic share) when the rates are equal. The
 * Bayes factor of a Beta prior truncated to θ > ρ against θ = ρ,
 *   BF = B(a + x_c, b + x_p)·P(θ > ρ | a + x_c, b + x_p) / (B(a, b)·P(θ > ρ | a, b)) / (ρ^x_c (1 − ρ)^x_p),
 * is a non-negative martingale with mean 1 when the candidate is no worse, so by Ville's
 * inequality P(BF ever reaches 1/α) ≤ α: a controller may re-evaluate it at every tick without
 * the false-rollback rate creeping up, as a repeated z-test's does.
 */
export function sequentialRate(
  candidate: Counts,
  primary: Counts,
  options: SequentialRateOptions = {},
): SequentialResult {
  assertCounts(candidate, "candidate");
  assertCounts(primary, "primary");
  const total = candidate.n + primary.n;
  const rho = options.allocation ?? (total > 0 ? candidate.n / total : 0.5);
  if (!(rho > 0 && rho < 1)) throw new RangeError(`allocation must be strictly between 0 and 1, got ${rho}`);
  const k = options.concentration ?? 2;
  if (!(k > 0)) throw new RangeError(`concentration must be > 0, got ${k}`);
  const previous = options.previousPValue ?? 1;
  const logBayesFactor = logRateBayesFactor(candidate.bad, primary.bad, rho, k);
  const rateCandidate = candidate.n > 0 ? candidate.bad / candidate.n : 0;
  const ratePrimary = primary.n > 0 ? primary.bad / primary.n : 0;
  return {
    statistic: logBayesFactor,
    z: null,
    pValue: Math.min(1, previous, Math.exp(-logBayesFactor)),
    effect: rateCandidate - ratePrimary,
    bayesFactor: Math.exp(logBayesFactor),
  };
}

/**
 * ln of the Bayes factor of {@link sequentialRate} for `xc` bad events of the candidate and `xp` of
 * the primary, the candidate's share `rho` and the prior's concentration `k`. Defined for real
 * counts too, so the fast path can evaluate it at expected counts.
 */
export function logRateBayesFactor(xc: number, xp: number, rho: number, k: number): number {
  const a = k * rho;
  const b = k * (1 - rho);
  return (
    logBeta(a + xc, b + xp) +
    logRegularizedBetaUpper(a + xc, b + xp, rho) -
    logBeta(a, b) -
    logRegularizedBetaUpper(a, b, rho) -
    xc * Math.log(rho) -
    xp * Math.log1p(-rho)
  );
}
