import { assessLimits, effectiveCount, isTerminating } from "../../functions/analysis/assess.ts";
import { metricDueAt, nextTickAt } from "../../functions/analysis/run.ts";
import type { Measurement, MetricResult } from "../../functions/analysis/types.ts";
import { isCompleted } from "../../functions/analysis/types.ts";
import { staleness, WATCHDOG_GRACE_SECONDS } from "../../functions/analysis/watchdog.ts";
import { TIMER_DELIVERY } from "../../functions/config.ts";
import type { StoredRun } from "../../functions/store/port.ts";
import type { StoredAnalysis } from "../../functions/workflow/analysis.ts";
import { formatDuration } from "../../statemachine/duration.ts";
import type { Metric } from "../../statemachine/spec.ts";
import { isoSeconds } from "../render.ts";
import type { ExecutionFacts } from "./executions.ts";
import type { Cause, MetricDecision, RunLine, TriageMeasurement } from "./model.ts";

/**
 * What the analysis runs of one execution say, metric by metric: the limit a metric passed, the
 * measurements it decided on, and why a metric decided nothing (errors in a row, an empty vector,
 * NaN, the Inconclusive band, fewer measurements than it was to take), and whether a run's next
 * look is overdue. Pure: the runs, their stored measurements and the time.
 */

/**
 * A Timer firing arrives within a minute of its due time when nothing is lost: Scheduler fires a
 * one-time schedule within 60 s of `at`, the ticker within seconds. Later than that it is
 * overdue: a retry may still deliver it until the watchdog's grace has passed.
 */
export const OVERDUE_AFTER_SECONDS = TIMER_DELIVERY.schedulerLatenessSeconds;

/** Measurements the report shows per metric. */
export const MEASUREMENTS_SHOWN = 5;

const iso = (ms: number) => new Date(ms).toISOString();
/** A time in a sentence, to the second as `rollouts get` prints it. */
export const when = (ms: number) => isoSeconds(ms);
const seconds = (ms: number) => formatDuration(Math.max(0, Math.floor(ms / 1000)));

export function cause(kind: Cause["kind"], message: string, extra: Partial<Cause> = {}): Cause {
  return { kind, message, runId: null, metric: null, since: null, due: null, ...extra };
}

export function runLine(stored: StoredRun<StoredAnalysis>): RunLine {
  const { run, background, stepIndex, templates } = stored.run;
  return {
    runId: stored.runId,
    step: background ? null : stepIndex,
    templates,
    phase: run.phase,
    message: run.message ?? null,
  };
}

/** A metric's measurements, oldest first: the store's (it keeps them all a week), else the run's last few. */
function measurementsOf(
  facts: ExecutionFacts,
  stored: StoredRun<StoredAnalysis>,
  metric: string,
): Measurement[] {
  const fromStore = (facts.measurements[stored.runId] ?? [])
    .filter((m) => m.value.metric === metric)
    .map((m) => m.value);
  if (fromStore.length > 0) return fromStore;
  return stored.run.run.metricResults.find((r) => r.name === metric)?.measurements ?? [];
}

const shown = (m: Measurement): TriageMeasurement => ({
  at: m.finishedAt,
  // A judge's hold, or a provider's measurement still running (it has a time to be resumed at).
  phase: m.phase !== "Running" ? m.phase : m.resumeAt ? "Running" : "Running (hold)",
  value: m.value ?? null,
  message: m.message ?? null,
});

const EMPTY_COUNTS: MetricDecision["counts"] = {
  measured: 0,
  successful: 0,
  failed: 0,
  inconclusive: 0,
  error: 0,
  consecutiveError: 0,
};

/** A metric's conditions, limits, counters, the limit it passed and its newest measurements. */
export function metricDecision(
  facts: ExecutionFacts,
  stored: StoredRun<StoredAnalysis>,
  name: string,
): MetricDecision {
  const metric = stored.run.run.metrics.find((m) => m.name === name);
  const result = stored.run.run.metricResults.find((r) => r.name === name);
  const limits = {
    failureLimit: metric?.failureLimit ?? 0,
    inconclusiveLimit: metric?.inconclusiveLimit ?? 0,
    consecutiveErrorLimit: metric?.consecutiveErrorLimit ?? 4,
  };
  return {
    name,
    judge: metric?.provider.judge !== undefined,
    phase: result?.phase ?? "Pending",
    message: result?.message ?? null,
    successCondition: metric?.successCondition ?? null,
    failureCondition: metric?.failureCondition ?? null,
    limitReached: result ? (assessLimits(limits, result)?.message ?? null) : null,
    limits,
    counts: result
      ? {
          measured: result.count,
          successful: result.successful,
          failed: result.failed,
          inconclusive: result.inconclusive,
          error: result.error,
          consecutiveError: result.consecutiveError,
        }
      : EMPTY_COUNTS,
    measurements: measurementsOf(facts, stored, name).slice(-MEASUREMENTS_SHOWN).map(shown),
  };
}

/** The conditions in words: `successCondition result[0] >= 0.95, failureCondition …`. */
export function conditionsText(m: Pick<MetricDecision, "successCondition" | "failureCondition">): string {
  const parts = [
    ...(m.successCondition ? [`successCondition ${m.successCondition}`] : []),
    ...(m.failureCondition ? [`failureCondition ${m.failureCondition}`] : []),
  ];
  return parts.length > 0 ? parts.join(", ") : "no condition (every value is Successful)";
}

/** Why one metric's measurements decided nothing, or decided on nothing real. */
export function metricCauses(
  facts: ExecutionFacts,
  stored: StoredRun<StoredAnalysis>,
  name: string,
): Cause[] {
  const metric = stored.run.run.metrics.find((m) => m.name === name);
  const result = stored.run.run.metricResults.find((r) => r.name === name);
  if (!metric || !result) return [];
  const where = { runId: stored.runId, metric: name };
  const all = measurementsOf(facts, stored, name);
  return [
    ...errorCauses(metric, result, all, where),
    ...nanCauses(metric, all, where),
    ...inconclusiveCauses(metric, result, all, where),
  ];
}

const NIL_OR_EMPTY = "metric result is nil or empty";

function errorCauses(
  metric: Metric,
  result: MetricResult,
  all: Measurement[],
  where: Pick<Cause, "runId" | "metric">,
): Cause[] {
  const out: Cause[] = [];
  const empty = all.filter((m) => m.phase === "Error" && m.message?.includes(NIL_OR_EMPTY));
  if (empty.length > 0) {
    out.push(
      cause(
        "empty-result",
        `${metric.name}: ${empty.length} measurement(s) found no data (${NIL_OR_EMPTY}): the query selected no series, or the version served no requests in the window; the last at ${when(Date.parse(empty.at(-1)?.finishedAt ?? ""))}`,
        { ...where, since: empty[0]?.finishedAt ?? null },
      ),
    );
  }
  const streak = result.consecutiveError;
  const lastError = [...all].reverse().find((m) => m.phase === "Error");
  if (streak > 0) {
    const limit = metric.consecutiveErrorLimit;
    const passed =
      streak > limit
        ? `consecutiveErrors (${streak}) > consecutiveErrorLimit (${limit})`
        : `consecutiveErrorLimit ${limit}: ${limit + 1 - streak} more end the metric in Error`;
    out.push(
      cause(
        "error-streak",
        `${metric.name}: ${streak} Error measurement(s) in a row (${passed}): no value to judge${lastError?.message ? `; the last: ${lastError.message}` : ""}`,
        { ...where, since: lastError?.finishedAt ?? null },
      ),
    );
  } else if (result.phase === "Error" && result.message) {
    // Ended in Error without an error streak: the watchdog (lost firings) or a run it could not store.
    const lost = result.message.includes("timer firings were lost");
    out.push(
      cause(lost ? "timer-overdue" : "error-streak", `${metric.name}: ${result.message}`, {
        ...where,
        since: lastError?.finishedAt ?? null,
      }),
    );
  }
  return out;
}

function nanCauses(metric: Metric, all: Measurement[], where: Pick<Cause, "runId" | "metric">): Cause[] {
  const nan = all.filter((m) => /\bNaN\b/.test(m.value ?? ""));
  if (nan.length === 0) return [];
  const last = nan.at(-1) as Measurement;
  return [
    cause(
      "not-a-number",
      `${metric.name}: ${nan.length} measurement(s) were NaN (the last ${last.value} at ${when(Date.parse(last.finishedAt))}, ${last.phase}): a ratio of zero requests is 0/0, and a condition on NaN is false, so ${conditionsText({ successCondition: metric.successCondition ?? null, failureCondition: metric.failureCondition ?? null })} decided on no traffic`,
      { ...where, since: nan[0]?.finishedAt ?? null },
    ),
  ];
}

function inconclusiveCauses(
  metric: Metric,
  result: MetricResult,
  all: Measurement[],
  where: Pick<Cause, "runId" | "metric">,
): Cause[] {
  if (result.inconclusive === 0) return [];
  const last = [...all].reverse().find((m) => m.phase === "Inconclusive");
  const band =
    metric.successCondition && metric.failureCondition
      ? `neither successCondition ${metric.successCondition} nor failureCondition ${metric.failureCondition} held`
      : "the measurement was neither a success nor a failure";
  const limit =
    result.inconclusive > metric.inconclusiveLimit
      ? `inconclusive (${result.inconclusive}) > inconclusiveLimit (${metric.inconclusiveLimit})`
      : `inconclusive ${result.inconclusive} of inconclusiveLimit ${metric.inconclusiveLimit}`;
  return [
    cause(
      "inconclusive",
      `${metric.name}: ${band}${last?.value ? ` for ${last.value}` : ""} (${limit}): a person decides`,
      { ...where, since: last?.finishedAt ?? null },
    ),
  ];
}

/** Metrics that took fewer measurements than they were to take (a run ended or was skipped early). */
export function missingMeasurements(stored: StoredRun<StoredAnalysis>): Cause[] {
  const { run } = stored.run;
  const out: Cause[] = [];
  for (const metric of run.metrics.filter((m) => !m.dryRun)) {
    const result = run.metricResults.find((r) => r.name === metric.name);
    const wanted = effectiveCount(metric);
    const got = result?.count ?? 0;
    // A streak of successes or a judge's promotion ends a metric before its count, by design.
    const decidedEarly =
      result !== undefined &&
      ((metric.consecutiveSuccessLimit > 0 && result.consecutiveSuccess >= metric.consecutiveSuccessLimit) ||
        result.judge?.last?.decision === "promote");
    // A metric that ended badly stopped early by design, and says so in its own cause.
    const endedBadly =
      result?.phase === "Failed" || result?.phase === "Error" || result?.phase === "Inconclusive";
    if (endedBadly || (got > 0 && (wanted === undefined || got >= wanted || decidedEarly))) continue;
    const of = wanted === undefined ? "" : ` of ${wanted}`;
    out.push(
      cause(
        "missing-measurements",
        `${metric.name} (${stored.runId}) took ${got}${of} measurement(s) before its run ended ${run.phase}${run.message ? `: ${run.message}` : ""}`,
        { runId: stored.runId, metric: metric.name, since: run.completedAt ?? null },
      ),
    );
  }
  return out;
}

/**
 * The run's next look, when it is past due by more than {@link OVERDUE_AFTER_SECONDS}: a lost
 * Timer firing. Past the watchdog's limit too, the watchdog's own words say the firings were lost.
 */
export function overdueLook(stored: StoredRun<StoredAnalysis>, now: number): Cause | undefined {
  const { run } = stored.run;
  if (isCompleted(run.phase) || isTerminating(run)) return undefined;
  const due = nextTickAt(run);
  if (!due || now - due.getTime() <= OVERDUE_AFTER_SECONDS * 1000) return undefined;
  const metric = run.metrics.find((m) => metricDueAt(run, m)?.getTime() === due.getTime());
  const late = now - due.getTime();
  const stale = staleness(run, new Date(now));
  const lost = stale
    ? `the watchdog's words: ${stale.message}`
    : `a late firing may still come until ${when(due.getTime() + WATCHDOG_GRACE_SECONDS * 1000)} (the Timer's retries); after that it is lost`;
  const what = stored.run.background ? "background analysis" : `analysis of step ${stored.run.stepIndex}`;
  return cause(
    "timer-overdue",
    `the ${what} (${stored.runId}) was due to measure ${metric?.name ?? "its metrics"} at ${when(due.getTime())}, ${seconds(late)} ago; ${lost}`,
    { runId: stored.runId, metric: metric?.name ?? null, since: run.startedAt, due: iso(due.getTime()) },
  );
}

/** A step's run that ended but whose outcome never reached the waiting step (its delivery was lost). */
export function undelivered(stored: StoredRun<StoredAnalysis>, now: number): Cause | undefined {
  const { run, answered, token } = stored.run;
  if (!isCompleted(run.phase) || answered || token === null || !run.completedAt) return undefined;
  const ended = Date.parse(run.completedAt);
  if (now - ended <= OVERDUE_AFTER_SECONDS * 1000) return undefined;
  return cause(
    "timer-overdue",
    `the analysis ${stored.runId} ended ${run.phase} at ${when(ended)}, ${seconds(now - ended)} ago, and its outcome never reached the waiting step (the firing that delivers it was lost); the watchdog delivers it ${formatDuration(WATCHDOG_GRACE_SECONDS)} after the end`,
    { runId: stored.runId, since: run.completedAt, due: run.completedAt },
  );
}

/** The analysis's next look while it measures normally. */
export function measuring(stored: StoredRun<StoredAnalysis>): Cause | undefined {
  const { run } = stored.run;
  if (isCompleted(run.phase)) return undefined;
  const due = nextTickAt(run);
  if (!due) return undefined;
  return cause("measuring", `${stored.runId} is measuring; its next look is due at ${when(due.getTime())}`, {
    runId: stored.runId,
    since: run.startedAt,
    due: iso(due.getTime()),
  });
}
