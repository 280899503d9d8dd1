import { formatDuration } from "../duration.ts";
import { type ExposureStep, earliestAbort, exposureWalk } from "../exposure.ts";
import type { Plan } from "../plan.ts";
import { type Finding, finding, type Where } from "./finding.ts";
import type { ReviewSubject } from "./subject.ts";

/**
 * Check 5, exposure: what a bad version serves before the rollout's analyses can stop it, with the
 * arithmetic `rollouts plan --rps R --error-rate E` prints (`exposure.ts`), against the number of bad
 * requests the rollout accepts (`--exposure-budget N`). Without a budget the figure is an info.
 */

export interface ExposureOptions {
  rps?: number;
  /** The share of a bad version's requests that fail; 1 (every one) when not given. */
  errorRate?: number;
  exposureBudget?: number;
}

/** The earliest point an analysis can stop a bad version: its step, time and requests served. */
interface Stop {
  step: number;
  at: number;
  requests: number;
  by: string;
}

const n = (x: number) => Math.round(x).toLocaleString("en-US");

/** The background analysis's earliest abort, placed in the step that runs then. */
function backgroundStop(
  subject: ReviewSubject,
  plan: Plan,
  walk: readonly ExposureStep[],
  rps: number,
): Stop | undefined {
  const bg = subject.spec.backgroundAnalysis;
  const start = walk[bg?.startingStep ?? 0];
  if (!bg || !start?.reachable) return undefined;
  const delays = bg.analysis.templates.flatMap((t) => t.metrics).map(earliestAbort);
  const delay = Math.min(...delays.filter((d): d is number => d !== undefined));
  if (!Number.isFinite(delay)) return undefined;
  const at = start.startsAt + delay;
  let j = bg.startingStep;
  while (j + 1 < walk.length && (walk[j + 1]?.reachable ?? false) && (walk[j + 1]?.startsAt ?? 0) <= at) j++;
  const s = walk[j] as ExposureStep;
  const share = (plan.steps[j]?.share ?? 0) / 100;
  return {
    step: j,
    at,
    requests: s.servedBefore + rps * share * (at - s.startsAt),
    by: `the background analysis (from step ${bg.startingStep})`,
  };
}

/** Every analysis's earliest stop, the earliest first. */
function stops(subject: ReviewSubject, plan: Plan, walk: readonly ExposureStep[], rps: number): Stop[] {
  const out: Stop[] = walk.flatMap((s, i) =>
    s.reachable && s.exposure
      ? [{ step: i, at: s.exposure.at, requests: s.exposure.requests, by: `the analysis of step ${i}` }]
      : [],
  );
  const bg = backgroundStop(subject, plan, walk, rps);
  if (bg) out.push(bg);
  return out.sort((a, b) => a.at - b.at);
}

const whereOf = (subject: ReviewSubject, step: number): Where => ({
  ...subject.rollout,
  ...(subject.stepPaths[step] !== undefined ? { path: subject.stepPaths[step], step } : {}),
});

/** The first step (up to `last`) by whose end the bad requests passed the budget. */
function firstPast(
  walk: readonly ExposureStep[],
  last: number,
  rate: number,
  budget: number,
): number | undefined {
  for (let k = 0; k < Math.min(last, walk.length); k++)
    if ((walk[k]?.servedAfter ?? 0) * rate > budget) return k;
  return undefined;
}

/** A first weight that keeps the exposure within the budget, when a single setWeight leads to the stop. */
function smallerWeight(subject: ReviewSubject, stop: Stop, scale: number): string | undefined {
  const weights = subject.spec.steps.slice(0, stop.step + 1).filter((s) => s.kind === "setWeight");
  const first = weights[0];
  if (weights.length !== 1 || first?.kind !== "setWeight" || !(scale > 0)) return undefined;
  return `setWeight: ${Math.max(1, Math.floor(first.weight * scale))} at step ${subject.spec.steps.indexOf(first)}`;
}

const FIX_TAIL =
  "an analysis right after the first setWeight, or a shorter initialDelay or interval and failureLimit 0";

function skipped(subject: ReviewSubject): Finding {
  return finding("check-skipped", "info", subject.rollout, {
    message:
      "exposure (exposure-budget) not checked: exposure is requests, so it needs --rps R (and --error-rate E, --exposure-budget N)",
    fix: "give --rps with the requests per second in front of the rollout",
  });
}

/** Check 5: the exposure of a bad version, against `--exposure-budget` when given. */
export function exposureFindings(subject: ReviewSubject, plan: Plan, opts: ExposureOptions): Finding[] {
  if (opts.rps === undefined) return [skipped(subject)];
  const rate = opts.errorRate ?? 1;
  const budget = opts.exposureBudget;
  const walk = exposureWalk(subject.spec, plan.steps, opts.rps, rate);
  const first = stops(subject, plan, walk, opts.rps)[0];
  const past =
    budget === undefined ? undefined : firstPast(walk, first ? first.step : walk.length, rate, budget);
  if (budget !== undefined && past !== undefined) {
    const served = walk[past]?.servedAfter ?? 0;
    const what = Number.isFinite(served)
      ? `a bad version has served ${n(served)} requests (${n(served * rate)} failed at an error rate of ${rate}) by the end of step ${past}`
      : `a bad version serves without end at step ${past}, a pause for a person`;
    return [
      finding("exposure-budget", "error", whereOf(subject, past), {
        message: `${what}, before ${first ? first.by : "any analysis"} can stop it: more than the exposure budget of ${n(budget)} bad requests`,
        fix: `expose less before an analysis can stop it: ${FIX_TAIL}`,
      }),
    ];
  }
  if (!first) {
    const last = subject.spec.steps.length - 1;
    return [
      finding("exposure-budget", budget === undefined ? "warning" : "error", whereOf(subject, last), {
        message:
          "no analysis of the rollout can stop a bad version before it is promoted: it then serves every request",
        fix: "add an analysis step after the first setWeight, with a metric that can fail (failureLimit below its count)",
      }),
    ];
  }
  const failed = Math.round(first.requests) * rate;
  const of = opts.errorRate === undefined ? "" : ` (${n(failed)} failed at an error rate of ${rate})`;
  const text = `${first.by} stops a bad version no earlier than ${formatDuration(first.at)} after the push, when it has served ${n(first.requests)} requests${of}`;
  if (budget === undefined) {
    return [
      finding("exposure-budget", "info", whereOf(subject, first.step), {
        message: text,
        fix: "give --exposure-budget N to check it against the bad requests the rollout accepts",
      }),
    ];
  }
  if (failed <= budget) return [];
  const weight = smallerWeight(subject, first, budget / failed);
  return [
    finding("exposure-budget", "error", whereOf(subject, first.step), {
      message: `${text}: more than the exposure budget of ${n(budget)} bad requests`,
      fix: `expose less before it: ${[weight, FIX_TAIL].filter(Boolean).join(", or ")}`,
    }),
  ];
}
