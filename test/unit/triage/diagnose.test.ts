import { describe, expect, it } from "vitest";
import { diagnose } from "../../../cli/triage/diagnose.ts";
import { UnknownRevisionError } from "../../../cli/triage/executions.ts";
import type { Cause, ExecutionStatus, TriageReport } from "../../../cli/triage/model.ts";
import { renderTriage } from "../../../cli/triage/render.ts";
import { abortedStatusMessage } from "../../../functions/abort/errors.ts";
import { terminate } from "../../../functions/analysis/index.ts";
import { newRolloutItem, RolloutItemSchema } from "../../../functions/store/schema.ts";
import {
  analysed,
  asGate,
  at,
  atFirstAnalysis,
  began,
  event,
  execArn,
  execName,
  iso,
  item,
  runId,
  stored,
  T0,
  threshold,
  view,
} from "./views.ts";

/**
 * The diagnosis on views built by hand: every verdict, and every reason nothing decided, from the
 * item, the runs and the time alone. Pure and fast.
 */

const kinds = (report: TriageReport) => report.decision.causes.map((c) => c.kind);
const causeOf = (report: TriageReport, kind: Cause["kind"]) =>
  report.decision.causes.find((c) => c.kind === kind);
const commands = (report: TriageReport) => report.next.map((n) => n.command);

const running: ExecutionStatus = {
  status: "RUNNING",
  startedAt: iso(0),
  stoppedAt: null,
  error: null,
  cause: null,
  lastState: { name: "Step02-Analysis", enteredAt: iso(0) },
  problem: null,
};

/** Revision 2 aborted at `seconds` by `reason`, after the events given. */
function abortedItem(reason: string, seconds: number, events = atFirstAnalysis()) {
  const message = abortedStatusMessage(2, reason);
  return item({
    phase: "Degraded",
    message,
    weight: 0,
    events: [...events, event(seconds, "RolloutAborted", message, { weight: 0 })],
  });
}

describe("aborted by analysis", () => {
  it("names the metric, its condition, its measurements and the limit reached, as Argo writes it", async () => {
    const run = await analysed(threshold(), [0.99, 0.5], 0);
    expect(run.phase).toBe("Failed");
    const failed = event(10, "AnalysisRunFailed", `analysis (step 2) ${runId(2, 1)} Failed: ${run.message}`, {
      step: 1,
      weight: 25,
    });
    const report = diagnose({
      view: view(abortedItem(run.message ?? "", 10, [...atFirstAnalysis(), failed]), [stored(2, 1, run)]),
      now: at(60),
      traffic: { rps: 100, errorRate: 0.5 },
    });
    expect(report.verdict).toEqual({
      kind: "aborted-by-analysis",
      line: 'Aborted by analysis: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
      warnings: [],
    });
    expect(report.decision).toMatchObject({ by: "metric", runId: runId(2, 1), gate: null, causes: [] });
    expect(report.decision.metric).toMatchObject({
      name: "success-rate",
      phase: "Failed",
      successCondition: "result[0] >= 0.95",
      failureCondition: null,
      limitReached: "failed (1) > failureLimit (0)",
      counts: { measured: 2, successful: 1, failed: 1, inconclusive: 0, error: 0, consecutiveError: 0 },
    });
    expect(report.decision.metric?.measurements.map((m) => [m.at, m.phase, m.value])).toEqual([
      [iso(0), "Successful", "[0.99]"],
      [iso(10), "Failed", "[0.5]"],
    ]);
    // 25% for the 10 s from the step to the abort: 2.5 s of all the traffic, 250 requests at 100 rps.
    expect(report.exposure).toMatchObject({
      fullTrafficSeconds: 2.5,
      seconds: 10,
      requests: 250,
      badRequests: 125,
    });
    expect(commands(report)).toEqual([
      `rollouts replay web --analysis ${runId(2, 1)}`,
      "rollouts analyze FILE --latest v2 --stable v1",
      "rollouts retry web",
    ]);
  });

  it("names a gate that rolled back with its statistic, p-value, Bayes factor and both sides", async () => {
    const run = asGate(await analysed(threshold(), [0.99, 0.5], 0));
    const report = diagnose({
      view: view(abortedItem(run.message ?? "", 10), [stored(2, 1, run)]),
      now: at(60),
    });
    expect(report.verdict.kind).toBe("aborted-by-analysis");
    expect(report.decision.by).toBe("gate");
    expect(report.decision.gate).toMatchObject({
      metric: "success-rate",
      decision: "rollback",
      statistic: 3.2064,
    });
    expect(report.decision.metric?.judge).toBe(true);
    const text = renderTriage(report);
    expect(text).toContain(
      "gate success-rate (sequential-rate) rollback (FAIL) at look 3: candidate 0.03 (n = 800) vs stable 0.01 (n = 800), p = 0.0405 against alpha 0.05, Bayes factor 24.69, statistic 3.206",
    );
  });

  it("an Error streak: consecutiveErrors past consecutiveErrorLimit, with the provider's last error", async () => {
    const run = await analysed(threshold(), ["E", "E", "E", "E", "E"], 0);
    expect(run.phase).toBe("Error");
    const report = diagnose({
      view: view(abortedItem(run.message ?? "", 40), [stored(2, 1, run)]),
      now: at(60),
    });
    expect(report.verdict.line).toBe(
      'Aborted by analysis: Metric "success-rate" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: connection refused"',
    );
    expect(report.decision.metric?.limitReached).toBe("consecutiveErrors (5) > consecutiveErrorLimit (4)");
    expect(causeOf(report, "error-streak")?.message).toBe(
      "success-rate: 5 Error measurement(s) in a row (consecutiveErrors (5) > consecutiveErrorLimit (4)): no value to judge; the last: connection refused",
    );
  });

  it("an empty vector: metric result is nil or empty", async () => {
    const run = await analysed(threshold(), ["empty", "empty", "empty", "empty", "empty"], 0);
    const report = diagnose({
      view: view(abortedItem(run.message ?? "", 40), [stored(2, 1, run)]),
      now: at(60),
    });
    expect(kinds(report)).toEqual(["empty-result", "error-streak"]);
    expect(causeOf(report, "empty-result")?.message).toMatch(
      /^success-rate: 5 measurement\(s\) found no data \(metric result is nil or empty\): /,
    );
    expect(report.decision.metric?.measurements.at(-1)?.message).toContain("metric result is nil or empty");
  });

  it("NaN: a ratio of no requests, which a success condition fails", async () => {
    const run = await analysed(threshold(), ["NaN"], 0);
    expect(run.phase).toBe("Failed");
    const report = diagnose({
      view: view(abortedItem(run.message ?? "", 0), [stored(2, 1, run)]),
      now: at(60),
    });
    expect(report.verdict.kind).toBe("aborted-by-analysis");
    expect(causeOf(report, "not-a-number")?.message).toMatch(
      /^success-rate: 1 measurement\(s\) were NaN \(the last \[NaN\] at 2026-11-30T12:00:00Z, Failed\): a ratio of zero requests is 0\/0/,
    );
  });

  it("a background analysis that failed, then aborted through the abort channel", async () => {
    const run = await analysed(threshold({ count: undefined }), [0.99, 0.2], 0);
    const events = [
      ...atFirstAnalysis(),
      event(
        10,
        "AnalysisRunFailed",
        `background analysis ${runId(2, "background")} Failed: ${run.message}`,
        {},
      ),
      event(10, "AbortRequested", run.message ?? ""),
    ];
    const report = diagnose({
      view: view(abortedItem(run.message ?? "", 11, events), [stored(2, "background", run)]),
      now: at(60),
    });
    expect(report.verdict.kind).toBe("aborted-by-analysis");
    expect(report.decision.runs[0]).toMatchObject({ step: null, phase: "Failed" });
  });
});

describe("aborted by something else", () => {
  it("by a person: the reason given to rollouts abort, when and at which step", () => {
    const events = [...atFirstAnalysis(), event(30, "AbortRequested", "p99 latency doubled")];
    const report = diagnose({ view: view(abortedItem("p99 latency doubled", 31, events)), now: at(60) });
    expect(report.verdict).toMatchObject({
      kind: "aborted-by-person",
      line: "Aborted by a person: p99 latency doubled (at 2026-11-30T12:00:30Z, step 1)",
    });
    expect(report.decision.by).toBe("person");
    expect(commands(report)).toEqual(["rollouts retry web"]);
  });

  it("by an alarm, checked at a step or delivered through the abort channel", () => {
    const reason = 'CloudWatch alarm "web-5xx" is in ALARM: Threshold Crossed';
    const report = diagnose({ view: view(abortedItem(reason, 20)), now: at(60) });
    expect(report.verdict).toMatchObject({
      kind: "aborted-by-alarm",
      line: `Aborted by an alarm: ${reason}`,
    });
    expect(report.decision.by).toBe("alarm");
  });

  it("by a lifecycle hook", () => {
    const reason = "afterTraffic hook smoke-test gave no verdict within 5m";
    const report = diagnose({ view: view(abortedItem(reason, 20)), now: at(60) });
    expect(report.verdict).toMatchObject({
      kind: "aborted-by-hook",
      line: `Aborted by a lifecycle hook: ${reason}`,
    });
  });

  it("by a target fault: a step that failed, named with the step", () => {
    const reason = "TrafficError: the listener rule arn:aws:elasticloadbalancing:…/rule/1 was not found";
    const report = diagnose({ view: view(abortedItem(reason, 20)), now: at(60) });
    expect(report.verdict).toMatchObject({
      kind: "degraded-by-target-fault",
      line: `Degraded by a target fault: ${reason} (after step 1)`,
    });
    expect(report.decision.by).toBe("target");
    expect(report.next[0]?.command).toBe("rollouts retry web");
  });
});

describe("paused", () => {
  it("waiting for a person at a pause: the task token and since when", () => {
    const itemValue = item({
      phase: "Paused",
      message: "CanaryPauseStep: waiting for rollouts promote",
      stepIndex: 3,
      weight: 50,
      currentTaskToken: "token-pause",
      waitingFor: "pause",
      waitingSince: at(20),
      pause: { reason: "CanaryPauseStep", startedAt: at(20), until: null },
      events: [
        ...began(2, 0),
        event(20, "RolloutPaused", "CanaryPauseStep: waiting for rollouts promote", { step: 3, weight: 50 }),
      ],
    });
    const report = diagnose({ view: view(itemValue), now: at(3600), execution: running });
    expect(report.verdict.line).toBe(
      "Paused waiting for a person: CanaryPauseStep at step 3 (weight 50%), since 2026-11-30T12:00:20Z",
    );
    expect(causeOf(report, "waiting-for-person")).toMatchObject({
      since: iso(20),
      message:
        "the execution waits on a task token, stored on the item since 2026-11-30T12:00:20Z, for CanaryPauseStep at step 3 (weight 50%): only rollouts promote or rollouts abort ends it",
    });
    expect(commands(report)).toEqual([
      "rollouts promote web",
      "rollouts abort web --reason 'stopped after triage'",
    ]);
    // The candidate has had half the traffic for the hour since the pause began.
    expect(report.exposure.spans.at(-1)).toMatchObject({ weight: 50, seconds: 3580 });
  });

  it("an Inconclusive analysis: the band neither condition covers, and the limit passed", async () => {
    const metric = threshold({ failureCondition: "result[0] < 0.5", inconclusiveLimit: 0 });
    const run = await analysed(metric, [0.8], 0);
    expect(run.phase).toBe("Inconclusive");
    const itemValue = item({
      phase: "Paused",
      currentTaskToken: "token-approval",
      waitingFor: "approval",
      waitingSince: at(1),
      pause: { reason: "InconclusiveAnalysisRun", startedAt: at(1), until: null },
      events: atFirstAnalysis(),
    });
    const report = diagnose({ view: view(itemValue, [stored(2, 1, run)]), now: at(600), execution: running });
    expect(report.verdict.kind).toBe("paused-for-person");
    expect(kinds(report)).toEqual(["waiting-for-person", "inconclusive"]);
    expect(causeOf(report, "inconclusive")?.message).toBe(
      "success-rate: neither successCondition result[0] >= 0.95 nor failureCondition result[0] < 0.5 held for [0.8] (inconclusive (1) > inconclusiveLimit (0)): a person decides",
    );
    expect(report.decision.metric?.limitReached).toBe("inconclusive (1) > inconclusiveLimit (0)");
    expect(commands(report)).toContain(`rollouts replay web --analysis ${runId(2, 1)}`);
  });

  it("by drift: someone else changed the weights", () => {
    const itemValue = item({
      phase: "Paused",
      currentTaskToken: "token-drift",
      waitingFor: "approval",
      waitingSince: at(5),
      pause: { reason: "WeightDrift", startedAt: at(5), until: null },
      drift: {
        step: 2,
        message: "the listener's weights are 70/30, not the 50/50 step 2 set",
        approved: false,
      },
      events: atFirstAnalysis(),
    });
    const report = diagnose({ view: view(itemValue), now: at(60), execution: running });
    expect(report.verdict.line).toBe(
      "Paused by drift: step 2: the listener's weights are 70/30, not the 50/50 step 2 set (since 2026-11-30T12:00:05Z)",
    );
    expect(kinds(report)).toEqual(["drift"]);
    expect(commands(report)[0]).toBe("rollouts promote web");
  });
});

describe("hung", () => {
  /** Revision 2 waiting for its step-1 analysis, which measured once at 0 s and is due every minute. */
  async function waitingForAnalysis() {
    const run = await analysed(threshold({ interval: 60 }), [0.99], 0);
    const itemValue = item({
      currentTaskToken: "token-analysis",
      waitingFor: "analysis",
      waitingSince: at(0),
      events: atFirstAnalysis(),
    });
    return view(itemValue, [stored(2, 1, run, { answered: false })]);
  }

  it("a lost timer: the analysis's next look overdue, compared with now", async () => {
    const report = diagnose({ view: await waitingForAnalysis(), now: at(60 + 150), execution: running });
    expect(report.verdict.kind).toBe("hung");
    expect(report.verdict.line).toBe(
      `Hung: waiting for the analysis of step 1 since 2026-11-30T12:00:00Z; timer overdue: the analysis of step 1 (${runId(2, 1)}) was due to measure success-rate at 2026-11-30T12:01:00Z, 2m30s ago; a late firing may still come until 2026-11-30T12:28:00Z (the Timer's retries); after that it is lost`,
    );
    expect(causeOf(report, "timer-overdue")).toMatchObject({
      runId: runId(2, 1),
      metric: "success-rate",
      due: iso(60),
    });
    expect(commands(report)).toEqual([
      "rollouts abort web --reason 'analysis timer overdue'",
      "rollouts promote web --full",
      "rollouts get web --watch",
    ]);
  });

  it("within a minute of its due time a look is not overdue: the rollout is progressing", async () => {
    const report = diagnose({ view: await waitingForAnalysis(), now: at(60 + 59), execution: running });
    expect(report.verdict.kind).toBe("progressing");
    expect(causeOf(report, "measuring")).toMatchObject({ due: iso(60) });
    expect(commands(report)).toEqual(["rollouts get web --watch"]);
  });

  it("past the watchdog's limit, the watchdog's words: the firings were lost", async () => {
    const report = diagnose({ view: await waitingForAnalysis(), now: at(29 * 60), execution: running });
    expect(causeOf(report, "timer-overdue")?.message).toContain(
      "the watchdog's words: no measurement for 29m (29 intervals): its timer firings were lost",
    );
  });

  it("a timed pause whose end is overdue", () => {
    const itemValue = item({
      phase: "Paused",
      currentTaskToken: "token-pause",
      waitingFor: "pause",
      waitingSince: at(10),
      pause: { reason: "CanaryPauseStep", startedAt: at(10), until: at(40) },
      events: atFirstAnalysis(),
    });
    const report = diagnose({ view: view(itemValue), now: at(200), execution: running });
    expect(report.verdict.kind).toBe("hung");
    expect(causeOf(report, "timer-overdue")).toMatchObject({ due: iso(40) });
    expect(commands(report)[0]).toBe("rollouts promote web");
  });

  it("an execution that ended without updating the item", async () => {
    const ended: ExecutionStatus = {
      ...running,
      status: "FAILED",
      stoppedAt: iso(900),
      error: "States.Timeout",
      cause: null,
    };
    const report = diagnose({ view: await waitingForAnalysis(), now: at(1000), execution: ended });
    expect(report.verdict.kind).toBe("hung");
    expect(causeOf(report, "execution-ended")?.message).toBe(
      `the execution ${execName(2)} ended FAILED at ${iso(900)} in state Step02-Analysis: States.Timeout, without writing the rollout's end: the item still says Progressing at step 1`,
    );
    expect(commands(report)[0]).toBe(
      `aws stepfunctions get-execution-history --execution-arn ${execArn(2)} --reverse-order --max-items 20`,
    );
  });

  it("a run that ended but whose outcome never reached the waiting step", async () => {
    const run = await analysed(threshold(), [0.99, 0.99, 0.99], 0);
    const itemValue = item({
      currentTaskToken: "token-analysis",
      waitingFor: "analysis",
      waitingSince: at(0),
      events: atFirstAnalysis(),
    });
    const report = diagnose({
      view: view(itemValue, [stored(2, 1, run, { answered: false })]),
      now: at(300),
      execution: running,
    });
    expect(report.verdict.kind).toBe("hung");
    expect(causeOf(report, "timer-overdue")?.message).toMatch(
      /ended Successful at 2026-11-30T12:00:20Z, 4m40s ago, and its outcome never reached the waiting step/,
    );
  });
});

describe("promoted", () => {
  /** Revision 2 promoted at 30 s after `runs`; revision 2 is the stable one since. */
  function promotedItem(extra: ReturnType<typeof event>[] = []) {
    return item({
      phase: "Healthy",
      weight: 100,
      stepIndex: 5,
      stableRevision: item().currentRevision,
      history: [
        ...item().history,
        {
          ...(item().currentRevision as NonNullable<ReturnType<typeof item>["currentRevision"]>),
          at: at(30),
        },
      ],
      events: [
        ...atFirstAnalysis(),
        ...extra,
        event(30, "RolloutCompleted", "Rollout completed: revision 2 (v2) is stable", { weight: 100 }),
      ],
    });
  }

  it("with every analysis passed: Healthy, and undo as the way back", async () => {
    const run = await analysed(threshold(), [0.99, 0.99, 0.99], 0);
    const report = diagnose({
      view: view(promotedItem(), [stored(2, 1, run)]),
      now: at(90),
      traffic: { rps: 10 },
    });
    expect(report.verdict).toEqual({
      kind: "healthy",
      line: "Healthy: revision 2 (v2) promoted at 2026-11-30T12:00:30Z",
      warnings: [],
    });
    expect(report.exposure.afterPromotion).toEqual({
      from: iso(30),
      until: iso(90),
      seconds: 60,
      requests: 600,
      badRequests: null,
    });
    expect(commands(report)).toEqual(["rollouts undo web"]);
    expect(report.next[0]?.why).toBe("if v2 is bad after all: back to revision 1 (v1) through the steps");
  });

  it("without evidence: an Inconclusive run a person promoted, and a NaN that passed", async () => {
    const inconclusive = await analysed(threshold({ failureCondition: "result[0] < 0.5" }), [0.8], 0);
    const nan = await analysed(
      threshold({ successCondition: undefined, failureCondition: "result[0] < 0.5", count: 1 }),
      ["NaN"],
      0,
    );
    expect(nan.phase).toBe("Successful");
    const report = diagnose({
      view: view(
        promotedItem([
          event(20, "RolloutPromoted", "promoted: the Inconclusive analysis pause ended", { step: 1 }),
        ]),
        [stored(2, 1, inconclusive), stored(2, 4, nan)],
      ),
      now: at(90),
    });
    expect(report.verdict.kind).toBe("healthy");
    expect(report.verdict.line).toMatch(
      /^Healthy: revision 2 \(v2\) promoted at 2026-11-30T12:00:30Z, without evidence: /,
    );
    expect(kinds(report).sort()).toEqual(["inconclusive", "inconclusive", "not-a-number"]);
    expect(report.verdict.warnings).toHaveLength(3);
    expect(commands(report)).toEqual([
      `rollouts replay web --analysis ${runId(2, 1)}`,
      `rollouts replay web --analysis ${runId(2, 4)}`,
      "rollouts undo web",
    ]);
  });

  it("without evidence: promote --full skipped the remaining steps, and a metric measured nothing", async () => {
    const skipped = terminate(await analysed(threshold({ initialDelay: 60 }), [], 0), new Date(at(15)));
    const report = diagnose({
      view: view(
        promotedItem([
          event(15, "RolloutPromoted", "promoted: the remaining steps are skipped", { step: 1 }),
        ]),
        [stored(2, 1, skipped)],
      ),
      now: at(90),
    });
    expect(kinds(report)).toEqual(["missing-measurements", "skipped-steps"]);
    expect(causeOf(report, "missing-measurements")?.message).toBe(
      `success-rate (${runId(2, 1)}) took 0 of 3 measurement(s) before its run ended Successful: Run Terminated`,
    );
  });

  it("a first revision is promoted at once, with no warning", () => {
    const first = RolloutItemSchema.parse({
      ...newRolloutItem("web", T0),
      executionArn: execArn(1),
      currentRevision: item().stableRevision,
      stableRevision: item().stableRevision,
      events: [
        ...began(1, 0),
        event(0, "RolloutCompleted", "Rollout completed: revision 1 (v1) is stable", { weight: 100 }),
      ],
      updatedAt: T0,
      version: 3,
    });
    const report = diagnose({ view: view(first), now: at(10) });
    expect(report.verdict).toEqual({
      kind: "healthy",
      line: "Healthy: revision 1 (v1) promoted at 2026-11-30T12:00:00Z at once (no steps ran: a rollout's first revision skips them, as in Argo)",
      warnings: [],
    });
    // Nothing to go back to.
    expect(commands(report)).toEqual(["rollouts get web"]);
  });
});

describe("superseded and progressing", () => {
  it("an execution whose abort ran before the newer one began", () => {
    const itemValue = item({
      message: "revision 2 was superseded by a newer revision: …",
      trigger: {
        ...(item().trigger as NonNullable<ReturnType<typeof item>["trigger"]>),
        executionName: execName(3),
        acceptedAt: at(20),
      },
      events: [
        ...atFirstAnalysis(),
        event(
          21,
          "RolloutSuperseded",
          "revision 2 was superseded by a newer revision: its traffic is back on the stable version",
          { weight: 0 },
        ),
      ],
    });
    const report = diagnose({ view: view(itemValue), now: at(30) });
    expect(report.verdict.kind).toBe("superseded");
    expect(report.verdict.line).toContain(`${execName(3)} owns the rollout since 2026-11-30T12:00:21Z`);
    expect(kinds(report)).toEqual(["superseded"]);
    expect(commands(report)).toEqual(["rollouts get web --watch"]);
  });

  it("a running execution a newer push was accepted for", () => {
    const itemValue = item({
      trigger: {
        ...(item().trigger as NonNullable<ReturnType<typeof item>["trigger"]>),
        tag: "v3",
        executionName: execName(3),
        acceptedAt: at(20),
      },
      events: atFirstAnalysis(),
    });
    const report = diagnose({ view: view(itemValue), now: at(21), execution: running });
    expect(report.verdict.line).toBe(
      `Superseded: a newer push (v3) was accepted at 2026-11-30T12:00:20Z: ${execName(3)} takes the rollout over, this execution stops at its next step`,
    );
  });

  it("an earlier execution (--revision) that never ended before the next began", () => {
    const itemValue = item({
      executionArn: execArn(3),
      currentRevision: {
        ...(item().currentRevision as NonNullable<ReturnType<typeof item>["currentRevision"]>),
        revision: 3,
        tag: "v3",
      },
      events: [...atFirstAnalysis(), ...began(3, 50)],
    });
    const report = diagnose({ view: view(itemValue), now: at(60), revision: 2 });
    expect(report.execution).toMatchObject({ name: execName(2), revision: 2, current: false, phase: null });
    expect(report.verdict.kind).toBe("superseded");
    // The push of revision 3 belongs to revision 3's execution.
    expect(report.timeline.map((t) => t.type)).toEqual([
      "Triggered",
      "RolloutUpdated",
      "RolloutStepCompleted",
      "AnalysisRunStarted",
    ]);
    expect(commands(report)).toEqual(["rollouts triage web"]);
  });

  it("an unknown revision is refused, naming the revisions the item holds", () => {
    expect(() =>
      diagnose({ view: view(item({ events: atFirstAnalysis() })), now: at(1), revision: 7 }),
    ).toThrow(
      new UnknownRevisionError(
        'rollout "web" has no execution of revision 7 among its events (the item keeps the newest 50; revisions it holds: 2)',
      ),
    );
  });

  it("a rollout that never ran", () => {
    const report = diagnose({
      view: view(RolloutItemSchema.parse({ ...newRolloutItem("web", T0), updatedAt: T0, version: 1 })),
      now: at(1),
    });
    expect(report.verdict).toMatchObject({
      kind: "healthy",
      line: "Healthy: no revision has been rolled out yet",
    });
    expect(report.execution.name).toBeNull();
  });
});

describe("the timeline and the report's text", () => {
  it("folds events alike in a row into one line with their count", () => {
    const skipped = (s: number) => event(s, "RolloutDelayedActionSkipped", "tick of revision 1 skipped");
    const itemValue = item({ events: [...atFirstAnalysis(), skipped(5), skipped(6), skipped(7)] });
    const report = diagnose({ view: view(itemValue), now: at(8), execution: running });
    expect(report.timeline.at(-1)).toMatchObject({
      type: "RolloutDelayedActionSkipped",
      count: 3,
      at: iso(5),
      lastAt: iso(7),
      offsetSeconds: 5,
    });
  });

  it("prints the five sections in their order, stored text stripped of escape sequences", async () => {
    const run = await analysed(threshold(), [0.5], 0);
    const itemValue = abortedItem(`${run.message}\x1b]0;owned\x07`, 0);
    const text = renderTriage(diagnose({ view: view(itemValue, [stored(2, 1, run)]), now: at(60) }));
    const headings = text.split("\n").filter((l) => /^[A-Z][^:]*:$/.test(l));
    expect(headings).toEqual([
      "Verdict:",
      "What happened, when:",
      "What decided:",
      "Exposure so far:",
      "Next:",
    ]);
    expect(text).not.toContain("\x1b");
    expect(text).not.toContain("owned");
    expect(text).toContain("RolloutAborted: Rollout aborted update to revision 2: Metric");
  });
});
