import { describe, expect, it } from "vitest";
import {
  type AnalysisRun,
  AnalysisRunSchema,
  createRun,
  nextTickAt,
  terminate,
  tick,
  toArgoJson,
} from "../../../functions/analysis/index.ts";
import { drive, metric, type Outcome, runScript, scriptedProvider, spec, T0 } from "./helpers.ts";

const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

describe("one metric: assessment table (Argo's assessMetricStatus)", () => {
  const rows: {
    name: string;
    metric: Parameters<typeof metric>[0];
    outcomes: Outcome[];
    phase: string;
    message?: string;
  }[] = [
    {
      name: "a single Failed measurement fails a metric with failureLimit 0",
      metric: { interval: 1, count: 3 },
      outcomes: ["F"],
      phase: "Failed",
      message: 'Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    },
    {
      name: "failureLimit 1 tolerates one failure",
      metric: { interval: 1, count: 3, failureLimit: 1 },
      outcomes: ["F", "S", "S"],
      phase: "Successful",
    },
    {
      name: "failureLimit 1 fails at the second failure",
      metric: { interval: 1, count: 5, failureLimit: 1 },
      outcomes: ["F", "S", "F"],
      phase: "Failed",
      message: 'Metric "success-rate" assessed Failed due to failed (2) > failureLimit (1)',
    },
    {
      name: "failureLimit -1 disables failing (streak decides)",
      metric: { interval: 1, count: 5, failureLimit: -1, consecutiveSuccessLimit: 2 },
      outcomes: ["F", "F", "F", "S", "S"],
      phase: "Successful",
    },
    {
      name: "an Inconclusive measurement exceeds inconclusiveLimit 0",
      metric: { interval: 1, count: 3 },
      outcomes: ["S", "I"],
      phase: "Inconclusive",
      message: 'Metric "success-rate" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)',
    },
    {
      name: "inconclusiveLimit 1 tolerates one",
      metric: { interval: 1, count: 3, inconclusiveLimit: 1 },
      outcomes: ["I", "S", "S"],
      phase: "Successful",
    },
    {
      name: "the first Error does not fail",
      metric: { interval: 1, count: 2 },
      outcomes: ["E", "S", "S"],
      phase: "Successful",
    },
    {
      name: "four consecutive Errors do not fail (limit 4)",
      metric: { interval: 1, count: 1 },
      outcomes: ["E", "E", "E", "E", "S"],
      phase: "Successful",
    },
    {
      name: "the fifth consecutive Error does",
      metric: { interval: 1, count: 3 },
      outcomes: ["E", "E", "E", "E", "E"],
      phase: "Error",
      message:
        'Metric "success-rate" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: connection refused"',
    },
    {
      name: "a measurement between Errors resets the consecutive count",
      metric: { interval: 1, count: 3 },
      outcomes: ["E", "E", "E", "E", "S", "E", "E", "E", "E", "S", "S"],
      phase: "Successful",
    },
    {
      name: "consecutiveErrorLimit 0 fails at the first Error",
      metric: { interval: 1, count: 3, consecutiveErrorLimit: 0 },
      outcomes: ["E"],
      phase: "Error",
    },
    {
      name: "count reached without failures is Successful",
      metric: { interval: 1, count: 3 },
      outcomes: ["S", "S", "S"],
      phase: "Successful",
    },
    {
      name: "consecutiveSuccessLimit ends early on the streak",
      metric: { interval: 1, count: 10, failureLimit: 1, consecutiveSuccessLimit: 3 },
      outcomes: ["F", "S", "S", "S"],
      phase: "Successful",
    },
    {
      name: "an Error between Successes resets the streak",
      metric: { interval: 1, count: 10, failureLimit: 1, consecutiveSuccessLimit: 3 },
      outcomes: ["S", "S", "E", "S", "S"],
      phase: "Running",
    },
    {
      name: "count and streak both set: count without the streak is Inconclusive",
      metric: { interval: 1, count: 4, failureLimit: 1, consecutiveSuccessLimit: 3 },
      outcomes: ["S", "S", "F", "S"],
      phase: "Inconclusive",
    },
    {
      name: "streak only (failureLimit -1): count without the streak is Failed",
      metric: { interval: 1, count: 3, failureLimit: -1, consecutiveSuccessLimit: 3 },
      outcomes: ["S", "F", "S"],
      phase: "Failed",
    },
    {
      name: "no interval and no count: one measurement",
      metric: {},
      outcomes: ["S"],
      phase: "Successful",
    },
    {
      name: "no interval: an Error is retried, the verdict still takes one measurement",
      metric: {},
      outcomes: ["E", "F"],
      phase: "Failed",
    },
  ];
  it.each(rows)("$name", async (row) => {
    const run = await runScript(metric(row.metric), row.outcomes, row.outcomes.length);
    expect(run.phase).toBe(row.phase);
    if (row.message !== undefined) expect(run.message).toBe(row.message);
    expect(run.metricResults[0]?.phase).toBe(row.phase);
  });
});

describe("counters", () => {
  it("errors do not count towards count, and the streak counters follow Argo", async () => {
    const run = await runScript(metric({ interval: 1, count: 3 }), ["S", "E", "E", "S", "S"]);
    const r = run.metricResults[0];
    expect(r).toMatchObject({
      count: 3,
      successful: 3,
      error: 2,
      consecutiveError: 0,
      consecutiveSuccess: 2,
    });
    expect(r?.measurements.map((m) => m.phase)).toEqual([
      "Successful",
      "Error",
      "Error",
      "Successful",
      "Successful",
    ]);
  });

  it("keeps only measurementRetention measurements; the counters keep counting", async () => {
    const run = await runScript(metric({ interval: 1, count: 7, measurementRetention: 3 }), [
      "S",
      "S",
      "S",
      "S",
      "E",
      "S",
      "S",
      "S",
    ]);
    const r = run.metricResults[0];
    expect(r?.measurements).toHaveLength(3);
    expect(r?.count).toBe(7);
    expect(r?.error).toBe(1);
    expect(run.phase).toBe("Successful");
  });

  it("the default retention is 10", async () => {
    const outcomes = Array.from({ length: 12 }, () => "S" as const);
    const run = await runScript(metric({ interval: 1, count: 12 }), outcomes);
    expect(run.metricResults[0]?.measurements).toHaveLength(10);
    expect(run.metricResults[0]?.count).toBe(12);
  });
});

describe("scheduling", () => {
  it("first after initialDelay, then every interval, count times", async () => {
    const provider = scriptedProvider({});
    const { run, times } = await drive(
      createRun(spec(metric({ initialDelay: 5, interval: 3, count: 2 })), T0),
      provider,
    );
    expect(times).toEqual([5, 8]);
    expect(run.phase).toBe("Successful");
    expect(run.metricResults[0]?.measurements.map((m) => m.startedAt)).toEqual([
      at(5).toISOString(),
      at(8).toISOString(),
    ]);
  });

  it("after an Error the next measurement is 10 s later, then the interval again", async () => {
    const provider = scriptedProvider({ "success-rate": ["S", "E", "S", "S"] });
    const { times } = await drive(createRun(spec(metric({ interval: 60, count: 3 })), T0), provider);
    expect(times).toEqual([0, 60, 70, 130]);
  });

  it("nothing is measured before it is due", async () => {
    const provider = scriptedProvider({});
    const run = createRun(spec(metric({ initialDelay: 30, interval: 10, count: 2 })), T0);
    const early = await tick(run, at(29.999), provider);
    expect(provider.calls).toEqual([]);
    expect(early.phase).toBe("Running");
    expect(nextTickAt(early)).toEqual(at(30));
  });

  it("an interval without a count runs until terminated (background analysis)", async () => {
    const provider = scriptedProvider({});
    const { run, times } = await drive(createRun(spec(metric({ interval: 30 })), T0), provider, 50);
    expect(times).toHaveLength(50);
    expect(run.phase).toBe("Running");
    expect(nextTickAt(run)).toEqual(at(50 * 30));
  });

  it("the earliest metric decides the next tick", async () => {
    const run = createRun(
      spec(metric({ name: "a", initialDelay: 20 }), metric({ name: "b", initialDelay: 5 })),
      T0,
    );
    expect(nextTickAt(run)).toEqual(at(5));
    const after = await tick(run, at(5), scriptedProvider({}));
    expect(after.metricResults.map((r) => r.name)).toEqual(["b"]);
    expect(nextTickAt(after)).toEqual(at(20));
  });

  it("a completed run needs no more ticks", async () => {
    const run = await runScript(metric(), ["S"]);
    expect(run.phase).toBe("Successful");
    expect(nextTickAt(run)).toBeUndefined();
    expect(run.completedAt).toBe(T0.toISOString());
  });
});

describe("the run: worst metric decides, terminal metric terminates", () => {
  it("a Failed metric ends the run and the still-running ones are marked Successful", async () => {
    const provider = scriptedProvider({ "error-rate": ["F"] });
    const run = createRun(
      spec(
        metric({ name: "success-rate", interval: 10, count: 5 }),
        metric({ name: "latency", interval: 10 }),
        metric({ name: "error-rate", interval: 10, count: 5 }),
      ),
      T0,
    );
    const after = await tick(run, T0, provider);
    expect(after.phase).toBe("Failed");
    expect(after.message).toBe('Metric "error-rate" assessed Failed due to failed (1) > failureLimit (0)');
    expect(after.metricResults.map((r) => [r.name, r.phase])).toEqual([
      ["success-rate", "Successful"],
      ["latency", "Successful"],
      ["error-rate", "Failed"],
    ]);
    expect(nextTickAt(after)).toBeUndefined();
  });

  it("Failed is worse than Error, Error than Inconclusive", async () => {
    const provider = scriptedProvider({ a: ["I"], b: ["F"], c: ["E"] });
    const run = createRun(
      spec(
        metric({ name: "a", interval: 1, count: 2 }),
        metric({ name: "b", interval: 1, count: 2 }),
        metric({ name: "c", interval: 1, count: 2, consecutiveErrorLimit: 0 }),
      ),
      T0,
    );
    const after = await tick(run, T0, provider);
    expect(after.phase).toBe("Failed");
    expect(after.message).toMatch(/^Metric "b" assessed Failed/);
  });

  it("Inconclusive when the worst metric is Inconclusive", async () => {
    const provider = scriptedProvider({ a: ["S"], b: ["I"] });
    const run = createRun(spec(metric({ name: "a" }), metric({ name: "b" })), T0);
    const after = await tick(run, T0, provider);
    expect(after.phase).toBe("Inconclusive");
    expect(after.message).toBe(
      'Metric "b" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)',
    );
  });

  it("the run stays Running while a metric waits for its initial delay", async () => {
    const run = createRun(spec(metric({ name: "now" }), metric({ name: "later", initialDelay: 60 })), T0);
    const after = await tick(run, T0, scriptedProvider({}));
    expect(after.phase).toBe("Running");
    expect(after.message).toBeUndefined();
    const done = await tick(after, at(60), scriptedProvider({}));
    expect(done.phase).toBe("Successful");
  });

  it("dry-run failures are recorded but do not fail the run", async () => {
    const provider = scriptedProvider({ shadow: ["F", "F", "F"] });
    const run = createRun(
      spec(
        metric({ name: "real", interval: 1, count: 3 }),
        metric({ name: "shadow", interval: 1, count: 3, dryRun: true }),
      ),
      T0,
    );
    const { run: done } = await drive(run, provider);
    expect(done.phase).toBe("Successful");
    const shadow = done.metricResults.find((r) => r.name === "shadow");
    expect(shadow?.phase).toBe("Failed");
    expect(shadow?.message).toBe("Metric assessed Failed due to failed (1) > failureLimit (0)");
    expect(done.dryRunSummary).toMatchObject({ count: 1, failed: 1 });
    expect(done.runSummary).toMatchObject({ count: 1, successful: 1 });
  });

  it("a dry-run metric alone ends Successful even when it fails", async () => {
    const run = await runScript(metric({ dryRun: true }), ["F"]);
    expect(run.phase).toBe("Successful");
  });

  it("a provider that throws is an Error measurement with its message", async () => {
    const run = createRun(spec(metric({ interval: 1, count: 1 })), T0);
    const after = await tick(run, T0, {
      measure: async () => {
        throw new Error("no credentials");
      },
    });
    expect(after.phase).toBe("Running");
    expect(after.metricResults[0]?.measurements[0]).toMatchObject({
      phase: "Error",
      message: "no credentials",
    });
    expect(nextTickAt(after)).toEqual(at(10));
  });

  it("an empty vector is an Error measurement with Argo's message", async () => {
    const run = createRun(
      spec(metric({ successCondition: "result[0] >= 0.95", failureCondition: undefined })),
      T0,
    );
    const after = await tick(run, T0, { measure: async () => ({ ok: true, result: [], value: "[]" }) });
    expect(after.metricResults[0]?.measurements[0]).toMatchObject({
      phase: "Error",
      value: "[]",
      message:
        'could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider',
    });
  });
});

describe("terminate", () => {
  it("a background metric ends Successful when terminated", async () => {
    const { run } = await drive(createRun(spec(metric({ interval: 30 })), T0), scriptedProvider({}), 4);
    expect(run.phase).toBe("Running");
    const done = terminate(run, at(200));
    expect(done.phase).toBe("Successful");
    expect(done.message).toBe("Run Terminated");
    expect(done.metricResults[0]?.phase).toBe("Successful");
    expect(done.completedAt).toBe(at(200).toISOString());
    expect(nextTickAt(done)).toBeUndefined();
  });

  it("a run terminated before any measurement is Successful", () => {
    const done = terminate(createRun(spec(metric({ initialDelay: 60 })), T0), at(1));
    expect(done.phase).toBe("Successful");
    expect(done.metricResults).toEqual([]);
  });

  it("terminating keeps a verdict that is already worse", async () => {
    const provider = scriptedProvider({ a: ["S"], b: ["F"] });
    const run = createRun(
      spec(
        metric({ name: "a", interval: 10 }),
        metric({ name: "b", interval: 10, count: 3, failureLimit: 2 }),
      ),
      T0,
    );
    const after = await tick(run, T0, provider);
    const done = terminate(after, at(5));
    expect(done.phase).toBe("Successful");
    expect(done.message).toBe("Run Terminated");
    const failed = terminate(
      await tick(
        createRun(spec(metric({ name: "b", interval: 10, count: 3 })), T0),
        T0,
        scriptedProvider({ b: ["F"] }),
      ),
      at(5),
    );
    expect(failed.phase).toBe("Failed");
  });

  it("ticking a terminated run changes nothing", async () => {
    const done = terminate(createRun(spec(metric({ interval: 30 })), T0), T0);
    const provider = scriptedProvider({});
    const again = await tick(done, at(100), provider);
    expect(again).toEqual(done);
    expect(provider.calls).toEqual([]);
  });
});

describe("the run value", () => {
  it("survives a JSON round trip (it lives in DynamoDB between ticks)", async () => {
    const { run } = await drive(
      createRun(spec(metric({ interval: 5, count: 4 })), T0),
      scriptedProvider({ "success-rate": ["S", "E", "I"] }),
      2,
    );
    const copy: AnalysisRun = AnalysisRunSchema.parse(JSON.parse(JSON.stringify(run)));
    expect(copy).toEqual(run);
    const a = await tick(run, at(100), scriptedProvider({}));
    const b = await tick(copy, at(100), scriptedProvider({}));
    expect(b).toEqual(a);
  });

  it("tick does not modify its input", async () => {
    const run = createRun(spec(metric()), T0);
    const before = JSON.stringify(run);
    await tick(run, T0, scriptedProvider({}));
    expect(JSON.stringify(run)).toBe(before);
  });

  it("an invalid spec makes an Error run with Argo's message", () => {
    const run = createRun(spec(metric({ name: "x" }), metric({ name: "x" })), T0);
    expect(run.phase).toBe("Error");
    expect(run.message).toBe("Analysis spec invalid: metrics[1]: duplicate name 'x'");
    const bad = createRun(spec(metric({ count: 3 })), T0);
    expect(bad.message).toBe("Analysis spec invalid: metrics[0]: interval must be specified when count > 1");
    const disabled = createRun(spec(metric({ failureLimit: -1 })), T0);
    expect(disabled.message).toMatch(/failureLimit and consecutiveSuccessLimit cannot both be disabled/);
  });

  it("prints the --json shape", async () => {
    const run = await runScript(metric({ interval: 1, count: 2 }), ["F"]);
    expect(toArgoJson(run)).toEqual({
      phase: "Failed",
      message: 'Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
      metricResults: [
        {
          name: "success-rate",
          phase: "Failed",
          message: "",
          count: 1,
          successful: 0,
          failed: 1,
          inconclusive: 0,
          error: 0,
          consecutiveError: 0,
          measurements: [
            {
              phase: "Failed",
              value: "[0]",
              startedAt: T0.toISOString(),
              finishedAt: T0.toISOString(),
              message: "",
            },
          ],
        },
      ],
    });
  });
});
