/**
 * `npm run soak -- [--count N] [--rate R] [--faults all|none|kind,kind] [--seed S] [--pushes-per-minute K] [--summary FILE]`:
 * many rollouts of mixed scripts at once on the embedded runtime, in virtual time, with faults
 * injected at rate R per call (`test/support/soak-faults.ts`), then the checker
 * (`test/support/soak.ts`): every difference from what each rollout's script calls for is printed,
 * and the exit code is 1 when there is one. Prints the figures of the run; `--summary` writes what
 * each rollout went through and how it ended, a line each (two runs of a seed write the same file).
 */

import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { checkSoak, runSoak, type SoakRun, soakSummary } from "../test/support/soak.ts";
import { FAULT_KINDS, parseFaultKinds } from "../test/support/soak-faults.ts";

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";

function whole(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new RangeError(`--${name} must be a whole number > 0, got "${text}"`);
  return value;
}

function rateOf(text: string | undefined): number {
  if (text === undefined) return 0.05;
  const value = Number(text);
  if (!(value >= 0 && value <= 1)) throw new RangeError(`--rate must be a number in [0, 1], got "${text}"`);
  return value;
}

/** The figures of a run, as lines. */
export async function soakFigures(run: SoakRun, wallMs: number, peakRss: number): Promise<string[]> {
  const lines: string[] = [];
  const faults = run.plan.injected;
  lines.push(`rollouts: ${run.rollouts.length} (${countBy(run.rollouts.map((r) => r.script))})`);
  lines.push(
    `virtual time: ${(run.virtualMs / 60_000).toFixed(1)} min; wall time: ${(wallMs / 1000).toFixed(1)} s; peak RSS: ${(peakRss / 2 ** 20).toFixed(0)} MiB`,
  );
  lines.push(`faults injected: ${faults.length} (${countBy(faults.map((f) => f.kind))})`);
  lines.push("requests per API:");
  for (const [api, n] of [...run.plan.calls].sort((a, b) => a[0].localeCompare(b[0])))
    lines.push(`  ${api}: ${n}`);
  const retried = run.rollouts.flatMap((r) => r.retried);
  lines.push(
    `pushes and operator commands tried again: ${retried.length} (${countBy(retried.map((t) => t.split(":")[0] ?? ""))})`,
  );
  const { failures, redelivered, lost } = run.delivery;
  lines.push(
    `Timer firings whose resume failed: ${new Set(failures.map((f) => f.firing.key)).size} (failed attempts: ${countBy(failures.map((f) => f.stage))})`,
  );
  lines.push(
    `Timer firings redelivered from the queue after Lambda's async retries: ${redelivered.length}; lost to the dead-letter queue: ${lost.length}`,
  );
  const tasks = taskRetries(run);
  lines.push(
    `Task attempts that failed and were retried by Step Functions: ${tasks.retried} (${countBy(tasks.errors)})`,
  );
  lines.push(
    `slowest decision after a fault: ${((await slowestDecision(run)) / 1000).toFixed(0)} s of virtual time`,
  );
  return lines;
}

function countBy(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
}

/** Failed Task attempts in every execution's history, and their errors. */
function taskRetries(run: SoakRun): { retried: number; errors: string[] } {
  const errors: string[] = [];
  for (const r of run.rollouts)
    for (const e of r.executions)
      for (const event of run.runtime.sfn.getExecutionHistory(e.arn))
        if (event.type === "TaskFailed" || event.type === "LambdaFunctionFailed")
          errors.push(String(event.taskFailedEventDetails?.error ?? event.type));
  return { retried: errors.length, errors };
}

/**
 * The longest virtual time from a fault injected into a rollout's call to the next event the
 * rollout records (its next decision).
 */
async function slowestDecision(run: SoakRun): Promise<number> {
  let slowest = 0;
  const items = new Map(run.rollouts.map((r) => [r.name, r]));
  for (const fault of run.plan.injected) {
    const name = /svc-\d{4}/.exec(fault.where)?.[0];
    if (name === undefined || !items.has(name)) continue;
    const events = (await run.store.get(name))?.events ?? [];
    const next = events.find((e) => e.at >= fault.at);
    if (next !== undefined) slowest = Math.max(slowest, next.at - fault.at);
  }
  return slowest;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      count: { type: "string" },
      rate: { type: "string" },
      faults: { type: "string" },
      seed: { type: "string" },
      "pushes-per-minute": { type: "string" },
      summary: { type: "string" },
    },
  });
  const count = whole("count", values.count, 100);
  const rate = rateOf(values.rate);
  const faults = parseFaultKinds(values.faults ?? "all");
  const seed = whole("seed", values.seed, 1);
  const pushesPerMinute = whole("pushes-per-minute", values["pushes-per-minute"], 60);
  console.log(
    `soak: ${count} rollouts, faults ${faults.length === FAULT_KINDS.length ? "all" : faults.join(",") || "none"} at ${rate} per call, seed ${seed}, ${pushesPerMinute} pushes/min`,
  );
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 200);
  const started = performance.now();
  const run = await runSoak({ count, rate, faults, seed, pushesPerMinute });
  const wall = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  try {
    const differences = await checkSoak(run);
    if (values.summary !== undefined)
      writeFileSync(values.summary, `${(await soakSummary(run)).join("\n")}\n`);
    for (const line of await soakFigures(run, wall, peak)) console.log(line);
    if (differences.length > 0) {
      console.log(`\n${differences.length} difference(s) from what the scripts call for:`);
      for (const d of differences) console.log(`  ${d}`);
      process.exitCode = 1;
    } else console.log("\nevery rollout ended as its script calls for");
  } finally {
    await run.close();
  }
}

await main();
