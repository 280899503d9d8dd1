import { RecordingTaskTokens } from "../../../functions/abort/task-tokens.ts";
import { ManualClock } from "../../../functions/clock.ts";
import { RecordingEventPublisher } from "../../../functions/events/memory.ts";
import type { MetricProvider, ProviderResult } from "../../../functions/metrics/port.ts";
import { MemoryRolloutStore } from "../../../functions/store/memory.ts";
import { newRolloutItem, type RolloutItem } from "../../../functions/store/schema.ts";
import { InProcessTimer } from "../../../functions/timer/in-process.ts";
import { TimerFiringSchema } from "../../../functions/timer/port.ts";
import type {
  AbortOptions,
  CandidateArtifact,
  HeaderRoute,
  HeaderRouteChange,
  ObservedWeights,
  Prepared,
  PromoteOptions,
  Readiness,
  RouterState,
  TrafficRouter,
  WeightChange,
} from "../../../functions/traffic/port.ts";
import { abort } from "../../../functions/workflow/abort.ts";
import { startAnalysis } from "../../../functions/workflow/analysis.ts";
import { awaitStep } from "../../../functions/workflow/await.ts";
import { type BeginResult, begin } from "../../../functions/workflow/begin.ts";
import type { WorkflowDeps } from "../../../functions/workflow/deps.ts";
import { RecordingMetricsSink } from "../../../functions/workflow/metrics.ts";
import {
  type AbortPayload,
  type BeginPayload,
  ResumePayloadSchema,
  type WorkflowContext,
} from "../../../functions/workflow/payloads.ts";
import { promote } from "../../../functions/workflow/promote.ts";
import { resume } from "../../../functions/workflow/resume.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";
import { type AnalysisSpec, type MetricInput, MetricSchema, type Step } from "../../../statemachine/spec.ts";

export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
export const NAME = "checkout";
export const SM = "arn:aws:states:us-east-1:123456789012:stateMachine:checkout-rollout";
export const execArn = (name: string) => `${SM.replace(":stateMachine:", ":execution:")}:${name}`;
export const digest = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;

/**
 * A traffic target in memory: it remembers the real weights (so a test can change them behind
 * the rollout's back to cause drift) and every call it received.
 */
export class FakeRouter implements TrafficRouter {
  readonly type = "local-proxy" as const;
  readonly calls: string[] = [];
  /** What is really configured: percent on the candidate. */
  canary = 0;
  stable = "v0";
  candidate: string | undefined;
  /** `abort` answers not ready this many times (the old side is being scaled back up). */
  abortPending = 0;

  async prepare(): Promise<Prepared> {
    this.calls.push("prepare");
    return {
      state: { type: "local-proxy", stable: this.stable, expected: this.canary },
      firstRelease: false,
      stable: this.stable,
    };
  }

  async deployCandidate(state: RouterState, artifact: CandidateArtifact): Promise<RouterState> {
    const version = artifact.version ?? "?";
    this.calls.push(`deployCandidate ${version}`);
    this.candidate = version;
    return { ...state, candidate: version };
  }

  async checkReadiness(state: RouterState): Promise<Readiness> {
    this.calls.push("checkReadiness");
    return { ready: true, state, message: "ready" };
  }

  async readWeights(state: RouterState): Promise<ObservedWeights> {
    const expected = Number(state.expected ?? 0);
    return {
      canary: this.canary,
      stable: 100 - this.canary,
      expectedCanary: expected,
      drift: this.canary !== expected,
      detail: `${this.canary}/${100 - this.canary}`,
    };
  }

  async setWeight(
    state: RouterState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    this.calls.push(`setWeight ${percent}${options.overwriteDrift ? " overwrite" : ""}`);
    const weights = await this.readWeights(state);
    if (weights.drift && !options.overwriteDrift) {
      return {
        outcome: "drift",
        state,
        weights,
        message: `the candidate receives ${this.canary}% instead of ${weights.expectedCanary}%`,
      };
    }
    this.canary = percent;
    return {
      outcome: "applied",
      state: { ...state, expected: percent },
      weights: await this.readWeights(state),
    };
  }

  async setHeaderRoute(state: RouterState, route: HeaderRoute): Promise<HeaderRouteChange> {
    this.calls.push(`setHeaderRoute ${route.name}`);
    return { state, applied: true, message: `header route ${route.name}` };
  }

  async removeHeaderRoute(state: RouterState, name: string): Promise<HeaderRouteChange> {
    this.calls.push(`removeHeaderRoute ${name}`);
    return { state, applied: true, message: `header route ${name} removed` };
  }

  async promote(state: RouterState, _options: PromoteOptions): Promise<RouterState> {
    this.calls.push("promote");
    this.stable = String(state.candidate ?? this.stable);
    this.candidate = undefined;
    this.canary = 0;
    return { type: "local-proxy", stable: this.stable, expected: 0, promoted: true };
  }

  async abort(state: RouterState, _options: AbortOptions): Promise<Readiness> {
    this.calls.push("abort");
    if (this.abortPending > 0) {
      this.abortPending--;
      return { ready: false, state, retryAfterSeconds: 15, message: "scaling the old side up" };
    }
    this.canary = 0;
    return { ready: true, state: { ...state, expected: 0 }, message: "back to stable" };
  }

  async scaleDown(state: RouterState): Promise<Readiness> {
    this.calls.push("scaleDown");
    return { ready: true, state, message: "scaled down" };
  }
}

/** A provider answering each metric from its script (numbers, or `"E"` for a failed query), then 1. */
export class ScriptedProvider implements MetricProvider {
  readonly calls: Array<{ metric: string; at: number }> = [];
  readonly #cursor = new Map<string, number>();

  constructor(readonly scripts: Record<string, Array<number | "E">> = {}) {}

  async measure(metric: { name: string }, ctx: { now: Date }): Promise<ProviderResult> {
    this.calls.push({ metric: metric.name, at: ctx.now.getTime() });
    const i = this.#cursor.get(metric.name) ?? 0;
    this.#cursor.set(metric.name, i + 1);
    const v = this.scripts[metric.name]?.[i] ?? 1;
    if (v === "E") return { ok: false, message: "connection refused" };
    return { ok: true, result: [v], value: `[${v}]` };
  }
}

export function metric(overrides: Partial<MetricInput> = {}) {
  return MetricSchema.parse({
    name: "success-rate",
    interval: 3,
    initialDelay: 5,
    count: 2,
    successCondition: "result[0] >= 0.95",
    provider: { web: { url: "http://127.0.0.1:1/unused" } },
    ...overrides,
  });
}

export function analysisSpec(...metrics: ReturnType<typeof metric>[]): AnalysisSpec {
  return {
    templates: [
      { name: "success-rate", kind: "AnalysisTemplate", metrics: metrics.length ? metrics : [metric()] },
    ],
    args: {},
  };
}

/** The canary of the golden file, shortened: 25% → analysis → 50% → pause 2 s → analysis. */
export const CANARY_STEPS: Step[] = [
  { kind: "setWeight", weight: 25 },
  { kind: "analysis", origin: "step", analysis: analysisSpec() },
  { kind: "setWeight", weight: 50 },
  { kind: "pause", duration: 2, reason: "CanaryPauseStep" },
  { kind: "analysis", origin: "step", analysis: analysisSpec() },
];

export interface World {
  deps: WorkflowDeps;
  store: MemoryRolloutStore;
  clock: ManualClock;
  tokens: RecordingTaskTokens;
  timer: InProcessTimer;
  events: RecordingEventPublisher;
  metrics: RecordingMetricsSink;
  router: FakeRouter;
  provider: ScriptedProvider;
  /** Every Timer firing's `resume` result, in order. */
  resumed: string[];
  /** Target settings each `routerFor` call received. */
  targets: unknown[];
}

export function world(scripts: Record<string, Array<number | "E">> = {}): World {
  const clock = new ManualClock(T0);
  const store = new MemoryRolloutStore({ clock });
  const tokens = new RecordingTaskTokens();
  const timer = new InProcessTimer({ clock });
  const events = new RecordingEventPublisher();
  const metrics = new RecordingMetricsSink();
  const router = new FakeRouter();
  const provider = new ScriptedProvider(scripts);
  const resumed: string[] = [];
  const targets: unknown[] = [];
  const deps: WorkflowDeps = {
    store,
    tokens,
    timer,
    events,
    clock,
    routerFor: (settings) => {
      targets.push(settings);
      return router;
    },
    providers: provider,
    metrics,
  };
  timer.setHandler(async (raw) => {
    const firing = TimerFiringSchema.parse(raw);
    resumed.push(await resume(deps, ResumePayloadSchema.parse(firing.payload), firing.key));
  });
  return { deps, store, clock, tokens, timer, events, metrics, router, provider, resumed, targets };
}

/** Settings the fake router ignores (not a real target type: `artifactFor` gives it an image). */
export const TARGET = { type: "fake", name: "checkout" };

export function rolloutRef(stepCount = CANARY_STEPS.length) {
  return { name: NAME, revision: "74a0fb7474", strategy: "canary" as const, stepCount };
}

let tokenSeq = 0;
/** A fresh task token, registered as live (Step Functions is waiting on it). */
export function liveToken(w: World, label = "token"): string {
  const token = `${label}-${++tokenSeq}`;
  w.tokens.live.add(token);
  return token;
}

export interface Push {
  digest: string;
  tag: string | null;
  generation: number;
  executionName?: string;
}

/** What the trigger records and hands to StartExecution (see `functions/trigger/start-rollout.ts`). */
export async function acceptPush(w: World, push: Push): Promise<BeginPayload> {
  const executionName = push.executionName ?? `${NAME}-${push.digest.slice(7, 19)}-g${push.generation}`;
  const image = `123456789012.dkr.ecr.us-east-1.amazonaws.com/checkout@${push.digest}`;
  const existing = await w.store.get(NAME);
  const now = w.clock.now();
  const trigger = {
    repository: "checkout",
    digest: push.digest,
    tag: push.tag,
    image,
    eventId: `event-${push.generation}`,
    eventTime: now,
    generation: push.generation,
    executionName,
    acceptedAt: now,
  };
  if (existing) await w.store.save({ ...existing, trigger }, existing.version);
  else await w.store.save({ ...newRolloutItem(NAME, now), trigger }, null);
  return {
    input: {
      rollout: NAME,
      revision: { repository: "checkout", image, digest: push.digest, tag: push.tag },
      trigger: { eventId: trigger.eventId, eventTime: now, generation: push.generation, executionName },
    },
    executionId: execArn(executionName),
    rollout: rolloutRef(),
    stepLabels: CANARY_STEPS.map((step) => step.kind),
    target: TARGET,
  };
}

/** The outcome of one execution, as the ASL would route it. */
export type Ending =
  | { state: "Healthy" }
  | { state: "Aborted"; message: string }
  | { state: "Superseded" }
  | { state: "Waiting"; at: string; token: string };

/**
 * Runs one execution as the compiled ASL does (Begin → FirstRevision? → steps → Promote, every
 * Task caught into Abort), with every wait answered by the Timer, or, when `decide` is given, by
 * the test (a person). Stops at a wait nobody answers.
 */
export async function runExecution(
  w: World,
  begun: BeginPayload,
  options: {
    steps?: Step[];
    onFailure?: "rollback" | "stop";
    /** Called when a wait is not answered by the Timer; return true after answering it. */
    decide?: (at: string, token: string, item: RolloutItem) => Promise<boolean>;
  } = {},
): Promise<Ending> {
  const steps = options.steps ?? CANARY_STEPS;
  const rollout = rolloutRef(steps.length);
  let context: WorkflowContext;
  let result: BeginResult;
  try {
    result = await begin(w.deps, { ...begun, rollout });
    context = result.context;
  } catch (error) {
    if ((error as Error).name === "ExecutionSuperseded") return { state: "Superseded" };
    throw error;
  }
  const base = { context, rollout, target: TARGET };
  const doAbort = async (error: AbortPayload["error"]): Promise<Ending> => {
    try {
      const out = await abort(w.deps, {
        ...base,
        error,
        onFailure: options.onFailure ?? "rollback",
        abortScaleDownDelaySeconds: 30,
      });
      return { state: "Aborted", message: out.message };
    } catch (e) {
      if ((e as Error).name === "ExecutionSuperseded") return { state: "Superseded" };
      throw e;
    }
  };
  /** A Task's Catch: Lambda errors reach `$.error` as `{Error, Cause: JSON}`. */
  const task = async <T>(run: () => Promise<T>): Promise<{ ok: T } | { ending: Ending }> => {
    try {
      return { ok: await run() };
    } catch (e) {
      const error = e as Error;
      if (error.name === "ExecutionSuperseded") return { ending: { state: "Superseded" } };
      return {
        ending: await doAbort({
          Error: error.name,
          Cause: JSON.stringify({ errorType: error.name, errorMessage: error.message }),
        }),
      };
    }
  };
  /** A `.waitForTaskToken` Task: the Lambda stores the token, then someone answers it. */
  const wait = async (
    at: string,
    start: (token: string) => Promise<unknown>,
  ): Promise<{ output: Record<string, unknown> } | { ending: Ending }> => {
    const token = liveToken(w, at);
    const started = await task(() => start(token));
    if ("ending" in started) return started;
    for (let guard = 0; guard < 10_000; guard++) {
      const answer = answerOf(w, token);
      if (answer) {
        if (answer.kind === "failure")
          return { ending: await doAbort({ Error: answer.error, Cause: answer.cause }) };
        return { output: answer.output as Record<string, unknown> };
      }
      if (w.timer.nextDueAt() !== undefined && (await w.timer.advanceTo(w.timer.nextDueAt() as number)) > 0)
        continue;
      const item = (await w.store.get(NAME)) as RolloutItem;
      if (!options.decide || !(await options.decide(at, token, item)))
        return { ending: { state: "Waiting", at, token } };
    }
    throw new Error(`${at}: the wait never ended`);
  };

  if (!result.firstRevision) {
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i] as Step;
      const body = { ...base, stepIndex: i, step };
      if (step.kind === "setWeight" || step.kind === "setHeaderRoute" || step.kind === "preview") {
        for (;;) {
          const applied = await task(() => setWeight(w.deps, body));
          if ("ending" in applied) return applied.ending;
          if (!applied.ok.drift) break;
          const approved = await wait(`Step${i + 1}-Drift`, (taskToken) =>
            awaitStep(w.deps, {
              ...base,
              stepIndex: i,
              step: { kind: "approval", reason: "paused-drift" },
              taskToken,
            }),
          );
          if ("ending" in approved) return approved.ending;
        }
      } else if (step.kind === "pause") {
        const paused = await wait(`Step${i + 1}-Pause`, (taskToken) =>
          awaitStep(w.deps, { ...body, taskToken }),
        );
        if ("ending" in paused) return paused.ending;
        if (paused.output.outcome === "full") break;
      } else if (step.kind === "analysis") {
        const analysed = await wait(`Step${i + 1}-Analysis`, (taskToken) =>
          startAnalysis(w.deps, { ...body, taskToken }),
        );
        if ("ending" in analysed) return analysed.ending;
        const phase = analysed.output.phase;
        if (phase === "Inconclusive") {
          const approved = await wait(`Step${i + 1}-Inconclusive`, (taskToken) =>
            awaitStep(w.deps, {
              ...base,
              stepIndex: i,
              step: { kind: "approval", reason: "Inconclusive" },
              taskToken,
              message: String(analysed.output.message ?? ""),
            }),
          );
          if ("ending" in approved) return approved.ending;
        } else if (phase !== "Successful") {
          return doAbort({ Error: "AnalysisRunFailed", Cause: String(analysed.output.message ?? "") });
        }
        if (analysed.output.outcome === "full") break;
      }
    }
  }
  const promoted = await task(() => promote(w.deps, { ...base, scaleDownDelaySeconds: 30 }));
  if ("ending" in promoted) return promoted.ending;
  return { state: "Healthy" };
}

type Answer = { kind: "success"; output: unknown } | { kind: "failure"; error: string; cause: string };

/** How a token was answered, if it was. */
export function answerOf(w: World, token: string): Answer | undefined {
  const s = w.tokens.successes.find((x) => x.token === token);
  if (s) return { kind: "success", output: s.output };
  const f = w.tokens.failures.find((x) => x.token === token);
  if (f) return { kind: "failure", error: f.error, cause: f.cause };
  return undefined;
}

export async function item(w: World): Promise<RolloutItem> {
  const found = await w.store.get(NAME);
  if (!found) throw new Error("no rollout item");
  return found;
}
