import type { Origin } from "./analysis-resolve.ts";
import { applyErrorBudget } from "./error-budget.ts";
import type { Problem } from "./problems.ts";
import type { Metric, RolloutSpec } from "./spec.ts";

/**
 * What a rollout's judges need from the whole rollout, settled once every step is read. The canary
 * gate anchors a candidate only after `fullRolloutDwell` clean windows at 100%: an analysis at 100%
 * with a canary gate needs that many promote decisions in a row (Argo's consecutiveSuccessLimit).
 * And its rollback cooldown is the trigger's business: it is recorded on the spec for the construct.
 * The rollout's error budget is shared between its statistical gates (`error-budget.ts`).
 */
export function finishJudges(spec: RolloutSpec, origin: Origin, problems: Problem[]): RolloutSpec {
  let weight = 0;
  const out = structuredClone(spec);
  const gates: Array<{ seconds: number; maxPerHour: number }> = [];
  const visit = (metric: Metric, atFull: boolean, step?: number): void => {
    const judge = metric.provider.judge;
    if (judge?.test !== "canary-gate") return;
    gates.push({ seconds: judge.rollbackCooldownSeconds, maxPerHour: judge.maxRollbacksPerHour });
    if (!atFull) return;
    metric.consecutiveSuccessLimit = Math.max(metric.consecutiveSuccessLimit, judge.fullRolloutDwell);
    const count = metric.count ?? 0;
    if (count > 0 && count < metric.failureLimit + metric.consecutiveSuccessLimit) {
      problems.push({
        ...origin,
        ...(step !== undefined ? { step } : {}),
        message: `metric "${metric.name}": at 100% the canary gate needs ${judge.fullRolloutDwell} clean windows in a row: count (${count}) must be at least ${metric.failureLimit + metric.consecutiveSuccessLimit}`,
      });
    }
  };
  out.steps.forEach((step, i) => {
    if (step.kind === "setWeight") weight = step.weight;
    if (step.kind !== "analysis") return;
    for (const metric of step.analysis.templates.flatMap((t) => t.metrics))
      visit(metric, weight === 100, i + 1);
  });
  for (const metric of out.backgroundAnalysis?.analysis.templates.flatMap((t) => t.metrics) ?? []) {
    visit(metric, false);
  }
  if (gates.length > 0) {
    out.rollbackCooldown = {
      seconds: Math.max(...gates.map((g) => g.seconds)),
      maxPerHour: Math.min(...gates.map((g) => g.maxPerHour)),
    };
  }
  return applyErrorBudget(out, origin, problems);
}
