/**
 * The spec loader against hostile files at the 1 MiB limit: each input through `parseRollout`,
 * then `plan` and `compile` when it loads, as `rollouts plan` and `compile` take it. Median of three
 * in-process runs each, and the peak resident memory of a fresh process that runs it once (beside
 * its peak before, the modules loaded); then the slowest of 1,000 seeded fuzz cases
 * (`test/support/spec-fuzz.ts`). The loader's bound is ≤ 1 s and ≤ 256 MB per input.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exercise, GROUPS, mutatedGroup } from "@sfn-rollouts/test-support/spec-fuzz";
import { mulberry32 } from "../functions/judges/simulate.ts";
import { MAX_FILE_BYTES } from "../statemachine/limits.ts";
import type { Source } from "../statemachine/load.ts";
import type { Bench } from "./run.ts";

const RUNS = 3;
const FUZZ_CASES = 1000;

/** The reference rollout's head with these steps. */
function rolloutWith(steps: string): string {
  const head = (readFileSync("examples/rollout.yaml", "utf8").split("---")[0] as string).split(
    "      steps:",
  )[0];
  return `${head}      steps:\n${steps}`;
}

const fill = (unit: string, prefix = "") =>
  prefix + unit.repeat(Math.floor((MAX_FILE_BYTES - prefix.length - 64) / unit.length));

const TEMPLATE = { file: "t.yaml", text: readFileSync("examples/analysis-success-rate.yaml", "utf8") };

const INPUTS: Array<[string, Source[]]> = [
  [
    "a block that nests the YAML parser (26 KB)",
    [{ file: "r.yaml", text: `a:\n    zz  - b: c\n${"      - b: c\n".repeat(2000)}  - x:\n` }],
  ],
  [
    "the same block, 20,000 lines",
    [{ file: "r.yaml", text: `a:\n    zz  - b: c\n${"      - b: c\n".repeat(20_000)}  - x:\n` }],
  ],
  ["flow maps in a List (1 MiB)", [{ file: "r.yaml", text: fill("- {kind: C}\n", "kind: List\nitems:\n") }]],
  [
    "flow lists nested 500,000 deep",
    [{ file: "r.yaml", text: `${"[".repeat(500_000)}${"]".repeat(500_000)}` }],
  ],
  [
    "block maps nested by indentation (1 MiB)",
    [{ file: "r.yaml", text: Array.from({ length: 1400 }, (_, i) => `${" ".repeat(i)}a:`).join("\n") }],
  ],
  [
    "a map of 33,320 keys",
    [
      {
        file: "r.yaml",
        text: `kind: ConfigMap\ndata:\n${Array.from({ length: 33_320 }, (_, i) => `  k${i}: v\n`).join("")}`,
      },
    ],
  ],
  [
    "one analysis naming a template 16,000 times",
    [
      {
        file: "r.yaml",
        text: rolloutWith(
          `        - analysis: {templates: [${Array(16_000).fill("{templateName: success-rate}").join(", ")}], args: [{name: version, value: v2}]}\n`,
        ),
      },
      TEMPLATE,
    ],
  ],
  [
    "10,000 steps",
    [
      {
        file: "r.yaml",
        text: rolloutWith("        - setWeight: 10\n        - pause: {duration: 1s}\n".repeat(5000)),
      },
    ],
  ],
  [
    "900 analysis steps",
    [
      {
        file: "r.yaml",
        text: rolloutWith(
          "        - analysis: {templates: [{templateName: success-rate}], args: [{name: version, value: v2}]}\n".repeat(
            900,
          ),
        ),
      },
      TEMPLATE,
    ],
  ],
];

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
}

/** The child that measures one input's peak memory: its maximum resident set, in MB. */
const CHILD = `
  import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
  const { exercise } = await import(process.argv[1]);
  const sources = JSON.parse(readFileSync(process.argv[2], "utf8"));
  const before = process.resourceUsage().maxRSS;
  exercise(sources);
  process.stdout.write(JSON.stringify([before / 1024, process.resourceUsage().maxRSS / 1024]));
`;

/** Peak resident memory of a fresh process before and after it runs the input once, in MB. */
function peakMemory(sources: Source[]): [number, number] {
  const file = join(mkdtempSync(join(tmpdir(), "bench-loader-")), "input.json");
  writeFileSync(file, JSON.stringify(sources));
  const out = execFileSync(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", CHILD, FUZZ_MODULE, file],
    { encoding: "utf8" },
  );
  return JSON.parse(out) as [number, number];
}

const FUZZ_MODULE = new URL("../test/support/spec-fuzz.ts", import.meta.url).href;

/** Wall and CPU milliseconds of one call (CPU time: what the call costs, on a busy machine too). */
function timed(sources: Source[]): { wall: number; cpu: number; outcome: string } {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const outcome = exercise(sources);
  const used = process.cpuUsage(cpu);
  return { wall: performance.now() - wall, cpu: (used.user + used.system) / 1000, outcome };
}

function measure(sources: Source[]): { ms: number; cpu: number; peak: [number, number]; outcome: string } {
  const runs = Array.from({ length: RUNS }, () => timed(sources));
  return {
    ms: median(runs.map((r) => r.wall)),
    cpu: median(runs.map((r) => r.cpu)),
    peak: peakMemory(sources),
    outcome: runs[0]?.outcome ?? "",
  };
}

export const bench: Bench = {
  name: "loader",
  run() {
    const lines = [
      "input                                          outcome   median ms (CPU ms)  peak RSS MB (before it)",
    ];
    for (const [name, sources] of INPUTS) {
      const { ms, cpu, peak, outcome } = measure(sources);
      lines.push(
        `${name.padEnd(46)} ${outcome.padEnd(9)} ${ms.toFixed(0).padStart(9)} (${cpu.toFixed(0).padStart(5)}) ${peak[1].toFixed(0).padStart(8)} (${peak[0].toFixed(0)})`,
      );
    }
    const random = mulberry32(20_261_205);
    let slowest = { ms: 0, cpu: 0, run: -1 };
    for (let run = 0; run < FUZZ_CASES; run++) {
      const group = GROUPS[Math.floor(random() * GROUPS.length)] as Source[];
      const sources = mutatedGroup(random, group);
      const { wall, cpu } = timed(sources);
      if (cpu > slowest.cpu) slowest = { ms: wall, cpu, run };
    }
    lines.push(
      `fuzz: ${FUZZ_CASES} cases (seed 20261205), slowest ${slowest.cpu.toFixed(0)} CPU ms (${slowest.ms.toFixed(0)} ms, case ${slowest.run})`,
    );
    return lines;
  },
};
