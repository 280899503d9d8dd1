import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration, parseGoDuration } from "../../statemachine/duration.ts";
import { canonicalJson, revisionOf } from "../../statemachine/revision.ts";

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

  it.each(["5 minutes", "m5", "", "1d", "1.5", " 30s", "30s "])(
    "rejects %j as Go does, with a message that shows the forms",
    (input) => {
      const result = parseDuration(input);
      expect(result).toHaveProperty("error");
      expect((result as { error: string }).error).toMatch(/"30s"/);
    },
  );

  it("rejects negative numbers, NaN, infinities and non-strings", () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, {}, null, true]) {
      expect(parseDuration(bad)).toHaveProperty("error");
    }
    expect(parseDuration("-3s")).toEqual({ error: 'duration must be >= 0, got "-3s"' });
    expect(parseDuration(Number.NaN)).toEqual({
      error: "duration must be a number of seconds >= 0, got NaN",
    });
  });

  it.each([
    ["1.5h", 5400],
    ["300ms", 0.3],
    ["2h45m", 9900],
    [".5s", 0.5],
    ["5.s", 5],
    ["+5s", 5],
    ["1h0.5m", 3630],
    ["1µs", 0.000001],
    ["1μs", 0.000001],
    ["10.5s4m", 250.5],
  ] as const)("accepts Go's %s as %f seconds", (input, seconds) => {
    expect(parseDuration(input)).toEqual({ seconds });
  });

  it("refuses a duration past Go's largest (about 2562047h) as an overflow, and a year's worth as too long a wait", () => {
    expect(parseDuration("9999999999999h")).toEqual({
      error:
        'invalid duration "9999999999999h": longer than Go\'s largest duration (2562047h47m16.854775807s)',
    });
    expect(parseDuration("2562047h")).toEqual({
      error:
        'duration "2562047h" is longer than 8760h: a rollout\'s Step Functions execution lasts at most a year, so a longer wait would never end',
    });
    expect(parseDuration("8760h")).toEqual({ seconds: 31_536_000 });
    expect(parseDuration("8760h1s")).toHaveProperty("error");
    expect(parseDuration(31_536_001)).toHaveProperty("error");
    expect(parseDuration("99999999999999999999")).toHaveProperty("error");
    expect(parseDuration("61s", { seconds: 60, why: "the field's own limit" })).toEqual({
      error: 'duration "61s" is longer than 1m: the field\'s own limit',
    });
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

/** Go's own table (src/time/time_test.go, parseDurationTests and parseDurationErrorTests). */
describe("parseGoDuration reads exactly what Go's time.ParseDuration reads", () => {
  const S = 1_000_000_000n;
  const MS = 1_000_000n;
  const US = 1_000n;
  const MIN = 60n * S;
  const H = 60n * MIN;
  it.each([
    ["0", 0n],
    ["5s", 5n * S],
    ["30s", 30n * S],
    ["1478s", 1478n * S],
    ["-5s", -5n * S],
    ["+5s", 5n * S],
    ["-0", 0n],
    ["+0", 0n],
    ["5.0s", 5n * S],
    ["5.6s", 5n * S + 600n * MS],
    ["5.s", 5n * S],
    [".5s", 500n * MS],
    ["1.0s", S],
    ["1.00s", S],
    ["1.004s", S + 4n * MS],
    ["1.0040s", S + 4n * MS],
    ["100.00100s", 100n * S + MS],
    ["10ns", 10n],
    ["11us", 11n * US],
    ["12µs", 12n * US],
    ["12μs", 12n * US],
    ["13ms", 13n * MS],
    ["14s", 14n * S],
    ["15m", 15n * MIN],
    ["16h", 16n * H],
    ["3h30m", 3n * H + 30n * MIN],
    ["10.5s4m", 4n * MIN + 10n * S + 500n * MS],
    ["-2m3.4s", -(2n * MIN + 3n * S + 400n * MS)],
    ["1h2m3s4ms5us6ns", H + 2n * MIN + 3n * S + 4n * MS + 5n * US + 6n],
    ["39h9m14.425s", 39n * H + 9n * MIN + 14n * S + 425n * MS],
    ["52763797000ns", 52763797000n],
    ["0.3333333333333333333h", 20n * MIN],
    ["9007199254740993ns", (1n << 53n) + 1n],
    ["9223372036854775807ns", (1n << 63n) - 1n],
    ["9223372036854775.807us", (1n << 63n) - 1n],
    ["9223372036s854ms775us807ns", (1n << 63n) - 1n],
    ["-9223372036854775808ns", -(1n << 63n)],
    ["-9223372036854775.808us", -(1n << 63n)],
    ["-9223372036s854ms775us808ns", -(1n << 63n)],
    ["-2562047h47m16.854775808s", -(1n << 63n)],
    ["0.100000000000000000000h", 6n * MIN],
    ["0.830103483285477580700h", 49n * MIN + 48n * S + 372539827n],
  ] as const)("%s", (input, ns) => {
    expect(parseGoDuration(input)).toEqual({ ns });
  });

  it.each([
    "",
    "3",
    "-",
    "s",
    ".",
    "-.",
    ".s",
    "+.s",
    "1d",
    "\x85\x85",
    "\xffff",
    "hello \xffff world",
    "\uFFFD",
    "\uFFFD hello \uFFFD world",
    "9223372036854775810ns",
    "9223372036854775808ns",
    "-9223372036854775809ns",
    "9223372036854776us",
    "3000000h",
    "9223372036854775.808us",
    "9223372036854ms775us808ns",
  ])("refuses %j", (input) => {
    expect(parseGoDuration(input)).toHaveProperty("error");
  });
});
