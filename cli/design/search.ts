import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Assessed,
  candidateYaml,
  SIMULATION_REQUESTS,
  simulationSlack,
} from "../../statemachine/design/arithmetic.ts";
import { type Candidate, shortForm } from "../../statemachine/design/candidates.ts";
import {
  MAX_SIMULATED,
  type RunOutcome,
  type Simulated,
  searchDone,
  simulationOrder,
  type Tried,
  verdictOf,
} from "../../statemachine/design/choose.ts";
import type { SubtleRun } from "../../statemachine/design/failure-modes.ts";
import type { DesignInput } from "../../statemachine/design/input.ts";
import type { Thresholds } from "../../statemachine/design/thresholds.ts";
import { parsePlan } from "../simulate/plan.ts";
import type {
  SecondRecord,
  SimulationOptions,
  SimulationRow,
  SimulationRuntime,
} from "../simulate/runtime.ts";

/**
 * The search's simulations: the candidates that survive the arithmetic, simulated in the order
 * it ranks them (`simulationOrder`), a few at a time, each against the three versions of a design
 * (`Simulated`) through the runtime's entry point, the one `rollouts simulate` calls. Candidates
 * whose analyses are the same template run as plans of one simulation (`--plan`), as many as a
 * simulation takes.
 */

/** Candidates simulated per round, before the search asks whether it may stop. */
const ROUND = 6;
/** The most plans one simulation compares (`docs/simulate.md`). */
const PLANS_PER_RUN = 20;

export interface SearchOptions {
  input: DesignInput;
  thresholds: Thresholds;
  assessed: readonly Assessed[];
  runtime: SimulationRuntime;
  /** A directory for the files each simulation reads. */
  dir: string;
  seed: number;
  /** Told after each simulation: the candidates simulated so far and of how many. */
  progress?: (done: number, of: number) => void;
}

/** A simulated candidate with its exposure over time (the per-second series of its bad versions' runs). */
export interface TriedWithSeries extends Tried {
  series: { errors: SecondRecord[]; latency: SecondRecord[] };
}

export interface SearchResult {
  tried: TriedWithSeries[];
  /** Calls of the runtime's entry point. */
  simulations: number;
}

type Version = keyof Simulated;

/** How each version of a design behaves in the simulation. */
function versionOptions(input: DesignInput, t: Thresholds, version: Version) {
  const b = input.baselineErrorRate;
  if (version === "good") return { errorRate: b, latencyFactor: 1 };
  if (version === "errors") return { errorRate: input.sloErrorRate, latencyFactor: 1 };
  return { errorRate: b, latencyFactor: t.badLatencyFactor };
}

const outcomeOf = (row: SimulationRow): RunOutcome => ({
  outcome: row.outcome,
  at: row.at,
  message: row.message,
  newRequests: row.newRequests,
  newErrors: row.newErrors,
  cost: { total: row.cost.total },
});

/** The simulations a group of candidates sharing a template fits in: each within the runtime's limits. */
function chunksOf(input: DesignInput, group: readonly Assessed[]): Assessed[][] {
  const chunks: Assessed[][] = [];
  for (const a of group) {
    const last = chunks[chunks.length - 1];
    const seconds = (x: readonly Assessed[]) => Math.max(...x.map(durationOf));
    if (
      last &&
      last.length < PLANS_PER_RUN &&
      input.rps * seconds([...last, a]) * (last.length + 1) <= SIMULATION_REQUESTS
    ) {
      last.push(a);
    } else chunks.push([a]);
  }
  return chunks;
}

/** Virtual seconds a candidate's simulation runs: its promotion on paper and some slack. */
const durationOf = (a: Assessed) => {
  const promote = a.promoteSeconds ?? 0;
  return promote + simulationSlack(promote);
};

const templateKey = (c: Candidate) => `${c.intervalSeconds}/${c.count}/${c.failureLimit}`;

/** Runs one chunk against one version: its rows, in the chunk's order. */
async function runChunk(
  o: SearchOptions,
  chunk: readonly Assessed[],
  file: string,
  version: Version,
  extra: Partial<SimulationOptions> = {},
): Promise<SimulationRow[]> {
  return o.runtime.simulate({
    files: [file],
    plans: chunk.map((a) => parsePlan(shortForm(a.candidate))),
    rps: o.input.rps,
    baselineErrorRate: o.input.baselineErrorRate,
    ...versionOptions(o.input, o.thresholds, version),
    ...(o.input.router === "none" ? { replicas: o.input.replicas } : {}),
    durationSeconds: Math.max(...chunk.map(durationOf)),
    seed: o.seed,
    series: version !== "good",
    untilDecided: true,
    ...extra,
  });
}

/** Simulates one chunk of candidates that share a template against the three versions. */
async function simulateChunk(
  o: SearchOptions,
  chunk: readonly Assessed[],
  index: number,
): Promise<TriedWithSeries[]> {
  const first = chunk[0] as Assessed;
  const file = join(o.dir, `chunk-${index}.yaml`);
  writeFileSync(file, candidateYaml(o.input, o.thresholds, first.candidate));
  const rows: Record<Version, SimulationRow[]> = { good: [], errors: [], latency: [] };
  for (const version of ["good", "errors", "latency"] as const) {
    rows[version] = await runChunk(o, chunk, file, version);
  }
  return chunk.map((assessed, i) => {
    const pick = (v: Version) => rows[v][i] as SimulationRow;
    const simulated: Simulated = {
      good: outcomeOf(pick("good")),
      errors: outcomeOf(pick("errors")),
      latency: outcomeOf(pick("latency")),
    };
    return {
      assessed,
      simulated,
      verdict: verdictOf(simulated, o.input.exposureBudget, o.input.maxDurationSeconds),
      series: { errors: pick("errors").series ?? [], latency: pick("latency").series ?? [] },
    };
  });
}

/**
 * Simulates candidates round by round until the search may stop (`searchDone`): at most
 * {@link MAX_SIMULATED}, each round the next ones in the arithmetic's order.
 */
export async function search(o: SearchOptions): Promise<SearchResult> {
  const order = simulationOrder(o.assessed);
  const of = Math.min(order.length, MAX_SIMULATED);
  const tried: TriedWithSeries[] = [];
  let simulations = 0;
  let next = 0;
  while (!searchDone(tried, order.slice(next))) {
    const round = order.slice(next, next + Math.min(ROUND, MAX_SIMULATED - tried.length));
    next += round.length;
    const groups = new Map<string, Assessed[]>();
    for (const a of round) {
      const key = templateKey(a.candidate);
      groups.set(key, [...(groups.get(key) ?? []), a]);
    }
    for (const group of groups.values()) {
      for (const chunk of chunksOf(o.input, group)) {
        tried.push(...(await simulateChunk(o, chunk, simulations)));
        simulations += 3;
        o.progress?.(tried.length, of);
      }
    }
  }
  return { tried, simulations };
}

/**
 * A subtle regression through the chosen candidate: a version failing half the SLO's error rate
 * (its latency good), simulated until the rollout decides.
 */
export async function simulateSubtle(o: SearchOptions, chosen: Tried): Promise<SubtleRun> {
  const file = join(o.dir, "subtle.yaml");
  writeFileSync(file, candidateYaml(o.input, o.thresholds, chosen.assessed.candidate));
  const errorRate = o.input.sloErrorRate / 2;
  const [row] = await runChunk(o, [chosen.assessed], file, "good", { errorRate, series: false });
  return { errorRate, run: outcomeOf(row as SimulationRow) };
}
