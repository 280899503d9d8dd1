/**
 * What "worse" means for a test: the candidate's values are greater (latency, errors), less
 * (throughput, conversions), or different in either direction. Named as scipy names them.
 */
export type Alternative = "greater" | "less" | "two-sided";

/** A count of bad events out of n trials (errors out of requests, negative feedback out of votes). */
export interface Counts {
  readonly bad: number;
  readonly n: number;
}

/**
 * One test's outcome, in the shape every judge and the `rollouts judge` command report.
 * `z` is the standardized statistic oriented towards the alternative (null for Bayes-factor
 * tests); `effect` is candidate minus primary in the metric's own unit.
 */
export interface TestResult {
  readonly statistic: number;
  readonly z: number | null;
  readonly pValue: number;
  readonly effect: number;
}

/** Rejects NaN and infinities early: a NaN sorts and compares unpredictably and poisons every rank. */
export function assertFiniteSamples(values: ArrayLike<number>, label: string): void {
  for (let i = 0; i < values.length; i++) {
    if (!Number.isFinite(values[i])) {
      throw new RangeError(`${label}[${i}] is not a finite number`);
    }
  }
}

/** Rejects counts that cannot be counts, with the side named, before any test divides by n. */
export function assertCounts(counts: Counts, label: string): void {
  if (!Number.isInteger(counts.n) || counts.n < 0) {
    throw new RangeError(`${label}.n must be a non-negative integer, got ${counts.n}`);
  }
  if (!Number.isInteger(counts.bad) || counts.bad < 0 || counts.bad > counts.n) {
    throw new RangeError(`${label}.bad must be an integer between 0 and n (${counts.n}), got ${counts.bad}`);
  }
}
