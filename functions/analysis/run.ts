import { MAX_RUNNING_MEASUREMENT_SECONDS } from "../../statemachine/limits.ts";
import type { AnalysisSpec, JudgeSpec, Metric } from "../../statemachine/spec.ts";
import type { MeasureContext, MetricProvider, ProviderAnswer, ProviderResult } from "../metrics/port.ts";
import { assessRun, effectiveCount, isInFlight, isTerminating } from "./assess.ts";
import { boundJudgeState, boundMeasurement, trimMeasurements, truncateText } from "./bounds.ts";
import { evaluateResult } from "./evaluate.ts";
import { judgeLook } from "./judge-look.ts";
import {
  type AnalysisRun,
  isCompleted,
  type JudgeState,
  type Measurement,
  type MetricResult,
  type RecordedReadings,
} from "./types.ts";

/**
 * The AnalysisRun lifecycle as pure functions over a JSON value: `createRun`, `tick` (take the
 * measurements that are due, assess), `terminate`, and `nextTickAt` for the Timer. No timers and no
 * clock inside: the handler, the local runtime, the CLI and the tests pass `now`.
 */

/** Argo's `DefaultErrorRetryInterval`: after an Error the next measurement is 10 s later. */
export const ERROR_RETRY_SECONDS = 10;

/**
 * Argo's `ValidateMetrics` for a run's metrics; returns the first problem, in Argo's words, or
 * undefined. The spec parser checks most of this at load time; the run checks again because a
 * run can be created from a hand-written native spec.
 */
export function validateMetrics(metrics: readonly Metric[]): string | undefined {
  if (metrics.length === 0) return "no metrics specified";
  const seen = new Set<string>();
  for (const [i, m] of metrics.entries()) {
    if (seen.has(m.name)) return `metrics[${i}]: duplicate name '${m.name}'`;
    seen.add(m.name);
    const problem = validateMetric(m);
    if (problem) return `metrics[${i}]: ${problem}`;
  }
  return undefined;
}

function validateMetric(m: Metric): string | undefined {
  const count = m.count ?? 0;
  const fl = m.failureLimit;
  const csl = m.consecutiveSuccessLimit;
  if (csl < 0) return "consecutiveSuccessLimit must be >= 0";
  if (fl < -1) return "failureLimit must be >= 0, or -1 to be disabled";
  if (csl === 0 && fl === -1) return "failureLimit and consecutiveSuccessLimit cannot both be disabled";
  if (m.inconclusiveLimit < 0) return "inconclusiveLimit must be >= 0";
  if (m.consecutiveErrorLimit < 0) return "consecutiveErrorLimit must be >= 0";
  if (count > 0) {
    if (fl >= 0 && count < fl + csl) {
      return `count (${count}) must be >= failureLimit + consecutiveSuccessLimit (${fl} + ${csl}) if both >= 0`;
    }
    if (fl < 0 && count < csl) return "count must be >= consecutiveSuccessLimit";
    if (count < m.inconclusiveLimit) return "count must be >= inconclusiveLimit";
  }
  if (count > 1 && m.interval === undefined) return "interval must be specified when count > 1";
  return undefined;
}

/** A new run for an analysis step (every template's metrics, in order), started at `now`. */
export function createRun(spec: Pick<AnalysisSpec, "templates">, now: Date): AnalysisRun {
  const metrics = spec.templates.flatMap((t) => t.metrics);
  const run: AnalysisRun = {
    metrics: structuredClone(metrics),
    phase: "Pending",
    terminate: false,
    startedAt: now.toISOString(),
    metricResults: [],
  };
  const problem = validateMetrics(metrics);
  if (problem) {
    run.phase = "Error";
    run.message = `Analysis spec invalid: ${problem}`;
    run.completedAt = now.toISOString();
  }
  return run;
}

function resultOf(run: AnalysisRun, name: string): MetricResult | undefined {
  return run.metricResults.find((r) => r.name === name);
}

/** When a metric's next measurement is due, or undefined when it takes no more. */
export function metricDueAt(run: AnalysisRun, metric: Metric): Date | undefined {
  const result = resultOf(run, metric.name);
  if (result && isCompleted(result.phase)) return undefined;
  const last = result?.measurements.at(-1);
  if (!last || !result) {
    return new Date(Date.parse(run.startedAt) + metric.initialDelay * 1000);
  }
  // A measurement still running is resumed when it asked to be.
  if (last.resumeAt !== undefined) return new Date(last.resumeAt);
  const count = effectiveCount(metric);
  if (count !== undefined && result.count >= count) return undefined;
  let interval: number | undefined;
  if (last.phase === "Error") interval = ERROR_RETRY_SECONDS;
  else interval = metric.interval;
  // No interval and no error: the single measurement was taken (count bookkeeping covers it).
  if (interval === undefined) return undefined;
  return new Date(Date.parse(last.finishedAt) + interval * 1000);
}

/**
 * When the Timer should call {@link tick} next: the earliest due metric. Undefined for a completed
 * run, and for a terminating one (it only needs {@link tick} or {@link terminate} to close).
 */
export function nextTickAt(run: AnalysisRun): Date | undefined {
  if (isCompleted(run.phase)) return undefined;
  if (isTerminating(run)) return new Date(Date.parse(run.startedAt));
  let earliest: Date | undefined;
  for (const metric of run.metrics) {
    const due = metricDueAt(run, metric);
    if (due && (!earliest || due < earliest)) earliest = due;
  }
  return earliest;
}

/** The metrics whose measurement is due at `now` (a due time equal to `now` is due). */
export function dueMetrics(run: AnalysisRun, now: Date): Metric[] {
  if (isCompleted(run.phase) || isTerminating(run)) return [];
  return run.metrics.filter((m) => {
    const due = metricDueAt(run, m);
    return due !== undefined && due.getTime() <= now.getTime();
  });
}

function toMeasurement(
  metric: Metric,
  answer: ProviderAnswer,
  now: Date,
  result: MetricResult | undefined,
): { measurement: Measurement; judge?: JudgeState } {
  const at = now.toISOString();
  const judge = metric.provider.judge;
  const inFlight = result?.measurements.at(-1);
  const resumed = isInFlight(inFlight) ? inFlight : undefined;
  if (answer.ok === "running") return { measurement: runningMeasurement(answer, now, resumed) };
  if (judge) return judgeMeasurement(metric, judge, answer, result?.judge, result?.count ?? 0, at);
  const measurement = plainMeasurement(metric, answer, at);
  return { measurement: resumed ? { ...measurement, startedAt: resumed.startedAt } : measurement };
}

/**
 * A provider's measurement that is still running: Running, to be resumed when the provider asked,
 * with the metadata it resumes from. Past {@link MAX_RUNNING_MEASUREMENT_SECONDS} since it started
 * it is an Error instead, so that no measurement runs without end.
 */
function runningMeasurement(
  answer: Extract<ProviderAnswer, { ok: "running" }>,
  now: Date,
  resumed: Measurement | undefined,
): Measurement {
  const startedAt = resumed?.startedAt ?? now.toISOString();
  const at = now.toISOString();
  const ran = (now.getTime() - Date.parse(startedAt)) / 1000;
  if (ran >= MAX_RUNNING_MEASUREMENT_SECONDS) {
    return {
      phase: "Error",
      message: `the measurement is still running after ${Math.round(ran)}s, the most one may run (${MAX_RUNNING_MEASUREMENT_SECONDS}s)`,
      startedAt,
      finishedAt: at,
      metadata: answer.metadata,
    };
  }
  return {
    phase: "Running",
    startedAt,
    finishedAt: at,
    resumeAt: new Date(now.getTime() + answer.resumeAfterSeconds * 1000).toISOString(),
    metadata: answer.metadata,
  };
}

/**
 * A judge metric's look: its measurement (with the readings it decided on, so a replay can decide
 * it again) and the judge's state for the next look. `counted` is the metric's `count` so far (its
 * looks that reached a verdict or held). The analysis and `rollouts replay` both take a look here.
 */
export function judgeMeasurement(
  metric: Metric,
  judge: JudgeSpec,
  answer: ProviderResult,
  previous: JudgeState | undefined,
  counted: number,
  at: string,
): { measurement: Measurement; judge: JudgeState } {
  // A judge never errors: whatever it could not read is a hold, with the reason.
  const count = effectiveCount(metric);
  const look = {
    index: (previous?.looks ?? 0) + 1,
    final: count !== undefined && counted + 1 >= count,
  };
  const out = judgeLook(metric.name, judge, answer, previous, look);
  return {
    measurement: {
      phase: out.phase,
      value: out.value,
      message: out.message,
      startedAt: at,
      finishedAt: at,
      judge: out.figures,
      readings: recordedReadings(answer),
    },
    judge: out.state,
  };
}

/** The readings as the store keeps them (JSON), or why the reader failed. */
function recordedReadings(answer: ProviderResult): RecordedReadings {
  if (!answer.ok) return { ok: false, message: answer.message };
  return { ok: true, values: JSON.parse(JSON.stringify(answer.result ?? {})) };
}

function plainMeasurement(metric: Metric, answer: ProviderResult, at: string): Measurement {
  if (!answer.ok) {
    return {
      phase: "Error",
      message: answer.message,
      startedAt: at,
      finishedAt: at,
      ...(answer.metadata ? { metadata: answer.metadata } : {}),
    };
  }
  // A provider that judges (Kayenta's score against its thresholds) gives the verdict itself; the
  // conditions' now() is the measurement's time, the tick's (virtual in the embedded runtime).
  const verdict = answer.phase
    ? { phase: answer.phase }
    : evaluateResult(answer.result, metric, answer.resultType, { now: new Date(at) });
  return {
    phase: verdict.phase,
    value: answer.value,
    ...(verdict.message ? { message: verdict.message } : {}),
    startedAt: at,
    finishedAt: at,
    ...(answer.metadata ? { metadata: answer.metadata } : {}),
  };
}

/** A metric's result before its first measurement: every counter at zero. */
export function newMetricResult(name: string, dryRun: boolean, phase: MetricResult["phase"]): MetricResult {
  return {
    name,
    phase,
    dryRun,
    count: 0,
    successful: 0,
    failed: 0,
    inconclusive: 0,
    error: 0,
    held: 0,
    consecutiveError: 0,
    consecutiveSuccess: 0,
    measurements: [],
  };
}

/**
 * Records a measurement on its metric's counters, exactly as Argo's `runMeasurements` does; the
 * measurement is kept within its bound (`boundMeasurement`: a large answer is cut and flagged).
 * It replaces the metric's last measurement when that one was still running; one still running
 * touches no counter.
 */
export function recordMeasurement(run: AnalysisRun, metric: Metric, taken: Measurement): void {
  const measurement = boundMeasurement(taken);
  let result = resultOf(run, metric.name);
  if (!result) {
    result = newMetricResult(metric.name, metric.dryRun, "Running");
    run.metricResults.push(result);
  }
  if (isInFlight(result.measurements.at(-1))) result.measurements.pop();
  if (isInFlight(measurement)) {
    result.measurements.push(measurement);
    return;
  }
  switch (measurement.phase) {
    case "Successful":
      result.successful++;
      result.count++;
      result.consecutiveError = 0;
      result.consecutiveSuccess++;
      break;
    case "Failed":
      result.failed++;
      result.count++;
      result.consecutiveError = 0;
      result.consecutiveSuccess = 0;
      break;
    case "Inconclusive":
      result.inconclusive++;
      result.count++;
      result.consecutiveError = 0;
      result.consecutiveSuccess = 0;
      break;
    case "Error":
      result.error++;
      result.consecutiveError++;
      result.consecutiveSuccess = 0;
      break;
    case "Running":
      // A judge that held: a look taken (towards `count`), no verdict, no limit touched.
      result.held++;
      result.count++;
      result.consecutiveError = 0;
      result.consecutiveSuccess = 0;
      break;
  }
  result.measurements.push(measurement);
}

/** How many measurements a metric has recorded in all (its retention keeps only the last few). */
export function measurementsRecorded(r: MetricResult): number {
  return r.successful + r.failed + r.inconclusive + r.error + r.held;
}

async function measureSafely(
  provider: MetricProvider,
  metric: Metric,
  now: Date,
  run: AnalysisRun,
  where: TickContext,
): Promise<ProviderAnswer> {
  const result = resultOf(run, metric.name);
  const last = result?.measurements.at(-1);
  const ctx = measureContext(run, metric, now, where);
  try {
    if (last && isInFlight(last)) {
      if (!provider.resume)
        return { ok: false, message: `metric "${metric.name}": its provider cannot resume a measurement` };
      const running = { metadata: last.metadata ?? {}, startedAt: new Date(last.startedAt) };
      return await provider.resume(metric, running, ctx);
    }
    return await provider.measure(metric, ctx);
  } catch (e) {
    // Argo records a provider it cannot build or a query that throws as an Error measurement.
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

/** What a provider is told of a measurement of `metric` at `now` (its run, the target). */
function measureContext(run: AnalysisRun, metric: Metric, now: Date, where: TickContext): MeasureContext {
  const result = resultOf(run, metric.name);
  return {
    now,
    startedAt: new Date(run.startedAt),
    ...(where.runId === undefined
      ? {}
      : { run: { id: where.runId, measurement: (result?.count ?? 0) + (result?.error ?? 0) + 1 } }),
    ...(where.target === undefined ? {} : { target: where.target }),
  };
}

/**
 * {@link terminate}, after {@link endRunning}: a run ended on request ends what it still runs.
 */
export async function terminateRunning(
  run: AnalysisRun,
  now: Date,
  provider: MetricProvider,
  where: TickContext = {},
): Promise<AnalysisRun> {
  if (isCompleted(run.phase)) return terminate(run, now);
  return terminate(await endRunning(run, now, provider, where), now);
}

/**
 * Argo's Terminate of each measurement still running whose provider ends one (a Job deleted):
 * its answer replaces the running measurement (Successful, or an Error with the provider's
 * message), and the run is assessed again. A provider that cannot end one leaves it running.
 */
export async function endRunning(
  run: AnalysisRun,
  now: Date,
  provider: MetricProvider,
  where: TickContext = {},
): Promise<AnalysisRun> {
  const next = structuredClone(run);
  const running = next.metrics.filter((m) => isInFlight(resultOf(next, m.name)?.measurements.at(-1)));
  if (!provider.terminate || running.length === 0) return next;
  const at = now.toISOString();
  const answers = await Promise.all(
    running.map(async (metric) => {
      const last = resultOf(next, metric.name)?.measurements.at(-1) as Measurement;
      const inFlight = { metadata: last.metadata ?? {}, startedAt: new Date(last.startedAt) };
      try {
        return await provider.terminate?.(metric, inFlight, measureContext(next, metric, now, where));
      } catch (e) {
        return { ok: false as const, message: e instanceof Error ? e.message : String(e) };
      }
    }),
  );
  running.forEach((metric, i) => {
    const answer = answers[i];
    if (!answer) return;
    const last = resultOf(next, metric.name)?.measurements.at(-1) as Measurement;
    recordMeasurement(next, metric, { ...plainMeasurement(metric, answer, at), startedAt: last.startedAt });
  });
  assessRun(next, now);
  trimMeasurements(next);
  return next;
}

/** Whether a run that is ending still has a measurement running (a Job it would leave behind). */
export function endsWithRunning(run: AnalysisRun): boolean {
  return (
    !isCompleted(run.phase) &&
    isTerminating(run) &&
    run.metricResults.some((r) => isInFlight(r.measurements.at(-1)))
  );
}

/** Where a run measures: its id and the rollout's target settings (what a Job provider needs). */
export interface TickContext {
  runId?: string;
  target?: unknown;
}

/**
 * Advances a run to `now`: measures every due metric (in parallel, as Argo does), records the
 * verdicts, assesses the metrics and the run, trims history to the run's bound. Returns a new value; the input is not
 * modified. Calling it before anything is due only re-assesses.
 */
export async function tick(run: AnalysisRun, now: Date, provider: MetricProvider): Promise<AnalysisRun> {
  return (await tickTaking(run, now, provider)).run;
}

/**
 * {@link tick}, with the readings each judge measured in it took, by metric, whole: the run keeps
 * a look within its bound, the look's own item may keep more (`measurementItem`).
 */
export async function tickTaking(
  run: AnalysisRun,
  now: Date,
  provider: MetricProvider,
  where: TickContext = {},
): Promise<{ run: AnalysisRun; readings: Map<string, RecordedReadings> }> {
  const next = structuredClone(run);
  const readings = new Map<string, RecordedReadings>();
  if (isCompleted(next.phase)) return { run: next, readings };
  const due = dueMetrics(next, now);
  const answers = await Promise.all(due.map((m) => measureSafely(provider, m, now, next, where)));
  due.forEach((metric, i) => {
    const before = resultOf(next, metric.name);
    const { measurement, judge } = toMeasurement(metric, answers[i] as ProviderAnswer, now, before);
    if (measurement.readings) readings.set(metric.name, measurement.readings);
    recordMeasurement(next, metric, measurement);
    const after = resultOf(next, metric.name);
    if (judge && after) after.judge = boundJudgeState(judge);
  });
  assessRun(next, now);
  trimMeasurements(next);
  return { run: next, readings };
}

/**
 * Ends a run on request (the rollout moved on, was aborted or promoted): no new measurements, the
 * metrics still running end Successful, completed ones keep their phase, and the run's message is
 * `Run Terminated` unless a metric's verdict is worse. A background analysis ends this way.
 */
export function terminate(run: AnalysisRun, now: Date): AnalysisRun {
  const next = structuredClone(run);
  if (isCompleted(next.phase)) return next;
  next.terminate = true;
  assessRun(next, now);
  return next;
}

/** The measurements `tick` took between two values of a run, oldest first (for live output). */
export function measurementsTaken(
  before: AnalysisRun,
  after: AnalysisRun,
): Array<{ metric: string; measurement: Measurement }> {
  const out: Array<{ metric: string; measurement: Measurement }> = [];
  for (const result of after.metricResults) {
    const prev = before.metricResults.find((r) => r.name === result.name);
    const total = (r: MetricResult | undefined) => (r ? measurementsRecorded(r) : 0);
    const added = Math.min(total(result) - total(prev), result.measurements.length);
    for (const measurement of result.measurements.slice(result.measurements.length - added)) {
      out.push({ metric: result.name, measurement });
    }
  }
  return out;
}

/**
 * The run after its store refused to save it (too large, or refused for another reason retrying
 * cannot fix): `before` (the last value that was saved) with an Error measurement, carrying
 * `message`, for each metric measured in the refused tick (or each running metric when none
 * was), assessed as Argo assesses errors — so the tick chain goes on (the next measurement is due
 * 10 s later) and `consecutiveErrorLimit` ends the metric if the store keeps refusing.
 */
export function recordStoreFailure(
  before: AnalysisRun,
  measured: readonly string[],
  now: Date,
  message: string,
): AnalysisRun {
  const next = structuredClone(before);
  if (isCompleted(next.phase)) return next;
  const at = now.toISOString();
  const running = next.metrics.filter((m) => metricDueAt(next, m) !== undefined);
  const metrics = measured.length > 0 ? next.metrics.filter((m) => measured.includes(m.name)) : running;
  for (const metric of metrics) {
    recordMeasurement(next, metric, { phase: "Error", message, startedAt: at, finishedAt: at });
  }
  assessRun(next, now);
  trimMeasurements(next);
  return next;
}

/**
 * A run that cannot be stored even so (its metrics' spec alone is past the item limit): ended in
 * Error with `message`, without its metrics' spec, measurements or judge state (the counters
 * stay), so that it fits and its outcome can be delivered.
 */
export function unstorableRun(run: AnalysisRun, now: Date, message: string): AnalysisRun {
  return {
    ...run,
    metrics: [],
    metricResults: run.metricResults.map(({ judge: _judge, metadata: _metadata, ...r }) => ({
      ...r,
      phase: isCompleted(r.phase) ? r.phase : "Error",
      measurements: [],
      ...(r.message === undefined ? {} : { message: truncateText(r.message, 1024).text }),
    })),
    phase: "Error",
    message,
    completedAt: run.completedAt ?? now.toISOString(),
  };
}
