import { analysisLength } from "../exposure.ts";
import type { PlanStep } from "../plan.ts";
import type { RolloutSpec } from "../spec.ts";

/**
 * How long the candidate has served traffic when an analysis takes its first measurement: the
 * time of every earlier step during which it had a share (or a mirror), as the steps run when
 * nothing fails (a pause's duration, an analysis's length), plus the metric's initialDelay. A pause
 * that waits for a person counts for nothing, so the figure is a lower bound there. An inline
 * `analysis` step starts right after the step before it; the background analysis at its
 * `startingStep`.
 */

export interface Served {
  /** Seconds the candidate served before the analysis started. */
  before: number;
  /** A pause for a person came before: it served at least this long. */
  atLeast: boolean;
  /** Whether it has traffic (a share or a mirror) while the analysis runs. */
  traffic: boolean;
}

/** Whether each step leaves the candidate with traffic: a share, or requests mirrored to it. */
function withTraffic(spec: RolloutSpec, plan: readonly PlanStep[]): boolean[] {
  const mirrors = new Set<string>();
  return spec.steps.map((step, i) => {
    if (step.kind === "setMirrorRoute") {
      if (step.match || step.percentage !== undefined) mirrors.add(step.name);
      else mirrors.delete(step.name);
    }
    return (plan[i]?.share ?? 0) > 0 || mirrors.size > 0;
  });
}

/** Seconds a step lasts when nothing fails; undefined for a wait without an end. */
function stepSeconds(step: RolloutSpec["steps"][number]): number | undefined {
  if (step.kind === "pause") return step.duration;
  if (step.kind === "analysis") {
    const length = analysisLength(step.analysis);
    return Number.isFinite(length) ? length : undefined;
  }
  return 0;
}

/** What the candidate has served when the analysis starting at step `start` (from 0) starts. */
export function servedBefore(spec: RolloutSpec, plan: readonly PlanStep[], start: number): Served {
  const traffic = withTraffic(spec, plan);
  let before = 0;
  let atLeast = false;
  spec.steps.slice(0, start).forEach((step, j) => {
    if (!traffic[j]) return;
    const seconds = stepSeconds(step);
    if (seconds === undefined) atLeast = true;
    else before += seconds;
  });
  // An analysis step runs at the share the step before it left (its own row says so); the background
  // analysis from the step it starts at, which may itself give the candidate its first share.
  return { before, atLeast, traffic: traffic[start] === true };
}
