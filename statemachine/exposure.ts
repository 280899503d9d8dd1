import type { PlanStep } from "./plan.ts";
import type { AnalysisSpec, RolloutSpec } from "./spec.ts";

/**
 * The exposure arithmetic of a rollout, step by step: what `rollouts plan --error-rate` prints
 * under each analysis, and what `rollouts design` prunes its candidates by before it simulates
 * them. A pure function of the spec and its plan.
 */

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

/**
 * The exposure arithmetic: a bad version at share s behind r requests per second is aborted no
 * earlier than its analysis' first failing measurement allows, initialDelay + failureLimit
 * intervals (the failureLimit + 1-th failure; a judge at its first look), and has served r × s × t
 * by then, plus what every earlier step served in full (pauses, analyses it passed). An analysis
 * that cannot fail (failureLimit beyond its count) stops nothing; after an indefinite pause or an
 * analysis without an end, nothing later is reached without a person.
 */
export function exposures(
  spec: RolloutSpec,
  steps: readonly PlanStep[],
  rps: number,
  errorRate: number,
): Array<Exposure | undefined> {
  let elapsed = 0;
  let served = 0;
  let reachable = true;
  return spec.steps.map((step, i) => {
    const share = (steps[i]?.share ?? 0) / 100;
    if (!reachable) return undefined;
    if (step.kind === "pause") {
      if (step.duration === undefined) reachable = false;
      else {
        elapsed += step.duration;
        served += rps * share * step.duration;
      }
      return undefined;
    }
    if (step.kind !== "analysis") return undefined;
    const metrics = step.analysis.templates.flatMap((t) => t.metrics);
    const earliest = metrics
      .map((m) => {
        const interval = m.interval ?? 0;
        if (m.provider.judge) return m.initialDelay;
        if (m.failureLimit < 0 || (m.count !== undefined && m.count > 0 && m.failureLimit + 1 > m.count))
          return undefined;
        return m.initialDelay + m.failureLimit * interval;
      })
      .filter((t): t is number => t !== undefined);
    const length = analysisSeconds(step.analysis);
    let out: Exposure | undefined;
    if (earliest.length > 0) {
      const abortAfter = Math.min(...earliest);
      const requests = Math.round(served + rps * share * abortAfter);
      out = { abortAfter, at: elapsed + abortAfter, requests, failed: Math.round(requests * errorRate) };
    }
    if (!Number.isFinite(length)) reachable = false;
    elapsed += length;
    served += rps * share * length;
    return out;
  });
}

/**
 * How long an analysis lasts when every measurement passes: its slowest metric's initialDelay and
 * count − 1 intervals; infinite for a metric that measures until stopped.
 */
export function analysisSeconds(analysis: AnalysisSpec): number {
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
 * Seconds from the push to the promotion of a version every analysis passes: the timed pauses and
 * the analyses, each in full; undefined when a step waits for a person or never ends.
 */
export function promotionSeconds(spec: RolloutSpec): number | undefined {
  let total = 0;
  for (const step of spec.steps) {
    if (step.kind === "pause") {
      if (step.duration === undefined) return undefined;
      total += step.duration;
    } else if (step.kind === "analysis") total += analysisSeconds(step.analysis);
  }
  return Number.isFinite(total) ? total : undefined;
}
