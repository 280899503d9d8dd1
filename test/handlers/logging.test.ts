import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { METRICS } from "../../functions/config.ts";
import { createHandler as setWeightHandler } from "../../functions/handlers/set-weight.ts";
import { LOG_KEYS, logged, logKeysOf } from "../../functions/observability/logging.ts";
import { traced } from "../../functions/observability/tracing.ts";
import type { WorkflowDeps } from "../../functions/workflow/deps.ts";
import { judgePoints, PowertoolsMetricsSink } from "../../functions/workflow/metrics.ts";

const EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:checkout-rollout:checkout-2-abc";
const CONTEXT = {
  rollout: "checkout",
  revision: 2,
  image: "checkout:2",
  digest: `sha256:${"2".repeat(64)}`,
  tag: "v2",
  executionArn: EXECUTION,
};
const REF = { name: "checkout", revision: "74a0fb7474", strategy: "canary", stepCount: 3 };

/** Every JSON line written to stdout and stderr while `run` runs. */
async function lines(run: () => Promise<unknown>): Promise<Array<Record<string, unknown>>> {
  const written: string[] = [];
  const capture = (chunk: unknown) => {
    written.push(String(chunk));
    return true;
  };
  const out = vi.spyOn(process.stdout, "write").mockImplementation(capture);
  const err = vi.spyOn(process.stderr, "write").mockImplementation(capture);
  try {
    await run().catch(() => undefined);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return written
    .join("")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("structured logs of the handlers", () => {
  beforeAll(() => {
    // Read when the process' logger is first built: the construct sets it on every function.
    process.env.POWERTOOLS_LOG_LEVEL = "INFO";
  });
  afterEach(() => vi.restoreAllMocks());

  it("keys every line of a workflow handler with rollout, execution, step and revision", async () => {
    // A step the schema refuses: the handler fails, and its line still says whose it was.
    const handler = setWeightHandler(() => ({ clock: new ManualClock(0) }) as unknown as WorkflowDeps);
    const logs = await lines(() =>
      handler({ context: CONTEXT, rollout: REF, stepIndex: 1, step: { kind: "nonsense" } }),
    );
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      level: "ERROR",
      message: "failed",
      service: "sfn-rollouts",
      handler: "set-weight",
      rollout: "checkout",
      execution: EXECUTION,
      step: 1,
      revision: 2,
      error: { name: "InvalidPayloadError", message: expect.stringContaining("set-weight: invalid payload") },
    });
  });

  it("logs the end of a successful invocation with its duration, and keeps invocations' keys apart", async () => {
    const slow = logged("resume", async (event) => {
      await new Promise((r) =>
        setTimeout(r, (event as { payload: { stepIndex: number } }).payload.stepIndex),
      );
      return "ok";
    });
    const firing = (rollout: string, stepIndex: number) => ({
      key: `k-${rollout}`,
      payload: { kind: "pause", rollout, stepIndex, executionArn: `${EXECUTION}-${rollout}`, revision: 7 },
    });
    const logs = await lines(() => Promise.all([slow(firing("a", 30)), slow(firing("b", 1))]));
    expect(logs.map((l) => [l.message, l.rollout, l.execution, l.step, l.revision])).toEqual([
      ["done", "b", `${EXECUTION}-b`, 1, 7],
      ["done", "a", `${EXECUTION}-a`, 30, 7],
    ]);
    for (const line of logs) expect(line.durationMs).toEqual(expect.any(Number));
  });

  it("has the four keys, null when the event has none (an ECR push before the trigger decides)", () => {
    const keys = logKeysOf({ source: "aws.ecr", detail: { "image-tag": "v2" } });
    expect(Object.keys(keys)).toEqual([...LOG_KEYS]);
    expect(keys).toEqual({ rollout: null, execution: null, step: null, revision: null });
    expect(logKeysOf({ executionId: EXECUTION, rollout: REF, input: { rollout: "checkout" } })).toEqual({
      rollout: "checkout",
      execution: EXECUTION,
      step: null,
      revision: null,
    });
  });
});

describe("metrics through Powertools", () => {
  it("publishes each point as EMF with the rollout's dimensions only (no service dimension)", async () => {
    const sink = new PowertoolsMetricsSink();
    const logs = await lines(async () => {
      sink.put({
        name: METRICS.analysisRuns,
        value: 1,
        rollout: "checkout",
        dimensions: { Phase: "Failed" },
      });
      sink.put({ name: METRICS.canaryWeight, value: 25, rollout: "checkout" });
    });
    expect(logs).toHaveLength(2);
    expect(logs[0]).toMatchObject({
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: METRICS.namespace,
            Dimensions: [[METRICS.dimension, "Phase"]],
            Metrics: [{ Name: METRICS.analysisRuns, Unit: "Count" }],
          },
        ],
      },
      [METRICS.dimension]: "checkout",
      Phase: "Failed",
      [METRICS.analysisRuns]: 1,
    });
    expect(logs[0]).not.toHaveProperty("service");
    expect(logs[1]).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Dimensions: [[METRICS.dimension]], Metrics: [{ Unit: "Percent" }] }] },
      [METRICS.canaryWeight]: 25,
    });
  });
});

describe("judge figures as metrics", () => {
  it("publishes a look's p-value, Bayes factor and both sides' values per metric, leaving out absent ones", () => {
    const look = {
      test: "sequential-rate",
      decision: "hold" as const,
      verdict: "INSUFFICIENT",
      reason: "r",
      statistic: null,
      z: null,
      bayesFactor: 2.5,
      pValue: 0.2,
      effect: null,
      candidate: { n: 400, value: 0.03 },
      stable: { n: 400, value: null },
      look: 2,
    };
    expect(judgePoints("checkout", "errors", look)).toEqual([
      { name: METRICS.judgePValue, value: 0.2, rollout: "checkout", dimensions: { Metric: "errors" } },
      { name: METRICS.judgeBayesFactor, value: 2.5, rollout: "checkout", dimensions: { Metric: "errors" } },
      { name: METRICS.judgeCandidate, value: 0.03, rollout: "checkout", dimensions: { Metric: "errors" } },
    ]);
    expect(judgePoints("checkout", "errors", undefined)).toEqual([]);
  });
});

describe("tracing", () => {
  it("leaves a client untouched outside a Lambda, and adds X-Ray's middleware in one", async () => {
    const { SFNClient } = await import("@aws-sdk/client-sfn");
    const names = (c: InstanceType<typeof SFNClient>) => c.middlewareStack.identify().join(" ");
    const local = new SFNClient({ region: "us-east-1" });
    const before = names(local);
    expect(names(traced(local, {}))).toBe(before);
    const lambdaEnv = {
      AWS_EXECUTION_ENV: "AWS_Lambda_nodejs22.x",
      AWS_LAMBDA_FUNCTION_NAME: "rollouts-begin",
    };
    for (const [k, v] of Object.entries(lambdaEnv)) vi.stubEnv(k, v);
    try {
      const lambda = traced(new SFNClient({ region: "us-east-1" }), lambdaEnv);
      expect(names(lambda)).toMatch(/XRay/i);
      expect(before).not.toMatch(/XRay/i);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
