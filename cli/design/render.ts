import { PRUNE_REASONS, type PruneReason } from "../../statemachine/design/arithmetic.ts";
import type { RunOutcome } from "../../statemachine/design/choose.ts";
import { formatDuration } from "../../statemachine/duration.ts";
import { formatDollars } from "../simulate/cost.ts";
import { columns } from "../table.ts";
import type { DesignReport, ReportCandidate, ReportStep } from "./report.ts";

/**
 * `rollouts design`'s text: the report as YAML comments, then the Rollout and the AnalysisTemplate,
 * so the whole output is a file the loader reads (`rollouts design ... > rollout.yaml`).
 */

const n = (x: number) => Math.round(x).toLocaleString("en-US");
const pct = (x: number) => `${Number((100 * x).toPrecision(3))}%`;
const seconds = (s: number | null) => (s === null ? "-" : formatDuration(s));

/** Prose broken into lines of at most `width` characters at spaces, the lines after the first indented. */
export function wrap(text: string, indent = "  ", width = 100): string[] {
  const lines: string[] = [];
  const lead = /^ */.exec(text)?.[0] ?? "";
  const [first = "", ...rest] = text.trimStart().split(" ");
  let line = lead + first;
  for (const word of rest) {
    if (line.length + 1 + word.length > width) {
      lines.push(line);
      line = indent + word;
    } else line = `${line} ${word}`;
  }
  lines.push(line);
  return lines;
}

function run(r: RunOutcome): string {
  const at = r.at === null ? "" : ` ${formatDuration(r.at)}`;
  return `${r.outcome}${at}, ${n(r.newRequests)} req`;
}

function header(r: DesignReport): string[] {
  const i = r.inputs;
  const routing =
    i.router === "none"
      ? `whole pods of ${i.replicas} replicas behind one Service`
      : `${i.router} (exact weights)`;
  const pruned = Object.entries(r.search.pruned)
    .map(([reason, count]) => `${count} ${reason}`)
    .join(", ");
  const left = r.search.candidates - Object.values(r.search.pruned).reduce((a, b) => a + (b ?? 0), 0);
  return [
    `rollouts design: ${i.name} at ${n(i.rps)} rps; SLO: errors ≤ ${pct(i.sloErrorRate)}, p95 ≤ ${i.sloP95Ms} ms; a good version fails ${pct(i.baselineErrorRate)}; ${routing}`,
    `exposure budget: ${n(i.exposureBudget)} requests a bad version may serve (${i.exposureBudgetRule})`,
    `each look: at least ${n(r.look.samples)} requests; it fails when errors > ${pct(r.look.errorRate)} or p95 > ${r.look.p95Ms} ms (a good version fails it at most ${r.look.alpha} of the time, one at the SLO's breaking point at least ${r.look.power}; the bad latency version is ${r.look.badLatencyFactor}× slower)`,
    `search: ${n(r.search.candidates)} candidates, ${n(r.search.candidates - left)} pruned on paper (${pruned || "none"}), ${n(left)} left; ${r.search.simulated} simulated (${r.search.simulations} simulations) in ${r.search.wallSeconds} s, ${r.search.accepted} accepted`,
  ].flatMap((line) => wrap(line));
}

function chosenLines(c: NonNullable<DesignReport["chosen"]>): string[] {
  const { good, errors, latency } = c.simulated;
  return [
    `chosen: ${c.plan} (${c.id}): a look every ${formatDuration(c.intervalSeconds)}, ${c.count} per step, failureLimit ${c.failureLimit}`,
    `  a good version is promoted in ${seconds(good.at)} (${formatDuration(c.promoteSeconds)} on paper); a rollout costs ${formatDollars(c.costPerRollout)} on AWS`,
    `  a bad version serves at most ${n(c.verdict.exposure ?? 0)} requests: failing at the SLO's rate, ${run(errors)} (${n(errors.newErrors)} failed); slower past the SLO's p95, ${run(latency)}`,
  ].flatMap((line, i) => wrap(line, i === 0 ? "  " : "    "));
}

function stepTable(steps: readonly ReportStep[]): string[] {
  const fate = (f: ReportStep["simulated"]["errors"]) =>
    f.fate === "not reached" ? "not reached" : `${f.fate}, ${n(f.requests)} req`;
  return [
    ...wrap(
      "exposure per step: on paper, the earliest abort if this step's analysis stops a bad version (rollouts plan --error-rate); simulated, what each bad version did",
    ),
    ...columns(
      [
        "#",
        "weight",
        "rps",
        "lasts",
        "on paper: at",
        "requests",
        "failed",
        "simulated: errors",
        "simulated: latency",
      ],
      steps.map((s) => [
        String(s.index),
        `${s.weight}%`,
        n(s.candidateRps),
        formatDuration(s.seconds),
        formatDuration(s.arithmetic.at),
        n(s.arithmetic.requests),
        n(s.arithmetic.failed),
        fate(s.simulated.errors),
        fate(s.simulated.latency),
      ]),
    ),
  ];
}

function candidateTable(candidates: readonly ReportCandidate[]): string[] {
  return [
    "candidates simulated, fastest on paper first:",
    ...columns(
      ["candidate", "plan", "on paper", "good version", "bad: errors", "bad: latency", "verdict"],
      candidates.map((c) => [
        c.id,
        c.plan.replaceAll(",analysis", "+a"),
        formatDuration(c.promoteSeconds),
        run(c.simulated.good),
        run(c.simulated.errors),
        run(c.simulated.latency),
        c.chosen ? "chosen" : c.verdict.accepted ? "accepted" : `rejected: ${c.verdict.reason}`,
      ]),
    ),
  ];
}

/** The report's lines (without the comment marks). */
export function reportLines(r: DesignReport): string[] {
  const lines = [...header(r), ""];
  if (r.chosen) lines.push(...chosenLines(r.chosen), "", ...stepTable(r.chosen.steps), "");
  else
    lines.push(
      "no candidate was accepted: none stopped both bad versions within the budget and promoted a good one",
      "",
    );
  if (r.candidates.length > 0) lines.push(...candidateTable(r.candidates), "");
  if (r.failureModes.length > 0) {
    lines.push("failure modes this design accepts:");
    for (const f of r.failureModes) lines.push(...wrap(`- ${f.text}`));
  }
  if (r.search.simulated === 0) {
    lines.push("why candidates were pruned:");
    for (const [reason, text] of Object.entries(PRUNE_REASONS)) {
      const count = r.search.pruned[reason as PruneReason];
      if (count) lines.push(`- ${reason} (${count}): ${text}`);
    }
  }
  return lines;
}

/** The whole text: the report as comments, then the YAML. */
export function renderText(r: DesignReport): string {
  const comments = reportLines(r).map((line) => (line === "" ? "#" : `# ${line}`));
  return r.yaml ? `${comments.join("\n")}\n---\n${r.yaml}` : comments.join("\n");
}
