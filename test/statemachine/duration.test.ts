import { describe, expect, it } from "vitest";
import { canonicalJson, formatDuration, parseDuration, revisionOf } from "../../statemachine/index.ts";

describe("durations", () => {
  it.each([
    [30, 30],
    ["30", 30],
    ["30s", 30],
    ["5m", 300],
    ["1h", 3600],
    ["1h30m", 5400],
    ["500ms", 0.5],
    ["2.5s", 2.5],
  ] as const)("%s is %f seconds", (input, seconds) => {
    expect(parseDuration(input)).toEqual({ seconds });
  });

  it.each(["5 minutes", "m5", "", "-3s", "1d"])("rejects %j with a message that shows the form", (input) => {
    const result = parseDuration(input);
    expect(result).toHaveProperty("error");
    expect((result as { error: string }).error).toMatch(/"30s"/);
  });

  it("rejects negative numbers and non-strings", () => {
    expect(parseDuration(-1)).toHaveProperty("error");
    expect(parseDuration({})).toHaveProperty("error");
  });

  it.each([
    [2, "2s"],
    [90, "1m30s"],
    [600, "10m"],
    [5400, "1h30m"],
    [0.5, "0.5s"],
  ] as const)("formats %f seconds as %s", (s, text) => {
    expect(formatDuration(s)).toBe(text);
  });
});

describe("revisions", () => {
  it("do not depend on key order", () => {
    expect(revisionOf({ b: 1, a: { d: [1, 2], c: "x" } })).toBe(
      revisionOf({ a: { c: "x", d: [1, 2] }, b: 1 }),
    );
  });

  it("change with any change to the template", () => {
    const a = revisionOf({ spec: { containers: [{ image: "app:1" }] } });
    const b = revisionOf({ spec: { containers: [{ image: "app:2" }] } });
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[0-9a-f]{10}$/);
  });

  it("match Python's json.dumps(sort_keys=True, separators=(',', ':'))", () => {
    // python3 -c 'import json,hashlib; t={"b":[1,"é"],"a":None}; print(hashlib.sha256(json.dumps(t,sort_keys=True,separators=(",",":")).encode()).hexdigest()[:10])'
    expect(canonicalJson({ b: [1, "é"], a: null })).toBe('{"a":null,"b":[1,"\\u00e9"]}');
    expect(revisionOf({ b: [1, "é"], a: null })).toBe("a44633ba03");
  });
});
