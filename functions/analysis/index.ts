/** The analysis domain: conditions, measurements, assessment and the run lifecycle. */
export {
  boundMeasurement,
  MAX_MEASUREMENT_BYTES,
  MAX_RETAINED_MEASUREMENTS,
  MAX_STORED_READINGS_BYTES,
  measurementItem,
  retentionOf,
  shrinkToFit,
  truncateText,
} from "./bounds.ts";
export { evaluateResult } from "./evaluate.ts";
export { toArgoJson } from "./json.ts";
export {
  type RecordedMeasurement,
  ReplayInputError,
  type ReplayRow,
  type ReplaySummary,
  replayMeasurements,
  replayMetrics,
  summarize,
  summaryLine,
} from "./replay.ts";
export {
  createRun,
  measurementsTaken,
  nextTickAt,
  terminate,
  tick,
} from "./run.ts";
export * from "./types.ts";
export {
  expireStale,
  staleness,
} from "./watchdog.ts";
