/** The analysis domain: conditions, measurements, assessment and the run lifecycle. */
export {
  assessLimits,
  assessMetric,
  assessRun,
  effectiveCount,
  isTerminating,
  isWorse,
  PHASE_ORDER,
  worst,
} from "./assess.ts";
export {
  boundJudgeState,
  boundMeasurement,
  jsonBytes,
  MAX_MEASUREMENT_BYTES,
  MAX_MESSAGE_BYTES,
  MAX_METADATA_ENTRIES,
  MAX_METADATA_VALUE_BYTES,
  MAX_REASON_BYTES,
  MAX_RETAINED_MEASUREMENTS,
  MAX_VALUE_BYTES,
  retentionOf,
  shrinkToFit,
  trimMeasurements,
  truncateText,
} from "./bounds.ts";
export { evaluateResult, type Verdict } from "./evaluate.ts";
export { type ArgoRunJson, toArgoJson } from "./json.ts";
export { type GateSummary, gatesOf, type JudgeOutcome, judgeLook, type Look, percent } from "./judge.ts";
export {
  createRun,
  dueMetrics,
  ERROR_RETRY_SECONDS,
  measurementsRecorded,
  measurementsTaken,
  metricDueAt,
  nextTickAt,
  recordMeasurement,
  recordStoreFailure,
  terminate,
  tick,
  unstorableRun,
  validateMetrics,
} from "./run.ts";
export * from "./types.ts";
export {
  expireStale,
  type Staleness,
  staleness,
  WATCHDOG_GRACE_SECONDS,
  WATCHDOG_INTERVALS,
} from "./watchdog.ts";
