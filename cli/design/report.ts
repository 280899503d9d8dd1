import { type Assessed, candidateYaml, type PruneReason } from "../../statemachine/design/arithmetic.ts";
import { shortForm } from "../../statemachine/design/candidates.ts";
import type { RunOutcome, Simulated, Tried, Verdict } from "../../statemachine/design/choose.ts";
import { type FailureMode, failureModes, type SubtleRun } from "../../statemachine/design/failure-modes.ts";
import {
  DEFAULT_BUDGET_SHARE,
  type DesignInput,
  SLO_WINDOW_SECONDS,
} from "../../statemachine/design/input.ts";
import { LOOK_ALPHA, LOOK_POWER, type Thresholds } from "../../statemachine/design/thresholds.ts";
import type { Exposure } from "../../statemachine/exposure.ts";
import type { SecondRecord } from "../simulate/runtime.ts";
import type { TriedWithSeries } from "./search.ts";

/**
 * `rollouts design`'s report as data: what `--json` prints (docs/cli.md, "rollouts design"), and
 * what the text and the HTML page are drawn from.
 */

/** Where a bad version stood at a step of the chosen plan in its simulation. */
export type StepFate = "passed" | "aborted" | "not reached";

export interface ReportStep {
  index: number;
  weight: number;
  share: number;
  candidateRps: number;
  /** Seconds the step lasts for a good version. */
  seconds: number;
  /** `rollouts plan --error-rate`'s earliest abort by this step's analysis. */
  arithmetic: Exposure;
  /** Each bad version: whether it passed this step, was aborted in it, or never reached it, and its requests by then. */
  simulated: Record<"errors" | "latency", { fate: StepFate; requests: number }>;
}

export interface ReportCandidate {
  id: string;
  plan: string;
  intervalSeconds: number;
  count: number;
  failureLimit: number;
  /** On paper: a good version's promotion, and a bad version's earliest abort at the first analysis. */
  promoteSeconds: number;
  firstAbort: Exposure;
  simulated: Simulated;
  verdict: Verdict;
  chosen: boolean;
}

export interface DesignReport {
  kind: "canary";
  inputs: DesignInput & { exposureBudgetRule: string; seed: number };
  look: {
    samples: number;
    alpha: number;
    power: number;
    errorRate: number;
    p95Ms: number;
    badLatencyFactor: number;
    goodSlowShare: number;
    badSlowShare: number;
  };
  search: {
    candidates: number;
    pruned: Partial<Record<PruneReason, number>>;
    simulated: number;
    accepted: number;
    simulations: number;
    wallSeconds: number;
  };
  chosen: (ReportCandidate & { steps: ReportStep[]; costPerRollout: number }) | null;
  candidates: ReportCandidate[];
  subtle: SubtleRun | null;
  failureModes: FailureMode[];
  /** The chosen plan's Rollout and AnalysisTemplate, one YAML stream (null when none was chosen). */
  yaml: string | null;
}

/** The budget's rule in words: given, or the default's formula with its figures. */
export function budgetRule(input: DesignInput, given: boolean): string {
  if (given) return "--exposure-budget";
  return `${DEFAULT_BUDGET_SHARE * 100}% of the SLO's 30-day error budget spent at the SLO's error rate: ${DEFAULT_BUDGET_SHARE} × ${input.rps} rps × ${SLO_WINDOW_SECONDS.toLocaleString("en-US")} s`;
}

function candidateOf(t: Tried, chosen: Tried | undefined): ReportCandidate {
  const { candidate, promoteSeconds, steps } = t.assessed;
  return {
    id: candidate.id,
    plan: shortForm(candidate),
    intervalSeconds: candidate.intervalSeconds,
    count: candidate.count,
    failureLimit: candidate.failureLimit,
    promoteSeconds: promoteSeconds ?? 0,
    firstAbort: steps?.[0]?.exposure as Exposure,
    simulated: t.simulated,
    verdict: t.verdict,
    chosen: t === chosen,
  };
}

/** Each step's fate in a bad version's run: aborted where its decision falls, passed before, not reached after. */
function fates(assessed: Assessed, run: RunOutcome, series: readonly SecondRecord[]) {
  let start = 0;
  let reachedEnd = false;
  return (assessed.steps ?? []).map((step) => {
    const end = start + step.seconds;
    const at = run.outcome === "aborted" ? (run.at ?? 0) : Number.POSITIVE_INFINITY;
    const fate: StepFate = reachedEnd || at < start ? "not reached" : at <= end ? "aborted" : "passed";
    if (fate === "aborted") reachedEnd = true;
    const until = Math.min(end, at);
    const requests =
      fate === "not reached" ? 0 : series.filter((s) => s.t < until).reduce((n, s) => n + s.newRequests, 0);
    start = end;
    return { fate, requests };
  });
}

function stepsOf(t: TriedWithSeries): ReportStep[] {
  const errors = fates(t.assessed, t.simulated.errors, t.series.errors);
  const latency = fates(t.assessed, t.simulated.latency, t.series.latency);
  return (t.assessed.steps ?? []).map((s, i) => ({
    index: s.index,
    weight: s.weight,
    share: s.share,
    candidateRps: s.candidateRps,
    seconds: s.seconds,
    arithmetic: s.exposure,
    simulated: {
      errors: errors[i] ?? { fate: "not reached", requests: 0 },
      latency: latency[i] ?? { fate: "not reached", requests: 0 },
    },
  }));
}

export interface ReportInput {
  input: DesignInput;
  budgetGiven: boolean;
  seed: number;
  thresholds: Thresholds;
  assessed: readonly Assessed[];
  tried: readonly TriedWithSeries[];
  chosen: TriedWithSeries | undefined;
  subtle: SubtleRun | undefined;
  simulations: number;
  wallSeconds: number;
}

/** The report of a search. */
export function designReport(r: ReportInput): DesignReport {
  const { input, thresholds: t, chosen } = r;
  const pruned: Partial<Record<PruneReason, number>> = {};
  for (const a of r.assessed) if (a.pruned) pruned[a.pruned] = (pruned[a.pruned] ?? 0) + 1;
  return {
    kind: "canary",
    inputs: { ...input, exposureBudgetRule: budgetRule(input, r.budgetGiven), seed: r.seed },
    look: {
      samples: t.lookSamples,
      alpha: LOOK_ALPHA,
      power: LOOK_POWER,
      errorRate: t.errorRate,
      p95Ms: t.p95Seconds * 1000,
      badLatencyFactor: Number(t.badLatencyFactor.toPrecision(4)),
      goodSlowShare: Number(t.goodSlowShare.toPrecision(4)),
      badSlowShare: Number(t.badSlowShare.toPrecision(4)),
    },
    search: {
      candidates: r.assessed.length,
      pruned,
      simulated: r.tried.length,
      accepted: r.tried.filter((x) => x.verdict.accepted).length,
      simulations: r.simulations,
      wallSeconds: Math.round(r.wallSeconds),
    },
    chosen: chosen
      ? {
          ...candidateOf(chosen, chosen),
          steps: stepsOf(chosen),
          costPerRollout: chosen.simulated.good.cost.total,
        }
      : null,
    candidates: r.tried.map((x) => candidateOf(x, chosen)),
    subtle: r.subtle ?? null,
    failureModes: chosen ? failureModes(input, t, chosen.assessed.candidate, r.subtle) : [],
    yaml: chosen ? chosenYaml(input, t, chosen) : null,
  };
}

/** The chosen plan's objects with the user's metric names, each after a comment saying what it is. */
function chosenYaml(input: DesignInput, t: Thresholds, chosen: Tried): string {
  const c = chosen.assessed.candidate;
  return candidateYaml(input, t, c, input.metrics, {
    rollout: [
      `Rollout ${input.name}: ${c.weights.map((w) => `${w}%`).join(" → ")}, the analysis after each weight`,
    ],
    template: [
      `AnalysisTemplate ${input.name}-slo: a look every ${c.intervalSeconds}s over the last ${c.intervalSeconds}s of the candidate's requests,`,
      `${c.count} look${c.count === 1 ? "" : "s"} per step, failureLimit ${c.failureLimit}; {{args.version}} is the new version's (valueFrom: podTemplateHashValue: Latest)`,
    ],
  });
}
