import { re2Subjects } from "@sfn-rollouts/test-support/regex-engines";
import { describe, expect, it } from "vitest";
import {
  ConditionEvaluationError,
  ConditionSyntaxError,
  compileCondition,
  type ResultType,
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
    ["(result ?? 1) == 1", null, true],
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

describe("compileCondition: evaluation errors, with Argo's messages", () => {
  // Each message is the one Argo's EvalCondition gives for the same condition and result.
  const cases: [string, unknown, ResultType | undefined, string][] = [
    ["result[0] >= 0.95", [], "json", "index out of range: 0 (array length is 0)"],
    ["result[0] >= 0.95", null, undefined, "type unknown[int] is undefined"],
    ["result?.a?.b == nil", null, undefined, "type nil has no field a"],
    ["result.a.b > 1", {}, "json", "cannot fetch b from <nil>"],
    ["result?.a.b.c == nil", {}, "json", "cannot fetch b from <nil>"],
    ["result[0]", [1], "json", "expected bool, but got float64"],
    ["result", 0.5, "float64", "expected bool, but got float64"],
    ["result[0] && true", [1], "json", "expected bool, but got float64"],
    ['result > "a"', 1, "float64", "invalid operation: > (mismatched types float64 and string)"],
    ["isNaN(result)", "x", "json", "cannot use string as argument (type float64) to call isNaN "],
    ['asInt("x") == 1', null, undefined, 'strconv.ParseInt: parsing "x": invalid syntax'],
    ["len(result) == 1", 5, "float64", "invalid argument for len (type float64)"],
    ["!result", 1, "float64", "invalid operation: ! (mismatched type float64)"],
    // A Prometheus value is a float64: `%` wants ints, refused by the checker for a []float64 ...
    ["result[0] % 2 == 0", [1], "float64s", "invalid operation: % (mismatched types float64 and int)"],
    // ... and at run time for decoded JSON, whose elements the checker cannot know.
    ["result[0] % 2 == 0", [1], "json", "invalid operation: float64 % int"],
    [
      'result contains "ok"',
      { a: 1 },
      "json",
      "invalid operation: contains (mismatched types map[string]interface {} and string)",
    ],
    ["len(0..300000000) > 0", null, undefined, "memory budget exceeded"],
  ];
  it.each(cases)("%s with %j (%s) fails: %s", (text, result, type, message) => {
    const c = compileCondition(text);
    expect(() => c.evaluate(result, type)).toThrow(ConditionEvaluationError);
    expect(() => c.evaluate(result, type)).toThrow(message);
  });
});

describe("compileCondition: the language as expr-lang v1.17 defines it", () => {
  const cases: [string, unknown, ResultType | undefined, boolean][] = [
    ["0.9 < result[0] < 1.1", [1], "float64s", true],
    ['result.msg contains "ok"', { a: 1 }, "json", false],
    ['result.msg not matches "^err"', { msg: "fine" }, "json", true],
    ["count([true, false, true]) == 2", null, undefined, true],
    ['trim("xxaxx", "x") == "a"', null, undefined, true],
    ["max([1, 5], 3) == 5 && min(2, [0.5]) == 0.5", null, undefined, true],
    ["mean(1, 2, 3) == 2.0 && median([]) == 0.0", null, undefined, true],
    ['0o17 == 15 && 0b101 == 5 && "\\x41\\U0001F600" == "A😀"', null, undefined, true],
    ["result ?? 1 == 1", null, undefined, true],
  ];
  it.each(cases.slice(0, -1))("%s with %j (%s) is %s", (text, result, type, expected) => {
    expect(compileCondition(text).evaluate(result, type)).toBe(expected);
  });

  it("refuses at load what fails for every result, as Argo would at every measurement", () => {
    for (const [text, message] of [
      ["true or 0", "invalid operation: or (mismatched types bool and int)"],
      ['42 in ["a"]', "cannot use int as type string in array"],
      ['asFloat(result) == "1.1"', "invalid operation: == (mismatched types float64 and string)"],
      [
        "result ?? 1 == 1",
        "Operator (==) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses.",
      ],
    ] as const) {
      expect(() => compileCondition(text)).toThrow(ConditionSyntaxError);
      expect(() => compileCondition(text)).toThrow(message);
    }
  });

  it("a hostile regular expression runs in linear time (RE2)", () => {
    const c = compileCondition('result matches "^(a+)+$"');
    // The engine is checked on a short subject, which even a backtracking engine returns on, so an
    // evaluator that used one fails here, at once, instead of hanging on the hostile subject below.
    expect(re2Subjects("^(a+)+$", () => expect(c.evaluate("aaaa!", "json")).toBe(false))).toContain("aaaa!");
    // RE2's time is linear in the subject: the hostile one returns.
    expect(c.evaluate(`${"a".repeat(50_000)}!`, "json")).toBe(false);
  });
});

describe("compileCondition: refused at load time, with the position", () => {
  const cases: [string, number, string][] = [
    ["result[0] >= ", 12, "unexpected token EOF"],
    ["result[0] >= )", 13, 'unexpected token Bracket(")")'],
    ["results[0] >= 0.95", 0, "unknown name results"],
    ["result[0 >= 0.95", 15, "unexpected token EOF"],
    ["(result[0] >= 0.95", 17, "unexpected token EOF"],
    ["foo(result)", 0, "unknown name foo"],
    ["isNaN(result, 1)", 0, "too many arguments to call isNaN"],
    ['result == "abc', 14, "literal not terminated"],
    ["result[0] >= 0.95 0.9", 18, 'unexpected token Number("0.9")'],
    ["result @ 1", 7, "unrecognized character: U+0040 '@'"],
    ["# > 1", 0, 'unexpected token Operator("#")'],
  ];
  it.each(cases)("%s fails at %i: %s", (text, position, message) => {
    let error: unknown;
    try {
      compileCondition(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConditionSyntaxError);
    const syntax = error as ConditionSyntaxError;
    expect(syntax.detail).toBe(message);
    expect(syntax.position).toBe(position);
    expect(syntax.expression).toBe(text);
  });

  it("shows a caret under the problem, as expr prints it", () => {
    expect(() => compileCondition("result[0] >= )")).toThrow(
      'unexpected token Bracket(")") (1:14)\n | result[0] >= )\n | .............^',
    );
  });
});
