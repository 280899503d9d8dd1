/**
 * Special functions the tests need beyond the normal distribution: log-gamma, log-beta and the
 * regularized incomplete beta function. Written here (rather than pulled from a transitive
 * dependency) and checked against scipy.special in the unit tests.
 */

// Lanczos coefficients (g = 7, n = 9), the set used by many numeric libraries; ~1e-15 relative.
const LANCZOS_G = 7;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];
const HALF_LOG_TWO_PI = 0.5 * Math.log(2 * Math.PI);

/**
 * log Γ(x) for x > 0. Large arguments use Stirling's series (the Lanczos sum loses relative
 * precision there); Bayes factors of counts need log Γ of thousands without overflow.
 */
export function logGamma(x: number): number {
  if (!(x > 0)) throw new RangeError(`logGamma needs x > 0, got ${x}`);
  if (x < 0.5) {
    // reflection: Γ(x)Γ(1-x) = π / sin(πx)
    return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  }
  if (x >= 15) {
    const inv = 1 / x;
    const inv2 = inv * inv;
    const series =
      inv *
      (1 / 12 -
        inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680 - inv2 * (1 / 1188 - inv2 * (691 / 360360))))));
    return (x - 0.5) * Math.log(x) - x + HALF_LOG_TWO_PI + series;
  }
  const y = x - 1;
  let sum = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i]! / (y + i);
  const t = y + LANCZOS_G + 0.5;
  return HALF_LOG_TWO_PI + (y + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b). */
export function logBeta(a: number, b: number): number {
  return logGamma(a) + logGamma(b) - logGamma(a + b);
}

/** Continued fraction for the incomplete beta (modified Lentz), valid for x < (a+1)/(a+b+2). */
function betaContinuedFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10_000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-16) return h;
  }
  return h;
}

/** log of the prefactor x^a (1-x)^b / (a B(a, b)) shared by both tails. */
function logBetaFront(a: number, b: number, x: number): number {
  return a * Math.log(x) + b * Math.log1p(-x) - logBeta(a, b) - Math.log(a);
}

/**
 * Regularized incomplete beta I_x(a, b) and its complement 1 − I_x(a, b), each computed from the
 * side where it is small, so a one-sided prior mass of 1e-30 is not rounded away.
 */
export function regularizedBeta(a: number, b: number, x: number): { lower: number; upper: number } {
  if (!(a > 0 && b > 0)) throw new RangeError(`regularizedBeta needs a, b > 0, got ${a}, ${b}`);
  if (!(x >= 0 && x <= 1)) throw new RangeError(`regularizedBeta needs 0 <= x <= 1, got ${x}`);
  if (x === 0) return { lower: 0, upper: 1 };
  if (x === 1) return { lower: 1, upper: 0 };
  if (x < (a + 1) / (a + b + 2)) {
    const lower = Math.exp(logBetaFront(a, b, x)) * betaContinuedFraction(a, b, x);
    return { lower, upper: 1 - lower };
  }
  const upper = Math.exp(logBetaFront(b, a, 1 - x)) * betaContinuedFraction(b, a, 1 - x);
  return { lower: 1 - upper, upper };
}

/**
 * log of the upper tail 1 − I_x(a, b), without underflow: the one-sided Bayes factor divides two
 * such masses and both can be far below 1e-300 for large counts.
 */
export function logRegularizedBetaUpper(a: number, b: number, x: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return Number.NEGATIVE_INFINITY;
  if (x < (a + 1) / (a + b + 2)) {
    const lower = Math.exp(logBetaFront(a, b, x)) * betaContinuedFraction(a, b, x);
    return Math.log1p(-lower);
  }
  return logBetaFront(b, a, 1 - x) + Math.log(betaContinuedFraction(b, a, 1 - x));
}
