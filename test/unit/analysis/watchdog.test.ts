import { describe, expect, it } from "vitest";
import {
  type AnalysisRun,
  createRun,
  expireStale,
  staleness,
  terminate,
  tick,
} from "../../../functions/analysis/index.ts";
import { metric, scriptedProvider, spec, T0 } from "./helpers.ts";

const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

/** A run of `m` that measured at 0 s (and nothing since). */
async function measuredOnce(...metrics: ReturnType<typeof metric>[]): Promise<AnalysisRun> {
  return tick(createRun(spec(...metrics), T0), T0, scriptedProvider({}));
}

describe("the watchdog: max(3 intervals, interval + 5 minutes) without a measurement", () => {
  it("a 60 s interval is stale after 6 minutes of quiet (interval + the grace)", async () => {
    const run = await measuredOnce(metric({ interval: 60 }));
    expect(staleness(run, at(360))).toBeUndefined();
    expect(staleness(run, at(361))).toEqual({
      metric: "success-rate",
      quietSeconds: 361,
      limitSeconds: 360,
      message: "no measurement for 6m1s (6 intervals): its timer firings were lost",
    });
  });

  it("a 10 minute interval is stale after 3 intervals", async () => {
    const run = await measuredOnce(metric({ interval: 600 }));
    expect(staleness(run, at(1800))).toBeUndefined();
    expect(staleness(run, at(1801))?.message).toBe(
      "no measurement for 30m1s (3 intervals): its timer firings were lost",
    );
  });

  it("a run that never measured counts from its start and initial delay", () => {
    const run = createRun(spec(metric({ interval: 60, initialDelay: 120 })), T0);
    expect(staleness(run, at(420))).toBeUndefined();
    expect(staleness(run, at(421))?.message).toBe(
      "no measurement for 7m1s (3 intervals): its timer firings were lost",
    );
    const immediate = createRun(spec(metric({ interval: 60 })), T0);
    expect(staleness(immediate, at(301))?.message).toBe(
      "no measurement for 5m1s since the run started: its timer firings were lost",
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
    expect(expireStale(run, at(300))).toBe(run);
    const expired = expireStale(run, at(400));
    expect(expired).toMatchObject({
      phase: "Error",
      message:
        'Metric "success-rate" assessed Error due to no measurement for 6m40s (6 intervals): its timer firings were lost',
      completedAt: at(400).toISOString(),
    });
    expect(expired.metricResults.map((r) => [r.name, r.phase])).toEqual([
      ["success-rate", "Error"],
      ["latency", "Successful"],
    ]);
    expect(run.phase).toBe("Running");
  });
});
