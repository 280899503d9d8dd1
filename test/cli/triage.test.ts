import { SFNClient } from "@aws-sdk/client-sfn";
import { run } from "@sfn-rollouts/test-support/cli";
import { type DemoRollouts, startDemoRollouts } from "@sfn-rollouts/test-support/demo-rollouts";
import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { triageAction } from "../../cli/commands/triage-actions.ts";
import type { Io } from "../../cli/io.ts";
import type { TriageReport } from "../../cli/triage/model.ts";
import { SfnExecutionReader } from "../../cli/triage/sfn.ts";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";

/**
 * `rollouts triage` as a user runs it against the embedded runtime: configured through
 * `ROLLOUTS_TABLE` and the `AWS_ENDPOINT_URL_*` variables only, reading the demo's real rollouts
 * (the demo's spec files, the shipped handlers, in virtual time: v1 and v2 promoted, v3 aborted by
 * the threshold, v4 rolled back by the gate, and `demo-approval` paused for a person), copied
 * into a dynalite table, and asking the runtime's Step Functions how each execution stands.
 */

const TABLE = "rollouts-triage";
let demo: DemoRollouts;
let dynalite: DynaliteHarness;

beforeAll(async () => {
  demo = await startDemoRollouts();
  dynalite = await startDynalite(TABLE);
  const table = new DynamoRolloutStore({ client: dynalite.client(), tableName: TABLE, clock: demo.clock });
  for (const item of await demo.store.list()) {
    await table.save(item, null);
    for (const stored of await demo.store.listRuns(item.name, z.unknown())) {
      await table.saveRun(item.name, stored.runId, stored.run, null);
      for (const m of await demo.store.listMeasurements(item.name, stored.runId, z.unknown())) {
        await table.putMeasurement({ ...m, ttlSeconds: 10 * 365 * 24 * 3600 });
      }
    }
  }
  const env = {
    ROLLOUTS_TABLE: TABLE,
    AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint,
    AWS_ENDPOINT_URL_SFN: demo.demo.runtime.facadeUrl,
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
  };
  for (const [key, value] of Object.entries(env)) vi.stubEnv(key, value);
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await dynalite?.close();
  await demo?.close();
});

const json = (out: string) => JSON.parse(out) as TriageReport;

describe("rollouts triage on the demo's rollouts", () => {
  it("v3, aborted by the threshold: the metric, its condition, its measurement and failed (1) > failureLimit (0)", async () => {
    const result = await run("triage", "demo", "--revision", "3", "--rps", "800", "--error-rate", "0.5");
    expect(result.err).toBe("");
    expect(result.code).toBe(0);
    const lines = result.out.split("\n");
    expect(lines).toContain(
      '  Aborted by analysis: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    );
    expect(lines).toContain("  metric:        success-rate Failed: failed (1) > failureLimit (0)");
    expect(lines).toContain("  condition:     successCondition result[0] >= 0.95");
    expect(result.out).toMatch(/\n {4}2026-11-30T12:01:41Z {2}Failed {2}\[0\.5\]\n/);
    // 25% of 800 rps for the 5 s between the step and the abort.
    expect(result.out).toContain(
      "1.25s of all the traffic over 5s (weight × time): at 800 rps, 1,000 requests reached the candidate, of which 500 failed at an error rate of 0.5",
    );
    expect(result.out).toContain(
      "Step Functions:  FAILED at 2026-11-30T12:01:41Z, last state Aborted entered 2026-11-30T12:01:41Z: RolloutAborted",
    );
    expect(result.out).toContain(
      "  rollouts replay demo --analysis demo-333333333333333333333333-g3.step01\n",
    );
  });

  it("v4, rolled back by the gate: the gate, its test and its statistic", async () => {
    const result = await run("triage", "demo");
    expect(result.code).toBe(0);
    expect(result.out).toContain(
      '  Aborted by analysis: Gate "errors" rolled back: candidate 3.0% vs stable 1.0% errors, p = 0.0405 < alpha 0.05',
    );
    expect(result.out).toContain(
      "  gate:          gate errors (sequential-rate) rollback (FAIL) at look 3: candidate 0.03 (n = 800) vs stable 0.01 (n = 800), p = 0.0405 against alpha 0.05, Bayes factor 24.69, statistic 3.206\n",
    );
    expect(result.out).toContain(
      "  gate errors of the analysis of step 4 (demo-444444444444444444444444-g4.step04) decided rollback at look 3: failed (1) > failureLimit (0)\n",
    );
    expect(result.out).toContain("  rollouts retry demo\n");
  });

  it("demo-approval, paused at its pause until a person promotes or aborts", async () => {
    const client = new SFNClient({
      endpoint: demo.approval.runtime.facadeUrl,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    const out: string[] = [];
    const io: Io = { out: (t) => out.push(t), err: (t) => out.push(`err: ${t}`) };
    try {
      const code = await triageAction(io, "demo-approval", {
        json: true,
        clock: demo.clock,
        executions: new SfnExecutionReader(client),
      });
      expect(code).toBe(0);
    } finally {
      client.destroy();
    }
    const report = json(out.join(""));
    expect(report.verdict.kind).toBe("paused-for-person");
    expect(report.verdict.line).toBe(
      "Paused waiting for a person: CanaryPauseStep at step 3 (weight 50%), since 2026-11-30T12:03:47Z",
    );
    expect(report.execution.stepFunctions).toMatchObject({
      status: "RUNNING",
      lastState: { name: "Step04-Pause" },
    });
    expect(report.decision.causes[0]?.kind).toBe("waiting-for-person");
    expect(report.next.map((n) => n.command)).toEqual([
      "rollouts promote demo-approval",
      "rollouts abort demo-approval --reason 'stopped after triage'",
    ]);
  });
});

describe("rollouts triage --json and exit codes", () => {
  it("prints one JSON object with the report's stable fields", async () => {
    const result = await run("triage", "demo", "--json", "--revision", "3", "--rps", "800");
    expect(result.code).toBe(0);
    const report = json(result.out);
    expect(Object.keys(report)).toEqual([
      "rollout",
      "now",
      "execution",
      "verdict",
      "timeline",
      "decision",
      "exposure",
      "next",
    ]);
    expect(report.execution).toMatchObject({
      name: "demo-333333333333333333333333-g3",
      revision: 3,
      image: "v3",
      stable: "v2",
      current: false,
      phase: null,
      stepFunctions: { status: "FAILED", error: "RolloutAborted", problem: null },
    });
    expect(report.verdict.kind).toBe("aborted-by-analysis");
    expect(Object.keys(report.decision)).toEqual([
      "by",
      "summary",
      "runId",
      "metric",
      "gate",
      "causes",
      "runs",
    ]);
    expect(report.decision.metric?.measurements).toEqual([
      { at: "2026-11-30T12:01:41.000Z", phase: "Failed", value: "[0.5]", message: null },
    ]);
    expect(report.timeline.map((t) => t.type)).toEqual([
      "Triggered",
      "RolloutUpdated",
      "RolloutStepCompleted",
      "AnalysisRunStarted",
      "AnalysisRunFailed",
      "RolloutAborted",
    ]);
    expect(report.exposure).toMatchObject({
      spans: [{ weight: 25, seconds: 5 }],
      fullTrafficSeconds: 1.25,
      rps: 800,
      requests: 1000,
      errorRate: null,
      badRequests: null,
      afterPromotion: null,
    });
    for (const next of report.next) expect(Object.keys(next)).toEqual(["command", "why"]);
  });

  it("an unknown rollout or revision is exit 2, naming it", async () => {
    const missing = await run("triage", "nope");
    expect(missing.code).toBe(2);
    expect(missing.err).toBe(
      `rollouts: rollout "nope" not found in table "${TABLE}" (rollouts list shows the rollouts it holds)\n`,
    );
    const revision = await run("triage", "demo", "--revision", "9");
    expect(revision.code).toBe(2);
    expect(revision.err).toBe(
      'rollouts: rollout "demo" has no execution of revision 9 among its events (the item keeps the newest 50; revisions it holds: 1, 2, 3, 4)\n',
    );
    expect(revision.out).toBe("");
  });

  it("bad options are exit 2", async () => {
    expect((await run("triage", "demo", "--revision", "0")).err).toBe(
      'rollouts: --revision must be a revision number (1, 2, …), got "0"\n',
    );
    expect((await run("triage", "demo", "--rps", "0x10")).code).toBe(2);
    const rate = await run("triage", "demo", "--error-rate", "0.5");
    expect(rate.code).toBe(2);
    expect(rate.err).toBe(
      "rollouts: --error-rate needs --rps: the exposure in requests is rps × weight × time\n",
    );
  });
});
