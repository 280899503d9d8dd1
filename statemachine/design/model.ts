import erfc from "@stdlib/math-base-special-erfc";
import quantile from "@stdlib/stats-base-dists-normal-quantile";
import { formatDuration } from "../duration.ts";
import { DEFAULT_ERROR_BUDGET } from "../error-budget.ts";
import { JUDGE_DEFAULTS } from "../judge-load.ts";
import { parseRollout } from "../load.ts";
import { type PlanGate, plan } from "../plan.ts";
import { samplesOneProportion, samplesPerSide } from "../sample-size.ts";
import { INTERVALS } from "./candidates.ts";
import { DesignInputError } from "./input.ts";

/**
 * The plan of a model rollout (the model rollout reference's planning runbook): for each quality
 * signal, the samples a step needs to see its smallest degradation that matters (`sample-size.ts`:
 * the same sizes the judges plan), whether a shadow step is worth it (a signal read on the
 * mirrored copies, with no user exposed: errors, latency, disagreement; feedback needs users),
 * the steps, and the judges that decide each one, with the time to a decision per step from
 * `rollouts plan`'s arithmetic plus the signal's delay.
 */

/**
 * Significance of a model rollout's judges: the reference's 0.01, or less, so that the gates'
 * alphas over every step they decide stay within the rollout's error budget (`error-budget.ts`).
 */
export const MODEL_ALPHA = 0.01;
/** Power to see the smallest degradation that matters. */
export const MODEL_POWER = 0.8;
/** The sticky canary's weights after the shadow: a quarter of the users, then half (the reference's). */
export const MODEL_WEIGHTS = [25, 50] as const;
/** How much longer than the planned samples an analysis may run (cohorts are users, not requests). */
const MARGIN = 1.5;

/** What the router reads of each signal, and where. */
export const MODEL_SIGNALS = {
  errors: { shadow: true, canary: true, needsBaseline: true },
  latency: { shadow: true, canary: true, needsBaseline: false },
  feedback: { shadow: false, canary: true, needsBaseline: true },
  disagreement: { shadow: true, canary: false, needsBaseline: true },
} as const;
export type SignalName = keyof typeof MODEL_SIGNALS;

export interface ModelSignal {
  name: SignalName;
  /** How late the signal arrives after the answer, seconds (feedback: minutes; labels: days). */
  delaySeconds: number;
  /** Its rate today (bad events per answer); latency has none (its effect is relative). */
  baseline?: number;
  /** The smallest degradation that matters: points of rate, or latency's relative slowdown (0.1 = 10%). */
  minEffect: number;
}

export interface ModelInput {
  name: string;
  rps: number;
  signals: readonly ModelSignal[];
  maxDurationSeconds: number;
}

export interface SignalSamples {
  signal: ModelSignal;
  test: "two-proportion" | "one-proportion" | "comparative";
  /** Per side for a comparison; the candidate's for the disagreement. */
  samples: number;
  /** The bad-event rates the sample size separates. */
  from: number;
  to: number;
}

const tailOver = (z: number) => 0.5 * erfc(z / Math.SQRT2);

/**
 * The samples a signal needs: a two-proportion test of the rate against the stable version's
 * (errors, feedback); the disagreement against its most tolerated rate (baseline + effect),
 * planned to see baseline + 2 × effect; latency as the share of answers beyond the stable's p95,
 * 5%, which a p95 slower by the effect raises (log-normal with the judges' σ).
 */
export function signalSamples(signal: ModelSignal, alpha = MODEL_ALPHA): SignalSamples {
  const risks = { alpha, power: MODEL_POWER };
  const e = signal.minEffect;
  if (signal.name === "latency") {
    const sigma = JUDGE_DEFAULTS.fastLatency.sigma;
    const to = tailOver(quantile(0.95, 0, 1) - Math.log(1 + e) / sigma);
    return {
      signal,
      test: "comparative",
      samples: samplesPerSide({ baseline: 0.05, candidate: to, ...risks }),
      from: 0.05,
      to,
    };
  }
  const b = signal.baseline ?? 0;
  if (signal.name === "disagreement") {
    const samples = samplesOneProportion({ limit: b + e, candidate: b + 2 * e, ...risks });
    return { signal, test: "one-proportion", samples, from: b + e, to: b + 2 * e };
  }
  return {
    signal,
    test: "two-proportion",
    samples: samplesPerSide({ baseline: b, candidate: b + e, ...risks }),
    from: b,
    to: b + e,
  };
}

/** The `/compare` fields a judge reads for a signal, on the shadow's copies or on the served answers. */
function readings(
  name: SignalName,
  shadow: boolean,
): { bad?: [string, string]; n: [string, string]; value?: [string, string] } {
  const c = shadow ? "result.candidate.shadow" : "result.candidate";
  switch (name) {
    case "errors":
      return {
        bad: [`${c}.errors`, "result.primary.errors"],
        n: [`${c}.requests`, "result.primary.requests"],
      };
    case "latency":
      return {
        value: [`${c}.p95_ms`, "result.primary.p95_ms"],
        n: [`${c}.requests`, "result.primary.requests"],
      };
    case "feedback":
      return {
        bad: ["result.candidate.feedback_bad", "result.primary.feedback_bad"],
        n: ["result.candidate.feedback", "result.primary.feedback"],
      };
    case "disagreement":
      return {
        bad: ["result.candidate.shadow.compared - result.candidate.shadow.agreement", ""],
        n: ["result.candidate.shadow.compared", ""],
      };
  }
}

interface Timing {
  initialDelay: number;
  interval: number;
  count: number;
  window: number;
}

/** One metric: the signal's judge at a step, reading `/compare` through the samples provider. */
function judgeMetric(
  s: SignalSamples,
  shadow: boolean,
  timing: Timing,
  alpha: number,
): Record<string, unknown> {
  const r = readings(s.signal.name, shadow);
  const samples = {
    address: "{{args.router}}",
    primary: "stable",
    candidate: "canary",
    window: formatDuration(timing.window),
  };
  const side = (i: 0 | 1) => ({
    samples: { ...samples },
    ...(r.bad ? { bad: r.bad[i] } : {}),
    ...(r.value ? { value: r.value[i] } : {}),
    ...(r.value && i === 1 ? {} : { n: r.n[i] }),
  });
  const e = s.signal.minEffect;
  const judge: Record<string, unknown> =
    s.test === "comparative"
      ? { test: "comparative", maxRatio: 1 + e, minSamples: s.samples }
      : s.test === "one-proportion"
        ? {
            test: "one-proportion",
            label: "disagreements",
            limit: s.from,
            detect: e,
            alpha,
            power: MODEL_POWER,
            minSamples: s.samples,
          }
        : {
            test: "two-proportion",
            label: s.signal.name === "errors" ? "errors" : "bad feedback",
            baseline: s.from,
            detect: e,
            minEffect: e,
            alpha,
            power: MODEL_POWER,
            minSamples: s.samples,
          };
  return {
    name: s.signal.name,
    initialDelay: formatDuration(timing.initialDelay),
    interval: formatDuration(timing.interval),
    count: timing.count,
    provider: {
      plugin: {
        "sfn-rollouts/judge": {
          ...judge,
          candidate: side(0),
          ...(s.test === "one-proportion" ? {} : { stable: side(1) }),
        },
      },
    },
  };
}

export interface ModelStepPlan {
  /** `shadow`, or the canary's weight. */
  kind: "shadow" | "canary";
  weight: number;
  templateName: string;
  signals: Array<{ name: SignalName; samples: number; secondsToSamples: number; decisionSeconds: number }>;
  /** Seconds from the step's start to its decision: the slowest signal's delay and samples. */
  decisionSeconds: number;
}

export interface ModelPlan {
  /** Each judge's alpha: {@link MODEL_ALPHA}, or its share of the rollout's error budget when that is less. */
  alpha: number;
  samples: SignalSamples[];
  shadow: { worth: boolean; why: string };
  steps: ModelStepPlan[];
  rollout: Record<string, unknown>;
  templates: Record<string, unknown>[];
  /** The construct's target for the router (`addRollout`'s `target`), as a plain object. */
  target: Record<string, unknown>;
  warnings: string[];
}

interface StepDraft {
  kind: "shadow" | "canary";
  weight: number;
  templateName: string;
  signals: SignalSamples[];
}

/** The steps: a shadow when a signal can be read on the copies, then the sticky canary's weights. */
function drafts(input: ModelInput, samples: readonly SignalSamples[]): StepDraft[] {
  const on = (where: "shadow" | "canary") => samples.filter((s) => MODEL_SIGNALS[s.signal.name][where]);
  const steps: StepDraft[] = [];
  if (on("shadow").length > 0) {
    steps.push({ kind: "shadow", weight: 0, templateName: `${input.name}-shadow`, signals: on("shadow") });
  }
  for (const weight of MODEL_WEIGHTS) {
    steps.push({
      kind: "canary",
      weight,
      templateName: `${input.name}-canary-${weight}`,
      signals: on("canary"),
    });
  }
  return steps;
}

function rolloutOf(name: string, steps: readonly StepDraft[]): Record<string, unknown> {
  const analysis = (d: StepDraft) =>
    d.signals.length > 0 ? [{ analysis: { templates: [{ templateName: d.templateName }] } }] : [];
  return {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Rollout",
    metadata: { name },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "model", image: name }] },
      },
      strategy: {
        canary: {
          trafficRouting: { sagemaker: { endpointName: name } },
          steps: steps.flatMap((d): unknown[] =>
            d.kind === "shadow"
              ? [
                  { setMirrorRoute: { name: "shadow", percentage: 100 } },
                  ...analysis(d),
                  { setMirrorRoute: { name: "shadow" } },
                ]
              : [{ setWeight: d.weight }, ...analysis(d)],
          ),
        },
      },
    },
  };
}

function templatesOf(
  steps: readonly StepDraft[],
  alpha: number,
  timing: (d: StepDraft, s: SignalSamples) => Timing,
) {
  return steps
    .filter((d) => d.signals.length > 0)
    .map((d) => ({
      apiVersion: "argoproj.io/v1alpha1",
      kind: "AnalysisTemplate",
      metadata: { name: d.templateName },
      spec: {
        args: [{ name: "router", value: "{{rollout.modelRouter}}" }],
        metrics: d.signals.map((s) => judgeMetric(s, d.kind === "shadow", timing(d, s), alpha)),
      },
    }));
}

/** `rollouts plan`'s gates of each analysis step, in order, by metric name. */
function gatesOf(
  name: string,
  rollout: unknown,
  templates: readonly unknown[],
  rps: number,
): Map<string, PlanGate>[] {
  const text = [rollout, ...templates].map((d) => JSON.stringify(d)).join("\n---\n");
  const spec = parseRollout([{ file: `${name}.yaml`, text }]).spec;
  return plan(spec, { rps })
    .steps.filter((s) => s.kind === "analysis")
    .map((s) => new Map((s.gates ?? []).map((g) => [g.metric, g])));
}

/** The smallest interval of the design's ladder at or above `seconds`. */
const intervalAtLeast = (seconds: number) =>
  INTERVALS.find((i) => i >= seconds) ?? INTERVALS[INTERVALS.length - 1];

/** Looks from the signal's delay on, until 1.5 × its time to a decision; the samples window covers them all. */
function timingFor(decisionSeconds: number, delaySeconds: number): Timing {
  const interval = intervalAtLeast(Math.max(10, decisionSeconds / 10)) as number;
  const initialDelay = Math.max(interval, Math.ceil(delaySeconds));
  const count = Math.max(2, Math.ceil((MARGIN * decisionSeconds - initialDelay) / interval) + 1);
  return { initialDelay, interval, count, window: initialDelay + (count - 1) * interval + interval };
}

/**
 * The model rollout's plan. The time to a decision comes from `rollouts plan`'s arithmetic on the
 * written rollout (the seconds each judge needs to reach its samples at the step's share, or at the
 * mirrored share) plus the signal's delay; the analyses are then timed to last 1.5 × that.
 */
export function modelPlan(input: ModelInput): ModelPlan {
  if (input.signals.length === 0)
    throw new DesignInputError("--model needs at least one --signal NAME:DELAY");
  const alpha = alphaFor(
    drafts(
      input,
      input.signals.map((s) => signalSamples(s)),
    ),
  );
  const samples = input.signals.map((s) => signalSamples(s, alpha));
  const steps = drafts(input, samples);
  const rollout = rolloutOf(input.name, steps);
  const first = templatesOf(steps, alpha, () => ({ initialDelay: 1, interval: 10, count: 1, window: 60 }));
  const gates = gatesOf(input.name, rollout, first, input.rps);
  const judged = steps.filter((d) => d.signals.length > 0);
  const planned: ModelStepPlan[] = steps.map((d) => {
    const g = gates[judged.indexOf(d)];
    const signals = d.signals.map((s) => {
      const toSamples = g?.get(s.signal.name)?.secondsToSamples ?? -1;
      const secondsToSamples = toSamples < 0 ? Number.POSITIVE_INFINITY : Math.ceil(toSamples);
      return {
        name: s.signal.name,
        samples: s.samples,
        secondsToSamples,
        decisionSeconds: s.signal.delaySeconds + secondsToSamples,
      };
    });
    const decisionSeconds = Math.max(0, ...signals.map((s) => s.decisionSeconds));
    return { kind: d.kind, weight: d.weight, templateName: d.templateName, signals, decisionSeconds };
  });
  const templates = templatesOf(steps, alpha, (d, s) => {
    const p = planned[steps.indexOf(d)]?.signals.find((x) => x.name === s.signal.name);
    return timingFor(p?.decisionSeconds ?? 0, s.signal.delaySeconds);
  });
  gatesOf(input.name, rollout, templates, input.rps);
  return {
    alpha,
    samples,
    shadow: shadowWorth(samples),
    steps: planned,
    rollout,
    templates,
    target: {
      type: "sagemaker",
      endpointName: input.name,
      executionRoleArn: `arn:aws:iam::123456789012:role/${input.name}`,
      router: { type: "model", key: { header: "x-user-id" } },
    },
    warnings: warningsOf(input, planned),
  };
}

/**
 * The judges' alpha: each fixed-horizon gate spends its alpha at every step it decides, and the
 * loader refuses gates that spend more than the rollout's error budget, so with many of them
 * each gets an equal share (three significant digits, rounded down).
 */
function alphaFor(steps: readonly StepDraft[]): number {
  const decisions = steps.flatMap((d) => d.signals).filter((s) => s.test !== "comparative").length;
  const share = decisions === 0 ? MODEL_ALPHA : DEFAULT_ERROR_BUDGET / decisions;
  if (share >= MODEL_ALPHA) return MODEL_ALPHA;
  const digits = 10 ** (2 - Math.floor(Math.log10(share)));
  return Math.floor(share * digits) / digits;
}

function shadowWorth(samples: readonly SignalSamples[]): ModelPlan["shadow"] {
  const seen = samples.filter((s) => MODEL_SIGNALS[s.signal.name].shadow).map((s) => s.signal.name);
  const unseen = samples.filter((s) => !MODEL_SIGNALS[s.signal.name].shadow).map((s) => s.signal.name);
  if (seen.length === 0) {
    return {
      worth: false,
      why: `no signal is read on a shadow's copies (${unseen.join(", ")} need users who received the candidate's answers): the rollout starts with the sticky canary`,
    };
  }
  return {
    worth: true,
    why: `${seen.join(" and ")} ${seen.length === 1 ? "is" : "are"} read on copies of every request mirrored to the candidate, with no user exposed, before any user meets it${unseen.length > 0 ? `; ${unseen.join(", ")} ${unseen.length === 1 ? "needs" : "need"} users, so ${unseen.length === 1 ? "it is" : "they are"} judged on the canary` : ""}`,
  };
}

function warningsOf(input: ModelInput, steps: readonly ModelStepPlan[]): string[] {
  const out: string[] = [];
  if (!input.signals.some((s) => s.name === "feedback" || s.name === "disagreement")) {
    out.push(
      "no quality signal: errors and latency never see a wrong answer served with 200; add --signal feedback:DELAY (or disagreement on the shadow)",
    );
  }
  for (const s of steps) {
    if (s.decisionSeconds > input.maxDurationSeconds) {
      const where = s.kind === "shadow" ? "the shadow" : `the canary at ${s.weight}%`;
      out.push(
        `${where} needs ${Number.isFinite(s.decisionSeconds) ? formatDuration(s.decisionSeconds) : "forever"} to a decision, longer than --max-duration: more traffic, a larger min effect, or a longer step`,
      );
    }
    if (s.kind === "canary" && s.signals.length === 0) {
      out.push(
        `the canary at ${s.weight}% has no signal to judge it: only --signal feedback or errors/latency read served answers`,
      );
    }
  }
  if (steps.some((s) => s.kind === "shadow")) {
    out.push(
      "the shadow's copies carry x-shadow: true: the candidate must not perform side effects (writes, calls) for them",
    );
  }
  out.push(
    "cohorts are sticky by user (x-user-id), so each user's feedback belongs to one version; a user's answers are not independent, which is why each analysis runs 1.5 × its planned time",
  );
  return out;
}
