/**
 * Judges through the real workflow in virtual time: the synthesized stack on the embedded
 * runtime (dynalite), the compiled state machine, the real handlers and the judge reading both
 * versions through the web provider from a synthetic source. Each rollout is setWeight 50, then an
 * analysis that looks every minute for up to 20 minutes, 150 requests per side between looks
 * (3,000 per side in all). Measured: the false-rollback rate of identical versions (A/A) per
 * test, and the samples per side at which a regression is caught, next to the fixed-horizon
 * sample size for the same alpha and power 0.8.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../functions/clock.ts";
import { normalQuantile } from "../functions/judges/normal.ts";
import { StoredAnalysisSchema } from "../functions/workflow/analysis.ts";
import { type LocalDynamo, startDynamo } from "../local/dynamo.ts";
import { startProxy } from "../local/proxy/server.ts";
import { localProxyTarget } from "../local/proxy/target.ts";
import { startSyntheticSource, type VersionModel } from "../local/simulate/source.ts";
import { startEmbeddedStack } from "../local/stack.ts";
import { samplesPerSide } from "../statemachine/sample-size.ts";
import { answerJob, runJobs, wilson } from "./jobs.ts";
import type { Bench } from "./run.ts";

const ALPHA = 0.05;
/** A look a minute (the Timer's Scheduler path) with 150 requests per side between looks. */
const LOOK_SECONDS = 60;
const LOOKS = 20;
const RPS_PER_SIDE = 150 / 60;
const HEALTHY: VersionModel = {
  requestsPerSecond: RPS_PER_SIDE,
  errorRate: 0.01,
  latencyMedianMs: 100,
  latencySigma: 0.5,
};

/** A version's behaviour from its tag: `err-*` fails 3%, `slow-*` is 20% slower, the rest are healthy. */
function model(version: string): VersionModel {
  if (version.startsWith("err-")) return { ...HEALTHY, errorRate: 0.03 };
  if (version.startsWith("slow-")) return { ...HEALTHY, latencyMedianMs: 120 };
  return HEALTHY;
}

type Test = "sequential-rate" | "sequential-latency" | "two-proportion";

function judgeYaml(test: Test, source: string): string {
  const side = (version: string, reading: string) =>
    `              web: {url: "${source}/stats?version={{rollout.${version}}}&since={{judge.since}}&until={{judge.now}}", jsonPath: "{$}"}
${reading}`;
  const counts = "              bad: result.errors\n              n: result.requests";
  const latency = "              value: result.latency";
  const fields =
    test === "sequential-latency"
      ? "            data: summary\n            minSamples: 100"
      : test === "sequential-rate"
        ? "            minSamples: 100"
        : "            baseline: 0.01\n            detect: 0.02";
  const reading = test === "sequential-latency" ? latency : counts;
  return `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: bench}
spec:
  template: {spec: {containers: [{name: app, image: bench}]}}
  strategy:
    canary:
      trafficRouting: {alb: {ingress: bench}}
      steps:
        - setWeight: 50
        - analysis: {templates: [{templateName: gate}]}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: gate}
spec:
  metrics:
    - name: gate
      initialDelay: ${LOOK_SECONDS}s
      interval: ${LOOK_SECONDS}s
      count: ${LOOKS}
      provider:
        plugin:
          sfn-rollouts/judge:
            test: ${test}
            alpha: ${ALPHA}
${fields}
            candidate:
${side("latest", reading)}
            stable:
${side("stable", reading)}
`;
}

interface Outcome {
  tag: string;
  phase: "Healthy" | "Degraded" | "other";
  /** Samples per side the candidate had served when the judge decided. */
  decidedAt: number | null;
}

/** One stack with one judged rollout spec: push tags one after the other and record each outcome. */
async function judged(dynamo: LocalDynamo, test: Test, seed: number) {
  const clock = new ManualClock(Date.parse("2026-12-01T00:00:00Z"));
  const source = await startSyntheticSource({ now: () => clock.now(), seed, model });
  const proxy = await startProxy({ now: () => clock.now() });
  const dir = mkdtempSync(join(tmpdir(), "sfn-rollouts-bench-"));
  const file = join(dir, "rollout.yaml");
  writeFileSync(file, judgeYaml(test, source.url));
  const stack = await startEmbeddedStack({
    specFiles: [file],
    target: localProxyTarget({
      adminUrl: proxy.adminUrl,
      readinessPath: "/healthz",
      upstreams: { "*": source.url },
    }),
    clock,
    dynamo,
    tableName: `bench-${test}-${seed}`,
  });
  const push = async (tag: string): Promise<Outcome> => {
    const digest = `sha256:${createHash("sha256").update(tag).digest("hex")}`;
    await stack.push(tag, digest);
    for (let i = 0; i < 200; i++) {
      await stack.runtime.settle();
      const item = await stack.item();
      if (item?.currentRevision?.tag === tag && (item.phase === "Healthy" || item.phase === "Degraded")) {
        const runs = await stack.store.listRuns(stack.rollout, StoredAnalysisSchema);
        const run = runs.find((r) => r.run.context.executionArn === item.executionArn);
        const gate = run?.run.run.metricResults[0]?.judge?.last;
        return { tag, phase: item.phase, decidedAt: gate?.candidate?.n ?? null };
      }
      await stack.runtime.advanceBy(LOOK_SECONDS * 1000);
    }
    return { tag, phase: "other", decidedAt: null };
  };
  return {
    push,
    close: async () => {
      await stack.close();
      await proxy.close();
      await source.close();
    },
  };
}

/** The Wilson 95% interval of a proportion, as a range in percent. */
function interval(k: number, n: number): string {
  const { low, high } = wilson(k, n);
  return `${low.toFixed(1)}–${high.toFixed(1)}%`;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2;
};

/** One unit of the benchmark, run in its own process. */
type Job =
  | { kind: "aa"; test: Test; rollouts: number }
  | { kind: "detect"; test: Test; prefix: "err" | "slow"; rollouts: number };

interface JobResult {
  job: Job;
  rolledBack: number;
  unfinished: number;
  caught: number[];
  seconds: number;
}

async function runJob(job: Job): Promise<JobResult> {
  const started = performance.now();
  const dynamo = await startDynamo("dynalite");
  const stack = await judged(dynamo, job.test, job.kind === "aa" ? 1 : 2);
  let rolledBack = 0;
  let unfinished = 0;
  const caught: number[] = [];
  try {
    await stack.push(job.kind === "aa" ? "aa-0" : "ok-0");
    let healthy = 0;
    for (let i = 1; i <= job.rollouts; i++) {
      const outcome = await stack.push(job.kind === "aa" ? `aa-${i}` : `${job.prefix}-${i}`);
      if (outcome.phase === "other") unfinished++;
      if (outcome.phase === "Degraded") {
        rolledBack++;
        if (outcome.decidedAt !== null) caught.push(outcome.decidedAt);
      }
      // A missed regression became stable: put a healthy version back before the next one.
      if (job.kind === "detect" && outcome.phase === "Healthy") await stack.push(`ok-${++healthy}`);
    }
  } finally {
    await stack.close();
    await dynamo.close();
  }
  return { job, rolledBack, unfinished, caught, seconds: (performance.now() - started) / 1000 };
}

const FIXED = {
  errors: samplesPerSide({ baseline: 0.01, candidate: 0.03, alpha: ALPHA }),
  // Two-sample t on log latency, σ 0.5: n = 2 (z_α + z_β)² σ² / ln(1.2)².
  latency: Math.ceil(
    (2 * (normalQuantile(1 - ALPHA) + normalQuantile(0.8)) ** 2 * 0.25) / Math.log(1.2) ** 2,
  ),
};

export const bench: Bench = {
  name: "judged",
  async run() {
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
    const rollouts = Number(process.env.BENCH_JUDGED_ROLLOUTS ?? 500);
    const detections = Number(process.env.BENCH_JUDGED_DETECTIONS ?? 100);
    const jobs: Job[] = [
      { kind: "aa", test: "sequential-rate", rollouts },
      { kind: "aa", test: "sequential-latency", rollouts },
      { kind: "aa", test: "two-proportion", rollouts },
      { kind: "detect", test: "sequential-rate", prefix: "err", rollouts: detections },
      { kind: "detect", test: "two-proportion", prefix: "err", rollouts: detections },
      { kind: "detect", test: "sequential-latency", prefix: "slow", rollouts: detections },
    ];
    // BENCH_JUDGED_ONLY=two-proportion runs the jobs of one test.
    const only = process.env.BENCH_JUDGED_ONLY;
    const results = await runJobs<Job, JobResult>(
      import.meta.url,
      "BENCH_JUDGED_JOB",
      only ? jobs.filter((j) => j.test === only) : jobs,
    );
    const lines: string[] = [
      `through the real workflow (embedded runtime, dynalite, virtual time): setWeight 50, a look every ${LOOK_SECONDS} s, up to ${LOOKS} looks, ${Math.round(RPS_PER_SIDE * LOOK_SECONDS)} requests per side between looks, alpha ${ALPHA}`,
      "  test                A/A rollouts  rolled back  rate (95% CI)      wall time",
    ];
    for (const r of results.filter((r) => r.job.kind === "aa")) {
      const n = r.job.rollouts;
      const rate = r.rolledBack / n;
      lines.push(
        `  ${r.job.test.padEnd(18)}  ${String(n).padStart(12)}  ${String(r.rolledBack).padStart(11)}  ${`${(100 * rate).toFixed(1)}% (${interval(r.rolledBack, n)})`.padEnd(17)}  ${r.seconds.toFixed(0)} s${r.unfinished ? `  (${r.unfinished} did not finish)` : ""}`,
      );
      if (r.job.test !== "two-proportion" && rate > ALPHA) process.exitCode = 1;
      if (r.unfinished > 0) process.exitCode = 1;
    }
    lines.push(
      "  regression                           rollouts  caught  median samples per side when caught  fixed horizon (same alpha, power 0.8)",
    );
    for (const r of results) {
      if (r.job.kind !== "detect") continue;
      const what = r.job.prefix === "err" ? "errors 1% → 3%" : "latency +20%";
      const fixed = r.job.prefix === "err" ? FIXED.errors : FIXED.latency;
      lines.push(
        `  ${`${what} (${r.job.test})`.padEnd(36)}  ${String(r.job.rollouts).padStart(8)}  ${`${((100 * r.caught.length) / r.job.rollouts).toFixed(0)}%`.padStart(6)}  ${String(median(r.caught)).padStart(36)}  ${fixed}`,
      );
      if (r.unfinished > 0) process.exitCode = 1;
    }
    return lines;
  },
};

await answerJob("BENCH_JUDGED_JOB", runJob);
