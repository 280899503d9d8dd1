import type { Origin } from "./analysis-resolve.ts";
import { fastMinSamples, isBudgeted } from "./judge-load.ts";
import type { GateBudget, JudgeSpec, JudgeSpecOf } from "./judge-spec.ts";
import type { Problem } from "./problems.ts";
import { samplesOneProportion, samplesPerSide } from "./sample-size.ts";
import type { AnalysisSpec, Metric, RolloutSpec } from "./spec.ts";

/**
 * One error budget per rollout. A rollout carries one false-rollback budget `alpha` (default
 * 0.05): the chance that an identical release is rolled back by any of its statistical gates, in
 * any step analysis or the background analysis. It is shared here, once the whole rollout is read:
 *
 * - **A gate** is a statistical judge metric by name (`background/NAME` in the background
 *   analysis, whose readings overlap the steps'). The same metric in several analysis steps is one
 *   gate: a sequential test's evidence carries from one analysis to the next (`carriedFrom`), so
 *   it is one test over the rollout at its share; a fixed-horizon test decides once per analysis,
 *   so its share is spent share / decisions at each (alpha spending).
 * - **Bonferroni across gates**: the gates without an alpha of their own split what the gates with
 *   one leave, equally. The rollout rolls back at the first gate that rejects, so Holm's step-down
 *   (which only relaxes the levels after a first rejection) could never change a decision.
 *   P(any false rollback) ≤ Σ shares ≤ alpha by the union bound, whatever the gates' dependence.
 * - A gate's own `alpha` is kept as written (per decision) and counted against the budget; gates
 *   that spend more than the budget are refused with the numbers.
 *
 * Thresholds, comparative gates, scores, the canary gate and dry-run metrics are not tests at a
 * level: their false rollbacks are not bounded by a budget, and `rollouts plan` says so.
 */

/** The budget when the rollout gives none: one identical release in twenty may be rolled back, at most. */
export const DEFAULT_ERROR_BUDGET = 0.05;

/** The annotation of an Argo `Rollout` that sets its budget: `rollouts.sfn/error-budget: "0.02"`. */
export const ERROR_BUDGET_ANNOTATION = "rollouts.sfn/error-budget";

/** A budget written as text (an annotation's value), or the problem with it. */
export function parseErrorBudget(text: string): { budget: number } | { error: string } {
  const budget = text.trim() === "" ? Number.NaN : Number(text);
  if (!(budget > 0 && budget < 1)) {
    return {
      error: `the error budget is a probability strictly between 0 and 1 (0.05: one identical release in twenty may be rolled back), not "${text}"`,
    };
  }
  return { budget };
}

type Budgeted = Extract<JudgeSpec, { budget?: GateBudget }>;

/** Where a gate decides: each occurrence of its metric. */
interface Occurrence {
  metric: Metric;
  judge: Budgeted;
  /** The analysis step (from 0); undefined for the background analysis. */
  step?: number;
  /** The metric's place in its analysis: template, then metric. */
  at: [number, number];
}

interface Gate {
  name: string;
  test: Budgeted["test"];
  data: Budgeted["data"];
  occurrences: Occurrence[];
  /** The gate's own alpha per decision, when its first occurrence gave one. */
  given?: number;
}

const SEQUENTIAL = new Set(["sequential-rate", "sequential-latency"]);

/** The budget's gates of a rollout, in the order they first decide. */
function gatesOf(spec: RolloutSpec): Gate[] {
  const gates: Gate[] = [];
  const add = (metric: Metric, step: number | undefined, at: [number, number]) => {
    const judge = metric.provider.judge;
    if (!judge || !isBudgeted(judge) || metric.dryRun) return;
    const base = step === undefined ? `background/${metric.name}` : metric.name;
    // The same name with another test or data is another gate: its evidence cannot carry.
    let name = base;
    for (let i = 2; ; i++) {
      const gate = gates.find((g) => g.name === name);
      if (!gate) {
        gates.push({
          name,
          test: judge.test,
          data: judge.data,
          occurrences: [{ metric, judge, at, ...(step !== undefined ? { step } : {}) }],
          // A judge built by hand (no budget yet) wrote its alpha itself: it is its own.
          ...((judge.budget?.given ?? true) ? { given: judge.alpha } : {}),
        });
        return;
      }
      if (gate.test === judge.test && gate.data === judge.data) {
        gate.occurrences.push({ metric, judge, at, ...(step !== undefined ? { step } : {}) });
        return;
      }
      name = `${base}#${i}`;
    }
  };
  const each = (analysis: AnalysisSpec, step: number | undefined) =>
    analysis.templates.forEach((t, ti) => {
      t.metrics.forEach((metric, mi) => {
        add(metric, step, [ti, mi]);
      });
    });
  spec.steps.forEach((step, i) => {
    if (step.kind === "analysis") each(step.analysis, i);
  });
  if (spec.backgroundAnalysis) each(spec.backgroundAnalysis.analysis, undefined);
  return gates;
}

/** The shares of a budget: per gate, its share over the rollout and its alpha per decision. */
export interface BudgetShare {
  gate: string;
  test: string;
  share: number;
  /** The alpha of each decision: the share (sequential), or share / decisions (fixed horizon). */
  alpha: number;
  decisions: number;
  given: boolean;
}

/** Rounds away binary noise (0.05 / 3 × 3), so shares print and compare as people wrote them. */
const tidy = (x: number) => Number(x.toPrecision(12));

function sharesOf(gates: Gate[], budget: number): { shares: BudgetShare[]; problem?: string } {
  const decisions = (g: Gate) => (SEQUENTIAL.has(g.test) ? 1 : g.occurrences.length);
  const spent = gates
    .filter((g) => g.given !== undefined)
    .map((g) => ({ gate: g, spend: tidy((g.given as number) * decisions(g)) }));
  const givenTotal = tidy(spent.reduce((a, s) => a + s.spend, 0));
  const open = gates.filter((g) => g.given === undefined);
  const rest = tidy(budget - givenTotal);
  const named = spent.map((s) => `${s.gate.name} ${s.spend}`).join(", ");
  if (givenTotal > budget) {
    return {
      shares: [],
      problem: `the gates' own alphas spend ${givenTotal} (${named}), more than the rollout's error budget ${budget}: lower them, or raise the budget`,
    };
  }
  if (open.length > 0 && !(rest > 0)) {
    return {
      shares: [],
      problem: `the gates' own alphas spend all of the rollout's error budget ${budget} (${named}), leaving nothing for ${open.map((g) => g.name).join(", ")}: lower them, or raise the budget`,
    };
  }
  const shares = gates.map((g): BudgetShare => {
    const n = decisions(g);
    if (g.given !== undefined) {
      return {
        gate: g.name,
        test: g.test,
        share: tidy(g.given * n),
        alpha: g.given,
        decisions: n,
        given: true,
      };
    }
    const share = tidy(rest / open.length);
    return { gate: g.name, test: g.test, share, alpha: tidy(share / n), decisions: n, given: false };
  });
  return { shares };
}

/** A fixed-horizon test's planned sample size at a new alpha, unless the spec fixed it with `samples`. */
function replanned(judge: Budgeted, alpha: number): Partial<Budgeted> {
  if (judge.test !== "two-proportion" && judge.test !== "one-proportion") return {};
  if (judge.samplesGiven || judge.detect === undefined) return {};
  const sides = judge.direction === "either" ? 2 : 1;
  const down = judge.direction === "decrease";
  let computed: number;
  if (judge.test === "two-proportion") {
    const two = judge as JudgeSpecOf<"two-proportion">;
    if (two.baseline === undefined) return {};
    const worse = down ? two.baseline - judge.detect : two.baseline + judge.detect;
    computed = samplesPerSide({ baseline: two.baseline, candidate: worse, alpha, power: two.power, sides });
  } else {
    const one = judge as JudgeSpecOf<"one-proportion">;
    const worse = down ? one.limit - judge.detect : one.limit + judge.detect;
    computed = samplesOneProportion({ limit: one.limit, candidate: worse, alpha, power: one.power, sides });
  }
  return { horizon: Math.max(1, judge.minSamples, computed) };
}

/**
 * Shares the rollout's error budget between its gates (see the module's comment): each budgeted
 * judge gets its alpha per decision, its `budget`, its minimum sample derived again at that alpha
 * (a sequential test without `minSamples`) and its planned sample size again (a fixed-horizon test
 * planned from `detect`). Problems (gates that overspend, a derived minimum above `samples`) are
 * reported at the rollout; the spec returned is the input's copy with the budget applied.
 */
export function applyErrorBudget(spec: RolloutSpec, origin: Origin, problems: Problem[]): RolloutSpec {
  const budget = spec.errorBudget ?? DEFAULT_ERROR_BUDGET;
  const gates = gatesOf(spec);
  if (gates.length === 0) return spec;
  const { shares, problem } = sharesOf(gates, budget);
  if (problem) {
    problems.push({ ...origin, message: `error budget: ${problem}` });
    return spec;
  }
  // Each occurrence's new judge, by where it is: templates may be shared between steps.
  const replaced = new Map<string, Budgeted>();
  const where = (step: number | undefined, at: [number, number]) => `${step ?? "background"}/${at.join("/")}`;
  for (const [i, gate] of gates.entries()) {
    const share = shares[i] as BudgetShare;
    const steps: number[] = [];
    for (const occurrence of gate.occurrences) {
      const judge = occurrence.judge;
      const sequential = SEQUENTIAL.has(judge.test);
      const next: Budgeted = {
        ...judge,
        alpha: share.alpha,
        ...replanned(judge, share.alpha),
        budget: {
          rollout: budget,
          gate: gate.name,
          share: share.share,
          decisions: share.decisions,
          given: share.given,
          carriedFrom: sequential ? [...steps] : [],
        },
      } as Budgeted;
      if ((next.test === "sequential-rate" || next.test === "sequential-latency") && next.fast) {
        next.minSamples = fastMinSamples(next.test, next.fast, next);
        if (next.maxSamples !== undefined && next.maxSamples < next.minSamples) {
          problems.push({
            ...origin,
            ...(occurrence.step !== undefined ? { step: occurrence.step + 1 } : {}),
            message: `metric "${occurrence.metric.name}": samples (${next.maxSamples}) is below the minimum sample ${next.minSamples} derived from fast at the gate's alpha ${share.alpha}: raise samples, or give minSamples`,
          });
        }
      }
      replaced.set(where(occurrence.step, occurrence.at), next);
      if (occurrence.step !== undefined) steps.push(occurrence.step);
    }
  }
  const withBudget = (analysis: AnalysisSpec, step: number | undefined): AnalysisSpec => ({
    ...analysis,
    templates: analysis.templates.map((t, ti) => ({
      ...t,
      metrics: t.metrics.map((metric, mi) => {
        const judge = replaced.get(where(step, [ti, mi]));
        return judge ? { ...metric, provider: { ...metric.provider, judge } } : metric;
      }),
    })),
  });
  return {
    ...spec,
    steps: spec.steps.map((step, i) =>
      step.kind === "analysis" ? { ...step, analysis: withBudget(step.analysis, i) } : step,
    ),
    ...(spec.backgroundAnalysis
      ? {
          backgroundAnalysis: {
            ...spec.backgroundAnalysis,
            analysis: withBudget(spec.backgroundAnalysis.analysis, undefined),
          },
        }
      : {}),
  };
}

/** The budget of a rollout as `rollouts plan` and the dashboard show it: the shares, and what is left. */
export function budgetOf(spec: RolloutSpec): { budget: number; shares: BudgetShare[]; unspent: number } {
  const budget = spec.errorBudget ?? DEFAULT_ERROR_BUDGET;
  const shares: BudgetShare[] = [];
  for (const gate of gatesOf(spec)) {
    const b = gate.occurrences[0]?.judge.budget;
    if (!b) continue;
    shares.push({
      gate: gate.name,
      test: gate.test,
      share: b.share,
      alpha: gate.occurrences[0]?.judge.alpha as number,
      decisions: b.decisions,
      given: b.given,
    });
  }
  return { budget, shares, unspent: tidy(budget - shares.reduce((a, s) => a + s.share, 0)) };
}

/** Why a judge that decides is not a test at a level, in words. */
const OUTSIDE: Partial<Record<JudgeSpec["test"], string>> = {
  comparative: "a tolerance against the stable version, decided at every look",
  score: "a score against thresholds",
  kayenta: "Kayenta's score against thresholds",
  "canary-gate": "the canary gate's thresholds",
};

/**
 * The budget in words, for `rollouts plan`: the budget, each gate's share and how it is spent
 * (one sequential test over its steps, or a share per analysis), what is left, and the gates whose
 * false rollbacks no budget bounds. Empty for a rollout without judges.
 */
export function describeBudget(spec: RolloutSpec): string[] {
  const gates = gatesOf(spec);
  const outside: string[] = [];
  const visit = (metrics: Metric[], background: boolean) => {
    for (const m of metrics) {
      const judge = m.provider.judge;
      if (!judge) continue;
      const name = background ? `background/${m.name}` : m.name;
      if (m.dryRun) outside.push(`${name} (dry run: never rolls back)`);
      else if (!isBudgeted(judge))
        outside.push(`${name} (${judge.test}: ${OUTSIDE[judge.test] ?? "not a test at a level"})`);
    }
  };
  for (const step of spec.steps)
    if (step.kind === "analysis")
      visit(
        step.analysis.templates.flatMap((t) => t.metrics),
        false,
      );
  if (spec.backgroundAnalysis)
    visit(
      spec.backgroundAnalysis.analysis.templates.flatMap((t) => t.metrics),
      true,
    );
  const uniqueOutside = [...new Set(outside)];
  if (gates.length === 0 && uniqueOutside.length === 0) return [];
  const { budget, shares, unspent } = budgetOf(spec);
  const lines = [
    shares.length > 0
      ? `error budget ${budget}: the chance, at most, that the gates below together roll back an identical release`
      : `error budget ${budget}: unused, no gate of this rollout is a test at a level`,
  ];
  const where = (g: Gate) => {
    const steps = g.occurrences.flatMap((o) => (o.step === undefined ? [] : [o.step + 1]));
    const names =
      steps.length > 1
        ? [`steps ${steps.slice(0, -1).join(", ")} and ${steps.at(-1)}`]
        : steps.map((s) => `step ${s}`);
    if (g.occurrences.some((o) => o.step === undefined)) names.push("the background analysis");
    return names.join(" and ");
  };
  for (const [i, share] of shares.entries()) {
    const gate = gates[i] as Gate;
    const how = SEQUENTIAL.has(share.test)
      ? `one ${share.test} test over ${where(gate)}`
      : share.decisions > 1
        ? `${share.test}, alpha ${tidy(share.alpha)} at each of ${where(gate)}`
        : `${share.test} at ${where(gate)}`;
    lines.push(`  ${share.gate}: ${share.share}${share.given ? " (its own alpha)" : ""}, ${how}`);
  }
  if (unspent > 0 && shares.length > 0) lines.push(`  unspent: ${unspent}`);
  if (uniqueOutside.length > 0) lines.push(`  outside the budget: ${uniqueOutside.join(", ")}`);
  return lines;
}

/**
 * A judge decided again under a rollout's budget (`rollouts replay`): `judge` (a changed template's,
 * read alone, or the run's own) takes the place `recorded` had in the rollout's budget — its gate,
 * its share (scaled to `budget` when another is asked for), its decisions and the evidence it
 * carried — unless it gives its own alpha, which is kept and counted as in the rollout. A judge
 * that had no place in a budget (a threshold, a judge read alone) is returned as it is.
 */
export function rebudget(judge: JudgeSpec, recorded: JudgeSpec | undefined, budget?: number): JudgeSpec {
  const place = recorded && isBudgeted(recorded) ? recorded.budget : undefined;
  if (!isBudgeted(judge) || !place || place.gate === "gate") return judge;
  const rollout = budget ?? place.rollout;
  const sequential = SEQUENTIAL.has(judge.test);
  const decisions = sequential ? 1 : place.decisions;
  const given = judge.budget?.given === true;
  const share = given ? tidy(judge.alpha * decisions) : tidy((place.share * rollout) / place.rollout);
  const alpha = given ? judge.alpha : tidy(share / decisions);
  const next = {
    ...judge,
    alpha,
    ...replanned(judge, alpha),
    budget: { ...place, rollout, share, decisions, given },
  } as Budgeted;
  if (next.test === "sequential-rate" || next.test === "sequential-latency") {
    if (next.fast) next.minSamples = fastMinSamples(next.test, next.fast, next);
    const carried = recorded?.test === next.test && "carried" in recorded ? recorded.carried : undefined;
    if (carried) next.carried = carried;
  }
  return next;
}
