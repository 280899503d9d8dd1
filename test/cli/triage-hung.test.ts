import { SFNClient } from "@aws-sdk/client-sfn";
import { type EmbeddedRollout, startEmbeddedRollout } from "@sfn-rollouts/test-support/embedded-rollout";
import { digest } from "@sfn-rollouts/test-support/fake-rollout";
import { FakeTraffic } from "@sfn-rollouts/test-support/traffic";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triageReport } from "../../cli/commands/triage-actions.ts";
import { SfnExecutionReader } from "../../cli/triage/sfn.ts";
import { MetricProviders } from "../../functions/metrics/index.ts";
import { WebMetricProvider } from "../../functions/metrics/web.ts";
import { abortRollout } from "../../functions/workflow/operate.ts";
import { writeDemoSpec } from "../../local/demo/spec.ts";
import { loadRollout } from "../../statemachine/load.ts";

/**
 * A rollout hung by a lost timer, on the embedded runtime in virtual time: the demo's rollout
 * (its spec files, the shipped handlers) whose first analysis's Timer firing is dropped, as a
 * firing whose retries are exhausted is (the resume function answers it without ticking, the way
 * the scenarios of `test/integration/scenarios.ts` lose a background analysis's firings). The
 * execution waits on the analysis's task token; `rollouts triage` reads the table and Step
 * Functions and says Hung, the timer overdue, and the command that ends it; that command ends it.
 */

const STATS = "http://demo-proxy.invalid:9";
let rollout: EmbeddedRollout;
let client: SFNClient;
let executionArn: string;
const dropped: string[] = [];

/** The proxy's `/admin/stats` for a healthy candidate: 99% of checkouts succeed. */
const healthy = async () =>
  new Response(JSON.stringify({ requests: 100, ok: 99, successRate: 0.99, result: [0.99] }), {
    status: 200,
    headers: { "content-type": "application/json" },
  });

beforeAll(async () => {
  const { spec } = await loadRollout(writeDemoSpec({ kind: "proxy", url: STATS }));
  rollout = await startEmbeddedRollout({
    spec,
    router: new FakeTraffic(),
    providers: new MetricProviders({ web: new WebMetricProvider({ fetch: healthy }) }),
    // The Timer loses every firing of the first analysis's run: nothing will tick it again.
    wrap: (name, handler) => async (event, context) => {
      const payload = (event as { payload?: { kind?: string; runId?: string } }).payload;
      if (name === "resume" && payload?.kind === "tick" && payload.runId?.endsWith(".step01")) {
        dropped.push(payload.runId);
        return { result: "lost" };
      }
      return handler(event, context);
    },
  });
  client = new SFNClient({
    endpoint: rollout.runtime.facadeUrl,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  expect((await rollout.rollOut({ digest: digest(1), tag: "v1" })).state).toBe("Healthy");
  executionArn = rollout.executionArnOf(await rollout.push({ digest: digest(2), tag: "v2" }));
  // Virtual time, up to the lost firing: the analysis waits from then on.
  while (dropped.length === 0) {
    await rollout.runtime.settle();
    const next = rollout.runtime.timer.nextDueAt();
    if (next === undefined) throw new Error("no timer left before the analysis's first look");
    await rollout.runtime.advanceTo(next);
  }
  await rollout.runtime.settle();
}, 60_000);

afterAll(async () => {
  client?.destroy();
  await rollout?.close();
});

const triage = () =>
  triageReport({ store: rollout.store }, "demo", {
    executions: new SfnExecutionReader(client),
    clock: rollout.clock,
  });

describe("a rollout whose analysis timer firing was lost", () => {
  it("is Progressing while the look is not a minute late", async () => {
    const report = await triage();
    expect(report.verdict.kind).toBe("progressing");
    expect(report.decision.causes.map((c) => c.kind)).toEqual(["measuring"]);
  });

  it("is Hung two minutes later: the timer overdue, what it waits on and since when, and the next command", async () => {
    const item = await rollout.item();
    expect(item).toMatchObject({ phase: "Progressing", waitingFor: "analysis" });
    const started = item.waitingSince as number;
    // Two minutes past the look's due time (the step's timeout, 15 minutes on, is not due yet).
    await rollout.runtime.advanceTo(started + 5_000 + 120_000);
    const report = await triage();
    expect(report.verdict.kind).toBe("hung");
    const since = new Date(started).toISOString().replace(".000Z", "Z");
    const due = new Date(started + 5_000).toISOString().replace(".000Z", "Z");
    expect(report.verdict.line).toBe(
      `Hung: waiting for the analysis of step 1 since ${since}; timer overdue: the analysis of step 1 (demo-222222222222222222222222-g2.step01) was due to measure success-rate at ${due}, 2m ago; a late firing may still come until ${new Date(started + 5_000 + 1_620_000).toISOString().replace(".000Z", "Z")} (the Timer's retries); after that it is lost`,
    );
    expect(report.execution.stepFunctions).toMatchObject({
      status: "RUNNING",
      lastState: { name: "Step02-Analysis" },
    });
    expect(report.decision.metric).toMatchObject({
      name: "success-rate",
      phase: "Pending",
      measurements: [],
    });
    expect(report.next[0]?.command).toBe("rollouts abort demo --reason 'analysis timer overdue'");
  });

  it("the command it names ends the hang: the rollout is then aborted by a person, with that reason", async () => {
    const outcome = await abortRollout(
      {
        store: rollout.store,
        tokens: rollout.tokens,
        executions: { start: () => Promise.reject(new Error("unused")) },
        clock: rollout.clock,
      },
      "demo",
      "analysis timer overdue",
    );
    expect(outcome.ok).toBe(true);
    expect((await rollout.run(executionArn)).state).toBe("Aborted");
    const report = await triage();
    expect(report.verdict).toMatchObject({
      kind: "aborted-by-person",
      line: expect.stringMatching(/^Aborted by a person: analysis timer overdue \(at .*, step 1\)$/),
    });
    expect(report.execution.stepFunctions?.status).toBe("FAILED");
  });
});
