import type { AnalysisPhase, GateFigures } from "../../functions/analysis/types.ts";
import { formatNumber } from "../../functions/judges/index.ts";
import type { StoredRun } from "../../functions/store/port.ts";
import type { RolloutEvent, RolloutItem } from "../../functions/store/schema.ts";
import type { StoredAnalysis } from "../../functions/workflow/analysis.ts";
import { formatDuration } from "../../statemachine/duration.ts";
import { currentStepOf } from "../render.ts";
import type { ExecutionFacts } from "./executions.ts";
import {
  cause,
  measuring,
  metricCauses,
  metricDecision,
  missingMeasurements,
  OVERDUE_AFTER_SECONDS,
  overdueLook,
  runLine,
  undelivered,
  when,
} from "./findings.ts";
import {
  type Cause,
  type Decision,
  type ExecutionStatus,
  VERDICT_TITLES,
  type Verdict,
  type VerdictKind,
} from "./model.ts";

/**
 * The verdict on one execution and what decided it, from its facts (events, runs, measurements),
 * the rollout item (for the execution that drives it now), what Step Functions says of it and the
 * time. Pure; one function per way an execution can stand: ended (promoted, aborted, superseded)
 * or running (hung, paused, progressing).
 */

/** A time in a JSON field: ISO 8601 to the millisecond. */
const iso = (ms: number) => new Date(ms).toISOString();

export interface JudgeContext {
  facts: ExecutionFacts;
  item: RolloutItem;
  now: number;
  execution: ExecutionStatus | null;
}

export interface Judged {
  verdict: Verdict;
  decision: Decision;
}

function verdict(kind: VerdictKind, detail: string, warnings: string[] = []): Verdict {
  return { kind, line: detail ? `${VERDICT_TITLES[kind]}: ${detail}` : VERDICT_TITLES[kind], warnings };
}

function decision(
  facts: ExecutionFacts,
  by: Decision["by"],
  summary: string,
  extra: Partial<Decision> = {},
): Decision {
  return {
    by,
    summary,
    runId: null,
    metric: null,
    gate: null,
    causes: [],
    runs: facts.runs.map(runLine),
    ...extra,
  };
}

/** Every metric's causes (errors in a row, no data, NaN, the Inconclusive band), run by run. */
function metricsCauses(facts: ExecutionFacts): Cause[] {
  return facts.runs.flatMap((stored) =>
    stored.run.run.metrics.flatMap((m) => metricCauses(facts, stored, m.name)),
  );
}

/** `revision 3 (v3)` */
function revisionText(facts: ExecutionFacts): string {
  if (facts.revision === null) return facts.name ?? "the execution";
  return `revision ${facts.revision}${facts.image ? ` (${facts.image})` : ""}`;
}

export function judge(ctx: JudgeContext): Judged {
  switch (ctx.facts.outcome) {
    case "none":
      return nothingRolledOut(ctx);
    case "superseded":
      return superseded(ctx);
    case "aborted":
      return aborted(ctx);
    case "promoted":
      return promoted(ctx);
    default:
      return running(ctx);
  }
}

function nothingRolledOut({ facts, item }: JudgeContext): Judged {
  const detail =
    item.phase === "Healthy"
      ? "no revision has been rolled out yet"
      : `${item.phase} with no execution: a push was accepted and its execution has not begun`;
  const kind: VerdictKind = item.phase === "Healthy" ? "healthy" : "progressing";
  return { verdict: verdict(kind, detail), decision: decision(facts, "nothing", detail) };
}

function superseded({ facts, item }: JudgeContext): Judged {
  const newer = item.trigger?.executionName ?? item.executionArn?.split(":").at(-1) ?? "a newer execution";
  const owner = newer === facts.name ? "a newer execution" : newer;
  const message = `${revisionText(facts)} (${facts.name}) was superseded by a newer push: ${owner} owns the rollout${facts.end ? ` since ${when(facts.end.at)}` : ""}`;
  return {
    verdict: verdict("superseded", message),
    decision: decision(facts, "nothing", "nothing decided: a newer revision took the rollout over", {
      causes: [
        cause("superseded", message, { since: facts.end ? iso(facts.end.at) : null }),
        ...metricsCauses(facts),
      ],
    }),
  };
}

const ABORT_PREFIX = /^RolloutAborted: Rollout aborted update to [^:]+: /;
const HOOK = /^(beforeTraffic|afterTraffic|afterPromotion) hook /;
const ALARM = /^CloudWatch alarm "/;

/** Why an execution was aborted: its analysis, a person, an alarm, a hook, or its target. */
function aborted(ctx: JudgeContext): Judged {
  const { facts, item } = ctx;
  const message = facts.end?.message ?? (facts.current ? item.message : "");
  const reason = message.replace(ABORT_PREFIX, "").replace(/ \(onFailure: stop:.*\)$/, "");
  const run = failedRun(facts, reason);
  if (run) return abortedByAnalysis(facts, run);
  const request = [...facts.events].reverse().find((e) => e.type === "AbortRequested");
  const causes = metricsCauses(facts);
  if (ALARM.test(reason)) {
    return {
      verdict: verdict("aborted-by-alarm", reason),
      decision: decision(facts, "alarm", `${reason}${request ? ` (at ${when(request.at)})` : ""}`, {
        causes,
      }),
    };
  }
  if (HOOK.test(reason)) {
    return {
      verdict: verdict("aborted-by-hook", reason),
      decision: decision(facts, "hook", reason, { causes }),
    };
  }
  if (request) {
    const detail = `${request.message} (at ${when(request.at)}, step ${stepAt(facts.events, request.at) ?? "-"})`;
    return {
      verdict: verdict("aborted-by-person", detail),
      decision: decision(facts, "person", `rollouts abort at ${when(request.at)}: ${request.message}`, {
        causes,
      }),
    };
  }
  const step = stepAt(facts.events, facts.end?.at ?? ctx.now);
  const where = step === null ? "" : ` (after step ${step})`;
  return {
    verdict: verdict("degraded-by-target-fault", `${reason || message}${where}`),
    decision: decision(facts, "target", `the workflow failed${where}: ${reason || message}`, { causes }),
  };
}

/** The step the newest event up to `at` names. */
function stepAt(events: RolloutEvent[], at: number): number | null {
  return [...events].reverse().find((e) => e.at <= at && e.step !== undefined)?.step ?? null;
}

/** The run whose Failed or Error ended the execution: its message is the abort's reason. */
function failedRun(facts: ExecutionFacts, reason: string): StoredRun<StoredAnalysis> | undefined {
  const bad = facts.runs.filter((r) => r.run.run.phase === "Failed" || r.run.run.phase === "Error");
  const named = bad.find((r) => r.run.run.message && reason.includes(r.run.run.message));
  if (named) return named;
  return facts.events.some((e) => e.type === "AnalysisRunFailed") ? bad.at(-1) : undefined;
}

/** The metric that gave the run its phase: a decisive one in that phase, the one its message names first. */
function decidingMetric(stored: StoredRun<StoredAnalysis>, phase: AnalysisPhase): string | undefined {
  const { run } = stored.run;
  const bad = run.metricResults.filter((m) => !m.dryRun && m.phase === phase);
  return (bad.find((m) => run.message?.includes(`"${m.name}"`)) ?? bad[0])?.name;
}

/** A gate's figures in words: the decision, both sides, p against alpha, Bayes factor, statistic. */
export function gateText(gate: GateFigures & { metric: string }): string {
  const f = (n: number | null | undefined) => (n === null || n === undefined ? "-" : formatNumber(n));
  const sides =
    gate.candidate && gate.stable
      ? `candidate ${f(gate.candidate.value)} (n = ${f(gate.candidate.n)}) vs stable ${f(gate.stable.value)} (n = ${f(gate.stable.n)}), `
      : "";
  const alpha = gate.alpha === undefined ? "" : ` against alpha ${f(gate.alpha)}`;
  return `gate ${gate.metric} (${gate.test}) ${gate.decision} (${gate.verdict}) at look ${gate.look}: ${sides}p = ${f(gate.pValue)}${alpha}, Bayes factor ${f(gate.bayesFactor)}, statistic ${f(gate.statistic)}`;
}

function abortedByAnalysis(facts: ExecutionFacts, stored: StoredRun<StoredAnalysis>): Judged {
  const { run, stepIndex, background } = stored.run;
  const where = background ? "background analysis" : `analysis of step ${stepIndex}`;
  const name = decidingMetric(stored, run.phase);
  const metric = name === undefined ? null : metricDecision(facts, stored, name);
  const last = run.metricResults.find((r) => r.name === name)?.judge?.last;
  const gate = last && name !== undefined ? { metric: name, ...last } : null;
  const limit = metric?.limitReached ? `: ${metric.limitReached}` : "";
  const summary = gate
    ? `gate ${gate.metric} of the ${where} (${stored.runId}) decided ${gate.decision} at look ${gate.look}${limit}`
    : `metric ${name ?? "?"} of the ${where} (${stored.runId}) assessed ${metric?.phase ?? run.phase}${limit}`;
  return {
    verdict: verdict("aborted-by-analysis", run.message ?? `${where} ${run.phase}`),
    decision: decision(facts, gate ? "gate" : "metric", summary, {
      runId: stored.runId,
      metric,
      gate,
      causes: metricsCauses(facts),
    }),
  };
}

/** A promoted execution, with a warning for everything that makes its promotion evidence thin. */
function promoted({ facts }: JudgeContext): Judged {
  const causes = [...metricsCauses(facts), ...facts.runs.flatMap(missingMeasurements)];
  for (const stored of facts.runs) {
    const { run } = stored.run;
    if (run.phase === "Inconclusive" || run.phase === "Error") {
      causes.push(
        cause(
          run.phase === "Error" ? "error-streak" : "inconclusive",
          `${stored.runId} ended ${run.phase}${run.message ? `: ${run.message}` : ""}, and the rollout was promoted all the same`,
          { runId: stored.runId, since: run.completedAt ?? null },
        ),
      );
    }
  }
  const full = facts.events.find(
    (e) => e.type === "RolloutPromoted" && e.message.includes("remaining steps are skipped"),
  );
  if (full) {
    causes.push(
      cause(
        "skipped-steps",
        `rollouts promote --full at ${when(full.at)} (step ${full.step ?? "-"}) skipped the remaining steps`,
        { since: iso(full.at) },
      ),
    );
  }
  const warned = causes.filter((c) => c.kind !== "measuring");
  const stepsRan = facts.events.some((e) => e.type === "RolloutStepCompleted");
  const analysed = facts.events.some((e) => e.type === "AnalysisRunStarted") || facts.runs.length > 0;
  if (stepsRan && !analysed) {
    warned.push(
      cause(
        "missing-measurements",
        "no analysis ran in this execution: nothing was measured before promotion",
      ),
    );
  }
  const at = facts.end ? ` at ${when(facts.end.at)}` : "";
  const first = stepsRan ? "" : " at once (no steps ran: a rollout's first revision skips them, as in Argo)";
  const detail = `${revisionText(facts)} promoted${at}${first}`;
  const summary =
    facts.runs.length === 0
      ? "no analysis run of this execution is in the table"
      : `its analyses ended ${facts.runs.map((r) => `${r.runId} ${r.run.run.phase}`).join(", ")}`;
  const lastGate = facts.runs
    .flatMap((r) =>
      r.run.run.metricResults
        .filter((m) => m.judge?.last)
        .map((m) => ({ metric: m.name, ...(m.judge?.last as GateFigures) })),
    )
    .at(-1);
  return {
    verdict:
      warned.length > 0
        ? {
            ...verdict("healthy", `${detail}, without evidence: ${warned[0]?.message}`),
            warnings: warned.map((c) => c.message),
          }
        : verdict("healthy", detail),
    decision: decision(facts, "promotion", summary, { causes: warned, gate: lastGate ?? null }),
  };
}

/** The execution that drives the rollout and has not ended: why it is where it is. */
function running(ctx: JudgeContext): Judged {
  const { facts, item, execution } = ctx;
  if (execution?.status && execution.status !== "RUNNING") return executionEnded(ctx, execution);
  const trigger = item.trigger;
  if (trigger && facts.name !== null && newerPush(trigger, facts)) {
    const message = `a newer push (${trigger.tag ?? trigger.digest}) was accepted at ${when(trigger.acceptedAt)}: ${trigger.executionName} takes the rollout over, this execution stops at its next step`;
    return {
      verdict: verdict("superseded", message),
      decision: decision(facts, "nothing", "nothing decided: a newer revision is taking the rollout over", {
        causes: [cause("superseded", message, { since: iso(trigger.acceptedAt) })],
      }),
    };
  }
  if (item.drift && !item.drift.approved) return drifted(ctx);
  const overdue = overdueCauses(ctx);
  if (waitsForPerson(item)) return pausedForPerson(ctx, overdue);
  if (overdue.length > 0) return hung(ctx, overdue);
  return progressing(ctx);
}

/** A push accepted after this execution began, whose execution is another: it supersedes this one. */
function newerPush(trigger: NonNullable<RolloutItem["trigger"]>, facts: ExecutionFacts): boolean {
  const began = facts.events.find((e) => e.type === "RolloutUpdated")?.at ?? 0;
  return trigger.executionName !== facts.name && trigger.acceptedAt >= began;
}

function executionEnded({ facts, item }: JudgeContext, execution: ExecutionStatus): Judged {
  const why = execution.error ? `: ${execution.error}${execution.cause ? `: ${execution.cause}` : ""}` : "";
  const state = execution.lastState ? ` in state ${execution.lastState.name}` : "";
  const message = `the execution ${facts.name} ended ${execution.status}${execution.stoppedAt ? ` at ${execution.stoppedAt}` : ""}${state}${why}, without writing the rollout's end: the item still says ${item.phase} at step ${currentStepOf(item)}`;
  return {
    verdict: verdict("hung", `${waitText(item)}; ${message}`),
    decision: decision(facts, "nothing", "nothing decided: the execution is over", {
      causes: [cause("execution-ended", message, { since: execution.stoppedAt }), ...metricsCauses(facts)],
    }),
  };
}

/** What the item says the execution waits on, and since when. */
function waitText(item: RolloutItem): string {
  if (item.waitingFor === null) return `waits on no task token (between steps) since ${when(item.updatedAt)}`;
  const step = currentStepOf(item);
  const what =
    item.waitingFor === "analysis" ? `the analysis of step ${step}` : `${item.waitingFor} at step ${step}`;
  return `waiting for ${what} since ${item.waitingSince === null ? "-" : when(item.waitingSince)}`;
}

/** A wait only a person ends: a pause without a duration, an approval, an Inconclusive analysis, a hold. */
function waitsForPerson(item: RolloutItem): boolean {
  if (item.hold) return true;
  if (item.currentTaskToken === null) return false;
  if (item.waitingFor === "approval") return true;
  return item.waitingFor === "pause" && item.pause !== null && item.pause.until === null;
}

/** Timer firings past due: a run's next look, a run's outcome, a timed pause's end. */
function overdueCauses({ facts, item, now }: JudgeContext): Cause[] {
  const out = facts.runs
    .flatMap((r) => [overdueLook(r, now), undelivered(r, now)])
    .filter((c) => c !== undefined);
  const until = item.pause?.until ?? null;
  if (item.currentTaskToken !== null && until !== null && now - until > OVERDUE_AFTER_SECONDS * 1000) {
    const late = formatDuration(Math.floor((now - until) / 1000));
    out.push(
      cause(
        "timer-overdue",
        `the pause of step ${currentStepOf(item)} was to end at ${when(until)}, ${late} ago; its Timer firing did not come`,
        {
          since: item.pause ? iso(item.pause.startedAt) : null,
          due: iso(until),
        },
      ),
    );
  }
  return out;
}

function hung(ctx: JudgeContext, overdue: Cause[]): Judged {
  const { facts, item } = ctx;
  const first = overdue[0] as Cause;
  return {
    verdict: verdict(
      "hung",
      `${waitText(item)}; ${first.kind === "timer-overdue" ? "timer overdue: " : ""}${first.message}`,
    ),
    decision: decision(facts, "nothing", "nothing decided: what the execution waits for is not coming", {
      runId: first.runId,
      metric: first.runId && first.metric ? metricOf(facts, first.runId, first.metric) : null,
      causes: [...overdue, ...metricsCauses(facts)],
    }),
  };
}

function metricOf(facts: ExecutionFacts, runId: string, name: string) {
  const stored = facts.runs.find((r) => r.runId === runId);
  return stored ? metricDecision(facts, stored, name) : null;
}

function drifted({ facts, item }: JudgeContext): Judged {
  const drift = item.drift as NonNullable<RolloutItem["drift"]>;
  const message = `step ${drift.step}: ${drift.message}`;
  return {
    verdict: verdict(
      "paused-by-drift",
      `${message} (since ${item.waitingSince === null ? "-" : when(item.waitingSince)})`,
    ),
    decision: decision(
      facts,
      "nothing",
      "nothing decided: someone else changed the weights, a person decides",
      {
        causes: [
          cause(
            "drift",
            `the weights were changed outside the rollout at ${message}; rollouts promote overwrites them, rollouts abort goes back to stable`,
            {
              since: item.waitingSince === null ? null : iso(item.waitingSince),
            },
          ),
        ],
      },
    ),
  };
}

function pausedForPerson(ctx: JudgeContext, overdue: Cause[]): Judged {
  const { facts, item } = ctx;
  const step = currentStepOf(item);
  const since = item.waitingSince ?? item.hold?.at ?? item.updatedAt;
  const what = item.hold
    ? `a hold: ${item.hold.message}`
    : `${item.pause?.reason ?? item.waitingFor} at step ${step} (weight ${item.weight}%)`;
  const message = `the execution waits on a task token, stored on the item since ${when(since)}, for ${what}: only rollouts promote or rollouts abort ends it`;
  const inconclusive = facts.runs.find((r) => r.run.run.phase === "Inconclusive");
  return {
    verdict: verdict("paused-for-person", `${what}, since ${when(since)}`),
    decision: decision(facts, "nothing", "nothing decided: a person decides", {
      runId: inconclusive?.runId ?? null,
      metric: inconclusive ? inconclusiveMetric(facts, inconclusive) : null,
      causes: [
        cause("waiting-for-person", message, { since: iso(since) }),
        ...overdue,
        ...metricsCauses(facts),
      ],
    }),
  };
}

function inconclusiveMetric(facts: ExecutionFacts, stored: StoredRun<StoredAnalysis>) {
  const name = decidingMetric(stored, "Inconclusive");
  return name === undefined ? null : metricDecision(facts, stored, name);
}

function progressing({ facts, item }: JudgeContext): Judged {
  const live = facts.runs.map(measuring).filter((c) => c !== undefined);
  const abort = item.abortRequested
    ? `; an abort was requested at ${item.abortRequestedAt === null ? "-" : when(item.abortRequestedAt)} (${item.abortReason ?? ""}): the execution stops at its next step`
    : "";
  const detail = `${revisionText(facts)} at step ${currentStepOf(item)} of ${item.stepCount}, weight ${item.weight}%; ${waitText(item)}${abort}`;
  const runId = live[0]?.runId ?? null;
  return {
    verdict: verdict("progressing", detail),
    decision: decision(facts, "nothing", "nothing decided yet: the rollout is moving", {
      runId,
      causes: [...live, ...metricsCauses(facts)],
    }),
  };
}
