import { formatNumber } from "./comparative.ts";

/** The model-rollout verdict of one check. */
export type Verdict = "PASS" | "FAIL" | "SUSPECT" | "INSUFFICIENT";

/** What a rollout does next. */
export type Decision = "promote" | "hold" | "rollback";

/**
 * How a reason writes an effect and its minimum: `points` for a rate difference (0.024 is
 * "2.4 points"), `ms`, `percent` for a relative change or a rate (0.2 is "20%"); a plain number
 * without a unit.
 */
export type EffectUnit = "points" | "ms" | "percent";

/** How a reason names the effect of a check. */
export interface EffectStyle {
  readonly unit?: EffectUnit;
  /** `rate`: the effect is the candidate's own rate (one-proportion), not a difference with the primary. */
  readonly measure?: "difference" | "rate";
  /** A two-sided check: its effect "differs by", since either way is worse. */
  readonly twoSided?: boolean;
}

/**
 * An absolute limit on the candidate alone, such as a service-level objective: a p95 in ms, a
 * bad-event rate. Above it the check fails once the candidate has `minSamples`, whatever the
 * primary does.
 */
export interface GuardReading {
  /** What is guarded, as the reason names it: `p95`, `bad rate`. */
  readonly measure: string;
  /** The candidate's value; null without samples. */
  readonly value: number | null;
  readonly limit: number;
  readonly unit: "ms" | "percent";
}

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
  /** How the reason writes the effect; plain numbers by default. */
  readonly style?: EffectStyle;
  readonly guard?: GuardReading;
  /**
   * Why the test could not run on these samples (`worseBy` and `pValue` are then ignored): the
   * check is INSUFFICIENT unless the sample floor or the guard decides first.
   */
  readonly notRun?: string;
}

/** A verdict and the comparison that decided it, in words. */
export interface Judgement {
  readonly verdict: Verdict;
  readonly reason: string;
  /** The guard failed the check (the candidate had `minSamples` and was above the limit). */
  readonly guardBreached: boolean;
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
 * The model-rollout judge of one check, and why. Too few samples on the candidate is INSUFFICIENT
 * whatever the numbers look like; a guard's limit exceeded is FAIL (an objective is absolute, so
 * the primary's samples are not needed); too few on the primary is INSUFFICIENT; worse beyond the
 * minimum effect *and* significant is FAIL; worse beyond the effect but not significant is
 * SUSPECT (collect more); anything else is PASS. The minimum effect exists because with enough
 * samples every difference is significant: 0.4 points worse at p = 1e-9 is still a promotion if
 * only 5 points matter, and the reason says so rather than leave p < alpha next to "PASS".
 */
export function explainCheck(input: VerdictInput): Judgement {
  const floor = Math.max(1, input.minSamples);
  const decided = (verdict: Verdict, reason: string, guardBreached = false): Judgement => ({
    verdict,
    reason,
    guardBreached,
  });
  if (input.nCandidate < floor) return decided("INSUFFICIENT", tooFew(input, floor));
  const { guard } = input;
  if (guard && guard.value !== null && guard.value > guard.limit) {
    return decided("FAIL", guardSays(guard, guard.value, "above"), true);
  }
  const guardHeld = guard && guard.value !== null ? `; ${guardSays(guard, guard.value, "within")}` : "";
  const held = (verdict: Verdict, reason: string) => decided(verdict, reason + guardHeld);
  if (input.nPrimary < floor) return held("INSUFFICIENT", tooFew(input, floor));
  if (input.notRun !== undefined) return held("INSUFFICIENT", "the test cannot run on these samples yet");
  const [verdict, reason] = compared(input);
  return held(verdict, reason);
}

/**
 * The test's part of a verdict, with enough samples on both sides: the effect against the minimum
 * that matters, then the p-value against alpha, said in that order because the effect decides
 * first (a significant effect within `minEffect` is not a finding).
 */
function compared(input: VerdictInput): [Verdict, string] {
  const style = input.style ?? {};
  const worse = input.worseBy > input.minEffect;
  const significant = input.pValue < input.alpha;
  const p = `p = ${formatNumber(input.pValue)}`;
  const alpha = `alpha ${formatNumber(input.alpha)}`;
  const bound = `minEffect ${effectValue(input.minEffect, style)}`;
  const effect =
    style.measure === "rate"
      ? `rate ${effectValue(Math.abs(input.worseBy), style)}`
      : `${style.twoSided ? "differs" : "worse"} by ${effectValue(input.worseBy, style)}`;
  if (worse && significant) return ["FAIL", `${effect}, beyond ${bound}, and ${p} < ${alpha}`];
  if (worse) return ["SUSPECT", `${effect}, beyond ${bound}, but ${p} is not below ${alpha}: not proven yet`];
  if (style.measure !== "rate" && input.worseBy <= 0) {
    const better = -input.worseBy;
    return [
      "PASS",
      better === 0 ? "not worse (no difference)" : `not worse (better by ${effectValue(better, style)})`,
    ];
  }
  if (significant) return ["PASS", `${effect}, within ${bound}: not a finding even though ${p} < ${alpha}`];
  return ["PASS", `${effect}, within ${bound}`];
}

/** The model-rollout verdict of one check: {@link explainCheck} without the reason. */
export function judgeCheck(input: VerdictInput): Verdict {
  return explainCheck(input).verdict;
}

/** The sample floor in words: which side has too few samples. */
function tooFew(input: VerdictInput, floor: number): string {
  const candidateShort = input.nCandidate < floor;
  const primaryShort = input.nPrimary < floor;
  const sides =
    candidateShort && primaryShort
      ? `the candidate has ${input.nCandidate} samples and the primary ${input.nPrimary}`
      : candidateShort
        ? `the candidate has ${input.nCandidate} samples`
        : `the primary has ${input.nPrimary} samples`;
  return `${sides}, fewer than minSamples ${floor}`;
}

function effectValue(value: number, style: EffectStyle): string {
  if (style.unit === "points") return `${formatNumber(value * 100)} points`;
  if (style.unit === "percent") return `${formatNumber(value * 100)}%`;
  if (style.unit === "ms") return `${formatNumber(value)} ms`;
  return formatNumber(value);
}

/** `p95 400 ms above the 300 ms guard`. */
function guardSays(guard: GuardReading, value: number, where: "above" | "within"): string {
  const write = (x: number) => effectValue(x, { unit: guard.unit });
  return `${guard.measure} ${write(value)} ${where} the ${write(guard.limit)} guard`;
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
