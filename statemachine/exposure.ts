import type { PlanStep } from "./plan.ts";
import type { AnalysisSpec, Metric, RolloutSpec, Step } from "./spec.ts";

/** What a bad version meets if this step's analysis is the one that stops it, as early as it can. */
export interface Exposure {
  /** Seconds from the start of the step to the earliest abort. */
  abortAfter: number;
  /** Seconds from the push to it, every earlier step passed as a bad version would pass it. */
  at: number;
  /** Requests the candidate has served by then, and of them failed (× the error rate). */
  requests: number;
  failed: number;
}

/** One step of the exposure walk: what a bad version has served before and after it. */
export interface ExposureStep {
  /** False once an indefinite pause or an analysis without an end came before: no timing from there. */
  reachable: boolean;
  /** Requests the candidate served before this step began (unrounded). */
  servedBefore: number;
  /** Requests it served by the end of this step, a bad version passing it; infinite if it never ends. */
  servedAfter: number;
  /** Seconds from the push to the start of this step. */
  startsAt: number;
  /** This step's analysis as the one that stops a bad version, as early as it can. */
  exposure?: Exposure;
}

/** Seconds from an analysis's start to a metric's earliest abort; undefined when it cannot fail. */
export function earliestAbort(m: Metric): number | undefined {
  if (m.provider.judge) return m.initialDelay;
  if (m.failureLimit < 0 || (m.count !== undefined && m.count > 0 && m.failureLimit + 1 > m.count)) {
    return undefined;
  }
  return m.initialDelay + m.failureLimit * (m.interval ?? 0);
}

/** Seconds an analysis runs when nothing fails: its longest metric; infinite without a count. */
export function analysisLength(analysis: AnalysisSpec): number {
  const lengths = analysis.templates
    .flatMap((t) => t.metrics)
    .map((m) =>
      m.count === undefined && m.interval !== undefined
        ? Number.POSITIVE_INFINITY
        : m.initialDelay + Math.max(0, (m.count ?? 1) - 1) * (m.interval ?? 0),
    );
  return Math.max(0, ...lengths);
}

/**
 * The exposure arithmetic, step by step: a bad version at share s behind r requests per second is
 * aborted no earlier than its analysis' first failing measurement allows, initialDelay +
 * failureLimit intervals (the failureLimit + 1-th failure; a judge at its first look), and has
 * served r × s × t by then, plus what every earlier step served in full (pauses, analyses it
 * passed). An analysis that cannot fail (failureLimit beyond its count) stops nothing; after an
 * indefinite pause or an analysis without an end, nothing later is reached without a person.
 */
export function exposureWalk(
  spec: RolloutSpec,
  steps: readonly PlanStep[],
  rps: number,
  errorRate: number,
): ExposureStep[] {
  let elapsed = 0;
  let served = 0;
  let reachable = true;
  return spec.steps.map(timedAs).map((step, i) => {
    const share = (steps[i]?.share ?? 0) / 100;
    const before = { reachable, servedBefore: served, startsAt: elapsed };
    if (!reachable) return { ...before, servedAfter: served };
    if (step.kind === "pause") {
      if (step.duration === undefined) {
        reachable = false;
        return { ...before, servedAfter: share > 0 ? Number.POSITIVE_INFINITY : served };
      }
      elapsed += step.duration;
      served += rps * share * step.duration;
      return { ...before, servedAfter: served };
    }
    if (step.kind !== "analysis") return { ...before, servedAfter: served };
    const earliest = step.analysis.templates
      .flatMap((t) => t.metrics)
      .map(earliestAbort)
      .filter((t): t is number => t !== undefined);
    const length = analysisLength(step.analysis);
    let exposure: Exposure | undefined;
    if (earliest.length > 0) {
      const abortAfter = Math.min(...earliest);
      const requests = Math.round(served + rps * share * abortAfter);
      exposure = { abortAfter, at: elapsed + abortAfter, requests, failed: Math.round(requests * errorRate) };
    }
    if (!Number.isFinite(length)) reachable = false;
    elapsed += length;
    served += share > 0 ? rps * share * length : 0;
    return { ...before, servedAfter: served, ...(exposure ? { exposure } : {}) };
  });
}

/** Each step's {@link Exposure}, for the analysis steps that can stop a bad version (`rollouts plan`). */
export function exposures(
  spec: RolloutSpec,
  steps: readonly PlanStep[],
  rps: number,
  errorRate: number,
): Array<Exposure | undefined> {
  return exposureWalk(spec, steps, rps, errorRate).map((s) => s.exposure);
}

/**
 * Seconds from the push to the promotion of a version every analysis passes: the timed pauses and
 * the analyses, each in full; undefined when a step waits for a person or never ends.
 */
export function promotionSeconds(spec: RolloutSpec): number | undefined {
  let total = 0;
  for (const step of spec.steps.map(timedAs)) {
    if (step.kind === "pause") {
      if (step.duration === undefined) return undefined;
      total += step.duration;
    } else if (step.kind === "analysis") total += analysisLength(step.analysis);
  }
  return Number.isFinite(total) ? total : undefined;
}

/**
 * A step as time passes in it: an experiment is its analysis, else a pause of its duration (none:
 * until a person promotes); the traffic stays as it was, as in both.
 */
function timedAs(step: Step): Step {
  if (step.kind !== "experiment") return step;
  return step.analysis
    ? { kind: "analysis", origin: "step", analysis: step.analysis }
    : {
        kind: "pause",
        reason: "CanaryPauseStep",
        ...(step.duration !== undefined ? { duration: step.duration } : {}),
      };
}
