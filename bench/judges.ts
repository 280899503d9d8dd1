/**
 * Benchmarks of the statistical judges: how fast Mann-Whitney ranks 100,000 samples per side,
 * how often each monitor rolls back identical versions when it looks every 10 samples (the
 * false-rollback rate of continuous monitoring), and how many samples each needs to catch a real
 * regression. Every simulation is seeded, so the figures are reproducible.
 */
import {
  gaussian,
  mannWhitney,
  mulberry32,
  normalQuantile,
  samplesPerSide,
  simulateAaRollouts,
} from "../functions/judges/index.ts";
import type { SimulationSummary } from "../functions/judges/simulate.ts";
import type { Bench } from "./run.ts";

const ROLLOUTS = 1000;
const ALPHA = 0.05;
const LOOK_EVERY = 10;
const MAX_PER_SIDE = 2000;
const SEED = 2026;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[(sorted.length - 1) >> 1]!;
}

function timeMannWhitney(): string[] {
  const n = 100_000;
  const normal = gaussian(mulberry32(SEED));
  const candidate = Float64Array.from(
    { length: n },
    () => Math.round(Math.exp(4.7 + 0.5 * normal()) * 10) / 10,
  );
  const primary = Float64Array.from(
    { length: n },
    () => Math.round(Math.exp(4.6 + 0.5 * normal()) * 10) / 10,
  );
  mannWhitney(candidate, primary); // warm up the JIT
  const times: number[] = [];
  let z = 0;
  for (let i = 0; i < 7; i++) {
    const start = performance.now();
    z = mannWhitney(candidate, primary, "greater").z;
    times.push(performance.now() - start);
  }
  return [
    `Mann-Whitney U, 100,000 samples per side (latencies rounded to 0.1 ms, so with ties): median ${median(times).toFixed(1)} ms over 7 runs (candidate +10%: z = ${z.toFixed(1)})`,
  ];
}

/** The 95% interval of a rate over n runs (Wilson), so the reader can tell noise from a real excess. */
function wilson(rate: number, n: number): [number, number] {
  const z = 1.959963984540054;
  const denominator = 1 + (z * z) / n;
  const centre = (rate + (z * z) / (2 * n)) / denominator;
  const half = (z * Math.sqrt((rate * (1 - rate)) / n + (z * z) / (4 * n * n))) / denominator;
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

function percent(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

function rateLine(label: string, summary: SimulationSummary, sequential: boolean): string {
  const [low, high] = wilson(summary.rollbackRate, summary.rollouts);
  const verdict = sequential
    ? summary.rollbackRate <= ALPHA
      ? "  ≤ alpha: OK"
      : "  > alpha: VIOLATION"
    : "";
  return `  ${label.padEnd(46)} ${String(summary.rolledBack).padStart(4)}/${summary.rollouts}  ${percent(summary.rollbackRate).padStart(6)}  (95% CI ${percent(low)}–${percent(high)})${verdict}`;
}

function aaRates(): string[] {
  const common = {
    rollouts: ROLLOUTS,
    seed: SEED,
    alpha: ALPHA,
    lookEvery: LOOK_EVERY,
    maxPerSide: MAX_PER_SIDE,
  };
  const rows: [string, SimulationSummary, boolean][] = [
    ["naive Mann-Whitney (latency)", simulateAaRollouts({ ...common, monitor: "naive-mann-whitney" }), false],
    [
      "naive Mann-Whitney, 5% minimum effect",
      simulateAaRollouts({ ...common, monitor: "naive-mann-whitney", minEffect: 0.05 }),
      false,
    ],
    [
      "naive two-proportion z (1% errors)",
      simulateAaRollouts({ ...common, monitor: "naive-two-proportion" }),
      false,
    ],
    [
      "sequential latency (mSPRT on log latency)",
      simulateAaRollouts({ ...common, monitor: "sequential-latency" }),
      true,
    ],
    [
      "sequential rate (Poisson-process BF, 1% errors)",
      simulateAaRollouts({ ...common, monitor: "sequential-rate" }),
      true,
    ],
  ];
  if (rows.some(([, s, sequential]) => sequential && s.rollbackRate > ALPHA)) process.exitCode = 1;
  return [
    `A/A false-rollback rate: ${ROLLOUTS} seeded rollouts, identical versions (log-normal latency, median 100 ms, σ 0.5; 1% errors),`,
    `one-sided alpha ${ALPHA}, a look every ${LOOK_EVERY} samples per side up to ${MAX_PER_SIDE}:`,
    ...rows.map(([label, summary, sequential]) => rateLine(label, summary, sequential)),
  ];
}

/** Per-side n of a one-look test of mean log latency: 2 (z_α + z_β)² σ² / δ², δ = ln 1.2, σ = 0.5. */
function fixedLatencyN(): number {
  const z = normalQuantile(1 - ALPHA) + normalQuantile(0.8);
  return Math.ceil((2 * z * z * 0.25) / Math.log(1.2) ** 2);
}

function detectionLine(label: string, summary: SimulationSummary, horizon: number): string {
  const med = summary.medianSamplesToRollback;
  return `  ${label.padEnd(46)} median ${med === null ? `> ${horizon}` : String(med).padStart(5)} samples per side  (detected in ${percent(summary.rollbackRate)} of ${summary.rollouts} within ${horizon})`;
}

function detection(): string[] {
  const latency = {
    rollouts: ROLLOUTS,
    seed: SEED + 1,
    alpha: ALPHA,
    lookEvery: LOOK_EVERY,
    maxPerSide: MAX_PER_SIDE,
    candidateLatencyFactor: 1.2,
  };
  const errorHorizon = 20_000;
  const errors = {
    rollouts: ROLLOUTS,
    seed: SEED + 2,
    alpha: ALPHA,
    lookEvery: LOOK_EVERY,
    maxPerSide: errorHorizon,
    candidateErrorRate: 0.03,
  };
  return [
    "Samples to detect a real regression (same looks, same alpha):",
    `  +20% latency (one look at a fixed n with power 0.8 would need ${fixedLatencyN()} per side)`,
    detectionLine(
      "  sequential latency",
      simulateAaRollouts({ ...latency, monitor: "sequential-latency" }),
      MAX_PER_SIDE,
    ),
    detectionLine(
      "  naive Mann-Whitney (not error-controlled)",
      simulateAaRollouts({ ...latency, monitor: "naive-mann-whitney" }),
      MAX_PER_SIDE,
    ),
    `  errors 1% → 3% (one look at a fixed n with power 0.8 would need ${samplesPerSide({ baseline: 0.01, candidate: 0.03, alpha: ALPHA })} per side)`,
    detectionLine(
      "  sequential rate",
      simulateAaRollouts({ ...errors, monitor: "sequential-rate" }),
      errorHorizon,
    ),
    detectionLine(
      "  naive two-proportion (not error-controlled)",
      simulateAaRollouts({ ...errors, monitor: "naive-two-proportion" }),
      errorHorizon,
    ),
  ];
}

/** The judges' benchmark, run by bench/run.ts. */
export const bench: Bench = {
  name: "judges",
  run: () => [...timeMannWhitney(), "", ...aaRates(), "", ...detection()],
};
