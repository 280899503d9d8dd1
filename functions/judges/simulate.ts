import { mannWhitneySorted } from "./mann-whitney.ts";
import { twoProportion } from "./proportions.ts";
import { addLatency, emptyLogSummary, type LogSummary, sequentialLatency } from "./sequential-latency.ts";
import { sequentialRate } from "./sequential-rate.ts";

/** A source of uniform numbers in [0, 1). */
export type Prng = () => number;

/**
 * mulberry32: a tiny seeded 32-bit generator. Good enough for simulations whose figures must be
 * reproducible from a seed (Math.random cannot be seeded), not for cryptography.
 */
export function mulberry32(seed: number): Prng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal draws from a uniform source (Box-Muller; the second value of each pair is kept). */
export function gaussian(random: Prng): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const value = spare;
      spare = null;
      return value;
    }
    const u1 = 1 - random(); // (0, 1]: log never sees 0
    const u2 = random();
    const radius = Math.sqrt(-2 * Math.log(u1));
    spare = radius * Math.sin(2 * Math.PI * u2);
    return radius * Math.cos(2 * Math.PI * u2);
  };
}

/** Inserts `value` into the sorted prefix `values[0..length)`, keeping it sorted. */
function insertSorted(values: Float64Array, length: number, value: number): void {
  let low = 0;
  let high = length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (values[mid]! <= value) low = mid + 1;
    else high = mid;
  }
  values.copyWithin(low + 1, low, length);
  values[low] = value;
}

/** How a monitor looks at the growing window. */
export type Monitor =
  | "naive-mann-whitney"
  | "naive-two-proportion"
  | "sequential-latency"
  | "sequential-rate";

/** A simulated rollout's traffic and the monitor's thresholds. */
export interface AaOptions {
  readonly monitor: Monitor;
  readonly rollouts: number;
  readonly seed: number;
  /** Samples per side between looks (default 10). */
  readonly lookEvery?: number;
  /** Samples per side at which a rollout that never rolled back is promoted (default 2000). */
  readonly maxPerSide?: number;
  readonly alpha?: number;
  /** Relative worsening that must also be exceeded (latency: median or geometric-mean ratio − 1; rates: difference). Default 0. */
  readonly minEffect?: number;
  /** Median latency of the primary in ms (default 100) and σ of ln latency (default 0.5). */
  readonly latencyMedian?: number;
  readonly latencySigma?: number;
  /** The candidate's latency multiplier (1 for A/A, 1.2 for +20%). */
  readonly candidateLatencyFactor?: number;
  readonly primaryErrorRate?: number;
  /** The candidate's error rate (defaults to the primary's: A/A). */
  readonly candidateErrorRate?: number;
  /** Mixture variance of the sequential latency test. */
  readonly g?: number;
  /** Prior concentration of the sequential rate test. */
  readonly concentration?: number;
}

/** What a batch of simulated rollouts did. */
export interface SimulationSummary {
  readonly monitor: Monitor;
  readonly rollouts: number;
  /** Rollouts the monitor rolled back. */
  readonly rolledBack: number;
  readonly rollbackRate: number;
  /** Median samples per side at rollback, counting rollouts never rolled back as never (null when fewer than half rolled back). */
  readonly medianSamplesToRollback: number | null;
}

/**
 * Simulates seeded rollouts in which a monitor re-judges the growing window every `lookEvery`
 * samples per side, as a controller does on every tick, and counts how many it rolls back. With
 * identical versions (A/A) that count is the false-rollback rate: the figure that shows why a
 * fixed-sample test must not be peeked at, and that the sequential tests stay under alpha.
 * Every monitor sees the same traffic for the same seed.
 */
export function simulateAaRollouts(options: AaOptions): SimulationSummary {
  const lookEvery = options.lookEvery ?? 10;
  const maxPerSide = options.maxPerSide ?? 2000;
  const alpha = options.alpha ?? 0.05;
  const minEffect = options.minEffect ?? 0;
  const logMedian = Math.log(options.latencyMedian ?? 100);
  const sigma = options.latencySigma ?? 0.5;
  const logFactor = Math.log(options.candidateLatencyFactor ?? 1);
  const primaryErrorRate = options.primaryErrorRate ?? 0.01;
  const candidateErrorRate = options.candidateErrorRate ?? primaryErrorRate;
  const stopsAt: number[] = [];
  // Kept sorted as samples arrive, so each naive Mann-Whitney look is one merge, not two sorts.
  const candidateLatency = new Float64Array(maxPerSide);
  const primaryLatency = new Float64Array(maxPerSide);

  for (let rollout = 0; rollout < options.rollouts; rollout++) {
    const random = mulberry32(options.seed * 1_000_003 + rollout);
    const normal = gaussian(random);
    let cBad = 0;
    let pBad = 0;
    let cLog: LogSummary = emptyLogSummary;
    let pLog: LogSummary = emptyLogSummary;
    let previousPValue = 1;
    let stoppedAt = Number.POSITIVE_INFINITY;
    for (let n = 1; n <= maxPerSide; n++) {
      // One request to each side: latency and error drawn in a fixed order so monitors share data.
      const cl = Math.exp(logMedian + logFactor + sigma * normal());
      const pl = Math.exp(logMedian + sigma * normal());
      if (random() < candidateErrorRate) cBad++;
      if (random() < primaryErrorRate) pBad++;
      if (options.monitor === "naive-mann-whitney") {
        insertSorted(candidateLatency, n - 1, cl);
        insertSorted(primaryLatency, n - 1, pl);
      }
      if (options.monitor === "sequential-latency") {
        cLog = addLatency(cLog, cl);
        pLog = addLatency(pLog, pl);
      }
      if (n % lookEvery !== 0) continue;
      let rollback = false;
      switch (options.monitor) {
        case "naive-mann-whitney": {
          const r = mannWhitneySorted(
            candidateLatency.subarray(0, n),
            primaryLatency.subarray(0, n),
            "greater",
          );
          rollback = r.pValue < alpha && r.medianCandidate / r.medianPrimary - 1 > minEffect;
          break;
        }
        case "naive-two-proportion": {
          const r = twoProportion({ bad: cBad, n }, { bad: pBad, n }, "greater");
          rollback = r.pValue < alpha && r.effect > minEffect;
          break;
        }
        case "sequential-latency": {
          const r = sequentialLatency(cLog, pLog, { previousPValue, g: options.g });
          previousPValue = r.pValue;
          rollback = r.pValue < alpha && r.effect > minEffect;
          break;
        }
        case "sequential-rate": {
          const r = sequentialRate(
            { bad: cBad, n },
            { bad: pBad, n },
            { previousPValue, allocation: 0.5, concentration: options.concentration },
          );
          previousPValue = r.pValue;
          rollback = r.pValue < alpha && r.effect > minEffect;
          break;
        }
      }
      if (rollback) {
        stoppedAt = n;
        break;
      }
    }
    stopsAt.push(stoppedAt);
  }
  const rolledBack = stopsAt.filter(Number.isFinite).length;
  stopsAt.sort((a, b) => a - b);
  const middle = stopsAt.length === 0 ? Number.POSITIVE_INFINITY : stopsAt[(stopsAt.length - 1) >> 1]!;
  return {
    monitor: options.monitor,
    rollouts: options.rollouts,
    rolledBack,
    rollbackRate: options.rollouts === 0 ? 0 : rolledBack / options.rollouts,
    medianSamplesToRollback: Number.isFinite(middle) ? middle : null,
  };
}
