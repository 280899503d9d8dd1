/**
 * The normal draws of `java.util.Random` (a 48-bit linear congruential generator, and Marsaglia's
 * polar method in `nextGaussian`), which Kayenta's noise comes from: seeded alike, the same draws
 * to the bit. Kayenta adds noise only to two constant series; seeding it keeps a replayed look's
 * classification the same.
 */

const MULTIPLIER = 0x5deece66dn;
const ADDEND = 0xbn;
const MASK = (1n << 48n) - 1n;

/** Standard normal draws from `java.util.Random(seed)`'s `nextGaussian()`. */
export function javaGaussian(seed: number): () => number {
  let state = (BigInt(seed) ^ MULTIPLIER) & MASK;
  const next = (bits: number): number => {
    state = (state * MULTIPLIER + ADDEND) & MASK;
    return Number(state >> BigInt(48 - bits));
  };
  // 53 random bits: 26 high, 27 low, as nextDouble() assembles them.
  const nextDouble = () => (next(26) * 2 ** 27 + next(27)) * 2 ** -53;
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const value = spare;
      spare = null;
      return value;
    }
    let v1: number;
    let v2: number;
    let s: number;
    do {
      v1 = 2 * nextDouble() - 1;
      v2 = 2 * nextDouble() - 1;
      s = v1 * v1 + v2 * v2;
    } while (s >= 1 || s === 0);
    const multiplier = Math.sqrt((-2 * Math.log(s)) / s);
    spare = v2 * multiplier;
    return v1 * multiplier;
  };
}
