/**
 * Brent's root finder (R. P. Brent, "Algorithms for Minimization without Derivatives", 1973, the
 * `zeroin` of R's `uniroot`) with the settings of Kayenta's solver: absolute tolerance 1e-4, at most
 * 1000 steps, and the root returned as soon as f is zero within one ulp. Kayenta's interval ends
 * are where this search stops, not the exact roots, so reproducing its numbers means taking the
 * same steps.
 */

const TOLERANCE = 1e-4;
const MAX_ITERATIONS = 1000;
const EPSILON = 2.220446049250313e-16;

/** Zero within one ulp (Commons Math's `Precision.equals(x, 0)`). */
function isZero(x: number): boolean {
  return Math.abs(x) <= Number.MIN_VALUE;
}

/**
 * A zero of `f` between `lower` and `upper`, where `fLower` and `fUpper` (f at the bounds) have
 * opposite signs. Returns the last iterate if the steps run out, as Kayenta's solver does.
 */
export function brentRoot(
  lower: number,
  upper: number,
  fLower: number,
  fUpper: number,
  f: (x: number) => number,
): number {
  let a = lower;
  let b = upper;
  let fa = fLower;
  let fb = fUpper;
  let c = a;
  let fc = fa;
  if (isZero(fa)) return a;
  if (isZero(fb)) return b;
  for (let iteration = 0; iteration <= MAX_ITERATIONS; iteration++) {
    const previousStep = b - a;
    // Keep b the best guess: c is the other end of the bracket.
    if (Math.abs(fc) < Math.abs(fb)) {
      a = b;
      b = c;
      c = a;
      fa = fb;
      fb = fc;
      fc = fa;
    }
    const tolerance = 2 * EPSILON * Math.abs(b) + TOLERANCE / 2;
    let step = (c - b) / 2;
    if (Math.abs(step) <= tolerance || isZero(fb)) return b;
    // Interpolate when the last step was large enough and moved towards the root.
    if (Math.abs(previousStep) >= tolerance && Math.abs(fa) > Math.abs(fb)) {
      const cb = c - b;
      let p: number;
      let q: number;
      if (a === c) {
        // Secant through a and b.
        const t1 = fb / fa;
        p = cb * t1;
        q = 1 - t1;
      } else {
        // Inverse quadratic through a, b and c.
        const qa = fa / fc;
        const t1 = fb / fc;
        const t2 = fb / fa;
        p = t2 * (cb * qa * (qa - t1) - (b - a) * (t1 - 1));
        q = (qa - 1) * (t1 - 1) * (t2 - 1);
      }
      if (p > 0) q = -q;
      else p = -p;
      if (p < 0.75 * cb * q - Math.abs(tolerance * q) / 2 && p < Math.abs((previousStep * q) / 2)) {
        step = p / q;
      }
    }
    // Never a step smaller than the tolerance: it would not move b.
    if (Math.abs(step) < tolerance) step = step > 0 ? tolerance : -tolerance;
    a = b;
    fa = fb;
    b += step;
    fb = f(b);
    if ((fb > 0 && fc > 0) || (fb < 0 && fc < 0)) {
      c = a;
      fc = fa;
    }
  }
  return b;
}
