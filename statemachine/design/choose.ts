import type { Assessed } from "./arithmetic.ts";

/**
 * The choice among simulated candidates: the fastest promotion of a good version among the
 * candidates that stop both bad versions within the exposure budget, and the order in which the
 * search simulates them (the plan's arithmetic first: a simulation never promotes sooner than the
 * analyses allow, so a candidate slower on paper than the best simulated one cannot win).
 */

/** What a simulation of one candidate with one version reports (a `rollouts simulate` row's fields). */
export interface RunOutcome {
  outcome: "promoted" | "aborted" | "paused" | "running";
  /** Seconds from the push to the decision. */
  at: number | null;
  message: string | null;
  /** Requests the new version served, and of them failed. */
  newRequests: number;
  newErrors: number;
  cost: { total: number };
}

/** The three versions every simulated candidate meets. */
export interface Simulated {
  /** The baseline's errors and the good latency: it should be promoted. */
  good: RunOutcome;
  /** Failing at the SLO's error rate: it should be stopped. */
  errors: RunOutcome;
  /** Slower past the SLO's p95: it should be stopped. */
  latency: RunOutcome;
}

export type Verdict =
  | { accepted: true; promoteSeconds: number; exposure: number }
  | { accepted: false; reason: string; promoteSeconds: number | null; exposure: number | null };

const bad = (name: string, run: RunOutcome) =>
  run.outcome === "promoted"
    ? `the ${name} version was promoted at ${run.at}s`
    : run.outcome === "aborted"
      ? undefined
      : `the ${name} version was not stopped (${run.outcome}${run.at === null ? "" : ` at ${run.at}s`})`;

/**
 * A simulated candidate is accepted when the good version is promoted within the maximum duration
 * and each bad version is aborted having served at most the budget; its exposure is the larger of
 * the two bad versions' requests.
 */
export function verdictOf(sim: Simulated, budget: number, maxDurationSeconds: number): Verdict {
  const stopped = [bad("error", sim.errors), bad("latency", sim.latency)].filter(
    (x): x is string => x !== undefined,
  );
  const exposure = stopped.length > 0 ? null : Math.max(sim.errors.newRequests, sim.latency.newRequests);
  const promoteSeconds = sim.good.outcome === "promoted" ? sim.good.at : null;
  const reasons = [...stopped];
  if (sim.good.outcome !== "promoted") {
    reasons.push(
      `the good version was ${sim.good.outcome === "aborted" ? `aborted at ${sim.good.at}s: ${sim.good.message ?? ""}`.trim() : `not promoted (${sim.good.outcome})`}`,
    );
  } else if ((sim.good.at ?? 0) > maxDurationSeconds) {
    reasons.push(`the good version took ${sim.good.at}s, more than --max-duration`);
  }
  if (exposure !== null && exposure > budget) {
    reasons.push(`a bad version served ${exposure} requests, more than the budget of ${budget}`);
  }
  if (reasons.length > 0 || promoteSeconds === null || exposure === null) {
    return { accepted: false, reason: reasons.join("; "), promoteSeconds, exposure };
  }
  return { accepted: true, promoteSeconds, exposure };
}

/** The candidates worth simulating, in the order the search simulates them. */
export function simulationOrder(assessed: readonly Assessed[]): Assessed[] {
  return assessed
    .filter((a) => a.pruned === undefined && a.promoteSeconds !== undefined)
    .sort(
      (a, b) =>
        (a.promoteSeconds ?? 0) - (b.promoteSeconds ?? 0) ||
        (a.steps?.[0]?.exposure.requests ?? 0) - (b.steps?.[0]?.exposure.requests ?? 0) ||
        a.candidate.weights.length - b.candidate.weights.length ||
        a.candidate.id.localeCompare(b.candidate.id),
    );
}

/** A simulated candidate and its verdict. */
export interface Tried {
  assessed: Assessed;
  simulated: Simulated;
  verdict: Verdict;
}

/** The chosen candidate: the fastest accepted, then the least exposed, then the fewest steps. */
export function choose(tried: readonly Tried[]): Tried | undefined {
  const accepted = tried.filter((t) => t.verdict.accepted);
  return accepted.sort(
    (a, b) =>
      (a.verdict.promoteSeconds ?? 0) - (b.verdict.promoteSeconds ?? 0) ||
      (a.verdict.exposure ?? 0) - (b.verdict.exposure ?? 0) ||
      a.assessed.candidate.weights.length - b.assessed.candidate.weights.length ||
      a.assessed.candidate.id.localeCompare(b.assessed.candidate.id),
  )[0];
}

/** The fewest candidates a search simulates (when that many survive), so the choice has rivals to show. */
export const MIN_SIMULATED = 6;

/** The most candidates a search simulates before it gives up looking for one to accept. */
export const MAX_SIMULATED = 30;

/**
 * Whether the search may stop: it has simulated at least {@link MIN_SIMULATED} candidates (or
 * all), and no candidate left could be promoted sooner than the best accepted one, because on
 * paper it already takes longer; or it has simulated {@link MAX_SIMULATED}.
 */
export function searchDone(tried: readonly Tried[], remaining: readonly Assessed[]): boolean {
  if (remaining.length === 0 || tried.length >= MAX_SIMULATED) return true;
  if (tried.length < MIN_SIMULATED) return false;
  const best = choose(tried);
  if (!best) return false;
  const next = remaining[0]?.promoteSeconds ?? Number.POSITIVE_INFINITY;
  return next > (best.verdict.promoteSeconds ?? 0);
}
