import type { RolloutView } from "../../../cli/render.ts";
import { type AnalysisRun, createRun, nextTickAt, tick } from "../../../functions/analysis/index.ts";
import type { GateFigures } from "../../../functions/analysis/types.ts";
import type { MetricProvider, ProviderResult } from "../../../functions/metrics/port.ts";
import type { StoredRun } from "../../../functions/store/port.ts";
import {
  newRolloutItem,
  type RolloutEvent,
  type RolloutItem,
  type RolloutItemInput,
  RolloutItemSchema,
} from "../../../functions/store/schema.ts";
import type { StoredAnalysis } from "../../../functions/workflow/analysis.ts";
import { type Metric, type MetricInput, MetricSchema } from "../../../statemachine/spec.ts";

/**
 * Views of a rollout `web` built by hand for the diagnosis's tests: its item, the analysis runs of
 * its executions (made by the analysis engine itself from scripted answers, so their counters,
 * phases and messages are Argo's), and the events the workflow writes, in virtual time.
 */

export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
export const at = (seconds: number) => T0 + seconds * 1000;
export const iso = (seconds: number) => new Date(at(seconds)).toISOString();

const hex = (n: number) => String(n).repeat(24);
export const execName = (revision: number) => `web-${hex(revision)}-g${revision}`;
export const execArn = (revision: number) =>
  `arn:aws:states:us-east-1:123456789012:execution:web:${execName(revision)}`;
export const runId = (revision: number, step: number | "background") =>
  `${execName(revision)}.${step === "background" ? "background" : `step${String(step).padStart(2, "0")}`}`;

const revisionOf = (revision: number) => ({
  revision,
  image: `123456789012.dkr.ecr.us-east-1.amazonaws.com/web@sha256:${String(revision).repeat(64)}`,
  digest: `sha256:${String(revision).repeat(64)}`,
  tag: `v${revision}`,
});

/** The success-rate threshold: `result[0] >= 0.95`, every 10 s, 3 measurements, failureLimit 0. */
export function threshold(overrides: Partial<MetricInput> = {}): Metric {
  return MetricSchema.parse({
    name: "success-rate",
    interval: 10,
    count: 3,
    failureLimit: 0,
    successCondition: "result[0] >= 0.95",
    provider: { web: { url: "http://127.0.0.1:1/unused" } },
    ...overrides,
  });
}

/** A number answered as a one-element vector; `E` a failed query; `empty` no series; `NaN` 0/0. */
export type Answer = number | "E" | "empty" | "NaN";

function provider(script: Answer[]): MetricProvider {
  let i = 0;
  return {
    async measure(): Promise<ProviderResult> {
      const answer = script[i++] ?? 1;
      if (answer === "E") return { ok: false, message: "connection refused" };
      if (answer === "empty") return { ok: true, result: [], value: "[]" };
      if (answer === "NaN") return { ok: true, result: [Number.NaN], value: "[NaN]" };
      return { ok: true, result: [answer], value: `[${answer}]` };
    },
  };
}

/** A run of `metric` started at `startSeconds`, ticked at each due time for `answers.length` ticks. */
export async function analysed(
  metric: Metric,
  answers: Answer[],
  startSeconds: number,
): Promise<AnalysisRun> {
  let run = createRun(
    { templates: [{ name: "success-rate", kind: "AnalysisTemplate", metrics: [metric] }] },
    new Date(at(startSeconds)),
  );
  const answering = provider(answers);
  for (let i = 0; i < answers.length; i++) {
    const due = nextTickAt(run);
    if (!due) break;
    run = await tick(run, due, answering);
  }
  return run;
}

/** A run's metric made a judge whose latest look decided as `figures` say. */
export function asGate(run: AnalysisRun, figures: Partial<GateFigures> = {}): AnalysisRun {
  const next = structuredClone(run);
  const metric = next.metrics[0] as Metric;
  (metric.provider as Record<string, unknown>).judge = { test: "sequential-rate" };
  const result = next.metricResults[0];
  if (result) {
    result.judge = {
      looks: 3,
      pValue: 0.0405,
      metricPValues: {},
      stats: {},
      last: {
        test: "sequential-rate",
        decision: "rollback",
        verdict: "FAIL",
        reason:
          'Gate "success-rate" rolled back: candidate 3.0% vs stable 1.0% errors, p = 0.0405 < alpha 0.05',
        statistic: 3.2064,
        z: null,
        bayesFactor: 24.69,
        pValue: 0.0405,
        effect: 0.02,
        alpha: 0.05,
        candidate: { n: 800, value: 0.03 },
        stable: { n: 800, value: 0.01 },
        look: 3,
        ...figures,
      },
    };
  }
  return next;
}

export function stored(
  revision: number,
  step: number | "background",
  run: AnalysisRun,
  options: { token?: string | null; answered?: boolean } = {},
): StoredRun<StoredAnalysis> {
  const background = step === "background";
  return {
    rollout: "web",
    runId: runId(revision, step),
    run: {
      run,
      context: {
        rollout: "web",
        ...revisionOf(revision),
        executionArn: execArn(revision),
      },
      stepIndex: background ? 1 : step,
      background,
      token: options.token === undefined ? (background ? null : "token-analysis") : options.token,
      tick: 1,
      templates: ["success-rate"],
      answered: options.answered ?? true,
    },
    version: 1,
    createdAt: Date.parse(run.startedAt),
    updatedAt: Date.parse(run.startedAt),
  };
}

/** An item event; `weight` as a workflow step writes it. */
export function event(
  seconds: number,
  type: string,
  message: string,
  extra: { step?: number; weight?: number } = {},
): RolloutEvent {
  return { at: at(seconds), type, message, ...extra };
}

/** What Begin and the trigger write when `revision` starts (at `seconds`). */
export function began(revision: number, seconds: number): RolloutEvent[] {
  return [
    event(
      seconds,
      "Triggered",
      `push of v${revision}@sha256:${String(revision).repeat(12)} starts ${execName(revision)}`,
    ),
    event(seconds, "RolloutUpdated", `revision ${revision} (v${revision}) started by ${execName(revision)}`),
  ];
}

/** Revision 2 at 25% (step 0) and its analysis (step 1) started, at `seconds`. */
export function atFirstAnalysis(seconds = 0): RolloutEvent[] {
  return [
    ...began(2, seconds),
    event(seconds, "RolloutStepCompleted", "Rollout step 1/5 completed (weight 25%)", {
      step: 0,
      weight: 25,
    }),
    event(seconds, "AnalysisRunStarted", `analysis (step 2) ${runId(2, 1)} started: success-rate`, {
      step: 1,
      weight: 25,
    }),
  ];
}

/** Rollout `web` with revision 1 stable (since a minute before T0) and revision 2 in `overrides`. */
export function item(overrides: Partial<RolloutItemInput> = {}): RolloutItem {
  return RolloutItemSchema.parse({
    ...newRolloutItem("web", at(-120)),
    phase: "Progressing",
    stableRevision: revisionOf(1),
    currentRevision: revisionOf(2),
    stepCount: 5,
    strategy: "canary",
    executionArn: execArn(2),
    history: [{ ...revisionOf(1), at: at(-60) }],
    trigger: {
      repository: "web",
      ...revisionOf(2),
      eventId: "push-2",
      eventTime: at(0),
      generation: 2,
      executionName: execName(2),
      acceptedAt: at(0),
    },
    updatedAt: at(0),
    version: 7,
    ...overrides,
  });
}

export function view(itemValue: RolloutItem, runs: StoredRun<StoredAnalysis>[] = []): RolloutView {
  return { item: itemValue, runs, measurements: {} };
}
