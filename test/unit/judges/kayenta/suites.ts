import { readFileSync } from "node:fs";
import { expect } from "vitest";

/**
 * The input series of Kayenta's own judge tests, as `test/fixtures/judges/kayenta/extract_suites.py`
 * copied them out of its Scala sources: by suite, by test name, by variable name. NaN is written
 * "NaN" (JSON has no NaN).
 */
interface Suites {
  kayenta: string;
  commit: string;
  suites: Record<string, Record<string, Record<string, Array<number | "NaN">>>>;
}

const suites: Suites = JSON.parse(
  readFileSync(new URL("../../../fixtures/judges/kayenta/suites.json", import.meta.url), "utf8"),
);

/** The arrays a Kayenta test declares, by variable name (`experimentData`, `controlData`, `x`, ...). */
export function kayentaTest(suite: string, test: string): Record<string, number[]> {
  const arrays = suites.suites[suite]?.[test];
  if (!arrays) throw new Error(`no data for ${suite} "${test}" in suites.json`);
  return Object.fromEntries(
    Object.entries(arrays).map(([name, values]) => [name, values.map((v) => (v === "NaN" ? Number.NaN : v))]),
  );
}

/** ScalaTest's `a === (b +- tolerance)` and JUnit's `assertEquals(b, a, tolerance)`. */
export function expectWithin(actual: number, expected: number, tolerance: number): void {
  expect(Math.abs(actual - expected), `${actual} is not ${expected} ± ${tolerance}`).toBeLessThanOrEqual(
    tolerance,
  );
}
