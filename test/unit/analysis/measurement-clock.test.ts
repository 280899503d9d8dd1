import { describe, expect, it } from "vitest";
import {
  createRun,
  evaluateResult,
  type RecordedMeasurement,
  replayMeasurements,
  tick,
} from "../../../functions/analysis/index.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import { evaluateTime } from "../../../statemachine/conditions.ts";
import { compile, envOf, format, toJS } from "../../../statemachine/expr/index.ts";
import { metric, spec } from "./helpers.ts";

/**
 * `now()` in an expression is the time the expression is evaluated for: a measurement's
 * conditions see the measurement's time (the tick's, virtual in the embedded runtime), not the
 * wall clock; only an evaluation with no measurement behind it reads the wall clock.
 */

const NOON = new Date("2026-01-01T12:00:00.000Z");
const MORNING = new Date("2026-01-01T09:30:00.000Z");
/** True from 10:00 UTC on: a condition whose answer depends only on the time it is evaluated at. */
const AFTER_TEN = "now().Hour() >= 10";

describe("the expression language's clock", () => {
  it("now() answers the clock the run is given, in UTC and in a named zone", () => {
    const program = compile("now()", envOf({}));
    expect(format(program.run(new Map(), { now: () => NOON.getTime() }))).toBe(
      "2026-01-01 12:00:00 +0000 UTC",
    );
    const tokyo = compile('now(timezone("Asia/Tokyo")).Hour()', envOf({}));
    expect(tokyo.run(new Map(), { now: () => NOON.getTime() })).toBe(21n);
    expect(tokyo.run(new Map(), { now: () => MORNING.getTime() })).toBe(18n);
  });

  it("without a clock, now() is the wall clock", () => {
    const program = compile("now().UnixMilli()", envOf({}));
    const before = Date.now();
    const read = toJS(program.run(new Map()));
    const after = Date.now();
    expect(read).toBeGreaterThanOrEqual(before);
    expect(read).toBeLessThanOrEqual(after);
  });

  it("a condition's verdict is the one at the measurement's time", () => {
    const m = { successCondition: AFTER_TEN };
    expect(evaluateResult([1], m, "float64s", { now: NOON }).phase).toBe("Successful");
    expect(evaluateResult([1], m, "float64s", { now: MORNING }).phase).toBe("Failed");
  });

  it("a tick evaluates the conditions at the tick's time", async () => {
    const provider: MetricProvider = {
      measure: async () => ({ ok: true, result: [1], value: "[1]", resultType: "float64s" }),
    };
    const m = metric({ successCondition: AFTER_TEN, failureCondition: undefined });
    const phaseAt = async (at: Date) => {
      const run = await tick(createRun(spec(m), at), at, provider);
      return run.metricResults[0]?.measurements.map((x) => x.phase);
    };
    expect(await phaseAt(NOON)).toEqual(["Successful"]);
    expect(await phaseAt(MORNING)).toEqual(["Failed"]);
  });

  it("a replay decides a measurement again at the time it was taken", () => {
    const m = metric({ successCondition: AFTER_TEN, failureCondition: undefined });
    const taken = (at: Date, phase: "Successful" | "Failed"): RecordedMeasurement => ({
      metric: m.name,
      measurement: { phase, value: "[1]", startedAt: at.toISOString(), finishedAt: at.toISOString() },
    });
    const rows = replayMeasurements([m], [taken(MORNING, "Failed"), taken(NOON, "Successful")]);
    expect(rows.map((r) => [r.recorded, r.replayed, r.differs])).toEqual([
      ["Failed", "Failed", false],
      ["Successful", "Successful", false],
    ]);
  });
});

describe("evaluateTime (Argo's evaluate.EvalTime)", () => {
  it("evaluates a time expression at the given now, to the nanosecond", () => {
    expect(evaluateTime('now() - duration("10m")', { now: NOON })).toBe(
      BigInt(NOON.getTime() - 600_000) * 1_000_000n,
    );
    expect(evaluateTime('date("2023-08-14 00:00:00.5", "2006-01-02 15:04:05", "UTC")')).toBe(
      BigInt(Date.UTC(2023, 7, 14)) * 1_000_000n + 500_000_000n,
    );
  });

  it("fails with expr's message, or says what the value was when it is not a time", () => {
    expect(() => evaluateTime('now() - duration("??")', { now: NOON })).toThrow(
      'time: invalid duration "??"',
    );
    expect(() => evaluateTime("1 + 1", { now: NOON })).toThrow("expected time.Time, but got int");
    expect(() => evaluateTime('"2023-08-14"', { now: NOON })).toThrow("expected time.Time, but got string");
    expect(() => evaluateTime("result", { now: NOON })).toThrow("unknown name result");
  });
});
