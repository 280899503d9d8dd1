/**
 * The standard normal quantile as Apache Commons Math computes it (`NormalDistribution
 * .inverseCumulativeProbability`: √2 · erfinv(2p − 1), with M. Giles' polynomial approximations of
 * erfinv, "Approximating the erfinv function", GPU Computing Gems, 2010). Kayenta's Mann-Whitney
 * interval starts its root searches from this z; the project's own quantile differs from it in the
 * last bit at p = 0.01 and 0.025, which is enough to move a Brent iterate, so the interval ends
 * would not be Kayenta's to the bit.
 */

/** Giles' coefficients, highest degree first, for the three ranges of w = −ln((1 − x)(1 + x)). */
const CENTRAL = [
  -3.64441206401782e-21, -1.6850591381820166e-19, 1.28584807152564e-18, 1.1157877678025181e-17,
  -1.333171662854621e-16, 2.0972767875968562e-17, 6.637638134358324e-15, -4.054566272975207e-14,
  -8.151934197605472e-14, 2.6335093153082323e-12, -1.2975133253453532e-11, -5.415412054294628e-11,
  1.0512122733215323e-9, -4.112633980346984e-9, -2.9070369957882005e-8, 4.2347877827932404e-7,
  -1.3654692000834679e-6, -1.3882523362786469e-5, 1.8673420803405714e-4, -7.40702534166267e-4,
  -0.006033670871430149, 0.24015818242558962, 1.6536545626831027,
];
const TAIL = [
  2.2137376921775787e-9, 9.075656193888539e-8, -2.7517406297064545e-7, 1.8239629214389228e-8,
  1.5027403968909828e-6, -4.013867526981546e-6, 2.9234449089955446e-6, 1.2475304481671779e-5,
  -4.7318229009055734e-5, 6.828485145957318e-5, 2.4031110387097894e-5, -3.550375203628475e-4,
  9.532893797373805e-4, -0.0016882755560235047, 0.002491442096107851, -0.003751208507569241,
  0.005370914553590064, 1.0052589676941592, 3.0838856104922208,
];
const FAR_TAIL = [
  -2.7109920616438573e-11, -2.555641816996525e-10, 1.5076572693500548e-9, -3.789465440126737e-9,
  7.61570120807834e-9, -1.496002662714924e-8, 2.914795345090108e-8, -6.771199775845234e-8,
  2.2900482228026655e-7, -9.9298272942317e-7, 4.526062597223154e-6, -1.968177810553167e-5,
  7.599527703001776e-5, -2.1503011930044477e-4, -1.3871931833623122e-4, 1.0103004648645344, 4.849906401408584,
];

/** Horner's scheme in the order Commons Math evaluates it, so every rounding is the same. */
function horner(coefficients: readonly number[], w: number): number {
  let p = coefficients[0]!;
  for (let i = 1; i < coefficients.length; i++) p = coefficients[i]! + p * w;
  return p;
}

/** erfinv(x) for x in [−1, 1]; ±Infinity at ±1. */
function erfInv(x: number): number {
  // (1 − x)(1 + x), not 1 − x²: the product keeps its digits near ±1.
  let w = -Math.log((1 - x) * (1 + x));
  let p: number;
  if (w < 6.25) {
    w -= 3.125;
    p = horner(CENTRAL, w);
  } else if (w < 16) {
    w = Math.sqrt(w) - 3.25;
    p = horner(TAIL, w);
  } else if (Number.isFinite(w)) {
    w = Math.sqrt(w) - 5;
    p = horner(FAR_TAIL, w);
  } else {
    p = Number.POSITIVE_INFINITY;
  }
  return p * x;
}

/** Standard normal quantile of `probability` (0–1), as Commons Math's `NormalDistribution(0, 1)` gives it. */
export function commonsNormalQuantile(probability: number): number {
  if (!(probability >= 0 && probability <= 1)) {
    throw new RangeError(`probability must be between 0 and 1, got ${probability}`);
  }
  return Math.SQRT2 * erfInv(2 * probability - 1);
}
