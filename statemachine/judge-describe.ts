import type { JudgeCheck, JudgeSpec } from "./judge-spec.ts";

/**
 * A judge in words, for `rollouts plan` and `rollouts get`: what it compares, how it decides, and
 * how many samples it needs before it may.
 */

const WORSE = {
  increase: "higher is worse",
  decrease: "lower is worse",
  either: "a change either way is worse",
};

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
      return `${check.test} judge of the ${what} (${WORSE[check.direction]}), alpha ${check.alpha}${effect}; decides once, at ${check.horizon} samples per side${planned}`;
    }
    case "sequential-rate":
    case "sequential-latency": {
      const what =
        check.test === "sequential-rate" ? `${check.label} rate against stable` : "latency against stable";
      const effect = check.minEffect > 0 ? `, minEffect ${check.minEffect}` : "";
      const end =
        check.maxSamples !== undefined
          ? `promotes at ${check.maxSamples} per side`
          : "promotes at the end without evidence of harm";
      return `${check.test} judge of the ${what} (${WORSE[check.direction]}), alpha ${check.alpha}${effect}; rolls back at any look from ${check.minSamples} samples per side, ${end}`;
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

/**
 * Requests a judge needs before it can promote, and whether the stable version must serve them
 * too: a fixed-horizon test's planned sample size per side, a sequential test's `samples` or
 * `minSamples`, the candidate's minimum of a comparative gate or of the canary gate. Undefined when
 * it counts no requests (a series, a comparison without `n`).
 */
export function judgeSamplesNeeded(judge: JudgeSpec): { samples: number; bothSides: boolean } | undefined {
  const one = (check: JudgeCheck): { samples: number; bothSides: boolean } | undefined => {
    switch (check.test) {
      case "two-proportion":
      case "mann-whitney":
        return { samples: check.horizon, bothSides: true };
      case "one-proportion":
        return { samples: check.horizon, bothSides: false };
      case "sequential-rate":
      case "sequential-latency": {
        const samples = check.maxSamples ?? check.minSamples;
        return samples > 0 ? { samples, bothSides: true } : undefined;
      }
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
