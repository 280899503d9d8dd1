import type { SequentialResult } from "./sequential-rate.ts";
import type { Alternative } from "./types.ts";

/** Running summary of log latencies (Welford): what a controller keeps between looks. */
export interface LogSummary {
  readonly n: number;
  /** Mean of ln(latency). */
  readonly mean: number;
  /** Sum of squared deviations of ln(latency) from the mean. */
  readonly m2: number;
}

/** The summary of no samples. */
export const emptyLogSummary: LogSummary = { n: 0, mean: 0, m2: 0 };

/** Adds one latency to a summary; latencies must be positive because the test works on their logarithm. */
export function addLatency(summary: LogSummary, latency: number): LogSummary {
  if (!(latency > 0 && Number.isFinite(latency))) {
    throw new RangeError(`latency must be a positive finite number, got ${latency}`);
  }
  const x = Math.log(latency);
  const n = summary.n + 1;
  const delta = x - summary.mean;
  const mean = summary.mean + delta / n;
  return { n, mean, m2: summary.m2 + delta * (x - mean) };
}

/** Summarizes an array of latencies. */
export function summarizeLatencies(latencies: ArrayLike<number>, label = "latencies"): LogSummary {
  let summary = emptyLogSummary;
  for (let i = 0; i < latencies.length; i++) {
    const value = latencies[i]!;
    if (!(value > 0 && Number.isFinite(value))) {
      throw new RangeError(`${label}[${i}] must be a positive finite number, got ${value}`);
    }
    summary = addLatency(summary, value);
  }
  return summary;
}

/** Options of the mixture sequential probability ratio test on log latency. */
export interface SequentialLatencyOptions {
  /** Which direction is worse (default `greater`: slower). `two-sided` counts either direction. */
  readonly alternative?: Alternative;
  /**
   * Variance g of the normal mixture over the standardized effect δ/σ of log latency (default
   * 0.1, i.e. effects around ±0.3 σ; for σ ≈ 0.5 that is ±15–20% latency).
   */
  readonly g?: number;
  /** The always-valid p-value of the previous look (default 1). */
  readonly previousPValue?: number;
}

/** The sequential latency test's result, with the t statistic it is built on. */
export interface SequentialLatencyResult extends SequentialResult {
  readonly t: number;
  /** exp(mean ln candidate − mean ln primary) − 1: the relative change of the geometric mean (0.2 = 20% slower). */
  readonly effect: number;
}

function asSummary(value: LogSummary | ArrayLike<number>, label: string): LogSummary {
  return "m2" in value ? value : summarizeLatencies(value, label);
}

/**
 * Mixture SPRT on log latency with an unknown variance: the Bayes factor of a normal mixture
 * N(0, g) over the standardized difference of mean log latency, against "no difference", with
 * the scale integrated out under its right-Haar prior (Lindon, Ham, Tingley & Bojinov 2022,
 * "Anytime-valid linear models"):
 *   BF = (1 + n_eff·g)^(−1/2) · ((1 + t²/ν) / (1 + t²/(ν(1 + n_eff·g))))^((ν+1)/2),
 * with t the pooled two-sample t statistic, ν = n_c + n_p − 2 and n_eff = n_c·n_p/(n_c + n_p).
 * It is a test martingale for every value of the unknown variance, so re-checking a growing
 * window every tick keeps P(false rollback) ≤ α, unlike a repeated Mann-Whitney. One-sided use
 * counts evidence only at looks where the candidate is slower, which keeps the guarantee.
 */
export function sequentialLatency(
  candidate: LogSummary | ArrayLike<number>,
  primary: LogSummary | ArrayLike<number>,
  options: SequentialLatencyOptions = {},
): SequentialLatencyResult {
  const c = asSummary(candidate, "candidate");
  const p = asSummary(primary, "primary");
  if (c.n < 1 || p.n < 1 || c.n + p.n < 3) {
    throw new RangeError("the sequential latency test needs at least one value per side and three in total");
  }
  const g = options.g ?? 0.1;
  if (!(g > 0)) throw new RangeError(`g must be > 0, got ${g}`);
  const alternative = options.alternative ?? "greater";
  const previous = options.previousPValue ?? 1;
  const nu = c.n + p.n - 2;
  const nEff = (c.n * p.n) / (c.n + p.n);
  const difference = c.mean - p.mean;
  const pooledVariance = (c.m2 + p.m2) / nu;
  const standardError = Math.sqrt(pooledVariance * (1 / c.n + 1 / p.n));
  let t: number;
  if (standardError > 0) t = difference / standardError;
  else t = difference === 0 ? 0 : difference > 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  const logBayesFactor = logLatencyBayesFactor(t, nu, nEff, g);
  const worse = alternative === "greater" ? t > 0 : alternative === "less" ? t < 0 : true;
  const pValue = Math.min(1, previous, worse ? Math.exp(-logBayesFactor) : 1);
  return {
    statistic: logBayesFactor,
    z: null,
    pValue,
    effect: Math.expm1(difference),
    bayesFactor: Math.exp(logBayesFactor),
    t,
  };
}

/**
 * ln of the Bayes factor of {@link sequentialLatency} for a t statistic with `nu` degrees of freedom,
 * the effective sample size `nEff` = n_c·n_p/(n_c + n_p) and the mixture variance `g`; an infinite
 * t (no spread, different means) gives the factor's limit.
 */
export function logLatencyBayesFactor(t: number, nu: number, nEff: number, g: number): number {
  const shrink = 1 + nEff * g;
  return Number.isFinite(t)
    ? -0.5 * Math.log(shrink) +
        ((nu + 1) / 2) * (Math.log1p((t * t) / nu) - Math.log1p((t * t) / (nu * shrink)))
    : -0.5 * Math.log(shrink) + ((nu + 1) / 2) * Math.log(shrink);
}

/**
 * Two summaries of the same side taken one after the other, as one (Chan et al.'s parallel
 * Welford): how a latency judge pools what earlier analyses of the rollout saw with this one.
 */
export function mergeLogSummaries(a: LogSummary, b: LogSummary): LogSummary {
  const n = a.n + b.n;
  if (n === 0) return emptyLogSummary;
  const delta = b.mean - a.mean;
  return {
    n,
    mean: a.mean + (delta * b.n) / n,
    m2: a.m2 + b.m2 + (delta * delta * a.n * b.n) / n,
  };
}
