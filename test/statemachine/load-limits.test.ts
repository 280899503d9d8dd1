import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { parseRollout, parseSources, readSources, SpecError } from "../../statemachine/index.ts";
import {
  MAX_ALIAS_COUNT,
  MAX_DEPTH,
  MAX_DOCUMENTS,
  MAX_FILE_BYTES,
  MAX_TOKENS,
} from "../../statemachine/limits.ts";

/** The problems' lines of a load that must fail. */
function problemsOf(text: string, file = "in.yaml"): string[] {
  try {
    parseSources([{ file, text }]);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).message.split("\n");
  }
  throw new Error("expected a SpecError");
}

/** Nine anchors, each a list of nine aliases of the one before: 9^9 values once expanded. */
const ALIAS_BOMB = [
  'a: &a ["x","x","x","x","x","x","x","x","x"]',
  ..."bcdefgh".split("").map((c, i) => {
    const prev = "abcdefgh"[i];
    return `${c}: &${c} [${Array(9).fill(`*${prev}`).join(",")}]`;
  }),
].join("\n");

// "Bounded time" is the value budget: the reading stops after MAX_VALUES values, whatever the
// aliases would expand to (a bomb's 9^8 would not finish before the test's timeout). The problem
// naming that budget is what these tests assert; how fast it comes is `npm run bench`'s concern,
// not a wall-clock assertion that a loaded machine can fail.
describe("loading refuses hostile input with one problem, in bounded time", () => {
  it("an alias bomb is a problem naming the file and the limit, not a ReferenceError", () => {
    const lines = problemsOf(ALIAS_BOMB, "bomb.yaml");
    expect(lines).toEqual([expect.stringMatching(/^bomb\.yaml: document 1: .*100,000 values.*aliases/)]);
  });

  it("an anchor repeated past the YAML reader's maxAliasCount is refused with that limit", () => {
    const text = `a: &a x\nb: [${Array(MAX_ALIAS_COUNT + 1)
      .fill("*a")
      .join(", ")}]\n`;
    expect(problemsOf(text)).toEqual([
      `in.yaml: document 1: aliases expand too much (more than ${MAX_ALIAS_COUNT} expansions of one anchor, the YAML reader's maxAliasCount): write the values out instead of repeating them through aliases`,
    ]);
  });

  it("an alias inside the node its anchor names (a cycle) is refused, not turned into a circular object", () => {
    expect(problemsOf("a: &a [1, *a]\n")).toEqual([
      "in.yaml: document 1: the alias *a is inside the node its anchor &a names: a document cannot contain itself",
    ]);
  });

  it.each([
    ["flow lists", `${"[".repeat(MAX_DEPTH + 1)}${"]".repeat(MAX_DEPTH + 1)}`],
    ["block maps", `${Array.from({ length: MAX_DEPTH + 1 }, (_, i) => `${" ".repeat(i)}a:`).join("\n")} 1\n`],
    ["aliases that nest an anchor in itself level by level", deepByAliases()],
  ])("nesting deeper than the limit (%s) is one problem naming it", (_, text) => {
    expect(problemsOf(text)).toEqual([expect.stringContaining(`nested more than ${MAX_DEPTH} levels deep`)]);
  });

  it("nesting exactly at the limit loads (the limit is not off by one)", () => {
    const text = `${"[".repeat(MAX_DEPTH)}${"]".repeat(MAX_DEPTH)}`;
    // A list is not a rollout object: the one problem is that, not the nesting.
    expect(problemsOf(text)).toEqual([expect.stringContaining("not a Kubernetes object")]);
  });

  it("nesting deep enough to exhaust the YAML parser itself is one problem, not a stack overflow", () => {
    for (const depth of [1000, 5000, 50_000]) {
      expect(problemsOf(`${"[".repeat(depth)}${"]".repeat(depth)}`)).toEqual([
        `in.yaml: document 1: nested more than ${MAX_DEPTH} levels deep (maps and lists inside each other, aliases expanded): a rollout object needs far fewer; flatten the document`,
      ]);
    }
  });

  it("a kind: List of a huge number of items is one problem, read in bounded time", () => {
    const items = 40_000;
    const text = `kind: List\nitems:\n${"- {kind: C}\n".repeat(items)}`;
    expect(text.length).toBeLessThan(MAX_FILE_BYTES);
    // 6 tokens an item: the token budget stops the reading before the values are counted.
    const lines = problemsOf(text);
    expect(lines).toEqual([
      expect.stringContaining(`more than ${MAX_TOKENS.toLocaleString("en-US")} YAML tokens`),
    ]);
    const smaller = `kind: List\nitems:\n${"- {kind: ConfigMap}\n".repeat(MAX_DOCUMENTS + 1)}`;
    expect(problemsOf(smaller)).toEqual([
      `in.yaml: document 1: a List of ${MAX_DOCUMENTS + 1} items is past the ${MAX_DOCUMENTS} documents and List items one load reads: give only the rollout and its templates`,
    ]);
  });

  it("documents past the limit stop the reading with one problem", () => {
    const text = "kind: ConfigMap\n---\n".repeat(MAX_DOCUMENTS + 10);
    const lines = problemsOf(text);
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(`^in\\.yaml: document ${MAX_DOCUMENTS + 1}: this document is past the ${MAX_DOCUMENTS}`),
      ),
    ]);
  });

  it("a source larger than the file limit is refused without being parsed", () => {
    const text = `# ${"x".repeat(MAX_FILE_BYTES)}\n`;
    expect(problemsOf(text)).toEqual([
      expect.stringMatching(/^in\.yaml: the file is 1,048,5\d\d bytes, more than the 1,048,576 bytes/),
    ]);
  });

  it("a file on disk larger than the limit, or one that never ends, is read no further than the limit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "limits-"));
    const big = join(dir, "big.yaml");
    writeFileSync(big, `# ${"x".repeat(MAX_FILE_BYTES)}\n`);
    const problems: Array<{ file: string; message: string }> = [];
    const sources = await readSources([big, "/dev/zero"], problems);
    expect(sources).toEqual([]);
    expect(problems.map((p) => p.file)).toEqual([big, "/dev/zero"]);
    expect(problems[0]?.message).toContain("1,048,576 bytes a rollout spec may have");
  });

  it("a map of tens of thousands of keys is read in linear time, and a repeated key is still refused", () => {
    const keys = Math.floor(MAX_TOKENS / 3) - 10;
    const map = Array.from({ length: keys }, (_, i) => `k${i}: v\n`).join("");
    // The composer's own uniqueness check compared each key with all before it: 2 × 10^9
    // comparisons here, past the test's timeout.
    expect(
      parseSources([{ file: "m.yaml", text: `kind: ConfigMap\ndata:\n${map.replace(/^/gm, "  ")}` }]).notes,
    ).toHaveLength(1);
    expect(problemsOf(`kind: ConfigMap\ndata:\n  a: 1\n  b: 2\n  a: 3\n`)).toEqual([
      "in.yaml: document 1: not valid YAML or JSON at line 5, column 3: Map keys must be unique",
    ]);
  });

  it("a document with many syntax errors reports a few and counts the rest", () => {
    const lines = problemsOf(`${"a: [\n".repeat(3)}${"b: }\n".repeat(50)}`);
    expect(lines.length).toBeLessThanOrEqual(6);
    expect(lines.at(-1)).toMatch(/and \d+ more YAML syntax errors$/);
  });
});

describe("rollouts plan on hostile files", () => {
  it("exits 2 with one line per problem naming the file and the limit (an alias bomb, deep nesting)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "limits-cli-"));
    const bomb = join(dir, "bomb.yaml");
    const deep = join(dir, "deep.yaml");
    writeFileSync(bomb, ALIAS_BOMB);
    writeFileSync(deep, `${"[".repeat(2000)}${"]".repeat(2000)}`);
    const { code, out, err } = await run("plan", bomb, deep);
    expect(code).toBe(2);
    expect(out).toBe("");
    const lines = err.trimEnd().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(new RegExp(`^${bomb}: document 1: holds more than 100,000 values`)),
      expect.stringMatching(new RegExp(`^${deep}: document 1: nested more than 100 levels deep`)),
    ]);
    expect(err).not.toMatch(/\bat .*\.(ts|js):\d+/); // no stack trace
  });
});

/** `a0: &a0 [x]`, `a1: &a1 [*a0]`, ...: each anchor one level deeper than the one it aliases. */
function deepByAliases(): string {
  const lines = ["a0: &a0 [x]"];
  for (let i = 1; i <= MAX_DEPTH; i++) lines.push(`a${i}: &a${i} [*a${i - 1}]`);
  return lines.join("\n");
}

/**
 * A malformed block sequence the YAML parser nests one level deeper at every line: its own
 * recursion, not the document's depth, is what runs out (`a:`, a broken line, then `- b: c`
 * indented under it, many times).
 */
function parserRecursion(lines: number): string {
  return ["a:", "    zz  - b: c", ...Array(lines).fill("      - b: c"), "  - x:"].join("\n");
}

describe("the YAML parser's own limits", () => {
  it("a malformed file that nests the parser itself is one problem naming the file, not a RangeError", () => {
    for (const lines of [2000, 20_000]) {
      const text = parserRecursion(lines);
      expect(text.length).toBeLessThan(MAX_FILE_BYTES);
      expect(problemsOf(text, "rec.yaml")).toEqual([
        expect.stringMatching(
          new RegExp(`^rec\\.yaml: document 1: nested more than ${MAX_DEPTH} levels deep`),
        ),
      ]);
    }
  });

  it("parseRollout throws the typed error for it (what the CDK construct loads with)", () => {
    expect(() => parseRollout([{ file: "rec.yaml", text: parserRecursion(2000) }])).toThrow(SpecError);
  });

  it(`files past ${MAX_TOKENS.toLocaleString("en-US")} YAML tokens in one load are refused as soon as the reader passes the budget`, () => {
    const items = Math.floor((MAX_FILE_BYTES - 40) / 12);
    const text = `kind: List\nitems:\n${"- {kind: C}\n".repeat(items)}`;
    const lines = problemsOf(text, "big.yaml");
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^big\\.yaml: line \\d+: the files hold more than ${MAX_TOKENS.toLocaleString("en-US")} YAML tokens`,
        ),
      ),
    ]);
    // Where the reading stopped: the budget, not the end of the file (6 tokens an item).
    const line = Number(/line (\d+)/.exec(lines[0] as string)?.[1]);
    expect(line).toBeLessThan(MAX_TOKENS / 5);
    // The budget is the load's: two files of half of it each load alone, not together.
    const half = `kind: ConfigMap\ndata:\n${Array.from({ length: Math.ceil(MAX_TOKENS / 6) + 10 }, (_, i) => `  k${i}: v\n`).join("")}`;
    expect(parseSources([{ file: "a.yaml", text: half }]).notes).toHaveLength(1);
    expect(() =>
      parseSources([
        { file: "a.yaml", text: half },
        { file: "b.yaml", text: half },
      ]),
    ).toThrow(
      new RegExp(
        `^b\\.yaml: line \\d+: the files hold more than ${MAX_TOKENS.toLocaleString("en-US")} YAML tokens`,
      ),
    );
  });
});

describe("rollouts plan and compile on a file that nests the YAML parser", () => {
  it.each(["plan", "compile"])(
    "%s exits 2 with one line naming the file, no stack trace",
    async (command) => {
      const dir = mkdtempSync(join(tmpdir(), "limits-rec-"));
      const file = join(dir, "rec.yaml");
      writeFileSync(file, parserRecursion(2000));
      const { code, out, err } = await run(command, file);
      expect(code).toBe(2);
      expect(out).toBe("");
      expect(err.trimEnd().split("\n")).toEqual([
        expect.stringMatching(new RegExp(`^${file}: document 1: nested more than ${MAX_DEPTH} levels deep`)),
      ]);
      expect(err).not.toMatch(/RangeError|\bat .*\.(ts|js):\d+/);
    },
  );
});
