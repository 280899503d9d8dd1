import { formatDuration } from "../../statemachine/duration.ts";
import { TIMER_LATEST_FIRING_SECONDS } from "../../statemachine/timer-delivery.ts";
import { isTerminating } from "./assess.ts";
import { metricDueAt, newMetricResult } from "./run.ts";
import { type AnalysisRun, isCompleted } from "./types.ts";

/**
 * The watchdog: a run whose measurements stopped coming. A run is driven by Timer firings, one
 * per due measurement; when the Timer's retries are exhausted a firing is gone, and nothing
 * else would ever tick the run again. A step's analysis would then wait for its Task's timeout,
 * and a background analysis — which nothing waits for — would leave the rollout unguarded and be
 * marked Successful at promotion.
 *
 * A metric is **stale** when it has had no measurement for longer than
 * `max(3 × spacing, spacing + 27 minutes)`, where `spacing` is the time from its last measurement
 * (or the run's start) to when its next one was due: its `interval`, 10 s after an Error, or its
 * `initialDelay` before the first. The 27 minutes (`WATCHDOG_GRACE_SECONDS`) cover a firing the
 * Timer delivers late but delivers. Pure: the workflow applies it wherever it reads a run.
 */

/** Measurement intervals without a measurement before a run is stale. */
export const WATCHDOG_INTERVALS = 3;

/**
 * Seconds a firing may be late, beyond one interval, and still not be lost: the latest a firing
 * the Timer does deliver can arrive (`TIMER_LATEST_FIRING_SECONDS`, statemachine/timer-delivery.ts:
 * 27 minutes). Past that the firing is in the dead-letter queue.
 */
export const WATCHDOG_GRACE_SECONDS = TIMER_LATEST_FIRING_SECONDS;

export interface Staleness {
  /** The metric whose measurements stopped. */
  metric: string;
  /** Seconds since its last measurement (or since the run started, before its first). */
  quietSeconds: number;
  /** Seconds of quiet the watchdog allows it. */
  limitSeconds: number;
  /** `no measurement for 6m5s (121 intervals): its timer firings were lost` */
  message: string;
}

/** Whole seconds, as Go prints a duration (`6m5s`). */
const seconds = (ms: number) => formatDuration(Math.floor(ms / 1000));

/** The stale metric of a running run at `now` (the one quiet the longest past its limit), if any. */
export function staleness(run: AnalysisRun, now: Date): Staleness | undefined {
  if (isCompleted(run.phase) || isTerminating(run)) return undefined;
  let found: (Staleness & { over: number }) | undefined;
  // A dry-run metric never decides a run, so it never ends one either.
  for (const metric of run.metrics.filter((m) => !m.dryRun)) {
    const due = metricDueAt(run, metric);
    if (!due) continue;
    const last = run.metricResults.find((r) => r.name === metric.name)?.measurements.at(-1);
    const since = Date.parse(last?.finishedAt ?? run.startedAt);
    const spacing = due.getTime() - since;
    const limit = Math.max(WATCHDOG_INTERVALS * spacing, spacing + WATCHDOG_GRACE_SECONDS * 1000);
    const quiet = now.getTime() - since;
    if (quiet <= limit || (found && quiet - limit <= found.over)) continue;
    const intervals =
      spacing > 0 ? ` (${Math.floor(quiet / spacing)} intervals)` : last ? "" : " since the run started";
    found = {
      metric: metric.name,
      quietSeconds: quiet / 1000,
      limitSeconds: limit / 1000,
      message: `no measurement for ${seconds(quiet)}${intervals}: its timer firings were lost`,
      over: quiet - limit,
    };
  }
  if (!found) return undefined;
  const { over: _over, ...out } = found;
  return out;
}

/**
 * Ends a stale run in Error, as a metric past its `consecutiveErrorLimit` would: the stale metric
 * is Error with the watchdog's message, the metrics still running end Successful (nothing more
 * will be measured), and the run's message names the metric:
 * `Metric "success-rate" assessed Error due to no measurement for 3m (3 intervals): its timer firings were lost`.
 * Returns a new value; a run that is not stale is returned unchanged.
 */
export function expireStale(run: AnalysisRun, now: Date): AnalysisRun {
  const stale = staleness(run, now);
  if (!stale) return run;
  const next = structuredClone(run);
  let result = next.metricResults.find((r) => r.name === stale.metric);
  if (!result) {
    const metric = next.metrics.find((m) => m.name === stale.metric);
    result = newMetricResult(stale.metric, metric?.dryRun ?? false, "Error");
    next.metricResults.push(result);
  }
  for (const r of next.metricResults) {
    if (r === result) {
      r.phase = "Error";
      r.message = stale.message;
    } else if (!isCompleted(r.phase)) {
      r.phase = "Successful";
    }
  }
  next.phase = "Error";
  next.message = `Metric "${stale.metric}" assessed Error due to ${stale.message}`;
  next.completedAt = now.toISOString();
  return next;
}
