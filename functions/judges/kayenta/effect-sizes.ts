import { mean, summarize } from "./descriptive.ts";
import { averageRanks } from "./ranks.ts";

/**
 * Kayenta's effect sizes: how large a difference is, beside whether it is real. A metric is High
 * or Low only when its effect size also reaches the allowed increase or decrease.
 */

/** mean(experiment) / mean(control); NaN when either mean is 0 (no ratio can be read). */
export function meanRatio(control: ArrayLike<number>, experiment: ArrayLike<number>): number {
  const c = mean(control);
  const e = mean(experiment);
  return c === 0 || e === 0 ? Number.NaN : e / c;
}

/**
 * The common language effect size (Vargha and Delaney's A): the probability that a value of the
 * experiment exceeds one of the control, ties counting ½. 0.5 is no difference; 1 is an experiment
 * above every control value.
 */
export function cles(control: ArrayLike<number>, experiment: ArrayLike<number>): number {
  const m = experiment.length;
  const n = control.length;
  const combined = new Float64Array(m + n);
  for (let i = 0; i < m; i++) combined[i] = experiment[i]!;
  for (let j = 0; j < n; j++) combined[m + j] = control[j]!;
  const { ranks } = averageRanks(combined);
  let r1 = 0;
  for (let i = 0; i < m; i++) r1 += ranks[i]!;
  return (2 * r1 - m * (m + 1)) / (2 * n * m);
}

/** Cohen's d: the difference of the means over the pooled sample standard deviation (unsigned). */
export function cohenD(control: ArrayLike<number>, experiment: ArrayLike<number>): number {
  const c = summarize(control);
  const e = summarize(experiment);
  const pooled = Math.sqrt(
    ((e.count - 1) * e.std ** 2 + (c.count - 1) * c.std ** 2) / (c.count + e.count - 2),
  );
  return Math.abs(e.mean - c.mean) / pooled;
}
