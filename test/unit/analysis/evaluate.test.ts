import { describe, expect, it } from "vitest";
import { evaluateResult } from "../../../functions/analysis/index.ts";

describe("evaluateResult (Argo's EvaluateResult)", () => {
  const S = "result[0] >= 0.95";
  const F = "result[0] < 0.5";
  const cases: [string, string | undefined, string | undefined, unknown, string][] = [
    ["only success, true", S, undefined, [0.97], "Successful"],
    ["only success, false fails", S, undefined, [0.6], "Failed"],
    ["only success, NaN fails", S, undefined, [Number.NaN], "Failed"],
    ["only failure, true", undefined, F, [0.1], "Failed"],
    ["only failure, false succeeds", undefined, F, [0.6], "Successful"],
    ["both, success band", S, F, [0.99], "Successful"],
    ["both, failure band", S, F, [0.1], "Failed"],
    ["both, between is Inconclusive", S, F, [0.7], "Inconclusive"],
    ["both true: failure wins", "result[0] > 0", "result[0] > 0", [1], "Failed"],
    ["neither condition", undefined, undefined, [0], "Successful"],
    ["neither condition, empty result", undefined, undefined, [], "Successful"],
  ];
  it.each(cases)("%s", (_, successCondition, failureCondition, result, phase) => {
    expect(evaluateResult(result, { successCondition, failureCondition }).phase).toBe(phase);
  });

  it("an empty vector is an Error with Argo's message", () => {
    expect(evaluateResult([], { successCondition: S })).toEqual({
      phase: "Error",
      message: `could not evaluate successCondition "${S}": metric result is nil or empty: no data returned from the metric provider`,
    });
  });

  it("a nil result names the failure condition when that is the one that fails", () => {
    expect(evaluateResult(null, { failureCondition: F }).message).toBe(
      `could not evaluate failureCondition "${F}": metric result is nil or empty: no data returned from the metric provider`,
    );
  });

  it("a condition on an empty vector that does not index it still evaluates", () => {
    expect(evaluateResult([], { successCondition: "len(result) == 0" }).phase).toBe("Successful");
  });

  it("other evaluation errors carry the evaluator's reason", () => {
    expect(evaluateResult({ a: 1 }, { successCondition: "result.a" })).toEqual({
      phase: "Error",
      // A JSON number is a Go float64.
      message: 'could not evaluate successCondition "result.a": expected bool, but got float64',
    });
  });

  it("a condition that does not parse is an Error measurement, not a crash", () => {
    const v = evaluateResult([1], { successCondition: "result[0] >=" });
    expect(v.phase).toBe("Error");
    expect(v.message).toBe('could not evaluate successCondition "result[0] >=": unexpected token EOF');
  });
});
