import { formatDuration } from "../duration.ts";
import { budgetOf } from "../error-budget.ts";
import { formatLevel } from "../judge-describe.ts";
import type { JudgeCheck, JudgeSpec } from "../judge-spec.ts";
import type { Plan, PlanGate } from "../plan.ts";
import type { Metric } from "../spec.ts";
import { type Finding, finding, type Where } from "./finding.ts";
import type { MetricSource, ReviewSubject } from "./subject.ts";

/**
 * Check 6, the judges: a gate whose minimum sample cannot be reached within its analysis at the
 * share it runs at (`rollouts plan`'s gate arithmetic); tests that decide at a fixed level again at
 * every look, outside the rollout's error budget; and the budget they overspend together with the
 * gates inside it (`error-budget.ts`'s shares). A fixed-horizon gate (two-proportion,
 * one-proportion, mann-whitney) decides once, at its planned size, and shares the budget over its
 * analyses: however often it looks, it is not a finding.
 */

/** Where a metric of the analysis at `step` is, by name. */
function metricAt(subject: ReviewSubject, step: number | undefined, name: string): MetricSource | undefined {
  for (const use of subject.analyses) {
    if (use.kind !== "step" || use.step !== step) continue;
    for (const t of use.templates) for (const m of t.metrics) if (m.metric.name === name) return m;
  }
  return undefined;
}

function gateFix(m: Metric | undefined, gate: PlanGate): string {
  const seconds = gate.secondsToSamples ?? -1;
  if (m?.interval !== undefined && seconds > 0) {
    const count = Math.ceil((seconds - m.initialDelay) / m.interval) + 1;
    return `count: ${count} (the last look at ${formatDuration(m.initialDelay + (count - 1) * m.interval)}), a larger share at this step, or fewer samples`;
  }
  return "give the analysis a share of traffic long enough to reach the samples, or lower them";
}

/** Gates that cannot reach their samples within their analysis. */
export function sampleSizeFindings(subject: ReviewSubject, plan: Plan, rps: number | undefined): Finding[] {
  const out: Finding[] = [];
  let judged = false;
  plan.steps.forEach((row, i) => {
    for (const gate of row.gates ?? []) {
      if (gate.samplesNeeded === undefined) continue;
      judged = true;
      if (rps === undefined) continue;
      const source = metricAt(subject, i, gate.metric);
      const where: Where = source ? { ...source.where, step: i } : { ...subject.rollout, step: i };
      const seconds = gate.secondsToSamples;
      const never = seconds === undefined || seconds < 0;
      const late = !never && gate.lastLookSeconds !== undefined && seconds > gate.lastLookSeconds;
      if (!never && !late) continue;
      const side = gate.perSide ? " per side" : "";
      const when = never
        ? `the candidate receives no traffic at step ${i}`
        : `at ${rps} rps and ${row.share}% that takes ${formatDuration(Math.ceil(seconds))}, after the last look at ${formatDuration(gate.lastLookSeconds ?? 0)}`;
      out.push(
        finding("gate-sample-size", "warning", where, {
          message: `gate "${gate.metric}" (${gate.test}) needs ${gate.samplesNeeded} samples${side}: ${when}, so it can only hold and the analysis ends Inconclusive`,
          fix: gateFix(source?.metric, gate),
        }),
      );
    }
  });
  if (judged && rps === undefined) {
    out.push(
      finding("check-skipped", "info", subject.rollout, {
        message:
          "gate sample sizes (gate-sample-size) not checked: how long a gate takes to reach its samples needs --rps R",
        fix: "give --rps with the requests per second in front of the rollout",
      }),
    );
  }
  return out;
}

/** A test taken again at every look at a fixed level, outside the budget: what, and its level per look. */
interface Repeated {
  what: string;
  alpha: number;
  /** Counted against the budget (Kayenta's classifier has no level to add up). */
  counted: boolean;
}

function repeatedCheck(check: JudgeCheck, name: string): Repeated[] {
  if (check.test === "comparative" && check.data === "series") {
    return [
      {
        what: `${name}: a comparative gate's Mann-Whitney over the series at alpha ${formatLevel(check.alpha)}`,
        alpha: check.alpha,
        counted: true,
      },
    ];
  }
  if (check.test === "two-proportion" || check.test === "one-proportion" || check.test === "mann-whitney") {
    return [
      {
        what: `${name}: ${check.test} at alpha ${formatLevel(check.alpha)}, decided again at each look of the score`,
        alpha: check.alpha,
        counted: true,
      },
    ];
  }
  return [];
}

/** The fixed-level tests a judge takes again at every look (a fixed-horizon gate alone decides once). */
function repeatedTests(judge: JudgeSpec, name: string): Repeated[] {
  if (judge.test === "score")
    return judge.metrics.flatMap((m) => repeatedCheck(m.check, `${name}/${m.name}`));
  if (judge.test === "kayenta") {
    return [
      {
        what: `${name}: Kayenta's Mann-Whitney classifier at ${formatLevel(judge.confidence * 100)}% confidence`,
        alpha: 1 - judge.confidence,
        counted: false,
      },
    ];
  }
  if (judge.test === "comparative") return repeatedCheck(judge, name);
  return [];
}

/** Looks a metric takes: its count; without one, every interval until the analysis ends. */
const looksOf = (m: Metric) => m.count ?? (m.interval !== undefined ? Number.POSITIVE_INFINITY : 1);
const times = (looks: number) =>
  Number.isFinite(looks) ? `each of its ${looks} looks` : "every look, without end (no count)";

/** Metrics that take a fixed-level test again at every look, and the budget they overspend. */
export function repeatedFindings(subject: ReviewSubject): Finding[] {
  const out: Finding[] = [];
  const spending = new Map<string, { alpha: number; looks: number; analyses: number }>();
  const seen = new Set<string>();
  for (const use of subject.analyses) {
    if (use.kind === "unused") continue;
    for (const m of use.templates.flatMap((t) => t.metrics)) {
      const judge = m.metric.provider.judge;
      const looks = looksOf(m.metric);
      if (!judge || m.metric.dryRun || looks <= 1) continue;
      const tests = repeatedTests(judge, m.metric.name);
      for (const t of tests.filter((x) => x.counted)) {
        const s = spending.get(t.what) ?? { alpha: t.alpha, looks: 0, analyses: 0 };
        spending.set(t.what, { ...s, looks: s.looks + looks, analyses: s.analyses + 1 });
      }
      const key = `${m.where.file}/${m.where.document}/${m.where.path}`;
      if (tests.length === 0 || seen.has(key)) continue;
      seen.add(key);
      const level = tests.reduce((a, t) => a + t.alpha, 0);
      out.push(
        finding(
          "fixed-horizon-repeated",
          "warning",
          { ...m.where, ...(use.kind === "step" ? { step: use.step } : {}) },
          {
            message: `metric "${m.metric.name}": ${tests.map((t) => t.what).join("; ")}, tested again at ${times(looks)}: the chance of rolling back an identical release grows with every look (up to ${Number.isFinite(looks) ? formatLevel(Math.min(1, level * looks)) : 1} by the union bound), and the rollout's error budget does not bound it`,
            fix: `judge it with a sequential test (test: sequential-rate or sequential-latency), which stays under alpha however often it looks; or decide once (count: 1, initialDelay at the end of the step); or alpha ${Number.isFinite(looks) ? formatLevel((tests[0] as Repeated).alpha / looks) : "of the budget / looks"} at each look`,
          },
        ),
      );
    }
  }
  return [...out, ...overspent(subject, spending)];
}

function overspent(
  subject: ReviewSubject,
  spending: ReadonlyMap<string, { alpha: number; looks: number; analyses: number }>,
): Finding[] {
  const outside = [...spending.values()].reduce((a, s) => a + s.alpha * s.looks, 0);
  const parts = [...spending.entries()].map(
    ([what, s]) =>
      `${what} × ${Number.isFinite(s.looks) ? s.looks : "∞"} looks${s.analyses > 1 ? ` over ${s.analyses} analyses` : ""}`,
  );
  const { budget, shares } = budgetOf(subject.spec);
  const inside = shares.reduce((a, s) => a + s.share, 0);
  if (outside === 0 || inside + outside <= budget + 1e-12) return [];
  const total = Number.isFinite(outside)
    ? formatLevel(Math.min(1, inside + outside))
    : "1 (looks without end)";
  const gates =
    shares.length > 0
      ? `its gates spend ${formatLevel(inside)} of it (${shares.map((s) => `${s.gate} ${formatLevel(s.share)}`).join(", ")})`
      : "no gate spends it";
  const left = budget - inside;
  return [
    finding(
      "budget-overspent",
      "error",
      { ...subject.rollout, path: subject.budgetPath },
      {
        message: `the rollout's error budget is ${formatLevel(budget)}: ${gates}, and tests outside it add ${Number.isFinite(outside) ? formatLevel(outside) : "without end"} (${parts.join("; ")}): an identical release may be rolled back with a chance up to ${total}`,
        fix: `make those tests sequential so the budget bounds them, or give them levels that add up to at most the ${formatLevel(left)} left (alpha / looks each)`,
      },
    ),
  ];
}
