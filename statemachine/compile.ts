import { formatDuration } from "./duration.ts";
import {
  ANALYSIS_FUNCTION_TIMEOUT_SECONDS,
  DEFINITION_MAX_CHARS,
  FUNCTION_ARN_MAX_CHARS,
  MAX_RUNNING_MEASUREMENT_SECONDS,
  TIMEOUT_SECONDS_MAX,
} from "./limits.ts";
import { customTriggersOf } from "./notification-object.ts";
import { plan } from "./plan.ts";
import { effectiveScale } from "./pods.ts";
import { type Problem, SpecError } from "./problems.ts";
import { alarmNameOf, type HookPoint } from "./safety.ts";
import { type AnalysisSpec, LAMBDA_PLUGIN, type Metric, type RolloutSpec, type Step } from "./spec.ts";
import { TIMER_LATEST_FIRING_SECONDS } from "./timer-delivery.ts";
import { passStageLabel, passStepName } from "./waves.ts";

/**
 * The Lambda functions a compiled workflow calls, as `definitionSubstitutions` placeholders: the
 * compiler stays pure and the construct fills in the ARNs.
 */
export const FUNCTION_PLACEHOLDERS = {
  begin: "BeginFunctionArn",
  setWeight: "SetWeightFunctionArn",
  checkReady: "CheckReadyFunctionArn",
  await: "AwaitFunctionArn",
  startAnalysis: "StartAnalysisFunctionArn",
  promote: "PromoteFunctionArn",
  abort: "AbortFunctionArn",
  checkAlarms: "CheckAlarmsFunctionArn",
  hook: "HookFunctionArn",
} as const;

export type FunctionRole = keyof typeof FUNCTION_PLACEHOLDERS;

/** The error a Lambda throws, and the abort channel sends, when a rollout is aborted. */
export const ROLLOUT_ABORTED = "RolloutAborted";
/**
 * The error a Lambda of an execution that no longer drives the rollout throws (a newer revision
 * took over): the execution ends without running Abort, whose traffic now belongs to the newer one.
 */
export const EXECUTION_SUPERSEDED = "ExecutionSuperseded";
/**
 * The error of a hold (an Inconclusive background analysis, as Argo Rollouts pauses on one): every
 * Task of a step catches it into the step's `-Held` wait for a person, and the step runs again.
 */
export const PAUSE_REQUESTED = "PauseRequested";
/**
 * The error of a lifecycle hook that failed, timed out or stopped sending heartbeats: its Catch
 * words the cause (the hook, its function and its own error) and goes to Abort.
 */
export const HOOK_FAILED = "HookFailed";

/** Errors of the Lambda service itself, always safe to retry. */
export const TRANSIENT_LAMBDA_ERRORS = [
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
  "Lambda.TooManyRequestsException",
];

/** The retrier of every Lambda Task: the Lambda service's own errors are always safe to retry. */
export const LAMBDA_SERVICE_RETRY = {
  ErrorEquals: TRANSIENT_LAMBDA_ERRORS,
  IntervalSeconds: 1,
  MaxAttempts: 6,
  BackoffRate: 2,
  JitterStrategy: "FULL",
};

/**
 * Errors of a function that failed for a passing reason and did nothing it cannot do again: AWS
 * throttled a call past the SDK's own retries (the store, the Timer, task tokens, lifecycle events
 * name their adapter's error), or the function's process died or ran out of time. Every function
 * resumes from what it recorded (docs/state.md), so a Task retries them with jittered back-off,
 * waits included (a wait's retry stores a new token). The SDK retries a throttled call 3 times
 * inside one attempt; this retries the attempt: see docs/architecture.md "Retries".
 */
export const HANDLER_FAULT_ERRORS = [
  "StoreUnavailableError",
  "TimerError",
  "TaskTokenError",
  "EventPublishError",
  "Runtime.ExitError",
  "Sandbox.Timedout",
];

/**
 * The retrier of {@link HANDLER_FAULT_ERRORS}: 1, 2, 4, 8, 16, 32, then 60 s at most, each
 * jittered, retried 15 times (about 9 minutes at most): an attempt makes a dozen calls or more, so a few
 * percent of throttling past the SDK fails a third to a half of the attempts; 6 retries left a
 * step in a few thousand failed for good, 10 one in about five thousand (an analysis start of a
 * model rollout, which calls more than most).
 */
export const HANDLER_FAULT_RETRY = {
  ErrorEquals: HANDLER_FAULT_ERRORS,
  IntervalSeconds: 1,
  MaxAttempts: 15,
  BackoffRate: 2,
  MaxDelaySeconds: 60,
  JitterStrategy: "FULL",
};

/** Seconds between two readiness checks of a target with pods. */
export const READY_POLL_SECONDS = 10;
/**
 * Seconds a timed wait (a pause, an analysis) may overrun before the workflow gives up on its
 * timer: the latest a firing the Timer delivers can arrive (27 minutes: Scheduler's, Lambda's
 * and the redelivery queue's retries, statemachine/timer-delivery.ts), and the wait's own attempt,
 * which stores the token and schedules the firing, up to its function's timeout. Less would time a
 * wait out, and abort its rollout, while the firing that ends it is still on its way.
 */
export const TIMER_SLACK_SECONDS = TIMER_LATEST_FIRING_SECONDS + ANALYSIS_FUNCTION_TIMEOUT_SECONDS;

export interface CompileOptions {
  /** The traffic target's settings, embedded in every Task that moves traffic. */
  target?: Record<string, unknown>;
  /**
   * Targets with pods or tasks (ECS, Kubernetes) poll readiness after each weight change as well
   * (every target polls it once after Begin deploys the candidate).
   */
  readinessChecks?: boolean;
}

type State = Record<string, unknown>;

/** Amazon States Language (JSONPath) for one rollout. */
export interface StateMachineDefinition {
  Comment: string;
  StartAt: string;
  States: Record<string, State>;
  TimeoutSeconds?: number;
}

/** Deterministic state-name stem of a step: `Step01-SetWeight-25`, `Step04-Pause-2s`. */
export function stepStateName(spec: RolloutSpec, index: number): string {
  const step = spec.steps[index];
  if (!step) throw new RangeError(`no step ${index}`);
  const width = Math.max(2, String(spec.steps.length).length);
  const n = String(index + 1).padStart(width, "0");
  return `Step${n}-${stepLabel(step)}`;
}

function stepLabel(step: Step): string {
  switch (step.kind) {
    case "setWeight":
      return `SetWeight-${step.weight}`;
    case "pause":
      if (step.reason === "Approval") return "Approval";
      return step.duration === undefined ? "Pause" : `Pause-${formatDuration(step.duration)}`;
    case "analysis":
      return step.origin === "prePromotionAnalysis"
        ? "PrePromotionAnalysis"
        : step.origin === "postPromotionAnalysis"
          ? "PostPromotionAnalysis"
          : "Analysis";
    case "setHeaderRoute":
      return `SetHeaderRoute-${safe(step.name)}`;
    case "setMirrorRoute":
      return `SetMirrorRoute-${safe(step.name)}`;
    case "preview":
      return "Preview";
    case "setCanaryScale":
      return `SetCanaryScale-${canaryScaleLabel(step)}`;
    case "experiment":
      return `Experiment-${safe(step.templates.map((t) => t.name).join("-"))}`;
  }
}

/** `5`, `50pct`, `MatchTrafficWeight`: what a setCanaryScale step sets, as a state name may spell it. */
function canaryScaleLabel(step: Extract<Step, { kind: "setCanaryScale" }>): string {
  const scale = effectiveScale(step);
  if (scale?.replicas !== undefined) return String(scale.replicas);
  if (scale?.weight !== undefined) return `${scale.weight}pct`;
  return "MatchTrafficWeight";
}

const safe = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 40);
const fn = (role: FunctionRole) => `\${${FUNCTION_PLACEHOLDERS[role]}}`;

/**
 * Longest time an analysis with a finite count can take if every measurement errors and is
 * retried 10 s later; used as a safety net so a lost timer cannot hang the workflow forever.
 */
export function analysisUpperBoundSeconds(analysis: AnalysisSpec): number | undefined {
  let longest = 0;
  for (const metric of analysis.templates.flatMap((t) => t.metrics)) {
    const bound = metricUpperBoundSeconds(metric);
    if (bound === undefined) return undefined;
    longest = Math.max(longest, bound);
  }
  return longest;
}

/**
 * Longest time one metric can take (every measurement an Error retried 10 s later, up to its
 * limit), or undefined for a metric that runs until its analysis is terminated.
 */
export function metricUpperBoundSeconds(m: Metric): number | undefined {
  if (m.count === undefined && m.interval !== undefined) return undefined;
  const count = Math.max(1, m.count ?? 1);
  const attempts = (m.consecutiveErrorLimit + 1) * count;
  const errorRetries = attempts * 10;
  // A Kayenta or Job measurement may stay Running up to its limit before it completes or errors.
  const running =
    m.provider.kayenta || m.provider.job ? (attempts + count) * MAX_RUNNING_MEASUREMENT_SECONDS : 0;
  return m.initialDelay + (m.interval ?? 0) * count + errorRetries + running;
}

/**
 * Compiles a rollout into a Step Functions state machine: one state per step, every wait a
 * `.waitForTaskToken` task, a Choice on each analysis phase, and every Task caught into Abort.
 * Pure: the same spec always gives the same definition. A definition Step Functions would refuse
 * (larger than its 1,048,576 characters once the function ARNs are filled in, or a timeout past
 * 99,999,999 seconds) throws a SpecError instead: every consumer (the construct, `rollouts
 * compile`, the embedded runtime) compiles through here, with the target it embeds.
 */
export function compile(spec: RolloutSpec, options: CompileOptions = {}): StateMachineDefinition {
  const refused = jobMetricProblems(spec, options.target);
  if (refused.length > 0) throw new SpecError(refused);
  const builder = new DefinitionBuilder(spec, options);
  builder.begin();
  spec.steps.forEach((_, i) => {
    builder.step(i);
  });
  builder.end();
  const definition: StateMachineDefinition = {
    Comment: `sfn-rollouts: ${spec.strategy} rollout "${spec.name}" (revision ${spec.revision}, ${spec.steps.length} steps)`,
    StartAt: "Begin",
    States: builder.states,
  };
  const problems = definitionProblems(definition, `rollout ${spec.name}`);
  if (problems.length > 0) throw new SpecError(problems);
  return definition;
}

/** Whether an analysis has a metric measured by a Kubernetes Job (`provider.job`). */
export function analysisUsesJob(analysis: AnalysisSpec): boolean {
  return analysis.templates.some((t) => t.metrics.some((m) => m.provider.job !== undefined));
}

/**
 * The job metrics of a rollout whose target is not kubernetes: a Job runs in the cluster of the
 * kubernetes target, and no other target has one. No target (`rollouts plan`) refuses nothing.
 */
export function jobMetricProblems(spec: RolloutSpec, target: Record<string, unknown> | undefined): Problem[] {
  if (!target || target.type === "kubernetes") return [];
  const analyses: Array<{ analysis: AnalysisSpec; where: string; step?: number }> = [];
  spec.steps.forEach((step, i) => {
    if (step.kind === "analysis")
      analyses.push({ analysis: step.analysis, where: `steps[${i}].analysis`, step: i + 1 });
  });
  if (spec.backgroundAnalysis)
    analyses.push({ analysis: spec.backgroundAnalysis.analysis, where: "analysis" });
  const problems: Problem[] = [];
  for (const { analysis, where, step } of analyses) {
    for (const template of analysis.templates) {
      template.metrics.forEach((metric, m) => {
        if (metric.provider.job === undefined) return;
        problems.push({
          file: `rollout ${spec.name}`,
          path: `${where}.templates[${template.name}].metrics[${m}].provider.job`,
          ...(step === undefined ? {} : { step }),
          message: `metric "${metric.name}" (template ${template.name}) runs a Kubernetes Job, which only the kubernetes target can run (this rollout's target is ${String(target.type)}): measure it with a Lambda function through the ${LAMBDA_PLUGIN} plugin instead`,
        });
      });
    }
  }
  return problems;
}

/**
 * Builds the states of one rollout's definition, in a fixed order (Begin and the candidate's
 * readiness loop, each step with its background analysis and hold, then Promote and the terminal
 * states), so the same spec always gives the same text.
 */
class DefinitionBuilder {
  readonly states: Record<string, State> = {};
  readonly #spec: RolloutSpec;
  readonly #options: CompileOptions;
  readonly #rollout: Record<string, unknown>;
  readonly #target: { target?: Record<string, unknown> };
  /**
   * Each step's entry state: the step itself, or the background analysis it starts first; with
   * alarms, the alarm check before them (`#inner` keeps what the check goes on to).
   */
  readonly #entries = new Map<number, string>();
  readonly #inner = new Map<number, string>();

  constructor(spec: RolloutSpec, options: CompileOptions) {
    this.#spec = spec;
    this.#options = options;
    this.#rollout = {
      name: spec.name,
      revision: spec.revision,
      strategy: spec.strategy,
      stepCount: spec.steps.length,
      ...(spec.pass ? { pass: spec.pass } : {}),
    };
    this.#target = options.target ? { target: options.target } : {};
    // Entry names first, so every step can point at the next.
    spec.steps.forEach((_, i) => {
      const stem = stepStateName(spec, i);
      const background = spec.backgroundAnalysis?.startingStep === i;
      const inner = background ? `${stem}-StartBackgroundAnalysis` : stem;
      this.#inner.set(i, inner);
      this.#entries.set(i, this.#alarmed ? `${stem}-CheckAlarms` : inner);
    });
  }

  /** True when the rollout watches CloudWatch alarms: every step boundary checks them. */
  get #alarmed(): boolean {
    return (this.#spec.alarms?.length ?? 0) > 0;
  }

  /** `Begin`, the candidate's readiness loop and the first-revision shortcut. */
  begin(): void {
    const spec = this.#spec;
    this.states.Begin = {
      ...this.#invoke(
        "begin",
        {
          "input.$": "$",
          "executionId.$": "$$.Execution.Id",
          rollout: this.#rollout,
          // What each step does, in words, so status tools can show the steps not run yet.
          stepLabels: plan(spec).steps.map((s) =>
            spec.pass ? passStageLabel(spec.pass, s.detail) : s.detail,
          ),
          // A pass's lifecycle events name each step with the wave (`traffic@25@eu`).
          ...(spec.pass ? { stepNames: spec.steps.map((s) => passStepName(spec.pass as string, s)) } : {}),
          // The notification ConfigMap's custom triggers, evaluated for each new revision.
          ...(customTriggersOf(spec) ? { customTriggers: customTriggersOf(spec) } : {}),
          ...this.#target,
        },
        "Candidate-CheckReady",
      ),
      ResultSelector: { "context.$": "$.Payload.context", "firstRevision.$": "$.Payload.firstRevision" },
      ResultPath: "$.begin",
    };
    // Begin has no context yet: an error there can only fail the execution after Abort records it.
    const firstStep =
      spec.backgroundAnalysis?.startingStep === spec.steps.length
        ? "BackgroundAnalysisAtEnd"
        : this.#stepStart(0);
    // Every target deploys the candidate asynchronously (ECS tasks, a Lambda version, an upstream
    // that must answer): Begin starts it, this loop waits until it is ready or its deadline passes.
    // The first revision of a rollout skips the steps (there is nothing to compare it with): a
    // rule of the readiness Choice rather than a Choice of its own, one state transition less.
    const afterBegin = this.#readiness(
      "Candidate",
      this.#hookBefore(
        "beforeTraffic",
        "Hook-BeforeTraffic",
        spec.steps.length > 0 ? this.#entryOf(0) : firstStep,
        null,
      ),
      null,
      { rule: { Variable: "$.begin.firstRevision", BooleanEquals: true }, next: "Promote" },
    );
    this.states.Begin.Next = afterBegin;
  }

  /** The states of step `i`: its background analysis start, the step, and its hold. */
  step(i: number): void {
    const spec = this.#spec;
    const step = spec.steps[i];
    if (!step) throw new RangeError(`no step ${i}`);
    const stem = stepStateName(spec, i);
    const next = this.#stepStart(i + 1);
    if (this.#alarmed) this.states[`${stem}-CheckAlarms`] = this.#checkAlarms(i, this.#innerOf(i));
    if (spec.backgroundAnalysis?.startingStep === i) {
      this.states[`${stem}-StartBackgroundAnalysis`] = this.#invoke(
        "startAnalysis",
        this.#payload({
          stepIndex: i,
          background: true,
          analysis: spec.backgroundAnalysis.analysis,
          ...this.#jobTarget(spec.backgroundAnalysis.analysis),
        }),
        stem,
      );
    }
    switch (step.kind) {
      case "setWeight":
      case "setHeaderRoute":
      case "setMirrorRoute":
      case "setCanaryScale":
      case "preview":
        this.#trafficStep(step, i, stem, next);
        break;
      case "pause":
        this.#pauseStep(step, i, stem, next);
        break;
      case "analysis":
        this.#analysisStep(step, i, stem, next);
        break;
      case "experiment":
        this.#experimentStep(step, i, stem, next);
        break;
    }
    // Only an Inconclusive background analysis holds a rollout: from the step it starts at.
    const from = spec.backgroundAnalysis?.startingStep;
    if (from !== undefined && i >= from) this.#holdable(stem, `${stem}-Held`, this.#entryOf(i), i);
  }

  /** A background analysis starting after the last step, `Promote` and the terminal states. */
  end(): void {
    const spec = this.#spec;
    const states = this.states;
    if (spec.backgroundAnalysis?.startingStep === spec.steps.length) {
      states.BackgroundAnalysisAtEnd = this.#invoke(
        "startAnalysis",
        this.#payload({
          stepIndex: spec.steps.length,
          background: true,
          analysis: spec.backgroundAnalysis.analysis,
          ...this.#jobTarget(spec.backgroundAnalysis.analysis),
        }),
        this.#promoteEntry(),
      );
    }
    if (this.#alarmed) states["Promote-CheckAlarms"] = this.#checkAlarms(spec.steps.length, "Promote");
    states.Promote = this.#invoke(
      "promote",
      this.#payload({ ...this.#target, scaleDownDelaySeconds: spec.scaleDownDelaySeconds }),
      "Healthy",
    );
    // Held during the promotion: after the pause, the alarms are checked again (the hook has run).
    if (spec.backgroundAnalysis) {
      const promote = this.#alarmed ? "Promote-CheckAlarms" : "Promote";
      this.#holdable("Promote", "Promote-Held", promote, spec.steps.length);
    }
    states.Healthy = { Type: "Succeed" };
    states.Abort = {
      ...this.#invoke(
        "abort",
        this.#payload({
          ...this.#target,
          "error.$": "$.error",
          onFailure: spec.onFailure,
          abortScaleDownDelaySeconds: spec.abortScaleDownDelaySeconds,
        }),
        "Aborted",
      ),
      Retry: [
        { ErrorEquals: [EXECUTION_SUPERSEDED], MaxAttempts: 0 },
        LAMBDA_SERVICE_RETRY,
        HANDLER_FAULT_RETRY,
        { ErrorEquals: ["States.ALL"], IntervalSeconds: 2, MaxAttempts: 3, BackoffRate: 2 },
      ],
      Catch: [
        { ErrorEquals: [EXECUTION_SUPERSEDED], ResultPath: "$.abortError", Next: "Superseded" },
        { ErrorEquals: ["States.ALL"], ResultPath: "$.abortError", Next: "AbortFailed" },
      ],
    };
    states.Aborted = {
      Type: "Fail",
      Error: ROLLOUT_ABORTED,
      Cause: "The rollout was aborted: the rollout's status message says why.",
    };
    states.Superseded = {
      Type: "Fail",
      Error: EXECUTION_SUPERSEDED,
      Cause: "A newer revision took over the rollout; its execution owns the traffic now.",
    };
    states.AbortFailed = {
      Type: "Fail",
      Error: "AbortFailed",
      Cause: "The abort could not put the traffic back: check the target by hand.",
    };
    // Begin runs before any context exists, so its failures go to a Fail state directly; a Begin
    // refused because a newer push was accepted first ends as superseded, like any other Task.
    if (states.Begin) {
      states.Begin.Catch = [
        { ErrorEquals: [EXECUTION_SUPERSEDED], ResultPath: "$.error", Next: "Superseded" },
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "BeginFailed" },
      ];
    }
    states.BeginFailed = {
      Type: "Fail",
      Error: "BeginFailed",
      Cause: "The rollout could not start: see the execution's events.",
    };
  }

  /** A step that moves traffic: the drift check, and readiness after it when the target has pods. */
  #trafficStep(step: Step, i: number, stem: string, following: string): void {
    const next =
      step.kind === "setWeight" && step.weight > 0
        ? this.#hookBefore("afterTraffic", `${stem}-Hook-AfterTraffic`, following, i)
        : following;
    const settled =
      this.#options.readinessChecks &&
      (step.kind === "setWeight" ||
        step.kind === "preview" ||
        step.kind === "setMirrorRoute" ||
        step.kind === "setCanaryScale");
    const drift = this.#spec.onDrift === "ignore" && step.kind === "setWeight" ? { onDrift: "ignore" } : {};
    this.states[stem] = this.#invoke(
      "setWeight",
      this.#body(step, i, { ...this.#target, ...drift }),
      `${stem}-Applied?`,
    );
    this.states[`${stem}-Applied?`] = {
      Type: "Choice",
      Comment:
        "Weights changed by someone else since the last step: pause for a person instead of overwriting them.",
      Choices: [{ Variable: "$.last.value.drift", BooleanEquals: true, Next: `${stem}-Drift` }],
      Default: next,
    };
    this.states[`${stem}-Drift`] = this.#wait(
      "await",
      this.#payload({ stepIndex: i, step: { kind: "approval", reason: "paused-drift" } }),
      stem,
    );
    if (settled) (this.states[`${stem}-Applied?`] as State).Default = this.#readiness(stem, next, i);
  }

  /** A pause: a timed one is resumed by the Timer, one without a duration by a person. */
  #pauseStep(step: Extract<Step, { kind: "pause" }>, i: number, stem: string, next: string): void {
    const timeout = step.duration === undefined ? undefined : step.duration + TIMER_SLACK_SECONDS;
    this.states[stem] = this.#wait("await", this.#body(step, i), `${stem}-Next`, timeout);
    this.states[`${stem}-Next`] = this.#fullChoice(stem, next);
  }

  /** An analysis: the wait for its phase, and a Choice on it. */
  #analysisStep(
    step: Extract<Step, { kind: "analysis" }>,
    i: number,
    stem: string,
    next: string,
    extra: Record<string, unknown> = {},
  ): void {
    const bound = analysisUpperBoundSeconds(step.analysis);
    const timeout = bound === undefined ? undefined : 2 * bound + TIMER_SLACK_SECONDS;
    this.states[stem] = this.#wait(
      "startAnalysis",
      this.#body(step, i, { ...extra, ...this.#jobTarget(step.analysis) }),
      `${stem}-Phase?`,
      timeout,
    );
    this.states[`${stem}-Phase?`] = {
      Type: "Choice",
      Comment:
        "Successful: next step (promote --full: Promote). Inconclusive: a person decides. Failed or Error: abort.",
      // The Successful rules are `${stem}-Next`'s, here rather than one Choice more on the way.
      Choices: [
        ...(this.#fullChoice(stem, next).Choices as Array<{ And: unknown[]; Next: string }>).map((rule) => ({
          ...rule,
          And: [{ Variable: "$.last.phase", StringEquals: "Successful" }, ...rule.And],
        })),
        { Variable: "$.last.phase", StringEquals: "Successful", Next: next },
        { Variable: "$.last.phase", StringEquals: "Inconclusive", Next: `${stem}-Inconclusive` },
      ],
      Default: `${stem}-Failed`,
    };
    this.states[`${stem}-Next`] = this.#fullChoice(stem, next);
    this.states[`${stem}-Inconclusive`] = this.#wait(
      "await",
      this.#payload({
        stepIndex: i,
        step: { kind: "approval", reason: "Inconclusive" },
        "message.$": "$.last.message",
      }),
      `${stem}-Next`,
    );
    this.states[`${stem}-Failed`] = {
      Type: "Pass",
      Parameters: { Error: "AnalysisRunFailed", "Cause.$": "$.last.message" },
      ResultPath: "$.error",
      Next: "Abort",
    };
  }

  /**
   * Argo's experiment: the target creates its ReplicaSets, the readiness loop waits until they are
   * available, then the analysis (Successful: the experiment ends; Failed or Error: abort, whose
   * target cleanup deletes them) or the duration (none: a person's `rollouts promote`), then the
   * target deletes them and the step completes.
   */
  #experimentStep(step: Extract<Step, { kind: "experiment" }>, i: number, stem: string, next: string): void {
    const run = `${stem}-Run`;
    const stop = `${stem}-Stop`;
    this.states[stem] = this.#invoke(
      "setWeight",
      this.#body(step, i, { ...this.#target, experiment: "start" }),
      this.#readiness(stem, run, i),
    );
    if (step.analysis) {
      const analysis = { kind: "analysis", origin: "step", analysis: step.analysis } as const;
      // The target: the analysis's `{{templates.<name>.podTemplateHash}}` are its ReplicaSets'.
      this.#analysisStep(analysis, i, run, stop, this.#target);
    } else {
      const timeout = step.duration === undefined ? undefined : step.duration + TIMER_SLACK_SECONDS;
      this.states[run] = this.#wait("await", this.#body(step, i), `${run}-Next`, timeout);
      this.states[`${run}-Next`] = this.#fullChoice(run, stop);
    }
    this.states[stop] = this.#invoke(
      "setWeight",
      this.#body(step, i, { ...this.#target, experiment: "stop" }),
      next,
    );
  }

  #stepStart(i: number): string {
    return i >= this.#spec.steps.length ? this.#promoteEntry() : this.#entryOf(i);
  }

  /** What runs before `Promote`: the afterPromotion hook, then the alarm check. */
  #promoteEntry(): string {
    const promote = this.#alarmed ? "Promote-CheckAlarms" : "Promote";
    return this.#hookBefore("afterPromotion", "Hook-AfterPromotion", promote, this.#spec.steps.length);
  }

  #innerOf(i: number): string {
    const found = this.#inner.get(i);
    if (!found) throw new Error(`step ${i} has no entry state`);
    return found;
  }

  /**
   * The step boundary's alarm check: DescribeAlarms on the rollout's alarms; one in ALARM throws
   * `RolloutAborted` with its name and reason (into Abort), a missing one is an error unless
   * `ignorePollAlarmFailure`. The event rule aborts a running step at once; this check stops an
   * alarm that was already firing before the next step starts.
   */
  #checkAlarms(stepIndex: number, next: string): State {
    const spec = this.#spec;
    return this.#invoke(
      "checkAlarms",
      this.#payload({
        stepIndex,
        alarms: (spec.alarms ?? []).map(alarmNameOf),
        ignorePollAlarmFailure: spec.ignorePollAlarmFailure ?? false,
      }),
      next,
    );
  }

  /**
   * A lifecycle hook's state, if the spec has that hook, placed before \`next\`; returns the
   * state to go to. The hook function gets the task token through the hook Lambda (which stores it
   * on the rollout, so the abort channel ends the wait like any other) and answers with
   * SendTaskSuccess or SendTaskFailure. A failure, a timeout or a missed heartbeat aborts with a
   * message naming the hook.
   */
  #hookBefore(point: HookPoint, name: string, next: string, stepIndex: number | null): string {
    const hook = this.#spec.hooks?.[point];
    if (!hook) return next;
    const label = `${point} hook ${hook.function}`;
    this.states[name] = {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: {
        FunctionName: fn("hook"),
        Payload: this.#payload({
          stepIndex,
          hook: { point, ...hook },
          "taskToken.$": "$$.Task.Token",
        }),
      },
      ResultPath: "$.last",
      TimeoutSeconds: hook.timeoutSeconds,
      ...(hook.heartbeatSeconds !== undefined ? { HeartbeatSeconds: hook.heartbeatSeconds } : {}),
      Retry: [LAMBDA_SERVICE_RETRY],
      Catch: [
        { ErrorEquals: [EXECUTION_SUPERSEDED], ResultPath: "$.error", Next: "Superseded" },
        { ErrorEquals: [ROLLOUT_ABORTED], ResultPath: "$.error", Next: "Abort" },
        { ErrorEquals: ["States.Timeout"], ResultPath: "$.error", Next: `${name}-TimedOut` },
        { ErrorEquals: ["States.HeartbeatTimeout"], ResultPath: "$.error", Next: `${name}-NoHeartbeat` },
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: `${name}-Failed` },
      ],
      Next: next,
    };
    const pass = (cause: Record<string, string>): State => ({
      Type: "Pass",
      Parameters: { Error: HOOK_FAILED, ...cause },
      ResultPath: "$.error",
      Next: "Abort",
    });
    this.states[`${name}-TimedOut`] = pass({
      Cause: `${label} gave no verdict within ${formatDuration(hook.timeoutSeconds)}`,
    });
    this.states[`${name}-NoHeartbeat`] = pass({
      Cause: `${label} sent no heartbeat for ${formatDuration(hook.heartbeatSeconds ?? 0)}`,
    });
    this.states[`${name}-Failed`] = pass({
      "Cause.$": `States.Format('${label.replace(/'/g, "\\'")} failed: {}: {}', $.error.Error, $.error.Cause)`,
    });
    return name;
  }

  #entryOf(i: number): string {
    const found = this.#entries.get(i);
    if (!found) throw new Error(`step ${i} has no entry state`);
    return found;
  }

  #payload(extra: Record<string, unknown>): Record<string, unknown> {
    return { "context.$": "$.begin.context", rollout: this.#rollout, ...extra };
  }

  /** The target's settings, for an analysis whose Jobs are created in its cluster; else nothing. */
  #jobTarget(analysis: AnalysisSpec): { target?: Record<string, unknown> } {
    return analysisUsesJob(analysis) ? this.#target : {};
  }

  #body(step: Step, i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return this.#payload({ stepIndex: i, step, ...extra });
  }

  #catchers(next = "Abort") {
    return [
      { ErrorEquals: [EXECUTION_SUPERSEDED], ResultPath: "$.error", Next: "Superseded" },
      { ErrorEquals: [ROLLOUT_ABORTED], ResultPath: "$.error", Next: next },
      { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: next },
    ];
  }

  /** Idempotent Lambda tasks: retried on anything but an abort. */
  #invoke(role: FunctionRole, body: Record<string, unknown>, next: string, extra: State = {}): State {
    return {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke",
      Parameters: { FunctionName: fn(role), Payload: body },
      ResultSelector: { "value.$": "$.Payload" },
      ResultPath: "$.last",
      Retry: [
        { ErrorEquals: [ROLLOUT_ABORTED, EXECUTION_SUPERSEDED, PAUSE_REQUESTED], MaxAttempts: 0 },
        LAMBDA_SERVICE_RETRY,
        HANDLER_FAULT_RETRY,
        { ErrorEquals: ["States.ALL"], IntervalSeconds: 2, MaxAttempts: 2, BackoffRate: 2 },
      ],
      Catch: this.#catchers(),
      Next: next,
      ...extra,
    };
  }

  /** Waits: the Lambda stores the token; a person, the Timer or the analysis sends it back. */
  #wait(role: FunctionRole, body: Record<string, unknown>, next: string, timeout?: number): State {
    return {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: { FunctionName: fn(role), Payload: { ...body, "taskToken.$": "$$.Task.Token" } },
      ResultPath: "$.last",
      ...(timeout !== undefined ? { TimeoutSeconds: Math.ceil(timeout) } : {}),
      Retry: [LAMBDA_SERVICE_RETRY, HANDLER_FAULT_RETRY],
      Catch: this.#catchers(),
      Next: next,
    };
  }

  /**
   * After a wait: `rollouts promote --full` skips every remaining step, not what guards the
   * promotion (the afterPromotion hook, the alarm check), unless `full` says where to go.
   */
  #fullChoice(name: string, next: string, full = this.#promoteEntry()): State {
    return {
      Type: "Choice",
      Choices: [
        {
          And: [
            { Variable: "$.last.outcome", IsPresent: true },
            { Variable: "$.last.outcome", StringEquals: "full" },
          ],
          Next: full,
        },
      ],
      Default: next,
      Comment: `${name}: promote --full skips the remaining steps`,
    };
  }

  /**
   * The readiness loop of `stem`: check, a Choice, a Wait and back; returns its entry. `before`
   * is a rule the Choice applies first once the candidate is ready (its condition and target).
   */
  #readiness(
    stem: string,
    next: string,
    stepIndex: number | null,
    before?: { rule: Record<string, unknown>; next: string },
  ): string {
    const ready = { Variable: "$.last.value.ready", BooleanEquals: true };
    this.states[`${stem}-CheckReady`] = this.#invoke(
      "checkReady",
      this.#payload({ stepIndex, ...this.#target }),
      `${stem}-Ready?`,
    );
    this.states[`${stem}-Ready?`] = {
      Type: "Choice",
      Choices: [
        // A rule that applies once ready goes first, its own condition joined to readiness.
        ...(before ? [{ And: [ready, before.rule], Next: before.next }] : []),
        { ...ready, Next: next },
      ],
      Default: `${stem}-WaitReady`,
    };
    this.states[`${stem}-WaitReady`] = {
      Type: "Wait",
      Seconds: READY_POLL_SECONDS,
      Next: `${stem}-CheckReady`,
    };
    return `${stem}-CheckReady`;
  }

  /**
   * A hold stops a step where it is: its Tasks catch `PauseRequested` into `<stem>-Held` (a
   * person's approval), then the step runs again from its entry (or `promote --full` skips on).
   */
  #holdable(stem: string, held: string, entry: string, stepIndex: number): void {
    for (const [name, state] of Object.entries(this.states)) {
      if (!(name === stem || name.startsWith(`${stem}-`)) || state.Type !== "Task") continue;
      const list = state.Catch as Array<{ ErrorEquals: string[] }>;
      const at = list.findIndex((c) => c.ErrorEquals.includes("States.ALL"));
      list.splice(at, 0, { ErrorEquals: [PAUSE_REQUESTED], ResultPath: "$.error", Next: held } as never);
    }
    this.states[held] = this.#wait(
      "await",
      this.#payload({ stepIndex, step: { kind: "approval", reason: "held" } }),
      `${held}-Next`,
    );
    this.states[`${held}-Next`] = this.#fullChoice(held, entry, stem === "Promote" ? entry : undefined);
  }
}

/**
 * Characters the definition has once deployed: its compact JSON (what the construct sends), each
 * `${...FunctionArn}` placeholder counted as the longest function ARN it may become.
 */
export function deployedDefinitionSize(definition: StateMachineDefinition): number {
  const text = JSON.stringify(definition);
  let size = text.length;
  for (const name of Object.values(FUNCTION_PLACEHOLDERS)) {
    const placeholder = `\${${name}}`;
    const uses = text.split(placeholder).length - 1;
    size += uses * (FUNCTION_ARN_MAX_CHARS - placeholder.length);
  }
  return size;
}

/** What Step Functions would refuse in a definition: its size, and timeouts past its maximum. */
export function definitionProblems(definition: StateMachineDefinition, file: string): Problem[] {
  const problems: Problem[] = [];
  const size = deployedDefinitionSize(definition);
  if (size > DEFINITION_MAX_CHARS) {
    problems.push({
      file,
      message: `the state machine definition would be ${size.toLocaleString("en-US")} characters once deployed, more than Step Functions' ${DEFINITION_MAX_CHARS.toLocaleString("en-US")}: use fewer steps or smaller analyses (each analysis step carries its templates, queries included)`,
    });
  }
  for (const [name, state] of Object.entries(definition.States)) {
    for (const field of ["TimeoutSeconds", "Seconds", "HeartbeatSeconds"] as const) {
      const value = state[field];
      if (typeof value === "number" && value > TIMEOUT_SECONDS_MAX) {
        problems.push({
          file,
          message: `state ${name}: ${field} ${value} is more than Step Functions' ${TIMEOUT_SECONDS_MAX.toLocaleString("en-US")}: shorten the step's waits`,
        });
      }
    }
  }
  return problems;
}
