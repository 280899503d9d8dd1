/**
 * `rollouts simulate` measured: the wall time of a 5-minute simulation of the reference canary
 * (the real workflow in the embedded runtime, a real Prometheus, virtual time), and the comparison
 * of threshold analysis with sequential judges on the same traffic: the bad requests a severe
 * (30% errors), a subtle (1% → 3% errors) and a latency (+30%) regression reach under each, and the
 * share of identical-version (A/A) rollouts each rolls back.
 * `BENCH_SIMULATE_AA` (default 20) A/A rollouts per design, `BENCH_SIMULATE_SEEDS` (default 3)
 * seeds per regression; `BENCH_SIMULATE_COMPARE=0` skips the comparison.
 */
import { prometheusVersion } from "../local/demo/prometheus.ts";
import { formatDollars } from "../local/simulate/cost.ts";
import { parsePlan } from "../local/simulate/plan.ts";
import { type SimulationRow, simulate } from "../local/simulate/run.ts";
import type { Bench } from "./run.ts";

const REFERENCE = ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"];
const JUDGED = ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"];
const BASELINE = 0.01;
const RPS = 100;
/** Long enough for the judged design's two analyses (20 looks of 30 s each) to finish. */
const COMPARE_SECONDS = 25 * 60;

interface Scenario {
  name: string;
  errorRate: number;
  latencyFactor: number;
  /** What counts as a bad request: a failed one, or any answered slowly. */
  bad: (row: SimulationRow) => number;
}

const SCENARIOS: Scenario[] = [
  { name: "severe (30% errors)", errorRate: 0.3, latencyFactor: 1, bad: (r) => r.newErrors },
  { name: "subtle (1% → 3% errors)", errorRate: 0.03, latencyFactor: 1, bad: (r) => r.newErrors },
  { name: "latency (+30%)", errorRate: BASELINE, latencyFactor: 1.3, bad: (r) => r.newRequests },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2;
};

async function compare(design: string, files: string[], aa: number, seeds: number): Promise<string[]> {
  const cells: string[] = [];
  for (const scenario of SCENARIOS) {
    const rows = await simulate({
      files,
      plans: Array.from({ length: seeds }, () => undefined),
      rps: RPS,
      errorRate: scenario.errorRate,
      baselineErrorRate: BASELINE,
      latencyFactor: scenario.latencyFactor,
      durationSeconds: COMPARE_SECONDS,
      seed: 1,
    });
    const aborted = rows.filter((r) => r.outcome === "aborted").length;
    cells.push(
      `${median(rows.map(scenario.bad)).toLocaleString("en-US")} (${aborted}/${rows.length} rolled back, median at ${median(rows.map((r) => r.at ?? COMPARE_SECONDS))} s)`,
    );
  }
  const aaRows = await simulate({
    files,
    plans: Array.from({ length: aa }, () => undefined),
    rps: RPS,
    errorRate: BASELINE,
    baselineErrorRate: BASELINE,
    durationSeconds: COMPARE_SECONDS,
    seed: 2,
  });
  const rolledBack = aaRows.filter((r) => r.outcome === "aborted").length;
  const unfinished = aaRows.filter((r) => r.outcome === "running" || r.outcome === "paused").length;
  cells.push(`${rolledBack}/${aa}${unfinished ? ` (${unfinished} undecided)` : ""}`);
  const promoted = aaRows.filter((r) => r.outcome === "promoted");
  return [
    `  ${design.padEnd(10)}  ${cells.join("  |  ")}`,
    `  ${"".padEnd(10)}  cost of a promoted A/A rollout (median of ${promoted.length}): ${formatDollars(median(promoted.map((r) => r.cost.total)))}, as a Wait loop ${formatDollars(median(promoted.map((r) => r.cost.waitLoop)))}; ${median(promoted.map((r) => r.counts.ticks))} Timer firings`,
  ];
}

export const bench: Bench = {
  name: "simulate",
  async run() {
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
    if (!prometheusVersion()) return ["skipped: no prometheus binary (apt-get install prometheus)"];
    const lines: string[] = [
      `wall time of a simulation of the reference canary (${RPS} rps, 30% errors, 5 minutes of virtual time):`,
    ];
    for (const plan of [undefined, "100"]) {
      const started = performance.now();
      const [row] = await simulate({
        files: REFERENCE,
        ...(plan ? { plans: [parsePlan(plan)] } : {}),
        rps: RPS,
        errorRate: 0.3,
        seed: 0,
      });
      const seconds = (performance.now() - started) / 1000;
      lines.push(
        `  ${(row?.plan ?? "").padEnd(36)}  ${row?.outcome} at ${row?.at} s, ${row?.newRequests} new requests  ${seconds.toFixed(1)} s wall  cost ${formatDollars(row?.cost.total ?? 0)} (a Wait loop: ${formatDollars(row?.cost.waitLoop ?? 0)})`,
      );
    }
    if (process.env.BENCH_SIMULATE_COMPARE === "0") return lines;
    const aa = Number(process.env.BENCH_SIMULATE_AA ?? 20);
    const seeds = Number(process.env.BENCH_SIMULATE_SEEDS ?? 3);
    lines.push(
      `threshold analysis (examples/rollout.yaml) vs sequential judges (examples/rollout-judged.yaml), ${RPS} rps, stable 1% errors, ${COMPARE_SECONDS / 60} min; bad requests served (median of ${seeds} seeds) and A/A rollouts rolled back:`,
      `  design      ${SCENARIOS.map((s) => s.name).join("  |  ")}  |  A/A rolled back`,
    );
    lines.push(...(await compare("threshold", REFERENCE, aa, seeds)));
    lines.push(...(await compare("judges", JUDGED, aa, seeds)));
    return lines;
  },
};
