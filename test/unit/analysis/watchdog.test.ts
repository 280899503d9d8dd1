import { describe, expect, it } from "vitest";
import {
  type AnalysisRun,
  createRun,
  expireStale,
  staleness,
  terminate,
  tick,
} from "../../../functions/analysis/index.ts";
import { WATCHDOG_GRACE_SECONDS } from "../../../functions/analysis/watchdog.ts";
import { TIMER_DELIVERY } from "../../../functions/config.ts";
import { ANALYSIS_FUNCTION_TIMEOUT_SECONDS } from "../../../statemachine/limits.ts";
import { metric, scriptedProvider, spec, T0 } from "./helpers.ts";

const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

/** A run of `m` that measured at 0 s (and nothing since). */
async function measuredOnce(...metrics: ReturnType<typeof metric>[]): Promise<AnalysisRun> {
  return tick(createRun(spec(...metrics), T0), T0, scriptedProvider({}));
}

describe("the watchdog: max(3 intervals, interval + 27 minutes) without a measurement", () => {
  it("allows a firing as late as Scheduler's, Lambda's async and the redelivery queue's retries can deliver it: 27 minutes", () => {
    // Scheduler fires within a minute of `at`, retries its invoke for up to 5 minutes, Lambda
    // retries a throwing function while the event is under 10 minutes old, the last attempt
    // may run the function's whole 60 s, and the redelivery queue then hands it to resume again,
    // its last receive nine visibility timeouts later, running up to 60 s too.
    expect(WATCHDOG_GRACE_SECONDS).toBe(
      TIMER_DELIVERY.schedulerLatenessSeconds +
        TIMER_DELIVERY.schedulerMaximumEventAgeSeconds +
        TIMER_DELIVERY.asyncMaximumEventAgeSeconds +
        ANALYSIS_FUNCTION_TIMEOUT_SECONDS +
        (TIMER_DELIVERY.redeliveryReceives - 1) * TIMER_DELIVERY.redeliveryVisibilitySeconds +
        ANALYSIS_FUNCTION_TIMEOUT_SECONDS,
    );
    expect(WATCHDOG_GRACE_SECONDS).toBe(1620);
    // The ticker's worst case (four 60 s attempts and 2 + 4 + 8 s between them) is within it too.
    expect(WATCHDOG_GRACE_SECONDS).toBeGreaterThanOrEqual(4 * ANALYSIS_FUNCTION_TIMEOUT_SECONDS + 14);
  });

  it("a 60 s interval is stale after 28 minutes of quiet (interval + the grace)", async () => {
    const run = await measuredOnce(metric({ interval: 60 }));
    // Past the old 17-minute grace, a firing still in the redelivery queue is not lost.
    expect(staleness(run, at(1081))).toBeUndefined();
    expect(staleness(run, at(1680))).toBeUndefined();
    expect(staleness(run, at(1681))).toEqual({
      metric: "success-rate",
      quietSeconds: 1681,
      limitSeconds: 1680,
      message: "no measurement for 28m1s (28 intervals): its timer firings were lost",
    });
  });

  it("a 15 minute interval is stale after 3 intervals", async () => {
    const run = await measuredOnce(metric({ interval: 900 }));
    expect(staleness(run, at(2700))).toBeUndefined();
    expect(staleness(run, at(2701))?.message).toBe(
      "no measurement for 45m1s (3 intervals): its timer firings were lost",
    );
  });

  it("a run that never measured counts from its start and initial delay", () => {
    const run = createRun(spec(metric({ interval: 60, initialDelay: 120 })), T0);
    expect(staleness(run, at(1740))).toBeUndefined();
    expect(staleness(run, at(1741))?.message).toBe(
      "no measurement for 29m1s (14 intervals): its timer firings were lost",
    );
    const immediate = createRun(spec(metric({ interval: 60 })), T0);
    expect(staleness(immediate, at(1620))).toBeUndefined();
    expect(staleness(immediate, at(1621))?.message).toBe(
      "no measurement for 27m1s since the run started: its timer firings were lost",
    );
  });

  it("ignores completed, terminating and dry-run-only runs", async () => {
    const run = await measuredOnce(metric({ interval: 60 }));
    expect(staleness(terminate(run, at(10)), at(3600))).toBeUndefined();
    const done = await tick(createRun(spec(metric({ count: 1 })), T0), T0, scriptedProvider({}));
    expect(done.phase).toBe("Successful");
    expect(staleness(done, at(3600))).toBeUndefined();
    const dry = await measuredOnce(metric({ interval: 60, dryRun: true }));
    expect(staleness(dry, at(3600))).toBeUndefined();
  });

  it("expireStale ends the run in Error naming the metric; the other running metrics end Successful", async () => {
    const run = await measuredOnce(metric({ interval: 60 }), metric({ name: "latency", interval: 600 }));
    expect(expireStale(run, at(1680))).toBe(run);
    const expired = expireStale(run, at(1700));
    expect(expired).toMatchObject({
      phase: "Error",
      message:
        'Metric "success-rate" assessed Error due to no measurement for 28m20s (28 intervals): its timer firings were lost',
      completedAt: at(1700).toISOString(),
    });
    expect(expired.metricResults.map((r) => [r.name, r.phase])).toEqual([
      ["success-rate", "Error"],
      ["latency", "Successful"],
    ]);
    expect(run.phase).toBe("Running");
  });
});
