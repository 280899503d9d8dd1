import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { parseSources, readSources, SpecError } from "../../statemachine/index.ts";
import { MAX_ALIAS_COUNT, MAX_DEPTH, MAX_DOCUMENTS, MAX_FILE_BYTES } from "../../statemachine/limits.ts";

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
    const lines = problemsOf(text);
    expect(lines).toEqual([expect.stringContaining("100,000 values")]);
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
