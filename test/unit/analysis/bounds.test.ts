import { describe, expect, it } from "vitest";
import {
  type AnalysisRun,
  AnalysisRunSchema,
  boundMeasurement,
  createRun,
  MAX_MEASUREMENT_BYTES,
  MAX_RETAINED_MEASUREMENTS,
  MAX_STORED_READINGS_BYTES,
  type Measurement,
  measurementItem,
  nextTickAt,
  retentionOf,
  shrinkToFit,
  tick,
  truncateText,
} from "../../../functions/analysis/index.ts";
import type { MetricProvider } from "../../../functions/metrics/port.ts";
import { itemBytes, MAX_ITEM_BYTES } from "../../../functions/store/size.ts";
import { metric, spec, T0 } from "./helpers.ts";

const bytes = (text: string) => Buffer.byteLength(text, "utf8");
const MiB = 1024 * 1024;

/** A web answer of `size` bytes whose first element passes `result[0] >= 0.9`. */
function largeAnswer(size: number): MetricProvider {
  const result = [0.99, "x".repeat(size)];
  return {
    async measure() {
      return { ok: true, result, value: JSON.stringify(result) };
    },
  };
}

/** The run as the analysis-run item holds it, counted as DynamoDB counts the item. */
function itemSizeOf(run: AnalysisRun): number {
  return itemBytes({
    pk: "ROLLOUT#checkout",
    sk: "RUN#checkout-1111-g1.background",
    run: { run: JSON.parse(JSON.stringify(run)), token: null, tick: 1, templates: ["t"] },
    version: 1,
    updatedAt: T0.getTime(),
    createdAt: T0.getTime(),
    rollout: "checkout",
    runId: "checkout-1111-g1.background",
    expiresAt: T0.getTime() / 1000,
  });
}

async function ticks(run: AnalysisRun, provider: MetricProvider, n: number): Promise<AnalysisRun> {
  let current = run;
  for (let i = 0; i < n; i++) {
    const at = nextTickAt(current);
    if (!at) break;
    current = await tick(current, at, provider);
  }
  return current;
}

describe("what a measurement keeps", () => {
  it("cuts a 1 MiB web answer to its bound, flags it with the original size, and decides on the whole answer", async () => {
    const m = metric({ interval: 60 });
    const run = await tick(createRun(spec(m), T0), T0, largeAnswer(MiB));
    const [measurement] = run.metricResults[0]?.measurements ?? [];
    expect(measurement?.phase).toBe("Successful");
    expect(bytes(measurement?.value ?? "")).toBeLessThanOrEqual(2048);
    expect(measurement?.value).toMatch(/^\[0\.99,"x+… \[truncated: 1,048,5\d\d bytes\]$/);
    expect(measurement?.truncated?.value).toBe(bytes(JSON.stringify([0.99, "x".repeat(MiB)])));
    expect(bytes(JSON.stringify(measurement))).toBeLessThanOrEqual(MAX_MEASUREMENT_BYTES);
    // What is kept still reads back through the run's schema.
    expect(AnalysisRunSchema.parse(JSON.parse(JSON.stringify(run)))).toEqual(run);
  });

  it("bounds every text a measurement can carry, the judge's reason and the metadata included", () => {
    const huge = "é".repeat(100_000);
    const measurement: Measurement = {
      phase: "Error",
      value: huge,
      message: huge,
      startedAt: T0.toISOString(),
      finishedAt: T0.toISOString(),
      metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, huge])),
      judge: {
        test: "score",
        decision: "hold",
        verdict: "INSUFFICIENT",
        reason: huge,
        statistic: null,
        z: null,
        bayesFactor: null,
        pValue: null,
        effect: null,
        look: 1,
        metrics: Array.from({ length: 200 }, (_, i) => ({ name: `m${i}`, status: "hold", message: huge })),
      },
    };
    const bounded = boundMeasurement(measurement);
    expect(bytes(JSON.stringify(bounded))).toBeLessThanOrEqual(MAX_MEASUREMENT_BYTES);
    expect(bounded.truncated).toMatchObject({ value: 200_000, message: 200_000 });
    expect(bounded.message).toMatch(/^é+… \[truncated: 200,000 bytes\]$/);
    // A cut never splits a character.
    expect(Buffer.from(bounded.value ?? "", "utf8").toString("utf8")).toBe(bounded.value);
    // A measurement that fits is kept exactly.
    const small = { phase: "Successful", value: "[0.99]", startedAt: "a", finishedAt: "b" } as const;
    expect(boundMeasurement(small)).toBe(small);
  });

  it("keeps a judge's readings whole or not at all, and lets them go before the judge's figures", () => {
    const readings = (size: number): NonNullable<Measurement["readings"]> => ({
      ok: true,
      values: { "candidate.value": { ok: true, value: "1".repeat(size) } },
    });
    const look = (extra: Partial<Measurement>): Measurement => ({
      phase: "Running",
      startedAt: T0.toISOString(),
      finishedAt: T0.toISOString(),
      judge: {
        test: "mann-whitney",
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
      ...extra,
    });
    const fits = look({ readings: readings(1900) });
    expect(boundMeasurement(fits)).toBe(fits);
    const large = boundMeasurement(look({ readings: readings(5000) }));
    expect(large.readings).toBeUndefined();
    expect(large.truncated).toEqual({ readings: bytes(JSON.stringify(readings(5000))) });
    // Readings within their bound, but the whole look past its own: the readings go, the figures stay.
    const crowded = boundMeasurement(
      look({ value: "v".repeat(2000), message: "m".repeat(1000), readings: readings(1900) }),
    );
    expect(bytes(JSON.stringify(crowded))).toBeLessThanOrEqual(MAX_MEASUREMENT_BYTES);
    expect(crowded.readings).toBeUndefined();
    expect(crowded.judge?.look).toBe(1);
    expect(crowded.truncated?.readings).toBe(bytes(JSON.stringify(readings(1900))));
  });

  it("a look's own item takes back the readings its run had no room for, up to its own bound", () => {
    const readings = (size: number): NonNullable<Measurement["readings"]> => ({
      ok: true,
      values: { "candidate.value": { ok: true, value: "1".repeat(size) } },
    });
    const cut = (size: number, also: Record<string, number> = {}): Measurement => ({
      phase: "Failed",
      startedAt: T0.toISOString(),
      finishedAt: T0.toISOString(),
      truncated: { ...also, readings: bytes(JSON.stringify(readings(size))) },
    });
    expect(measurementItem(cut(13_000), readings(13_000))).toEqual({
      phase: "Failed",
      startedAt: T0.toISOString(),
      finishedAt: T0.toISOString(),
      readings: readings(13_000),
    });
    // Other cut fields stay flagged.
    expect(measurementItem(cut(13_000, { value: 9000 }), readings(13_000)).truncated).toEqual({
      value: 9000,
    });
    // Past the item's bound the readings stay cut.
    const huge = cut(MAX_STORED_READINGS_BYTES + 1);
    expect(measurementItem(huge, readings(MAX_STORED_READINGS_BYTES + 1))).toBe(huge);
    // A look whose readings fit its run is kept as it is.
    const whole: Measurement = { ...cut(10), truncated: undefined, readings: readings(10) };
    expect(measurementItem(whole, readings(10))).toBe(whole);
  });

  it("truncates on character boundaries within the byte budget", () => {
    expect(truncateText("short", 10)).toEqual({ text: "short" });
    const cut = truncateText("😀".repeat(100), 60);
    expect(bytes(cut.text)).toBeLessThanOrEqual(60);
    expect(cut.bytes).toBe(400);
    expect(cut.text).toMatch(/^(😀)+… \[truncated: 400 bytes\]$/);
  });
});

describe("what a run keeps", () => {
  it("a background metric with 1 MiB answers and retention 100 stays far under 400 KB after 100 measurements", async () => {
    const m = metric({ interval: 30, measurementRetention: 100 });
    const run = await ticks(createRun(spec(m), T0), largeAnswer(MiB), 100);
    const result = run.metricResults[0];
    expect(result?.successful).toBe(100);
    expect(result?.measurements).toHaveLength(MAX_RETAINED_MEASUREMENTS);
    expect(itemSizeOf(run)).toBeLessThan(MAX_ITEM_BYTES / 2);
  });

  it("many metrics share the bound: ten metrics keep four measurements each, and the item fits", async () => {
    const metrics = Array.from({ length: 10 }, (_, i) =>
      metric({ name: `m${i}`, interval: 30, measurementRetention: 100 }),
    );
    const run = await ticks(createRun(spec(...metrics), T0), largeAnswer(MiB), 8);
    expect(retentionOf(metrics[0] ?? metric(), 10)).toBe(4);
    for (const r of run.metricResults) expect(r.measurements).toHaveLength(4);
    expect(itemSizeOf(run)).toBeLessThan(MAX_ITEM_BYTES);
  });

  it("Error measurements quoting a huge response are bounded too", async () => {
    const m = metric({ interval: 30, consecutiveErrorLimit: 1000 });
    const failing: MetricProvider = {
      async measure() {
        return { ok: false, message: `received non 2xx response code: 500: ${"<html>".repeat(200_000)}` };
      },
    };
    const run = await ticks(createRun(spec(m), T0), failing, 60);
    expect(run.metricResults[0]?.error).toBe(60);
    expect(itemSizeOf(run)).toBeLessThan(MAX_ITEM_BYTES / 2);
  });

  it("shrinkToFit drops the oldest measurements of the fullest metric first, keeping each metric's last", async () => {
    const metrics = [metric({ name: "a", interval: 30 }), metric({ name: "b", interval: 60 })];
    const run = await ticks(createRun(spec(...metrics), T0), largeAnswer(100), 30);
    const counts = (r: AnalysisRun) => r.metricResults.map((x) => x.measurements.length);
    expect(counts(run)).toEqual([10, 10]);
    const shrunk = shrinkToFit(run, (r) => counts(r).reduce((s, n) => s + n, 0) <= 12);
    expect(counts(shrunk)).toEqual([6, 6]);
    expect(shrunk.metricResults[0]?.measurements.at(-1)).toEqual(run.metricResults[0]?.measurements.at(-1));
    expect(counts(shrinkToFit(run, () => false))).toEqual([1, 1]);
    expect(counts(run)).toEqual([10, 10]);
  });
});
