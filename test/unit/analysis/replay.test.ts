import { describe, expect, it } from "vitest";
import {
  type Measurement,
  type RecordedMeasurement,
  ReplayInputError,
  replayMeasurements,
  replayMetrics,
  summarize,
  summaryLine,
} from "../../../functions/analysis/index.ts";
import { metric } from "./helpers.ts";

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const taken = (
  name: string,
  s: number,
  m: Partial<Measurement> & Pick<Measurement, "phase">,
): RecordedMeasurement => ({
  metric: name,
  measurement: { startedAt: at(s), finishedAt: at(s), ...m },
});

// success-rate: result[0] >= 0.9 Successful, < 0.5 Failed, between Inconclusive.
const history: RecordedMeasurement[] = [
  taken("success-rate", 0, { phase: "Successful", value: "[0.97]" }),
  taken("success-rate", 60, { phase: "Successful", value: "[0.92]" }),
  taken("success-rate", 120, { phase: "Inconclusive", value: "[0.7]" }),
  taken("success-rate", 180, { phase: "Error", message: "connection refused" }),
];

describe("replay of recorded measurements", () => {
  it("re-decides each value with the recorded conditions and finds no difference", () => {
    const rows = replayMeasurements([metric()], history);
    expect(rows.map((r) => [r.index, r.recorded, r.replayed, r.differs])).toEqual([
      [1, "Successful", "Successful", false],
      [2, "Successful", "Successful", false],
      [3, "Inconclusive", "Inconclusive", false],
      [4, "Error", "Error", false],
    ]);
    expect(summaryLine(summarize(rows))).toBe("0 of 4 decisions differ");
  });

  it("with a stricter condition reports the decisions that change and the first of them", () => {
    const stricter = metric({ successCondition: "result[0] >= 0.95", failureCondition: "result[0] < 0.8" });
    const rows = replayMeasurements(replayMetrics([metric()], [stricter]), history);
    expect(rows.map((r) => r.replayed)).toEqual(["Successful", "Inconclusive", "Failed", "Error"]);
    const summary = summarize(rows);
    expect(summary.differ).toBe(2);
    expect(summary.firstChange?.index).toBe(2);
    expect(summaryLine(summary)).toBe(
      `2 of 4 decisions differ; first at success-rate #2 (${at(60)}): Successful → Inconclusive`,
    );
  });

  it("orders the measurements of several metrics by time and numbers them per metric", () => {
    const latency = metric({
      name: "latency",
      successCondition: "result < 300",
      failureCondition: undefined,
    });
    const rows = replayMeasurements(
      [metric(), latency],
      [
        taken("latency", 30, { phase: "Successful", value: "250" }),
        taken("success-rate", 0, { phase: "Successful", value: "[0.97]" }),
        taken("latency", 90, { phase: "Successful", value: "320" }),
      ],
    );
    expect(rows.map((r) => `${r.metric}#${r.index}:${r.replayed}`)).toEqual([
      "success-rate#1:Successful",
      "latency#1:Successful",
      "latency#2:Failed",
    ]);
    expect(summarize(rows).firstChange?.metric).toBe("latency");
  });

  it("lists a judge's looks with their recorded decision, not re-decided", () => {
    const judged = taken("accuracy", 0, {
      phase: "Running",
      value: "hold",
      judge: {
        test: "two-proportion",
        decision: "hold",
        verdict: "INSUFFICIENT",
        reason: "too few",
        statistic: null,
        z: null,
        bayesFactor: null,
        pValue: null,
        effect: null,
        look: 1,
      },
    });
    const rows = replayMeasurements([metric({ name: "accuracy" })], [judged]);
    expect(rows[0]).toMatchObject({ recorded: "Running", replayed: null, differs: false });
    expect(rows[0]?.note).toMatch(/judge/);
    expect(summaryLine(summarize(rows))).toBe("0 of 0 decisions differ (1 not re-decided)");
  });

  it("names a condition that cannot be evaluated on the recorded value", () => {
    const broken = metric({ successCondition: "result.missing[0] > 1", failureCondition: undefined });
    const rows = replayMeasurements(
      [broken],
      [taken("success-rate", 0, { phase: "Successful", value: "[0.97]" })],
    );
    expect(rows[0]?.replayed).toBe("Error");
    expect(rows[0]?.note).toMatch(/successCondition/);
    expect(rows[0]?.differs).toBe(true);
  });

  it("refuses a template metric the run never measured, naming both sides", () => {
    expect(() => replayMetrics([metric()], [metric({ name: "sucess-rate" })])).toThrow(ReplayInputError);
    expect(() => replayMetrics([metric()], [metric({ name: "sucess-rate" })])).toThrow(
      /"sucess-rate" are not in the recorded run \(it measured "success-rate"\)/,
    );
  });
});
