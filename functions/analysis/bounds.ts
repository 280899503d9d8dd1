import { ARGO_DEFAULTS } from "../../statemachine/defaults.ts";
import type { Metric } from "../../statemachine/spec.ts";
import type { AnalysisRun, GateFigures, JudgeState, Measurement, RecordedReadings } from "./types.ts";

/**
 * What a run may keep, so that it always fits in one DynamoDB item (400 KB) however large the
 * providers' answers are and however long the analysis runs:
 *
 * - a **measurement** keeps at most {@link MAX_MEASUREMENT_BYTES}: its display value at most
 *   {@link MAX_VALUE_BYTES}, its message {@link MAX_MESSAGE_BYTES}, each metadata value
 *   {@link MAX_METADATA_VALUE_BYTES} (at most {@link MAX_METADATA_ENTRIES} entries), a judge's
 *   reason {@link MAX_REASON_BYTES}, a judge's readings {@link MAX_READINGS_BYTES} (kept whole or
 *   not at all: a reading cut in half cannot be decided again; the look's own item may keep up
 *   to {@link MAX_STORED_READINGS_BYTES}); what is cut ends with `… [truncated: N bytes]` and
 *   the measurement's `truncated` names each cut field with its original size in bytes;
 * - a **run** keeps at most {@link MAX_RETAINED_MEASUREMENTS} measurements in all: each metric
 *   keeps `min(measurementRetention, floor(48 / metrics))`, and at least its last one (the next
 *   due time is computed from it). The counters keep counting, and every measurement is also
 *   stored on its own item (with a TTL), so nothing a person reads is lost.
 *
 * Conditions never see any of this: they are evaluated on the provider's whole answer first.
 */

/** Bytes one measurement takes at most (its JSON, UTF-8): in its run and in its own item. */
export const MAX_MEASUREMENT_BYTES = 4096;
/** Bytes of a measurement's display value (a web answer can be a whole JSON document). */
export const MAX_VALUE_BYTES = 2048;
/** Bytes of a measurement's message (an error can quote a response body). */
export const MAX_MESSAGE_BYTES = 1024;
/** Bytes of one metadata value, and the number of metadata entries kept. */
export const MAX_METADATA_VALUE_BYTES = 256;
export const MAX_METADATA_ENTRIES = 8;
/** Bytes of a judge's reason (it quotes a failed reading's message). */
export const MAX_REASON_BYTES = 512;
/**
 * Bytes of a judge's readings at one look: counts take about 200 bytes (a score's several metrics
 * a few times that), so they always fit; a list of raw samples beyond this is not kept.
 */
export const MAX_READINGS_BYTES = 2048;
/**
 * Bytes of a judge's readings on the look's own item (one DynamoDB item of at most 400 KB, see
 * `store/size.ts`): 8,000 three-digit samples per side, 1,700 full-precision decimals. Past
 * this the item says they were cut too.
 */
export const MAX_STORED_READINGS_BYTES = 64 * 1024;
/** Measurements a run keeps in all metrics together: 48 × 4 KB = 192 KiB of the 400 KB item. */
export const MAX_RETAINED_MEASUREMENTS = 48;

const bytesOf = (text: string): number => Buffer.byteLength(text, "utf8");

/** Bytes of a value's JSON: never less than DynamoDB counts for it (keys and strings count alike). */
export function jsonBytes(value: unknown): number {
  return bytesOf(JSON.stringify(value) ?? "null");
}

/**
 * Cuts `text` to at most `max` UTF-8 bytes, marker included, on a character boundary. Returns the
 * text unchanged when it fits, and the original size when it was cut.
 */
export function truncateText(text: string, max: number): { text: string; bytes?: number } {
  const bytes = bytesOf(text);
  if (bytes <= max) return { text };
  const marker = `… [truncated: ${bytes.toLocaleString("en-US")} bytes]`;
  const room = Math.max(0, max - bytesOf(marker));
  // Whole characters only: a code point is never split, so the text stays valid UTF-8.
  let used = 0;
  let end = 0;
  for (const char of text) {
    const size = bytesOf(char);
    if (used + size > room) break;
    used += size;
    end += char.length;
  }
  return { text: `${text.slice(0, end)}${marker}`, bytes };
}

/** How many measurements a metric keeps in a run of `metricCount` metrics. */
export function retentionOf(metric: Pick<Metric, "measurementRetention">, metricCount: number): number {
  const share = Math.floor(MAX_RETAINED_MEASUREMENTS / Math.max(1, metricCount));
  return Math.max(1, Math.min(metric.measurementRetention, share));
}

function boundFigures(figures: GateFigures, truncated: Record<string, number>, field: string): GateFigures {
  const out = { ...figures };
  const reason = truncateText(out.reason, MAX_REASON_BYTES);
  out.reason = reason.text;
  if (reason.bytes !== undefined) truncated[`${field}.reason`] = reason.bytes;
  if (out.metrics) {
    let cut = false;
    out.metrics = out.metrics.map((m) => {
      const name = truncateText(m.name, MAX_METADATA_VALUE_BYTES);
      const message = truncateText(m.message, MAX_METADATA_VALUE_BYTES);
      if (name.bytes !== undefined || message.bytes !== undefined) cut = true;
      return { ...m, name: name.text, message: message.text };
    });
    if (cut) truncated[`${field}.metrics`] = jsonBytes(figures.metrics);
  }
  return out;
}

/**
 * A measurement as a run keeps it: within {@link MAX_MEASUREMENT_BYTES}, each cut field flagged in
 * `truncated` with its original size. Pure; a measurement that fits is returned as it is.
 */
export function boundMeasurement(measurement: Measurement): Measurement {
  if (jsonBytes(measurement) <= MAX_MEASUREMENT_BYTES && !needsCut(measurement)) return measurement;
  const truncated: Record<string, number> = { ...(measurement.truncated ?? {}) };
  const out: Measurement = { ...measurement };
  if (out.value !== undefined) {
    const value = truncateText(out.value, MAX_VALUE_BYTES);
    out.value = value.text;
    if (value.bytes !== undefined) truncated.value = value.bytes;
  }
  if (out.message !== undefined) {
    const message = truncateText(out.message, MAX_MESSAGE_BYTES);
    out.message = message.text;
    if (message.bytes !== undefined) truncated.message = message.bytes;
  }
  if (out.metadata) {
    const entries = Object.entries(out.metadata);
    let cut = entries.length > MAX_METADATA_ENTRIES;
    const kept = entries.slice(0, MAX_METADATA_ENTRIES).map(([k, v]) => {
      const key = truncateText(k, 64);
      const value = truncateText(v, MAX_METADATA_VALUE_BYTES);
      if (key.bytes !== undefined || value.bytes !== undefined) cut = true;
      return [key.text, value.text] as const;
    });
    if (cut) truncated.metadata = jsonBytes(measurement.metadata);
    out.metadata = Object.fromEntries(kept);
  }
  if (out.judge) out.judge = boundFigures(out.judge, truncated, "judge");
  if (out.readings && jsonBytes(out.readings) > MAX_READINGS_BYTES) {
    truncated.readings = jsonBytes(out.readings);
    delete out.readings;
  }
  // Whatever still does not fit (a score's many metrics) goes, largest detail first.
  if (jsonBytes({ ...out, truncated }) > MAX_MEASUREMENT_BYTES && out.judge?.metrics) {
    truncated["judge.metrics"] = jsonBytes(measurement.judge?.metrics);
    const { metrics: _dropped, ...rest } = out.judge;
    out.judge = rest;
  }
  if (jsonBytes({ ...out, truncated }) > MAX_MEASUREMENT_BYTES && out.metadata) {
    truncated.metadata = jsonBytes(measurement.metadata);
    delete out.metadata;
  }
  if (jsonBytes({ ...out, truncated }) > MAX_MEASUREMENT_BYTES && out.readings) {
    truncated.readings = jsonBytes(measurement.readings);
    delete out.readings;
  }
  if (jsonBytes({ ...out, truncated }) > MAX_MEASUREMENT_BYTES && out.judge) {
    truncated.judge = jsonBytes(measurement.judge);
    delete out.judge;
  }
  return Object.keys(truncated).length > 0 ? { ...out, truncated } : out;
}

/**
 * A look as its own item keeps it: the measurement as its run keeps it, with the readings the run
 * had to let go back on it when they fit {@link MAX_STORED_READINGS_BYTES}. Pure.
 */
export function measurementItem(
  measurement: Measurement,
  readings: RecordedReadings | undefined,
): Measurement {
  if (measurement.truncated?.readings === undefined || !readings) return measurement;
  if (jsonBytes(readings) > MAX_STORED_READINGS_BYTES) return measurement;
  const { readings: _cut, ...truncated } = measurement.truncated;
  const { truncated: _all, ...rest } = measurement;
  return { ...rest, readings, ...(Object.keys(truncated).length > 0 ? { truncated } : {}) };
}

function needsCut(m: Measurement): boolean {
  return (
    (m.value !== undefined && bytesOf(m.value) > MAX_VALUE_BYTES) ||
    (m.message !== undefined && bytesOf(m.message) > MAX_MESSAGE_BYTES) ||
    (m.judge !== undefined && bytesOf(m.judge.reason) > MAX_REASON_BYTES) ||
    (m.readings !== undefined && jsonBytes(m.readings) > MAX_READINGS_BYTES) ||
    (m.metadata !== undefined &&
      (Object.keys(m.metadata).length > MAX_METADATA_ENTRIES ||
        Object.entries(m.metadata).some(
          ([k, v]) => bytesOf(k) > 64 || bytesOf(v) > MAX_METADATA_VALUE_BYTES,
        )))
  );
}

/** A judge's state as a run keeps it: its last decision's reason bounded like a measurement's. */
export function boundJudgeState(state: JudgeState): JudgeState {
  if (!state.last) return state;
  return { ...state, last: boundFigures(state.last, {}, "last") };
}

/**
 * Keeps each metric's last `retentionOf` measurements (Argo's garbage collection, with the run's
 * total bound). Mutates `run`.
 */
export function trimMeasurements(run: AnalysisRun): void {
  for (const result of run.metricResults) {
    const metric = run.metrics.find((m) => m.name === result.name);
    const limit = retentionOf(metric ?? ARGO_DEFAULTS.metric, run.metrics.length);
    if (result.measurements.length > limit) result.measurements = result.measurements.slice(-limit);
  }
}

/**
 * Drops the oldest retained measurements, one at a time from the metric that keeps the most, until
 * `fits(run)` says the run fits or every metric keeps only its last one. For a run with many
 * metrics whose spec and results leave less room than the retention bound assumes. Pure.
 */
export function shrinkToFit(run: AnalysisRun, fits: (run: AnalysisRun) => boolean): AnalysisRun {
  if (fits(run)) return run;
  const next = structuredClone(run);
  for (;;) {
    let largest: (typeof next.metricResults)[number] | undefined;
    for (const r of next.metricResults) {
      if (r.measurements.length > 1 && (!largest || r.measurements.length > largest.measurements.length)) {
        largest = r;
      }
    }
    if (!largest) return next;
    largest.measurements = largest.measurements.slice(1);
    if (fits(next)) return next;
  }
}
