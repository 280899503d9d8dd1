import erfc from "@stdlib/math-base-special-erfc";
import quantile from "@stdlib/stats-base-dists-normal-quantile";

/**
 * Upper tail of the standard normal, P(Z > z), computed from erfc so that tail p-values such as
 * 4e-71 keep their digits: `1 - cdf(z)` would round them to 0 and turn "overwhelming evidence"
 * into an untestable zero. stdlib's erfc was checked against scipy to ~1e-13 relative.
 */
export function normalSf(z: number): number {
  return 0.5 * erfc(z / Math.SQRT2);
}

/** Lower tail P(Z <= z), the mirror of {@link normalSf}, accurate in the far left tail too. */
export function normalCdf(z: number): number {
  return 0.5 * erfc(-z / Math.SQRT2);
}

/** Standard normal quantile, used to turn alpha and power into z values for sample sizes. */
export function normalQuantile(probability: number): number {
  return quantile(probability, 0, 1);
}
