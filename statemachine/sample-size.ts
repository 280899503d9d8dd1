import { createRequire } from "node:module";

/**
 * Sample sizes: how many observations a fixed-horizon test needs, and how long a step must last
 * to collect them. They live with the spec language because the loader fixes a judge's planned
 * sample size when a spec is read and `rollouts plan` shows it; `sfn-rollouts/judges` re-exports
 * them for library users.
 */

let quantile: typeof import("@stdlib/stats-base-dists-normal-quantile") | undefined;

/**
 * The standard normal quantile, its library loaded with the first sample size rather than with
 * this module: only judges and gates need one, and the library's many small files would cost every
 * `rollouts plan` a noticeable share of its start-up. The literal `require(...)` is the call a
 * bundler (the Lambda handlers' esbuild) sees and bundles; plain Node.js runs this file as an ES
 * module, which has no `require`, so it loads the package through `createRequire` instead. The
 * package is CommonJS only, so both ways give the one instance the judges import too.
 */
function normalQuantile(p: number): number {
  quantile ??= (
    typeof require === "function"
      ? require("@stdlib/stats-base-dists-normal-quantile")
      : createRequire(import.meta.url)("@stdlib/stats-base-dists-normal-quantile")
  ) as typeof import("@stdlib/stats-base-dists-normal-quantile");
  return quantile(p, 0, 1);
}

/** Every input of a power calculation is a probability strictly between 0 and 1: says which is not. */
function assertProbabilities(values: Record<string, number>): void {
  for (const [name, value] of Object.entries(values)) {
    if (!(value > 0 && value < 1))
      throw new RangeError(`${name} must be strictly between 0 and 1, got ${value}`);
  }
}

/** What a power calculation needs: the rate you have, the rate you must not miss, and the risks. */
export interface SampleSizeInput {
  /** The primary's rate (e.g. 0.97 good answers, or 0.01 errors). */
  readonly baseline: number;
  /** The rate that must be detected (e.g. 0.87 = a 10-point drop, or 0.03 errors). */
  readonly candidate: number;
  /** Significance level; model rollouts use 0.01. */
  readonly alpha: number;
  /** Probability of detecting the change when it is real; 0.8 by convention. */
  readonly power?: number;
  /** 1 for a one-sided test (the default: a rollout only cares about "worse"), 2 for two-sided. */
  readonly sides?: 1 | 2;
}

/**
 * Samples per side for the pooled two-proportion test to detect `baseline → candidate` at
 * `alpha` with `power`:
 * n = (z_α·√(2·p̄(1−p̄)) + z_β·√(p1(1−p1) + p2(1−p2)))² / d², rounded up. It says where a
 * minimum-samples guard comes from: 147 for a 10-point drop from 0.97, 556 for 5 points from
 * 0.95 (one-sided alpha 0.01, power 0.8) — and 140 labelled transactions are not enough.
 */
export function samplesPerSide(input: SampleSizeInput): number {
  const { baseline: p1, candidate: p2, alpha } = input;
  const power = input.power ?? 0.8;
  const sides = input.sides ?? 1;
  assertProbabilities({ baseline: p1, candidate: p2, alpha, power });
  const d = Math.abs(p1 - p2);
  if (d === 0)
    throw new RangeError("baseline and candidate rates are equal: no sample size detects no change");
  const zAlpha = normalQuantile(1 - alpha / sides);
  const zBeta = normalQuantile(power);
  const pBar = (p1 + p2) / 2;
  const root = zAlpha * Math.sqrt(2 * pBar * (1 - pBar)) + zBeta * Math.sqrt(p1 * (1 - p1) + p2 * (1 - p2));
  // The tiny tolerance keeps an exact integer (up to rounding noise) from becoming n + 1.
  return Math.ceil((root * root) / (d * d) - 1e-9);
}

/**
 * Samples for the one-proportion score test to detect a rate of `candidate` against the `limit`
 * it is tested against: n = ((z_α·√(p0(1−p0)) + z_β·√(p1(1−p1))) / (p1 − p0))², rounded up.
 */
export function samplesOneProportion(input: {
  readonly limit: number;
  readonly candidate: number;
  readonly alpha: number;
  readonly power?: number;
  readonly sides?: 1 | 2;
}): number {
  const { limit: p0, candidate: p1, alpha } = input;
  const power = input.power ?? 0.8;
  assertProbabilities({ limit: p0, candidate: p1, alpha, power });
  if (p0 === p1)
    throw new RangeError("limit and candidate rates are equal: no sample size detects no change");
  const zAlpha = normalQuantile(1 - alpha / (input.sides ?? 1));
  const zBeta = normalQuantile(power);
  const root = (zAlpha * Math.sqrt(p0 * (1 - p0)) + zBeta * Math.sqrt(p1 * (1 - p1))) / (p1 - p0);
  return Math.ceil(root * root - 1e-9);
}

/**
 * Seconds a step must last for the candidate to collect `samples` at `requestsPerSecond` total
 * traffic when it receives `weightPercent` of it (a canary weight, or a shadow's mirror
 * percentage). A 5% canary on a quiet service can need hours: better to know before the rollout.
 */
export function secondsToSamples(samples: number, requestsPerSecond: number, weightPercent: number): number {
  if (!(samples >= 0)) throw new RangeError(`samples must be >= 0, got ${samples}`);
  if (!(requestsPerSecond > 0))
    throw new RangeError(`requestsPerSecond must be > 0, got ${requestsPerSecond}`);
  if (!(weightPercent > 0 && weightPercent <= 100)) {
    throw new RangeError(`weightPercent must be in (0, 100], got ${weightPercent}`);
  }
  return samples / ((requestsPerSecond * weightPercent) / 100);
}
