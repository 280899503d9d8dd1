/**
 * Average ranks (1-based; a run of equal values shares the mean of its ranks), ordered the way
 * Java's `Double.compare` orders doubles: −0 ranks below +0, as in the Commons Math ranking Kayenta
 * uses (`NaturalRanking` with average ties). Also returns the size of every tie run, for the tie
 * correction of the Mann-Whitney variance.
 */
export function averageRanks(values: ArrayLike<number>): { ranks: Float64Array; tieRuns: number[] } {
  const n = values.length;
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => javaCompare(values[a]!, values[b]!) || a - b);
  const ranks = new Float64Array(n);
  const tieRuns: number[] = [];
  let start = 0;
  while (start < n) {
    let end = start + 1;
    while (end < n && javaCompare(values[order[end]!]!, values[order[start]!]!) === 0) end++;
    // Positions start+1 … end share their mean rank.
    const rank = (start + 1 + end) / 2;
    for (let k = start; k < end; k++) ranks[order[k]!] = rank;
    tieRuns.push(end - start);
    start = end;
  }
  return { ranks, tieRuns };
}

/** `Double.compare`: numeric order, with −0 below +0 (NaN never reaches here: callers reject it). */
function javaCompare(a: number, b: number): number {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === 0 && b === 0) return Object.is(a, b) ? 0 : Object.is(a, -0) ? -1 : 1;
  return 0;
}
