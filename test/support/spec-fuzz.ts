import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import validator from "asl-validator";
import { CST, Lexer, parseAllDocuments, stringify } from "yaml";
import { mulberry32, type Prng } from "../../functions/judges/simulate.ts";
import {
  compile,
  parseRollout,
  plan,
  type RolloutSpec,
  type Source,
  SpecError,
  type StateMachineDefinition,
} from "../../statemachine/index.ts";
import { MAX_FILE_BYTES, MAX_TOKENS } from "../../statemachine/limits.ts";

/**
 * The spec fuzz: the examples, mutated (fields deleted, duplicated, retyped; huge numbers, NaN and
 * infinities; deep nesting; long, unicode and NUL-laden strings; anchors and aliases; raw text
 * damage, a block that nests the parser, a line repeated to the file limit), fed to
 * `parseRollout`, then `plan` and `compile`. Reproducible: the PRNG is seeded.
 */

/** Files that load together: a mutation damages one of them, the others stay as they are. */
export const GROUPS = [
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
  switch (int(random, 10)) {
    case 8: // a malformed block the parser nests one level deeper at every line
      return `${text}\n---\na:\n    zz  - b: c\n${"      - b: c\n".repeat(200 + int(random, 3000))}  - x:\n`;
    case 9: // a line repeated up to near the file limit (rarely: each costs the parser its budget)
      if (random() < 0.15) {
        const one = `${lines[line] ?? ""}\n`;
        return `${text}\n${one.repeat(Math.floor((MAX_FILE_BYTES - text.length) / Math.max(one.length, 1) / (1 + int(random, 4))))}`;
      }
      return text;
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
export function mutatedGroup(random: Prng, group: Source[]): Source[] {
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

/** YAML tokens of the sources as the loader counts them (not spaces, line breaks, comments). */
export function tokensOf(sources: readonly Source[]): number {
  let n = 0;
  for (const { text } of sources) {
    for (const lexeme of new Lexer().lex(text)) {
      if (
        !["space", "newline", "comment", "scalar", "byte-order-mark", "doc-mode"].includes(
          CST.tokenType(lexeme) ?? "",
        )
      )
        n++;
    }
  }
  return n;
}

/**
 * Loads the one rollout (`parseRollout`, what the construct and the CLI load with), then plans and
 * compiles it; a SpecError anywhere is an answer, anything else a bug, and a definition compile
 * returns must be ASL that asl-validator accepts.
 */
export function exercise(sources: Source[]): "loaded" | "refused" {
  let spec: RolloutSpec;
  try {
    spec = parseRollout(sources).spec;
  } catch (error) {
    if (error instanceof SpecError) return "refused";
    throw error;
  }
  plan(spec);
  let definition: StateMachineDefinition;
  try {
    definition = compile(spec);
  } catch (error) {
    if (error instanceof SpecError) return "refused";
    throw error;
  }
  const result = validator(definition);
  if (!result.isValid) throw new Error(`invalid ASL: ${JSON.stringify(result.errors).slice(0, 1000)}`);
  return "loaded";
}

/**
 * Runs `runs` seeded cases; a case that throws anything but a SpecError fails with its seed, its
 * number and a file holding its input. The work of each call is bounded by the loader's budgets,
 * not measured here (wall-clock checks are `npm run bench`'s): an input past the token budget
 * must be refused.
 */
export function fuzz(seed: number, runs: number): { loaded: number; refused: number; overBudget: number } {
  const random = mulberry32(seed);
  const outcomes = { loaded: 0, refused: 0, overBudget: 0 };
  for (let run = 0; run < runs; run++) {
    const sources = mutatedGroup(random, pick(random, GROUPS));
    let outcome: "loaded" | "refused";
    try {
      outcome = exercise(sources);
      const over =
        sources.every((s) => Buffer.byteLength(s.text) <= MAX_FILE_BYTES) && tokensOf(sources) > MAX_TOKENS;
      if (over) {
        outcomes.overBudget++;
        if (outcome !== "refused") throw new Error(`an input past ${MAX_TOKENS} tokens loaded`);
      }
    } catch (error) {
      const dump = join(tmpdir(), `fuzz-${seed}-${run}.json`);
      writeFileSync(dump, JSON.stringify(sources));
      throw new Error(
        `case ${run} of seed ${seed} threw ${(error as Error).name}: ${(error as Error).message}\ninput: ${dump}`,
        { cause: error },
      );
    }
    outcomes[outcome]++;
  }
  return outcomes;
}
