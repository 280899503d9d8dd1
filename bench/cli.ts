/**
 * How long `rollouts` takes to start: `--version` and a `plan` of the example canary, run the way a
 * checkout runs them (the TypeScript sources through tsx) and the way the installed package runs
 * them (the compiled `dist/` on plain Node.js; `npm run build` makes it). Median of five runs each,
 * wall time of the whole process. `node -e 0`, Node.js starting and doing nothing, is printed beside
 * them: the part of each figure no change to the CLI can remove.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import type { Bench } from "./run.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const RUNS = 5;
const PLAN = ["plan", "examples/rollout.yaml", "examples/analysis-success-rate.yaml"];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function time(args: string[]): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    execFileSync(process.execPath, args, { cwd: ROOT, stdio: "ignore" });
    times.push(performance.now() - started);
  }
  return median(times);
}

const compiled = (args: string[]) => [
  "--input-type=module",
  "-e",
  `const { main } = await import(${JSON.stringify(`${ROOT}dist/cli/main.js`)}); process.exitCode = await main(process.argv.slice(1));`,
  // Without `--`, node would read `--version` as its own option.
  "--",
  ...args,
];

export const bench: Bench = {
  name: "cli",
  run() {
    const lines = [
      `rollouts start-up, median of ${RUNS} runs (ms)`,
      "",
      "| command | sources (tsx) | compiled (dist) |",
      "|---|---|---|",
    ];
    // The same floor under both columns: the process start-up before any of the CLI loads.
    const bare = time(["-e", "0"]).toFixed(0);
    lines.push(`| node -e 0 (Node.js alone) | ${bare} | ${bare} |`);
    const built = existsSync(`${ROOT}dist/cli/main.js`);
    for (const [label, args] of [
      ["--version", ["--version"]],
      ["plan", PLAN],
    ] as const) {
      const sources = time(["bin/rollouts.mjs", ...args]);
      const dist = built ? time(compiled([...args])).toFixed(0) : "(run npm run build)";
      lines.push(`| ${label} | ${sources.toFixed(0)} | ${dist} |`);
    }
    return lines;
  },
};
