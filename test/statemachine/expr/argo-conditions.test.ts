import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { evaluateResult } from "../../../functions/analysis/evaluate.ts";
import {
  ConditionEvaluationError,
  ConditionSyntaxError,
  compileCondition,
  type ResultType,
} from "../../../statemachine/conditions.ts";

/**
 * Argo Rollouts' condition cases: every condition in its utils/evaluate tests, the conditions its
 * metric-provider and analysis tests evaluate, and cases written to cover the language, each with
 * the verdict or error Argo's `EvalCondition` gave on the real expr v1.17.8.
 */

interface Case {
  source: string;
  condition: string;
  result: unknown;
  resultType: ResultType | "nil";
  expected: { value?: boolean; error?: string };
}

const cases = JSON.parse(
  readFileSync(new URL("../../fixtures/expr/argo-conditions.json", import.meta.url), "utf8"),
) as Case[];

const special = (v: unknown): unknown =>
  v === "NaN"
    ? Number.NaN
    : v === "+Inf"
      ? Number.POSITIVE_INFINITY
      : v === "-Inf"
        ? Number.NEGATIVE_INFINITY
        : v;

function resultOf(c: Case): unknown {
  if (c.resultType === "float64s") return (c.result as unknown[]).map(special);
  if (c.resultType === "float64") return special(c.result);
  return c.result;
}

function typeOf(c: Case): ResultType | undefined {
  return c.resultType === "nil" ? undefined : c.resultType;
}

/** The mismatched-types message a type error gives, without the type names the result decides. */
function shape(message: string): string {
  return message.replace(/\(mismatched types? .*\)$/, "(mismatched types)");
}

const bySource = new Map<string, Case[]>();
for (const c of cases) {
  const group = c.source.replace(/ \(.*$/, "").replace(/ Test\S+$/, "");
  bySource.set(group, [...(bySource.get(group) ?? []), c]);
}

describe("Argo Rollouts' conditions", () => {
  it("has the recorded cases", () => {
    expect(cases.length).toBe(1443);
  });

  for (const [source, group] of bySource) {
    it(`${source}: ${group.length} cases give Argo's verdict and message`, () => {
      const wrong: string[] = [];
      for (const c of group) {
        const result = resultOf(c);
        let got: { value?: boolean; error?: string; atLoad?: boolean };
        try {
          got = { value: compileCondition(c.condition).evaluate(result, typeOf(c)) };
        } catch (e) {
          if (e instanceof ConditionSyntaxError) got = { error: e.detail, atLoad: true };
          else if (e instanceof ConditionEvaluationError) got = { error: e.message };
          else throw e;
        }
        const want = c.expected;
        // A condition no result can make valid is refused when the template loads; the checker then
        // knows no result type, so a type error names `unknown` where Argo names the result's type.
        const ok =
          want.error !== undefined
            ? got.error === want.error ||
              (got.atLoad === true && shape(got.error ?? "") === shape(want.error))
            : got.value === want.value;
        if (!ok)
          wrong.push(
            `${c.condition} on ${JSON.stringify(c.result)}: want ${JSON.stringify(want)} got ${JSON.stringify(got)}`,
          );
      }
      expect(wrong.join("\n")).toBe("");
    });
  }

  it("evaluateResult gives Argo's measurement for every case, with Argo's error text", () => {
    const wrong: string[] = [];
    // Argo's EvaluateResult does not evaluate an empty condition (it means "none"); neither do we.
    for (const c of cases.filter((x) => x.condition !== "")) {
      const verdict = evaluateResult(resultOf(c), { successCondition: c.condition }, typeOf(c));
      const want = c.expected;
      if (want.error !== undefined) {
        const empty = c.result === null || (Array.isArray(c.result) && c.result.length === 0);
        const reason = empty
          ? "metric result is nil or empty: no data returned from the metric provider"
          : want.error;
        const message = `could not evaluate successCondition "${c.condition}": ${reason}`;
        if (verdict.phase !== "Error" || shape(verdict.message ?? "") !== shape(message)) {
          wrong.push(`${c.condition}: ${JSON.stringify(verdict)}`);
        }
      } else if (verdict.phase !== (want.value ? "Successful" : "Failed")) {
        wrong.push(`${c.condition}: ${JSON.stringify(verdict)}`);
      }
    }
    expect(wrong.join("\n")).toBe("");
  });
});
