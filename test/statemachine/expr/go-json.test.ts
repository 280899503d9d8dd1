import { describe, expect, it } from "vitest";
import { compile, envOf } from "../../../statemachine/expr/index.ts";

describe("toJSON writes floats as Go's encoding/json does", () => {
  it.each([
    ["toJSON(1e-7)", "1e-7"],
    ["toJSON(1.5e-10)", "1.5e-10"],
    ["toJSON(1e21)", "1e+21"],
    ["toJSON(0.000001)", "0.000001"],
    ["toJSON(5.0)", "5"],
    ['toJSON("\\b<")', '"\\b\\u003c"'],
  ])("%s is %s", (source, expected) => {
    expect(compile(source, envOf({})).run(new Map())).toBe(expected);
  });
});
