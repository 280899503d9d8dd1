import { formatDuration } from "../../statemachine/duration.ts";
import { columns } from "../table.ts";
import { printable } from "../terminal.ts";
import { conditionsText } from "./findings.ts";
import type { Decision, Exposure, MetricDecision, TriageReport } from "./model.ts";
import { gateText } from "./verdict.ts";

/** A count of requests as the reports print counts: `1,068`. */
const count = (x: number) => x.toLocaleString("en-US");

/**
 * The report as text: a heading, then the five sections in their fixed order (Verdict, What
 * happened when, What decided, Exposure so far, Next). A pure function of the report; every line
 * goes through `printable`, since messages, reasons and values are stored text.
 */
export function renderTriage(report: TriageReport): string {
  const lines = [
    ...heading(report),
    "",
    "Verdict:",
    `  ${report.verdict.line}`,
    ...report.verdict.warnings.map((w) => `  ! ${w}`),
    "",
    "What happened, when:",
    ...timeline(report),
    "",
    "What decided:",
    ...decided(report.decision),
    "",
    "Exposure so far:",
    ...exposure(report.exposure),
    "",
    "Next:",
    ...report.next.flatMap((n) => [`  ${n.command}`, `      ${n.why}`]),
  ];
  return lines.map((line) => printable(line)).join("\n");
}

/** `2026-11-30T12:01:41Z`: to the second, as `rollouts get` prints times. */
const second = (iso: string) => iso.replace(/\.\d{3}Z$/, "Z");
const duration = (s: number) => formatDuration(s < 60 ? Number(s.toFixed(2)) : Math.round(s));

function heading(report: TriageReport): string[] {
  const e = report.execution;
  const revision = e.revision === null ? "" : `revision ${e.revision}${e.image ? ` (${e.image})` : ""}`;
  const stable = e.stable ? `, stable ${e.stable}` : "";
  const which = e.current ? `drives the rollout (${e.phase})` : "an earlier execution";
  const sfn = e.stepFunctions;
  const state = !sfn
    ? "not read"
    : sfn.problem
      ? `could not be read: ${sfn.problem}`
      : `${sfn.status}${sfn.stoppedAt ? ` at ${second(sfn.stoppedAt)}` : ""}${sfn.lastState ? `, last state ${sfn.lastState.name} entered ${second(sfn.lastState.enteredAt)}` : ""}${sfn.error ? `: ${sfn.error}` : ""}`;
  return [
    `Rollout:         ${report.rollout}`,
    `Execution:       ${e.name ?? "-"}${revision ? `, ${revision}` : ""}${stable}; ${which}`,
    `Step Functions:  ${state}`,
    `Triaged at:      ${second(report.now)}`,
  ];
}

function timeline(report: TriageReport): string[] {
  if (report.timeline.length === 0) return ["  (no event of this execution is left on the item)"];
  const rows = report.timeline.map((t) => [
    second(t.at),
    `+${duration(t.offsetSeconds)}`,
    t.step === null ? "-" : String(t.step),
    t.weight === null ? "-" : `${t.weight}%`,
    t.count > 1 ? `${t.type} ×${t.count}` : t.type,
    t.message.length > 160 ? `${t.message.slice(0, 159)}…` : t.message,
  ]);
  return columns(["TIME", "AT", "STEP", "WEIGHT", "EVENT", "MESSAGE"], rows).map((l) => `  ${l}`);
}

function metricLines(m: MetricDecision): string[] {
  const c = m.counts;
  const lines = [
    `  metric:        ${m.name} ${m.phase}${m.limitReached ? `: ${m.limitReached}` : m.message ? `: ${m.message}` : ""}`,
    `  condition:     ${m.judge ? "the gate's test (its figures above)" : conditionsText(m)}`,
    `  limits:        failureLimit ${m.limits.failureLimit}, inconclusiveLimit ${m.limits.inconclusiveLimit}, consecutiveErrorLimit ${m.limits.consecutiveErrorLimit}`,
    `  counted:       ${c.measured} measured: ${c.successful} successful, ${c.failed} failed, ${c.inconclusive} inconclusive, ${c.error} error (${c.consecutiveError} in a row)`,
  ];
  if (m.measurements.length === 0) return [...lines, "  measurements:  none"];
  const rows = m.measurements.map((x) => [
    second(x.at),
    x.phase,
    x.value ?? "-",
    // An Error or Inconclusive measurement's message says why; a gate's look is on the gate line.
    x.phase === "Error" || x.phase === "Inconclusive" ? (x.message ?? "") : "",
  ]);
  return [
    ...lines,
    "  measurements:  (newest last)",
    ...columns(["AT", "PHASE", "VALUE", "MESSAGE"], rows).map((l) => `    ${l}`),
  ];
}

function decided(d: Decision): string[] {
  const lines = [`  ${d.summary}`];
  if (d.gate) lines.push(`  gate:          ${gateText(d.gate)}`, `                 ${d.gate.reason}`);
  if (d.metric) lines.push(...metricLines(d.metric));
  if (d.causes.length > 0) {
    lines.push("  why:");
    for (const c of d.causes) lines.push(`    - ${c.kind}: ${c.message}`);
  }
  if (d.runs.length > 0) {
    lines.push("  runs:");
    const rows = d.runs.map((r) => [
      r.runId,
      r.step === null ? "background" : `step ${r.step}`,
      r.templates.join(", "),
      r.phase,
      r.message ?? "",
    ]);
    lines.push(...columns(["RUN", "WHERE", "TEMPLATES", "PHASE", "MESSAGE"], rows).map((l) => `    ${l}`));
  }
  return lines;
}

function exposure(x: Exposure): string[] {
  if (x.spans.length === 0) return ["  the candidate had no traffic in this execution's events"];
  const rows = x.spans.map((s) => [`${s.weight}%`, second(s.from), second(s.until), duration(s.seconds)]);
  const lines = columns(["WEIGHT", "FROM", "UNTIL", "FOR"], rows).map((l) => `  ${l}`);
  const full = `${duration(x.fullTrafficSeconds)} of all the traffic over ${duration(x.seconds)} (weight × time)`;
  if (x.rps === null) {
    lines.push(`  ${full}; --rps R (and --error-rate E) turn it into requests`);
  } else {
    const bad =
      x.badRequests === null
        ? ""
        : `, of which ${count(x.badRequests)} failed at an error rate of ${x.errorRate}`;
    lines.push(
      `  ${full}: at ${count(x.rps)} rps, ${count(x.requests ?? 0)} requests reached the candidate${bad}`,
    );
  }
  const after = x.afterPromotion;
  if (after) {
    const requests =
      after.requests === null
        ? ""
        : `: ${count(after.requests)} requests at ${count(x.rps ?? 0)} rps${after.badRequests === null ? "" : `, ${count(after.badRequests)} failed`}`;
    lines.push(
      `  then all the traffic as the stable revision from ${second(after.from)} until ${second(after.until)}, ${duration(after.seconds)}${requests}`,
    );
  }
  return lines;
}
