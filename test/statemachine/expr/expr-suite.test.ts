import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { expect, describe as group, it } from "vitest";
import { compile, ExprError } from "../../../statemachine/expr/index.ts";
import { describe, fixtureEnv, type TypeTree } from "./fixture-env.ts";

/**
 * expr-lang's own test suite, run through our implementation. Every case is an expression from
 * one of expr v1.17.8's tests (its test tables, testdata/generated.txt, the fuzz corpus) with the
 * outcome the real expr gave in Argo's mode (compiled against the environment's types, then run):
 * a value with its Go type, or an error message. See test/fixtures/expr/README.md.
 */

interface Case {
  source: string;
  expression: string;
  env: number;
  expected: { value?: unknown; type?: string; typeTree?: TypeTree; error?: string; message?: string };
}

const fixture = JSON.parse(
  gunzipSync(readFileSync(new URL("../../fixtures/expr/expr-values.json.gz", import.meta.url))).toString(
    "utf8",
  ),
) as { envs: [Record<string, unknown> | null, Record<string, TypeTree> | null][]; cases: Case[] };

/**
 * Where we knowingly differ, and why. Each entry must still differ (the test checks), so the list
 * cannot go stale.
 */
const KNOWN: Record<string, string> = {
  // Fractional powers: Go computes x**y with amd64 assembly exp/log (and a different result again
  // on CPUs with FMA); we use Go's algorithm around IEEE exp/log, which can differ in the last bit.
  "f32 ** (i64 + 0.5)": "last bit of a fractional power",
  "f32 ^ (0.5 * f64)": "last bit of a fractional power",
  "f32 ^ (1 + f64)": "last bit of a fractional power",
  "f32 ^ (f64 * f64)": "last bit of a fractional power",
  "f64 ** (i64 + 0.5)": "last bit of a fractional power",
  "f64 ^ (0.5 + 1)": "last bit of a fractional power",
  "f64 ^ (f32 + 1)": "last bit of a fractional power",
  "reduce(array, #) ^ f32 ** 0.5": "last bit of a fractional power",
  "reduce(array, f32) ** (0.5 * f64)": "last bit of a fractional power",
  // Defects of expr's VM, not language semantics: a jump threaded across a nested findLast loop, and
  // an optional call whose short circuit leaves its argument on the stack.
  "array | map(array | findLast(true))": "expr VM jump-threading defect",
  "nil != $env?.foobar?.greet(1.0)": "expr VM stack defect on an optional call",
};

function outcome(c: Case): { ok: boolean; got: unknown } {
  const [env, types] = fixture.envs[c.env] as [
    Record<string, unknown> | null,
    Record<string, TypeTree> | null,
  ];
  let got: { value?: unknown; type?: string; tree?: TypeTree; error?: string };
  try {
    const { env: natures, values } = fixtureEnv(env, types);
    got = describe(compile(c.expression, natures).run(values));
  } catch (e) {
    if (!(e instanceof ExprError)) throw e;
    got = { error: e.message };
  }
  const want = c.expected;
  if (want.error !== undefined) return { ok: got.error === (want.message ?? want.error), got };
  const ok =
    got.error === undefined &&
    canonical(got.value) === canonical(want.value) &&
    got.type === want.type &&
    (want.typeTree === undefined || canonical(got.tree) === canonical(want.typeTree));
  return { ok, got };
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

const bySource = new Map<string, Case[]>();
for (const c of fixture.cases) {
  const file = c.source.split(" ")[1] as string;
  bySource.set(file, [...(bySource.get(file) ?? []), c]);
}

group("expr-lang v1.17.8's test suite", () => {
  it("has the recorded cases", () => {
    expect(fixture.cases.length).toBe(42_135);
  });

  for (const [file, cases] of bySource) {
    it(`${file}: ${cases.length} cases give expr's value or error`, () => {
      const wrong: string[] = [];
      for (const c of cases) {
        const { ok, got } = outcome(c);
        const known = KNOWN[c.expression];
        if (known) {
          expect(ok, `known difference no longer differs: ${c.expression}`).toBe(false);
          continue;
        }
        if (!ok) wrong.push(`${c.expression}\n  want ${canonical(c.expected)}\n  got  ${canonical(got)}`);
      }
      expect(wrong.slice(0, 10).join("\n")).toBe("");
    });
  }
});
