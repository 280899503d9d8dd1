import type { GateBudget, JudgeCheck, JudgeSpec } from "./judge-spec.ts";

/**
 * A judge in words, for `rollouts plan` and `rollouts get`: what it compares, how it decides, and
 * how many samples it needs before it may.
 */

/** A level as people write it: 0.025, 0.0125, 0.01667, 1e-7. */
export function formatLevel(alpha: number): string {
  return String(Number(alpha.toPrecision(4)));
}

/**
 * Where a decision's level comes from, in words: the gate's share of the rollout's error budget
 * (`alpha 0.025 is half of the rollout's error budget 0.05`), spread over its analyses for a
 * fixed-horizon test, or the metric's own alpha counted against it. Empty outside a rollout.
 */
export function levelText(alpha: number, budget: GateBudget | undefined): string {
  if (!budget || budget.gate === "gate") return "";
  const rollout = formatLevel(budget.rollout);
  const a = `alpha ${formatLevel(alpha)}`;
  if (budget.given) return `${a} is the metric's own, counted against the rollout's error budget ${rollout}`;
  const ratio = budget.rollout / budget.share;
  const whole = Math.abs(ratio - Math.round(ratio)) < 1e-9 ? Math.round(ratio) : undefined;
  const part =
    whole === 1
      ? "the whole of"
      : whole === 2
        ? "half"
        : whole !== undefined
          ? `1/${whole} of`
          : `${formatLevel((100 * budget.share) / budget.rollout)}% of`;
  const spread =
    budget.decisions > 1
      ? `, its share ${formatLevel(budget.share)} spent over ${budget.decisions} analyses`
      : "";
  return `${a} is ${part} the rollout's error budget ${rollout}${spread}`;
}

const WORSE = {
  increase: "higher is worse",
  decrease: "lower is worse",
  either: "a change either way is worse",
};

/** The level, and where it comes from when the gate is part of a rollout's budget. */
function level(check: JudgeCheck & { alpha: number }): string {
  const budget = "budget" in check ? check.budget : undefined;
  const from = levelText(check.alpha, budget);
  return from
    ? from.replace(/^alpha \S+ is /, `alpha ${formatLevel(check.alpha)} (`).concat(")")
    : `alpha ${formatLevel(check.alpha)}`;
}

/** The absolute guards of a judge, in words (outside the error budget). */
function guards(check: JudgeCheck): string {
  const out: string[] = [];
  if ("maxBadRate" in check && check.maxBadRate !== undefined) {
    out.push(`more than ${formatLevel(100 * check.maxBadRate)}% ${check.label} rolls back`);
  }
  if ("maxP95Ms" in check && check.maxP95Ms !== undefined)
    out.push(`a p95 above ${check.maxP95Ms} ms rolls back`);
  return out.length > 0 ? `; ${out.join(", ")} (absolute, outside the error budget)` : "";
}

function statistical(check: JudgeCheck): string {
  switch (check.test) {
    case "two-proportion":
    case "one-proportion":
    case "mann-whitney": {
      const what =
        check.test === "one-proportion"
          ? `candidate's ${check.label} rate against ${check.limit}`
          : check.test === "two-proportion"
            ? `${check.label} rate against stable`
            : `${check.data === "histogram" ? "histogram" : "samples"} against stable`;
      const effect =
        check.test !== "one-proportion" && check.minEffect > 0 ? `, minEffect ${check.minEffect}` : "";
      const planned =
        "detect" in check && check.detect !== undefined
          ? ` (enough to detect ${check.detect} worse with power ${check.power})`
          : "";
      return `${check.test} judge of the ${what} (${WORSE[check.direction]}), ${level(check)}${effect}; decides once, at ${check.horizon} samples per side${planned}${guards(check)}`;
    }
    case "sequential-rate":
    case "sequential-latency": {
      const what =
        check.test === "sequential-rate"
          ? `${check.label} rate against stable`
          : `${check.data === "histogram" ? "histogram latency" : "latency"} against stable`;
      const effect = check.minEffect > 0 ? `, minEffect ${check.minEffect}` : "";
      const carried =
        check.budget && check.budget.carriedFrom.length > 0
          ? `, going on from the evidence of step${check.budget.carriedFrom.length > 1 ? "s" : ""} ${check.budget.carriedFrom.map((s) => s + 1).join(", ")}`
          : "";
      const fast = check.fast
        ? check.test === "sequential-rate"
          ? ` (where ${check.fast.ratio}× a ${formatLevel(100 * (check.fast.baseline ?? 0.01))}% rate of ${check.label} would cross alpha)`
          : ` (where ${check.fast.ratio}× slower would cross alpha)`
        : "";
      const end =
        check.maxSamples !== undefined
          ? `promotes at ${check.maxSamples} per side in this analysis`
          : "promotes at the end without evidence of harm";
      return `${check.test} judge of the ${what} (${WORSE[check.direction]}), ${level(check)}${effect}${carried}; rolls back at any look from ${check.minSamples} samples per side${fast}, ${end}${guards(check)}`;
    }
    case "comparative": {
      const limits: string[] = [];
      if (check.direction !== "decrease") limits.push(`ratio <= ${check.maxRatio ?? 1}`);
      if (check.direction !== "increase") limits.push(`ratio >= ${check.minRatio ?? 1}`);
      if (check.maxDelta !== undefined) limits.push(`delta <= ${check.maxDelta}`);
      const how =
        check.data === "series"
          ? `Mann-Whitney over the step's series (p < ${check.alpha} and ${limits.join(", ")}; at least ${check.minPoints} points)`
          : limits.join(", ");
      const samples = check.minSamples > 0 ? `; at least ${check.minSamples} samples` : "";
      const nan = check.nanStrategy === "replace" ? "; NaN points count as 0" : "";
      return `against stable: ${how}${samples}${nan}`;
    }
  }
}

/** The judge in one line, after the metric's timing. */
export function describeJudge(judge: JudgeSpec): string {
  switch (judge.test) {
    case "score":
      return `score of ${judge.metrics
        .map(
          (m) =>
            `${m.name}${m.critical ? " (critical)" : ""}${m.weight !== 1 ? ` (weight ${m.weight})` : ""}`,
        )
        .join(", ")}: marginal ${judge.marginal} during the analysis, pass ${judge.pass} at its end`;
    case "kayenta": {
      const metrics = judge.metrics.map(
        (m) => `${m.name}${m.critical ? " (critical)" : ""}${m.muted ? " (muted)" : ""}`,
      );
      const interval = `${Number((judge.confidence * 100).toPrecision(6))}% interval`;
      return `Kayenta judge of ${metrics.join(", ")} (Mann-Whitney over the step's series, ${interval}): rolls back at a score <= marginal ${judge.marginal}, promotes at pass ${judge.pass} at its end`;
    }
    case "canary-gate":
      return `canary gate: p95 <= ${judge.p95BudgetRatio} x stable, error rate < ${judge.errorRateCeiling}, at least ${judge.minSampleCount} samples; ${judge.fullRolloutDwell} clean windows at 100%`;
    default:
      return statistical(judge);
  }
}

/** What a judge needs before it can decide: the samples, on both sides or the candidate's only. */
export interface SamplesNeeded {
  samples: number;
  bothSides: boolean;
  /** A sequential test's `samples`: it promotes there, before the analysis ends. */
  promoteAt?: number;
}

/**
 * Requests a judge needs before it can promote, and whether the stable version must serve them
 * too: a fixed-horizon test's planned sample size per side, a sequential test's `minSamples` (it
 * promotes at the last look from there, or early at its `samples`), the candidate's minimum of a
 * comparative gate or of the canary gate. Undefined when it counts no requests (a series, a
 * comparison without `n`).
 */
export function judgeSamplesNeeded(judge: JudgeSpec): SamplesNeeded | undefined {
  const one = (check: JudgeCheck): SamplesNeeded | undefined => {
    switch (check.test) {
      case "two-proportion":
      case "mann-whitney":
        return { samples: check.horizon, bothSides: true };
      case "one-proportion":
        return { samples: check.horizon, bothSides: false };
      case "sequential-rate":
      case "sequential-latency":
        return {
          samples: Math.max(1, check.minSamples),
          bothSides: true,
          ...(check.maxSamples !== undefined ? { promoteAt: check.maxSamples } : {}),
        };
      case "comparative":
        return check.data === "value" && check.minSamples > 0
          ? { samples: check.minSamples, bothSides: false }
          : undefined;
    }
  };
  if (judge.test === "score") {
    const needs = judge.metrics.map((m) => one(m.check)).filter((n) => n !== undefined);
    if (needs.length === 0) return undefined;
    return { samples: Math.max(...needs.map((n) => n.samples)), bothSides: needs.some((n) => n.bothSides) };
  }
  if (judge.test === "kayenta") return undefined;
  if (judge.test === "canary-gate") {
    return judge.minSampleCount > 0 ? { samples: judge.minSampleCount, bothSides: false } : undefined;
  }
  return one(judge);
}
