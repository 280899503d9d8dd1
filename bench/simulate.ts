/**
 * `rollouts simulate` measured: the wall time of a 5-minute simulation of the reference canary
 * (the real workflow in the embedded runtime, a real Prometheus, virtual time), and the table that
 * compares the threshold example (`examples/rollout.yaml`) with the judged example
 * (`examples/rollout-judged.yaml`) on the same traffic: 100 rps, the stable version failing 1%.
 * For a severe (30% errors), a subtle (1% → 3% errors) and a latency (+30%) regression, the bad
 * requests each design lets through on the same seeds (a failed request, or any request to a
 * slower version), until the version is rolled back or, promoted, until 25 minutes after its push;
 * and the identical releases (A/A) each design rolls back, with a 95% interval.
 *
 * `BENCH_SIMULATE_SEEDS` (default 20) seeds per regression, `BENCH_SIMULATE_AA` (default 1000) A/A
 * rollouts per design; `BENCH_SIMULATE_COMPARE=0` skips the table. The simulations run in child
 * processes, as many at once as the machine has cores (48 minutes on 2 cores with the
 * defaults). `npm run bench -- simulate` prints the table as the README shows it.
 */
import { availableParallelism } from "node:os";
import { formatDollars } from "../cli/simulate/cost.ts";
import { parsePlan } from "../cli/simulate/plan.ts";
import type { SimulationRow } from "../cli/simulate/runtime.ts";
import { prometheusVersion } from "../local/prometheus.ts";
import { MAX_PLANS, simulate } from "../local/simulate/run.ts";
import { answerJob, runJobs, wilson } from "./jobs.ts";
import type { Bench } from "./run.ts";

const DESIGNS = {
  threshold: ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"],
  judges: ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"],
} as const;
type Design = keyof typeof DESIGNS;
const BASELINE = 0.01;
const RPS = 100;
/** How long a promoted bad version serves before a person notices. */
const COMPARE_SECONDS = 25 * 60;

interface Scenario {
  name: string;
  errorRate: number;
  latencyFactor: number;
  /** What counts as a bad request: a failed one, or any answered slowly. */
  bad: "failed" | "slow";
}

const SCENARIOS: Scenario[] = [
  { name: "severe: 30% errors", errorRate: 0.3, latencyFactor: 1, bad: "failed" },
  { name: "subtle: 1% → 3% errors", errorRate: 0.03, latencyFactor: 1, bad: "failed" },
  { name: "latency: +30%", errorRate: BASELINE, latencyFactor: 1.3, bad: "slow" },
];

/** One simulate call of up to MAX_PLANS rollouts, in its own process. */
interface Job {
  design: Design;
  /** An index into SCENARIOS, or "aa": identical versions. */
  scenario: number | "aa";
  seed: number;
  rollouts: number;
}

/** What a job keeps of each rollout. */
interface Outcome {
  outcome: SimulationRow["outcome"];
  at: number | null;
  bad: number;
  cost: number;
  message: string | null;
}

async function runJob(job: Job): Promise<Outcome[]> {
  const aa = job.scenario === "aa";
  const scenario = aa ? undefined : SCENARIOS[job.scenario as number];
  const rows = await simulate({
    files: [...DESIGNS[job.design]],
    plans: Array.from({ length: job.rollouts }, () => undefined),
    rps: RPS,
    errorRate: scenario?.errorRate ?? BASELINE,
    baselineErrorRate: BASELINE,
    latencyFactor: scenario?.latencyFactor ?? 1,
    durationSeconds: COMPARE_SECONDS,
    seed: job.seed,
    // An A/A rollout counts its outcome, not what it serves once promoted.
    untilDecided: aa,
  });
  return rows.map((r) => ({
    outcome: r.outcome,
    at: r.at,
    bad: scenario?.bad === "slow" ? r.newRequests : r.newErrors,
    cost: r.cost.total,
    message: r.message,
  }));
}

/** Jobs of `rollouts` rollouts of one design and scenario, in calls of at most MAX_PLANS. */
function batches(design: Design, scenario: Job["scenario"], rollouts: number, firstSeed: number): Job[] {
  const jobs: Job[] = [];
  for (let done = 0, seed = firstSeed; done < rollouts; done += MAX_PLANS, seed++) {
    jobs.push({ design, scenario, seed, rollouts: Math.min(MAX_PLANS, rollouts - done) });
  }
  return jobs;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2;
};

const count = (x: number) => x.toLocaleString("en-US");
const seconds = (x: number) => (x >= 60 ? `${Math.floor(x / 60)}m${x % 60 ? `${x % 60}s` : ""}` : `${x} s`);

/** One cell of a regression row: the median bad requests, their range, and when it was stopped. */
function cell(outcomes: Outcome[], bad: Scenario["bad"]): string {
  const values = outcomes.map((o) => o.bad);
  const aborted = outcomes.filter((o) => o.outcome === "aborted");
  const range = `${count(Math.min(...values))}–${count(Math.max(...values))}`;
  const what = bad === "slow" ? "slow" : "failed";
  const stopped =
    aborted.length === outcomes.length
      ? `rolled back in all ${outcomes.length}, median at ${seconds(median(aborted.map((o) => o.at ?? 0)))}`
      : aborted.length === 0
        ? `never caught in ${outcomes.length}`
        : `rolled back in ${aborted.length} of ${outcomes.length}`;
  return `${count(median(values))} ${what} (${range}); ${stopped}`;
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
        files: [...DESIGNS.threshold],
        ...(plan ? { plans: [parsePlan(plan)] } : {}),
        rps: RPS,
        errorRate: 0.3,
        seed: 0,
      });
      const wall = (performance.now() - started) / 1000;
      lines.push(
        `  ${(row?.plan ?? "").padEnd(36)}  ${row?.outcome} at ${row?.at} s, ${row?.newRequests} new requests  ${wall.toFixed(1)} s wall  cost ${formatDollars(row?.cost.total ?? 0)} (a Wait loop: ${formatDollars(row?.cost.waitLoop ?? 0)})`,
      );
    }
    if (process.env.BENCH_SIMULATE_COMPARE === "0") return lines;
    const seeds = Number(process.env.BENCH_SIMULATE_SEEDS ?? 20);
    const aa = Number(process.env.BENCH_SIMULATE_AA ?? 1000);
    const jobs: Job[] = [];
    for (const design of Object.keys(DESIGNS) as Design[]) {
      // The same seeds for both designs: the same requests fail, whatever the design does.
      for (const i of SCENARIOS.keys()) jobs.push(...batches(design, i, seeds, 1));
      jobs.push(...batches(design, "aa", aa, 1001));
    }
    const started = performance.now();
    const results = await runJobs<Job, Outcome[]>(import.meta.url, "BENCH_SIMULATE_JOB", jobs);
    const outcomes = (design: Design, scenario: Job["scenario"]) =>
      jobs.flatMap((job, i) =>
        job.design === design && job.scenario === scenario ? (results[i] ?? []) : [],
      );
    lines.push(
      "",
      `threshold (examples/rollout.yaml) vs judges (examples/rollout-judged.yaml): ${RPS} rps, the stable version failing 1%, a promoted version serving everyone until ${COMPARE_SECONDS / 60} minutes after its push; bad requests, median (range) of ${seeds} seeds, the same seeds for both; ${Math.round((performance.now() - started) / 1000)} s on ${availableParallelism()} cores`,
      "",
      "| regression | threshold | judges |",
      "|---|---|---|",
    );
    SCENARIOS.forEach((scenario, i) => {
      const threshold = outcomes("threshold", i);
      const judges = outcomes("judges", i);
      lines.push(`| ${scenario.name} | ${cell(threshold, scenario.bad)} | ${cell(judges, scenario.bad)} |`);
      if (judges.some((o) => o.outcome !== "aborted")) process.exitCode = 1;
      if (i === 0) {
        const noWorse = judges.filter(
          (o, k) => o.bad <= (threshold[k]?.bad ?? Number.NEGATIVE_INFINITY),
        ).length;
        lines.push(
          `| — judges no worse than the threshold, seed by seed | | ${noWorse} of ${judges.length} |`,
        );
        if (noWorse < judges.length) process.exitCode = 1;
      }
    });
    const aaCells = (Object.keys(DESIGNS) as Design[]).map((design) => {
      const o = outcomes(design, "aa");
      const k = o.filter((x) => x.outcome === "aborted").length;
      const undecided = o.filter((x) => x.outcome === "running" || x.outcome === "paused").length;
      const { low, high } = wilson(k, o.length);
      if (design === "judges" && k / o.length > 0.05) process.exitCode = 1;
      const promoted = o.filter((x) => x.outcome === "promoted");
      return {
        text: `${count(k)} of ${count(o.length)}: ${((100 * k) / o.length).toFixed(1)}% (95% CI ${low.toFixed(1)}–${high.toFixed(1)}%)${undecided ? `, ${undecided} undecided` : ""}`,
        cost: median(promoted.map((x) => x.cost)),
      };
    });
    lines.push(`| identical releases rolled back | ${aaCells.map((c) => c.text).join(" | ")} |`);
    lines.push(
      `| cost of a promoted identical release (median) | ${aaCells.map((c) => formatDollars(c.cost)).join(" | ")} |`,
    );
    for (const o of outcomes("judges", "aa").filter((x) => x.outcome === "aborted")) {
      lines.push(`  A/A rolled back at ${o.at} s: ${o.message}`);
    }
    return lines;
  },
};

await answerJob("BENCH_SIMULATE_JOB", runJob);
