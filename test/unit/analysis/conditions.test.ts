import { describe, expect, it } from "vitest";
import {
  ConditionEvaluationError,
  ConditionSyntaxError,
  compileCondition,
} from "../../../statemachine/conditions.ts";

describe("compileCondition: evaluation", () => {
  const cases: [string, unknown, boolean][] = [
    ["result[0] >= 0.95", [0.97], true],
    ["result[0] >= 0.95", [0.5], false],
    ["result >= 0.95", 0.95, true],
    ["result[0] >= 0.95 && result[1] < 0.1", [0.99, 0.05], true],
    ["result[0] >= 0.95 and result[1] < 0.1", [0.99, 0.2], false],
    ["result[0] < 0.5 || result[0] > 0.9", [0.95], true],
    ["result[0] < 0.5 or result[0] > 0.9", [0.7], false],
    ["!(result[0] > 1)", [0.5], true],
    ["not (result[0] > 1)", [2], false],
    ["result[0] == 1", [1.0], true],
    ["result[0] != 1", [1.0], false],
    ["result[0] * 100 > 94 + 1", [0.96], true],
    ["result[0] / 2 == 0.25", [0.5], true],
    ["7 % 3 == 1", null, true],
    ["2 ** 10 == 1024", null, true],
    ["2 ^ 3 ^ 2 == 512", null, true],
    ["-2 ** 2 == -4", null, true],
    ["1 + 2 * 3 == 7", null, true],
    ["(1 + 2) * 3 == 9", null, true],
    ["result[-1] == 3", [1, 2, 3], true],
    ["result.candidate.feedback_rate >= 0.8", { candidate: { feedback_rate: 0.85 } }, true],
    ['result["candidate"]["feedback_rate"] < 0.8', { candidate: { feedback_rate: 0.85 } }, false],
    ["result.missing == nil", { present: 1 }, true],
    ["result?.a?.b == nil", null, true],
    ["isNaN(result[0])", [Number.NaN], true],
    ["isNaN(result[0])", [0.1], false],
    ["isInf(result[0])", [Number.POSITIVE_INFINITY], true],
    ["isInf(result[0])", [Number.NEGATIVE_INFINITY], true],
    ["isInf(result[0])", [1], false],
    ["result[0] >= 0.95", [Number.NaN], false],
    ["isNil(result)", null, true],
    ["isNil(result)", [], false],
    ["default(result, 0) == 0", null, true],
    ["default(result, 0) == 5", 5, true],
    ["len(result) == 0", [], true],
    ["len(result) > 1", [1, 2], true],
    ['len("abc") == 3', null, true],
    ['asInt("42") == 42', null, true],
    ["asInt(result) == 3", 3.9, true],
    ['asFloat("0.25") + 0.25 == 0.5', null, true],
    ["asFloat(result.rate) > 0.9", { rate: "0.93" }, true],
    ['result.status == "ok"', { status: "ok" }, true],
    ["result.status == 'ok'", { status: "nok" }, false],
    ['result.status in ["ok", "fine"]', { status: "fine" }, true],
    ['result.status not in ["ok", "fine"]', { status: "fine" }, false],
    ['"a" + "b" == "ab"', null, true],
    ['result contains "ell"', "hello", true],
    ['result startsWith "he" && result endsWith "lo"', "hello", true],
    ['result matches "^h.*o$"', "hello", true],
    ["result.ok == true", { ok: true }, true],
    ["result.ok", { ok: false }, false],
    ["result[0] > 0.5 ? true : false", [0.6], true],
    ["all(result, {# > 0.5})", [0.6, 0.7], true],
    ["all(result, # > 0.5)", [0.6, 0.4], false],
    ["any(result, # < 0.5)", [0.6, 0.4], true],
    ["none(result, # < 0.5)", [0.6, 0.4], false],
    ["len(filter(result, # > 0.5)) == 1", [0.6, 0.4], true],
    ["count(result, .ok) == 2", [{ ok: true }, { ok: true }, { ok: false }], true],
    ["sum(result) == 6 && max(result) == 3 && min(result) == 1", [1, 2, 3], true],
    ["mean(result) == 2 && median(result) == 2", [1, 2, 3], true],
    ["abs(result) == 2 && ceil(1.2) == 2 && floor(1.8) == 1 && round(2.5) == 3", -2, true],
    ["result[1:] == [2, 3]", [1, 2, 3], true],
    ["result ?? 1 == 1", null, true],
    ["1_000 == 1000 && 0x10 == 16 && 1e3 == 1000 && .5 == 0.5", null, true],
    ["1 in 0..3", null, true],
    ["{a: 1}.a == 1", null, true],
    ['string(1) == "1"', null, true],
    ["`raw\\n` == 'raw\\\\n'", null, true],
  ];
  it.each(cases)("%s with %j is %s", (text, result, expected) => {
    expect(compileCondition(text).evaluate(result)).toBe(expected);
  });

  it("keeps the text for Argo's messages", () => {
    expect(compileCondition("result[0] >= 0.95").text).toBe("result[0] >= 0.95");
  });

  it("can be evaluated many times", () => {
    const c = compileCondition("result[0] >= 0.95");
    expect([0.9, 0.96, 0.99].map((v) => c.evaluate([v]))).toEqual([false, true, true]);
  });
});

describe("compileCondition: evaluation errors", () => {
  const cases: [string, unknown, RegExp][] = [
    ["result[0] >= 0.95", [], /index out of range: 0 \(array length is 0\)/],
    ["result[0] >= 0.95", null, /cannot fetch 0 from <nil>/],
    ["result.a.b > 1", {}, /cannot fetch b from <nil>/],
    ["result[0]", [1], /expected bool, but got int/],
    ["result", 0.5, /expected bool, but got float64/],
    ["result[0] && true", [1], /invalid operation/],
    ['result > "a"', 1, /invalid operation: int > string/],
    ["isNaN(result)", "x", /isNaN: invalid argument of type string/],
    ['asInt("x") == 1', null, /invalid syntax/],
    ["len(result) == 1", 5, /invalid argument for len/],
    ["!result", 1, /invalid operation/],
  ];
  it.each(cases)("%s with %j throws %s", (text, result, message) => {
    const c = compileCondition(text);
    expect(() => c.evaluate(result)).toThrow(ConditionEvaluationError);
    expect(() => c.evaluate(result)).toThrow(message);
  });
});

describe("compileCondition: syntax errors at load time", () => {
  const cases: [string, number, RegExp][] = [
    ["result[0] >= ", 13, /unexpected end of expression/],
    ["result[0] >= )", 13, /unexpected token "\)"/],
    ["results[0] >= 0.95", 0, /unknown name results/],
    ["result[0 >= 0.95", 16, /expected "\]"/],
    ["(result[0] >= 0.95", 18, /expected "\)"/],
    ["foo(result)", 0, /unknown func foo/],
    ["isNaN(result, 1)", 0, /invalid number of arguments to isNaN \(expected 1, got 2\)/],
    ['result == "abc', 10, /literal not terminated/],
    ["result[0] >= 0.95 0.9", 18, /unexpected token "0.9"/],
    ["result @ 1", 7, /unrecognized character/],
    ["", 0, /empty expression/],
    ["# > 1", 0, /pointer accessor outside predicate/],
    ["len", 0, /function len must be called/],
  ];
  it.each(cases)("%s fails at %i", (text, position, message) => {
    let error: unknown;
    try {
      compileCondition(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConditionSyntaxError);
    const syntax = error as ConditionSyntaxError;
    expect(syntax.position).toBe(position);
    expect(syntax.message).toMatch(message);
    expect(syntax.message).toContain(`(column ${position + 1})`);
    expect(syntax.expression).toBe(text);
  });

  it("shows a caret under the problem", () => {
    expect(() => compileCondition("result[0] >= )")).toThrow(
      'unexpected token ")" (column 14)\n | result[0] >= )\n | .............^',
    );
  });
});
