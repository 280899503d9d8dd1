import erfc from "@stdlib/math-base-special-erfc";
import quantile from "@stdlib/stats-base-dists-normal-quantile";
import { samplesOneProportion } from "../sample-size.ts";
import { type DesignInput, DesignInputError } from "./input.ts";

/**
 * What one look of the designed analysis must see, and where its conditions lie. A look reads the
 * candidate's requests of one interval; it must tell a good version (the baseline's errors, the
 * simulated service's latency) from one at the SLO's breaking point, one look at a time:
 *
 * - a good version fails a look with probability at most {@link LOOK_ALPHA};
 * - a version at the breaking point fails it with probability at least {@link LOOK_POWER}.
 *
 * Both hold once a look has {@link Thresholds.lookSamples} requests, the sample size of a
 * one-proportion test at that alpha and power (`sample-size.ts`); the error condition is that
 * test's critical value there, and the latency condition is the SLO's p95 itself, read through
 * the histogram's buckets as `histogram_quantile` reads them.
 */

/** The chance that a good version fails one look. */
export const LOOK_ALPHA = 0.001;
/** The chance that a version at the SLO's breaking point fails one look. */
export const LOOK_POWER = 0.95;

/**
 * The simulated service's latency (`docs/simulate.md`, `--latency-factor`): log-normal, median
 * 50 ms, σ 0.5 of ln(seconds); a bad version's is the same shape, `factor` times slower.
 */
export const SIMULATED_LATENCY = { medianSeconds: 0.05, sigma: 0.5 } as const;

/** The histogram's buckets, seconds: the Prometheus client libraries' defaults, which the simulation exports. */
export const HISTOGRAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** The quantile the latency condition reads. */
const Q = 0.95;

const normalCdf = (z: number) => 0.5 * erfc(-z / Math.SQRT2);
const z = (p: number) => quantile(p, 0, 1);

/** P(latency ≤ x seconds) for a version `factor` times slower than the simulated good one. */
export function latencyCdf(x: number, factor: number): number {
  if (x <= 0) return 0;
  const { medianSeconds, sigma } = SIMULATED_LATENCY;
  return normalCdf((Math.log(x) - Math.log(medianSeconds * factor)) / sigma);
}

/**
 * The share of requests at or under `x` as the histogram says it: exact at each bucket's bound,
 * linear in between (the first bucket starts at 0), as `histogram_quantile` interpolates. Past the
 * last finite bucket the histogram cannot place anything: the share of that bucket.
 */
export function bucketCdf(x: number, factor: number): number {
  let lower = 0;
  for (const upper of HISTOGRAM_BUCKETS) {
    if (x <= upper) {
      const below = latencyCdf(lower, factor);
      return below + ((latencyCdf(upper, factor) - below) * (x - lower)) / (upper - lower);
    }
    lower = upper;
  }
  return latencyCdf(lower, factor);
}

/** The true 95th percentile, seconds, of a version `factor` times slower. */
export function trueP95(factor: number): number {
  const { medianSeconds, sigma } = SIMULATED_LATENCY;
  return medianSeconds * factor * Math.exp(sigma * z(Q));
}

/** The 95th percentile `histogram_quantile` reports from exact counts of a version `factor` times slower. */
export function histogramP95(factor: number): number {
  let lower = 0;
  for (const upper of HISTOGRAM_BUCKETS) {
    const below = latencyCdf(lower, factor);
    const atUpper = latencyCdf(upper, factor);
    if (atUpper >= Q) return lower + ((upper - lower) * (Q - below)) / (atUpper - below);
    lower = upper;
  }
  return lower;
}

/** The latency factor at which `share(factor)` crosses `target` (it falls as the factor grows). */
function factorWhere(share: (factor: number) => number, target: number): number {
  let low = 1e-3;
  let high = 1e4;
  for (let i = 0; i < 200; i++) {
    const mid = Math.sqrt(low * high);
    if (share(mid) > target) low = mid;
    else high = mid;
  }
  return Math.sqrt(low * high);
}

export interface Thresholds {
  /** Requests a look needs: the larger of the two below. */
  lookSamples: number;
  /** ... to tell the baseline's errors from the SLO's. */
  errorSamples: number;
  /** ... for a good version's p95 to stay under the SLO's through the buckets. */
  latencySamples: number;
  /** The error condition: a look fails above this share of failed requests. */
  errorRate: number;
  /** The latency condition: a look fails when the p95 is above this, seconds (the SLO's). */
  p95Seconds: number;
  /** The good version's share of requests over the SLO's latency, as the buckets count it. */
  goodSlowShare: number;
  /** The bad version's: where a look of `lookSamples` sees its p95 over the SLO with {@link LOOK_POWER}. */
  badSlowShare: number;
  /** How much slower than the good version the bad one is, for the simulation. */
  badLatencyFactor: number;
  /** The bucket the SLO's p95 falls in, seconds. */
  bucket: { lower: number; upper: number };
  /**
   * The true p95, seconds, at which the buckets read the SLO's exactly: above the SLO, the band
   * between is a regression no look can see; below it, a version that meets the SLO reads over it.
   */
  bucketBlindP95: number;
}

/**
 * The thresholds of a design. Refuses (naming the flag) an SLO the simulated good version does not
 * meet, or one the histogram cannot place.
 */
export function thresholdsOf(input: DesignInput): Thresholds {
  const { baselineErrorRate: b, sloErrorRate: e } = input;
  if (!(b > 0 && b < e)) {
    throw new DesignInputError(
      `--baseline-error-rate must be above 0 and under --slo-error-rate (${e}), got ${b}`,
    );
  }
  const x = input.sloP95Ms / 1000;
  const last = HISTOGRAM_BUCKETS[HISTOGRAM_BUCKETS.length - 1] as number;
  if (x >= last) {
    throw new DesignInputError(
      `--slo-p95 must be under ${last * 1000} ms, the histogram's largest bucket, got ${input.sloP95Ms}`,
    );
  }
  const goodSlowShare = Math.max(1e-12, 1 - bucketCdf(x, 1));
  if (goodSlowShare >= 1 - Q) {
    throw new DesignInputError(
      `--slo-p95 must be above ${fmt(histogramP95(1) * 1000)} ms, the good version's p95 as the histogram's buckets read it (the simulated service: log-normal, median 50 ms, a true p95 of ${fmt(trueP95(1) * 1000)} ms), got ${input.sloP95Ms}`,
    );
  }
  const errorSamples = samplesOneProportion({ limit: b, candidate: e, alpha: LOOK_ALPHA, power: LOOK_POWER });
  // With power 0.5 the sample size is where the good version's slow share is alpha's critical
  // distance below the 5% the p95 allows: a look of that many fails a good version at most alpha.
  const latencySamples = samplesOneProportion({
    limit: goodSlowShare,
    candidate: 1 - Q,
    alpha: LOOK_ALPHA,
    power: 0.5,
  });
  const lookSamples = Math.max(errorSamples, latencySamples);
  const errorRate = b + z(1 - LOOK_ALPHA) * Math.sqrt((b * (1 - b)) / lookSamples);
  let badSlowShare = 1 - Q;
  for (let i = 0; i < 50; i++) {
    badSlowShare = 1 - Q + z(LOOK_POWER) * Math.sqrt((badSlowShare * (1 - badSlowShare)) / lookSamples);
  }
  const index = HISTOGRAM_BUCKETS.findIndex((upper) => x <= upper);
  return {
    lookSamples,
    errorSamples,
    latencySamples,
    errorRate: Number(errorRate.toPrecision(3)),
    p95Seconds: x,
    goodSlowShare,
    badSlowShare,
    badLatencyFactor: factorWhere((f) => bucketCdf(x, f), 1 - badSlowShare),
    bucket: {
      lower: index > 0 ? (HISTOGRAM_BUCKETS[index - 1] as number) : 0,
      upper: HISTOGRAM_BUCKETS[index] as number,
    },
    bucketBlindP95: trueP95(factorWhere((f) => bucketCdf(x, f), Q)),
  };
}

const fmt = (n: number) => String(Number(n.toPrecision(3)));
