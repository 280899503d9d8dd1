import { analysisLength, type Exposure, exposures, promotionSeconds } from "../exposure.ts";
import { parseRollout } from "../load.ts";
import { plan } from "../plan.ts";
import type { RolloutSpec } from "../spec.ts";
import { type Candidate, MAX_WEIGHT_STEPS } from "./candidates.ts";
import { type DesignInput, type MetricNames, SIMULATOR_METRICS } from "./input.ts";
import type { Thresholds } from "./thresholds.ts";
import { rolloutObject, templateObject, yamlDocuments } from "./yaml.ts";

/**
 * What a candidate is before it is simulated: its steps with `rollouts plan`'s arithmetic (the
 * share each weight really gets, the requests per second it meets, the earliest abort of each
 * analysis: `exposure.ts`), the time a good version takes, or why it is pruned.
 */

/** Why a candidate is not simulated. */
export const PRUNE_REASONS = {
  steps: `more than ${MAX_WEIGHT_STEPS} weight steps`,
  scrape: "an interval under four scrapes (rate() needs several samples in its window)",
  samples: "a look at the first weight sees too few requests to tell a good version from a bad one",
  duration: "a good version would take longer than --max-duration",
  exposure: "a bad version caught at its first chance would already serve more than the budget",
  simulation: "more requests than one simulation sends (rps × seconds over 30,000,000)",
} as const;
export type PruneReason = keyof typeof PRUNE_REASONS;

/** The most requests one simulation sends (`docs/simulate.md`): a plan longer than this cannot run. */
export const SIMULATION_REQUESTS = 30_000_000;

/** One weight of a candidate and its analysis. */
export interface StepArithmetic {
  /** The setWeight step's index (Argo counts from 0); its analysis is the next step. */
  index: number;
  weight: number;
  /** The share of requests the candidate gets (`rollouts plan`'s share: pods without a router). */
  share: number;
  candidateRps: number;
  /** Seconds the step lasts for a good version (its analysis in full). */
  seconds: number;
  /** A bad version stopped by this step's analysis at its earliest: `rollouts plan --error-rate`. */
  exposure: Exposure;
}

export interface Assessed {
  candidate: Candidate;
  pruned?: PruneReason;
  /** Seconds from the push to a good version's promotion. */
  promoteSeconds?: number;
  steps?: StepArithmetic[];
}

/** The template's name in a design. */
export const templateNameOf = (name: string) => `${name}-slo`;

/** A candidate's Rollout and AnalysisTemplate objects, with these metric names. */
export function candidateObjects(
  input: Pick<DesignInput, "name" | "replicas" | "router">,
  thresholds: Thresholds,
  candidate: Candidate,
  metrics: MetricNames = SIMULATOR_METRICS,
): { rollout: Record<string, unknown>; template: Record<string, unknown> } {
  const templateName = templateNameOf(input.name);
  return {
    rollout: rolloutObject({ ...input, weights: candidate.weights, templateName }),
    template: templateObject({ name: templateName, metrics, thresholds, look: candidate }),
  };
}

/** A candidate's Rollout and AnalysisTemplate as one YAML text, each after its comment lines. */
export function candidateYaml(
  input: Pick<DesignInput, "name" | "replicas" | "router">,
  thresholds: Thresholds,
  candidate: Candidate,
  metrics: MetricNames = SIMULATOR_METRICS,
  comments: { rollout?: string[]; template?: string[] } = {},
): string {
  const { rollout, template } = candidateObjects(input, thresholds, candidate, metrics);
  return yamlDocuments([
    { ...(comments.rollout ? { comment: comments.rollout } : {}), value: rollout },
    { ...(comments.template ? { comment: comments.template } : {}), value: template },
  ]);
}

/**
 * The candidate's spec, read by the project's loader from its documents (as JSON, which the
 * loader reads as YAML does, and which is quicker to write for every candidate).
 */
export function candidateSpec(input: DesignInput, thresholds: Thresholds, candidate: Candidate): RolloutSpec {
  const { rollout, template } = candidateObjects(input, thresholds, candidate);
  const text = `${JSON.stringify(rollout)}\n---\n${JSON.stringify(template)}`;
  return parseRollout([{ file: `${candidate.id}.yaml`, text }]).spec;
}

/**
 * Assesses every candidate: the checks that need no spec first (steps, scrapes, samples per look),
 * then the plan's arithmetic on the spec the loader reads (duration, exposure, the simulation's
 * size).
 */
export function assess(
  input: DesignInput,
  thresholds: Thresholds,
  candidates: readonly Candidate[],
): Assessed[] {
  return candidates.map((candidate) => {
    const cheap = cheapPrune(input, thresholds, candidate);
    if (cheap) return { candidate, pruned: cheap };
    const spec = candidateSpec(input, thresholds, candidate);
    const steps = stepArithmetic(input, spec);
    const promoteSeconds = promotionSeconds(spec) ?? Number.POSITIVE_INFINITY;
    const first = steps[0]?.exposure;
    const pruned: PruneReason | undefined =
      promoteSeconds > input.maxDurationSeconds
        ? "duration"
        : first === undefined || first.requests > input.exposureBudget
          ? "exposure"
          : input.rps * (promoteSeconds + simulationSlack(promoteSeconds)) > SIMULATION_REQUESTS
            ? "simulation"
            : undefined;
    return { candidate, promoteSeconds, steps, ...(pruned ? { pruned } : {}) };
  });
}

/** Virtual seconds a simulation runs past a plan's promotion time, for what the workflow adds. */
export function simulationSlack(promoteSeconds: number): number {
  return Math.ceil(30 + promoteSeconds * 0.1);
}

function cheapPrune(input: DesignInput, thresholds: Thresholds, c: Candidate): PruneReason | undefined {
  if (c.tooManySteps) return "steps";
  if (c.intervalSeconds < 4 * input.scrapeIntervalSeconds) return "scrape";
  // Every weight is one the traffic really gets (exact routers, or pods that land on it), so the
  // first look's requests are rps × the first weight × the interval.
  const first = (c.weights[0] ?? 0) / 100;
  if (input.rps * first * c.intervalSeconds < thresholds.lookSamples) return "samples";
  return undefined;
}

/** Each weight with its share (the plan's), its analysis' length and exposure (`exposures`). */
function stepArithmetic(input: DesignInput, spec: RolloutSpec): StepArithmetic[] {
  const planned = plan(spec, { rps: input.rps });
  const exposure = exposures(spec, planned.steps, input.rps, input.sloErrorRate);
  const out: StepArithmetic[] = [];
  spec.steps.forEach((step, i) => {
    const row = planned.steps[i];
    const e = exposure[i];
    if (step.kind !== "analysis" || !row || !e) return;
    const weightRow = planned.steps[i - 1];
    out.push({
      index: i - 1,
      weight: row.weight,
      share: row.share,
      candidateRps: weightRow?.candidateRps ?? 0,
      seconds: analysisLength(step.analysis),
      exposure: e,
    });
  });
  return out;
}
