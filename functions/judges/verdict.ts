/** The model-rollout verdict of one check. */
export type Verdict = "PASS" | "FAIL" | "SUSPECT" | "INSUFFICIENT";

/** What a rollout does next. */
export type Decision = "promote" | "hold" | "rollback";

/** The numbers one check's verdict depends on. */
export interface VerdictInput {
  readonly nCandidate: number;
  readonly nPrimary: number;
  /**
   * How much worse the candidate is, in the metric's unit, oriented so that positive is worse
   * (see {@link worseEffect}).
   */
  readonly worseBy: number;
  /** The smallest worsening worth acting on, decided before the rollout. */
  readonly minEffect: number;
  readonly pValue: number;
  readonly alpha: number;
  readonly minSamples: number;
}

/**
 * Orients a signed effect (candidate − primary) so that positive means "worse" for the
 * alternative the check tests: `greater` → as is, `less` → negated, `two-sided` → absolute.
 */
export function worseEffect(effect: number, alternative: "greater" | "less" | "two-sided"): number {
  if (alternative === "greater") return effect;
  if (alternative === "less") return -effect;
  return Math.abs(effect);
}

/**
 * The model-rollout judge of one check. Too few samples on either side is INSUFFICIENT whatever the
 * numbers look like; worse beyond the minimum effect *and* significant is FAIL; worse beyond the
 * effect but not significant is SUSPECT (collect more); anything else is PASS. The minimum effect
 * exists because with enough samples every difference is significant: 0.4 points worse at
 * p = 1e-9 is still a promotion if only 5 points matter.
 */
export function judgeCheck(input: VerdictInput): Verdict {
  if (Math.min(input.nCandidate, input.nPrimary) < Math.max(1, input.minSamples)) return "INSUFFICIENT";
  const worse = input.worseBy > input.minEffect;
  if (worse && input.pValue < input.alpha) return "FAIL";
  if (worse) return "SUSPECT";
  return "PASS";
}

/**
 * The model-rollout decision over all checks: any FAIL rolls back, any INSUFFICIENT or SUSPECT holds,
 * otherwise promote. No checks at all holds: a judge that saw nothing cannot call it healthy.
 */
export function decide(verdicts: Iterable<Verdict>): Decision {
  const seen = new Set(verdicts);
  if (seen.has("FAIL")) return "rollback";
  if (seen.size === 0 || seen.has("INSUFFICIENT") || seen.has("SUSPECT")) return "hold";
  return "promote";
}
