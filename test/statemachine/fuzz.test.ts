import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { mulberry32, type Prng } from "../../functions/judges/simulate.ts";
import { compile, parseSources, plan, type Source, SpecError } from "../../statemachine/index.ts";
import { MAX_FILE_BYTES } from "../../statemachine/limits.ts";

/**
 * The loader against hostile input: the examples, mutated (fields deleted, duplicated, retyped;
 * huge numbers, NaN and infinities; deep nesting; long, unicode and NUL-laden strings; anchors
 * and aliases; raw text damage), fed to `parseSources`. Every input must load or throw a
 * SpecError — never another exception — within a time bound and without the heap running away;
 * what loads must compile (or be refused by compile with a SpecError) and plan.
 *
 * Reproducible: the PRNG is seeded (`FUZZ_SEED`, default below) and a failure names the seed, the
 * case and a file holding the input. `FUZZ_RUNS` sets the number of cases.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20_260_301);
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
/** Per input: mutated examples take well under a second; the bound leaves room for a slow machine. */
const TIME_BOUND_MS = 5000;
const HEAP_BOUND_BYTES = 1.5 * 1024 ** 3;

/** Files that load together: a mutation damages one of them, the others stay as they are. */
const GROUPS = [
  ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"],
  ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"],
  ["examples/blue-green.yaml"],
  ["examples/model-shadow.yaml"],
  ["examples/native.yaml"],
  ["examples/waves.yaml"],
  ["examples/envconfig/shop/shop/prod.yml"],
  ["examples/envconfig/shop/shop/canary-analysis.yml"],
  ["examples/templates/lambda-duration-p95.yaml", "examples/templates/lambda-errors.yaml"],
].map((files) => files.map((file) => ({ file, text: readFileSync(file, "utf8") })));

const pick = <T>(random: Prng, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const int = (random: Prng, max: number) => Math.floor(random() * max);

/** Strings a field should never be trusted with. */
function nastyString(random: Prng): string {
  return pick(random, [
    () => "",
    () => "x".repeat(1 + int(random, 200_000)),
    () => "\u0000",
    () => `a\u0000b`,
    () => "\u001b[2J\u001b]0;title\u0007",
    () => "\u202e\u2066reversed",
    () => "日本語-ünïcödé-🚀",
    () => "\ud800", // a lone surrogate
    () =>
      String.fromCodePoint(
        ...Array.from({ length: 1 + int(random, 40) }, () => int(random, 0x10ffff + 1)).filter(
          (c) => c < 0xd800 || c > 0xdfff,
        ),
      ),
    () => "9999999999999h",
    () => "-1s",
    () => "1.5h",
    () => "2562048h",
    () => "{{args.missing}}",
    () => "{{rollout.latest}}",
    () => "file:///etc/passwd",
    () => "result[0] >= ",
    () => "^(a+)+$",
    () => "[",
    () => "*",
    () => "0x10",
    () => "1e309",
    () => "__proto__",
    () => "constructor",
  ])();
}

/** Any value of any type, hostile ones first. */
function nastyValue(random: Prng, depth = 0): unknown {
  const kinds: Array<() => unknown> = [
    () => nastyString(random),
    () => pick(random, [0, -1, 1, 1e308, -1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 0.1, 101, 5001, 1e21]),
    () => pick(random, [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]),
    () => random() < 0.5,
    () => null,
    () => (depth < 3 ? Array.from({ length: int(random, 4) }, () => nastyValue(random, depth + 1)) : []),
    () => (depth < 3 ? { [nastyString(random).slice(0, 20) || "k"]: nastyValue(random, depth + 1) } : {}),
    () => nest(random, 50 + int(random, 200)),
  ];
  return pick(random, kinds)();
}

function nest(random: Prng, levels: number): unknown {
  let value: unknown = "deep";
  for (let i = 0; i < levels; i++) value = random() < 0.5 ? [value] : { a: value };
  return value;
}

type Container = Record<string, unknown> | unknown[];

/** Every map and list inside `root`, with the path to it (the root first). */
function containers(root: unknown): Container[] {
  const out: Container[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== "object") continue;
    out.push(node as Container);
    for (const child of Object.values(node)) stack.push(child);
  }
  return out;
}

/** One structural mutation of a parsed document, in place. */
function mutateValue(random: Prng, doc: unknown): void {
  const all = containers(doc);
  if (all.length === 0) return;
  const target = pick(random, all);
  const keys = Object.keys(target);
  const key = keys.length > 0 ? pick(random, keys) : "x";
  const t = target as Record<string, unknown>;
  switch (int(random, 7)) {
    case 0: // delete a field
      if (Array.isArray(target)) target.splice(Number(key), 1);
      else delete t[key];
      return;
    case 1: // duplicate a field or an item
      if (Array.isArray(target))
        target.push(...Array.from({ length: 1 + int(random, 50) }, () => target[Number(key)]));
      else t[`${key}${int(random, 3) || ""}`] = structuredClone(t[key]);
      return;
    case 2: // retype
    case 3:
      t[key] = nastyValue(random);
      return;
    case 4: // a huge or odd number
      t[key] = pick(random, [1e308, 2 ** 63, -(2 ** 53), Number.NaN, 1e-320, 31_536_001, 99_999_999_999]);
      return;
    case 5: // nest deeper
      t[key] = nest(random, 20 + int(random, 150));
      return;
    default: // an unknown field
      if (!Array.isArray(target)) t[nastyString(random).slice(0, 30) || "typo"] = nastyValue(random);
  }
}

/** One textual mutation of a YAML or JSON text. */
function mutateText(random: Prng, text: string): string {
  const at = int(random, text.length + 1);
  const lines = text.split("\n");
  const line = int(random, lines.length);
  switch (int(random, 9)) {
    case 0: // bytes no YAML file should hold
      return `${text.slice(0, at)}${pick(random, ["\u0000", "\u0007", "\ufeff", "\ud800", "\u001b[2J", "\t", "\r"])}${text.slice(at)}`;
    case 1: // YAML syntax where it does not belong
      return `${text.slice(0, at)}${pick(random, ["{", "[", "]", "}", ": ", "- ", "&a ", "*a", "<<: *a", "!!binary ", "!!set ", "!custom ", "? ", "|", ">", "---\n", "...\n", "%YAML 1.1\n", '"', "'", "#", "@", "`"])}${text.slice(at)}`;
    case 2: // cut short
      return text.slice(0, at);
    case 3: // a line repeated (duplicate keys, duplicate steps)
      lines.splice(line, 0, ...Array(1 + int(random, 5)).fill(lines[line] ?? ""));
      return lines.join("\n");
    case 4: // an anchor on a value and aliases to it, maybe inside itself
      return `${text}\n---\nbase: &x ${JSON.stringify(nastyValue(random))}\nuse: [${Array(
        1 + int(random, 150),
      )
        .fill("*x")
        .join(", ")}]\n${random() < 0.3 ? "self: &y [*y]\n" : ""}`;
    case 5: // an alias bomb
      return `${text}\n---\n${bomb(2 + int(random, 7))}`;
    case 6: // deep flow nesting
      return `${text}\n---\n${"[".repeat(50 + int(random, 2000))}${"]".repeat(50 + int(random, 2000))}`;
    case 7: // indentation damage
      lines[line] = `${" ".repeat(int(random, 9))}${(lines[line] ?? "").trimStart()}`;
      return lines.join("\n");
    default: // many documents
      return `${text}\n${"---\nkind: ConfigMap\n".repeat(int(random, 1200))}`;
  }
}

function bomb(levels: number): string {
  const out = ['l0: &l0 ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i <= levels; i++)
    out.push(
      `l${i}: &l${i} [${Array(9)
        .fill(`*l${i - 1}`)
        .join(",")}]`,
    );
  return out.join("\n");
}

/** A mutated copy of one file of a group; the rest of the group is kept. */
function mutatedGroup(random: Prng, group: Source[]): Source[] {
  const index = int(random, group.length);
  const source = group[index] as Source;
  let text = source.text;
  if (random() < 0.6) {
    const docs = parseAllDocuments(text);
    const values = (Array.isArray(docs) ? docs : [docs]).map((d) => d.toJS() as unknown);
    for (let i = 1 + int(random, 4); i > 0; i--) mutateValue(random, pick(random, values));
    text =
      random() < 0.3
        ? values.map((v) => JSON.stringify(v) ?? "null").join("\n---\n")
        : values.map((v) => stringify(v, { aliasDuplicateObjects: random() < 0.5 })).join("---\n");
  }
  for (let i = int(random, 3); i > 0; i--) text = mutateText(random, text);
  return group.map((s, i) => (i === index ? { file: s.file, text } : s));
}

/** Loads, then compiles and plans what loaded; a SpecError anywhere is an answer, anything else a bug. */
function exercise(sources: Source[]): "loaded" | "refused" {
  let loaded: ReturnType<typeof parseSources>;
  try {
    loaded = parseSources(sources);
  } catch (error) {
    if (error instanceof SpecError) return "refused";
    throw error;
  }
  for (const spec of loaded.rollouts) {
    plan(spec);
    try {
      compile(spec);
    } catch (error) {
      if (!(error instanceof SpecError)) throw error;
    }
  }
  return "loaded";
}

describe("fuzzing the loader with mutated examples", () => {
  it(`every input loads or is refused with a SpecError, each within ${TIME_BOUND_MS} ms and bounded memory (seed ${SEED}, ${RUNS} cases)`, () => {
    const random = mulberry32(SEED);
    const outcomes = { loaded: 0, refused: 0 };
    let slowest = 0;
    for (let run = 0; run < RUNS; run++) {
      const sources = mutatedGroup(random, pick(random, GROUPS));
      const start = performance.now();
      let outcome: "loaded" | "refused";
      try {
        outcome = exercise(sources);
      } catch (error) {
        const dump = join(tmpdir(), `fuzz-${SEED}-${run}.json`);
        writeFileSync(dump, JSON.stringify(sources));
        throw new Error(
          `case ${run} of seed ${SEED} threw ${(error as Error).name}: ${(error as Error).message}\ninput: ${dump}`,
          { cause: error },
        );
      }
      const elapsed = performance.now() - start;
      slowest = Math.max(slowest, elapsed);
      if (elapsed > TIME_BOUND_MS) {
        const dump = join(tmpdir(), `fuzz-${SEED}-${run}.json`);
        writeFileSync(dump, JSON.stringify(sources));
        throw new Error(`case ${run} of seed ${SEED} took ${Math.round(elapsed)} ms\ninput: ${dump}`);
      }
      expect(process.memoryUsage().heapUsed, `heap after case ${run} of seed ${SEED}`).toBeLessThan(
        HEAP_BOUND_BYTES,
      );
      outcomes[outcome]++;
    }
    // Both answers occur: the mutations are neither all harmless nor all fatal.
    expect(outcomes.loaded).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(RUNS / 4);
    expect(slowest).toBeLessThan(TIME_BOUND_MS);
  }, 180_000);

  it("inputs at the size limit, of the slowest kind, are handled within the bound", () => {
    const flow = `kind: List\nitems:\n${"- {kind: C}\n".repeat(Math.floor((MAX_FILE_BYTES - 40) / 12))}`;
    const start = performance.now();
    expect(exercise([{ file: "big.yaml", text: flow }])).toBe("refused");
    // About 5 s on a 2-core machine: the YAML parser's own cost for a megabyte of flow maps.
    expect(performance.now() - start).toBeLessThan(4 * TIME_BOUND_MS);
  }, 60_000);
});

/**
 * A dry-run metric name is a regular expression, as in Argo (which matches it with Go's RE2). A
 * nested quantifier against a long name backtracks exponentially in JavaScript's engine; with an
 * RE2 engine it is linear. The loader runs in a child process so that a hang fails the test at
 * its bound instead of stalling the suite. The template has a metric the pattern matches (`aaaa`)
 * beside the one it does not, so the rule matches something, as Argo requires of a dry-run rule.
 */
describe("a ReDoS-style dryRun pattern", () => {
  const load = (other: string, timeout: number) => {
    const rollout = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: redos}
spec:
  template: {spec: {containers: [{name: app, image: "app:2"}]}}
  strategy:
    canary:
      steps:
        - analysis:
            templates: [{templateName: t}]
            dryRun: [{metricName: "^(a+)+$"}]
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  metrics:
    - name: aaaa
      provider: {prometheus: {address: "http://p:9090", query: up}}
    - name: "${other}"
      provider: {prometheus: {address: "http://p:9090", query: up}}
`;
    const script = `
      import { parseSources } from "./statemachine/index.ts";
      const loaded = parseSources([{ file: "redos.yaml", text: ${JSON.stringify(rollout)} }]);
      const metrics = loaded.rollouts[0].steps[0].analysis.templates[0].metrics;
      process.stdout.write(JSON.stringify(metrics.map((m) => [m.name, m.dryRun])));
    `;
    const start = Date.now();
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: process.cwd(),
      encoding: "utf8",
      timeout,
      killSignal: "SIGKILL",
    });
    return { child, elapsed: Date.now() - start };
  };

  it("is matched as Argo matches it: the name it matches is dry-run, the one it does not is not", () => {
    const { child } = load("aaaa!", 15_000);
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([
      ["aaaa", true],
      ["aaaa!", false],
    ]);
  }, 20_000);

  // A backtracking engine needs about 2^40 steps for this name (hours); RE2 needs microseconds.
  // The child's 60 s bound sits between the two by orders of magnitude either way, so a loaded
  // machine cannot fail it by chance (test/statemachine/re2.test.ts checks that RE2 is the engine).
  it("does not hang the loader: ^(a+)+$ against 'a' × 40 + '!' loads", () => {
    const name = `${"a".repeat(40)}!`;
    const { child, elapsed } = load(name, 60_000);
    expect(child.signal, `the loader was killed after ${elapsed} ms: it hung on the pattern`).toBeNull();
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([
      ["aaaa", true],
      [name, false],
    ]);
  }, 90_000);
});
