import { SFNClient } from "@aws-sdk/client-sfn";
import { SfnTaskTokens, type TaskTokens, type TokenDelivery } from "../../functions/abort/task-tokens.ts";
import type { AlarmReader } from "../../functions/alarms/port.ts";
import { ManualClock } from "../../functions/clock.ts";
import { RecordingEventPublisher } from "../../functions/events/memory.ts";
import type { MetricProvider } from "../../functions/metrics/port.ts";
import { MemoryRolloutStore } from "../../functions/store/memory.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { TimerFiring } from "../../functions/timer/port.ts";
import type { TrafficTarget } from "../../functions/traffic/port.ts";
import { SfnExecutions } from "../../functions/trigger/executions.ts";
import {
  type RolloutTriggerOutcome,
  startRollout,
  type TriggerDeps,
} from "../../functions/trigger/start-rollout.ts";
import type { WorkflowDeps } from "../../functions/workflow/deps.ts";
import { RecordingMetricsSink } from "../../functions/workflow/metrics.ts";
import { localFunctionArn } from "../../local/asl/intrinsics.ts";
import { SLEEP_KEY_PREFIX } from "../../local/asl/sleeper.ts";
import type { LambdaHandler } from "../../local/aws/lambda.ts";
import { SCHEDULE_KEY_PREFIX } from "../../local/aws/scheduler.ts";
import { type HandlerDeps, handlerFactories } from "../../local/handler-factories.ts";
import { type Runtime, type RuntimeFunction, startRuntime } from "../../local/runtime.ts";
import { FUNCTION_PLACEHOLDERS } from "../../statemachine/compile.ts";
import {
  alarmNameOf,
  type CompileOptions,
  compile,
  type RolloutSpec,
  type StateMachineDefinition,
} from "../../statemachine/index.ts";
import { AsyncDelivery } from "./async-delivery.ts";
import { ecrPush } from "./ecr.ts";

/** The functions a compiled rollout calls, plus `resume` (the Timer's target). */
export type RolloutFunction = keyof typeof FUNCTION_PLACEHOLDERS | "resume";

/** Every function a compiled rollout's runtime registers, by the name its ARN ends with. */
const ROLLOUT_FUNCTIONS: readonly RolloutFunction[] = [
  ...(Object.keys(FUNCTION_PLACEHOLDERS) as Array<keyof typeof FUNCTION_PLACEHOLDERS>),
  "resume",
];

/** `definitionSubstitutions` pointing every placeholder at the local function of that role. */
export function functionSubstitutions(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(FUNCTION_PLACEHOLDERS).map(([role, placeholder]) => [placeholder, localFunctionArn(role)]),
  );
}

/**
 * The task-token port as it ships (`SfnTaskTokens` over the SDK client, here pointed at the
 * runtime's façade), remembering every answer Step Functions accepted.
 */
export class RecordedTaskTokens implements TaskTokens {
  readonly successes: Array<{ token: string; output: unknown }> = [];
  readonly failures: Array<{ token: string; error: string; cause: string }> = [];

  constructor(readonly inner: TaskTokens) {}

  async sendSuccess(token: string, output: unknown): Promise<TokenDelivery> {
    const delivery = await this.inner.sendSuccess(token, output);
    if (delivery.delivered) this.successes.push({ token, output });
    return delivery;
  }

  async sendFailure(token: string, error: string, cause: string): Promise<TokenDelivery> {
    const delivery = await this.inner.sendFailure(token, error, cause);
    if (delivery.delivered) this.failures.push({ token, error, cause });
    return delivery;
  }
}

/** How an execution ended, or where it waits for a person. */
export type Ending =
  | { state: "Healthy" }
  /** The Abort state ran; `message` is what it answered (and recorded on the rollout). */
  | { state: "Aborted"; message: string }
  | { state: "Superseded" }
  /** Any other end (`BeginFailed`, `AbortFailed`, a time-out). */
  | { state: "Failed"; error: string; cause: string }
  /** Waiting in the Task state `at` on a token nobody but a person can answer. */
  | { state: "Waiting"; at: string };

export interface EmbeddedRolloutOptions {
  /** The rollout; compiled with `compile(spec, {target, readinessChecks})`. */
  spec: RolloutSpec;
  /** The traffic target's settings embedded in the Tasks; default `FAKE_TARGET`. */
  target?: Record<string, unknown>;
  readinessChecks?: boolean;
  /** Every target the Tasks carry is served by this router. */
  router: TrafficTarget;
  providers: MetricProvider;
  /** Default: a `ManualClock` at `T0`. */
  clock?: ManualClock;
  /** Default: a new store on the clock; several rollouts may share one (one table, many rollouts). */
  store?: MemoryRolloutStore;
  /** The ECR repository the trigger routes to this rollout; default the rollout's name. */
  repository?: string;
  /** Wraps a function's handler (to inject a failure, a duplicate delivery, a race). */
  wrap?: (name: RolloutFunction, handler: LambdaHandler) => LambdaHandler;
  /**
   * How a Timer firing reaches resume: `once` (the default: one invocation, its result in
   * `resumed`), or `async`, as on AWS (Lambda's asynchronous retries, then the redelivery queue:
   * `test/support/async-delivery.ts`, its record in `delivery`).
   */
  delivery?: "once" | "async";
  /** The CloudWatch alarms the step boundaries read (the spec's `alarms`). */
  alarms?: AlarmReader;
  /**
   * Hook functions by name, registered in the runtime's Lambda service as
   * `arn:aws:lambda:local:…:function:<name>`; the hook function invokes them asynchronously.
   */
  hookFunctions?: Record<string, LambdaHandler>;
}

/** A compiled rollout running in the embedded runtime, with in-memory adapters behind its functions. */
export interface EmbeddedRollout {
  runtime: Runtime;
  clock: ManualClock;
  name: string;
  stateMachineArn: string;
  definition: StateMachineDefinition;
  /**
   * The ports every function is built over (one object, read at each invocation: a test may
   * replace a port, e.g. wrap `deps.timer.schedule` to observe each wait).
   */
  deps: WorkflowDeps;
  store: MemoryRolloutStore;
  tokens: RecordedTaskTokens;
  events: RecordingEventPublisher;
  metrics: RecordingMetricsSink;
  /** Each Timer firing's `resume` result (or `error: …`), in order, when delivered `once`. */
  resumed: string[];
  /** The asynchronous delivery's record (failed attempts, redelivered and lost firings), when `async`. */
  delivery: AsyncDelivery;
  /** Every target settings object the functions were given. */
  targets: unknown[];
  /** What the trigger Lambda does with an ECR push of this image (records it, starts the execution). */
  push(image: { digest: string; tag: string | null }): Promise<RolloutTriggerOutcome>;
  /** The execution the last accepted push started. */
  executionArnOf(outcome: RolloutTriggerOutcome): string;
  /**
   * Runs an execution in virtual time until it ends, firing every timer as it falls due. When it
   * waits on a token that only a person can answer, `decide` is called (return true after
   * answering it); without `decide`, or when it returns false, the run stops there as `Waiting`.
   */
  run(
    executionArn: string,
    options?: { decide?: (at: string, item: RolloutItem) => Promise<boolean> },
  ): Promise<Ending>;
  /** `push` then `run`. */
  rollOut(
    image: { digest: string; tag: string | null },
    options?: { decide?: (at: string, item: RolloutItem) => Promise<boolean> },
  ): Promise<Ending>;
  /** The Task state the execution is in now (the last one entered). */
  currentState(executionArn: string): string | undefined;
  /** Every failed Task attempt of the execution, in order: its state, error and the error's message. */
  failedTasks(executionArn: string): Array<{ state: string; error: string; message: string }>;
  /** What a state passed on when it last exited (its output, parsed), or undefined. */
  stateOutput(executionArn: string, state: string): Record<string, unknown> | undefined;
  /** The rollout item (throws when there is none). */
  item(): Promise<RolloutItem>;
  /** The firings the functions scheduled on the Timer that are still pending (not the engine's own). */
  firings(): TimerFiring[];
  /** Fires every pending timer, the functions' own included, until none is left. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** 2026-11-30T12:00:00Z: where the tests' virtual time starts. */
export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

/** Target settings no real adapter claims (the router given to the helper serves them). */
export const FAKE_TARGET = { type: "fake", name: "checkout" };

/**
 * Compiles `spec` as the construct does and runs it in the embedded runtime (`local/runtime.ts`:
 * the ASL engine, the Lambda service, the façade for the SDK clients) in virtual time. The
 * functions are the shipped handlers (`createHandler` of each), built over in-memory adapters: the
 * store, lifecycle events and metrics in memory, the Timer on the runtime's in-process timer
 * (whose firings go to the `resume` function), task tokens and executions through the real SDK
 * adapters against the façade, and the router and providers the test gives.
 */
export async function startEmbeddedRollout(options: EmbeddedRolloutOptions): Promise<EmbeddedRollout> {
  const clock = options.clock ?? new ManualClock(T0);
  const spec = options.spec;
  const target = options.target ?? FAKE_TARGET;
  const compileOptions: CompileOptions = {
    target,
    ...(options.readinessChecks ? { readinessChecks: true } : {}),
  };
  const definition = compile(spec, compileOptions);
  const store = options.store ?? new MemoryRolloutStore({ clock });
  const events = new RecordingEventPublisher();
  const metrics = new RecordingMetricsSink();
  const resumed: string[] = [];
  const targets: unknown[] = [];
  // Filled in once the runtime is up: no function runs before.
  let runtime!: Runtime;
  const deps = {
    store,
    events,
    clock,
    metrics,
    providers: options.providers,
    targetFor: (settings: unknown) => {
      targets.push(settings);
      return options.router;
    },
    ...(options.alarms ? { alarms: options.alarms } : {}),
    hooks: {
      invoke: async (functionArn: string, payload: unknown) => {
        if (!runtime.lambda.has(functionArn)) throw new Error(`Function not found: ${functionArn}`);
        void runtime.lambda.invoke(functionArn, payload);
      },
    },
  } as Partial<WorkflowDeps> as WorkflowDeps;
  // The shipped handlers from the runtime's one table, over these ports; `push` calls the
  // trigger's domain itself, so it needs no function.
  const handlerDeps: HandlerDeps = { workflow: () => deps, trigger: () => triggerDeps };
  const functions: Record<string, RuntimeFunction> = {};
  for (const [name, handler] of Object.entries(options.hookFunctions ?? {})) functions[name] = { handler };
  for (const name of ROLLOUT_FUNCTIONS) {
    const handler = handlerFactories[name](handlerDeps);
    functions[name] = { handler: options.wrap ? options.wrap(name, handler) : handler };
  }
  const delivery = new AsyncDelivery({
    lambda: () => runtime.lambda,
    timer: () => runtime.timer,
    now: () => clock.now(),
    functionArn: localFunctionArn("resume"),
  });
  runtime = await startRuntime({
    clock,
    definitions: [
      { name: spec.name, definition: definition as never, substitutions: functionSubstitutions() },
    ],
    functions,
    onTimerFiring: async (firing) => {
      if (options.delivery === "async") return delivery.deliver(firing);
      const outcome = await runtime.lambda.invoke(localFunctionArn("resume"), firing);
      resumed.push(
        outcome.ok
          ? String((outcome.payload as { result: unknown }).result)
          : `error ${outcome.error.errorType}: ${outcome.error.errorMessage}`,
      );
    },
  });
  const sfnClient = new SFNClient({
    endpoint: runtime.facadeUrl,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const tokens = new RecordedTaskTokens(new SfnTaskTokens(sfnClient));
  deps.tokens = tokens;
  deps.timer = runtime.timer;
  const stateMachineArn = runtime.stateMachineArn(spec.name);
  const repository = options.repository ?? spec.name;
  const triggerDeps: TriggerDeps = {
    store,
    executions: new SfnExecutions(sfnClient),
    tokens,
    clock,
    events,
    routes: [
      {
        rollout: spec.name,
        repository,
        stateMachineArn,
        ...(spec.alarms ? { alarms: spec.alarms.map(alarmNameOf) } : {}),
      },
    ],
  };

  let pushes = 0;
  const item = async () => {
    const found = await store.get(spec.name);
    if (!found) throw new Error(`no rollout item ${spec.name}`);
    return found;
  };
  const currentState = (executionArn: string) => {
    const entered = runtime.sfn
      .getExecutionHistory(executionArn)
      .filter((e) => e.type.endsWith("StateEntered"))
      .at(-1);
    return entered?.stateEnteredEventDetails?.name as string | undefined;
  };
  const failedTasks = (executionArn: string) => {
    const out: Array<{ state: string; error: string; message: string }> = [];
    let state = "";
    for (const e of runtime.sfn.getExecutionHistory(executionArn)) {
      if (e.type.endsWith("StateEntered")) state = String(e.stateEnteredEventDetails?.name);
      if (e.type !== "TaskFailed") continue;
      const details = e.taskFailedEventDetails ?? {};
      let message = String(details.cause ?? "");
      try {
        message = String((JSON.parse(message) as { errorMessage?: unknown }).errorMessage ?? message);
      } catch {
        // A cause that is not a Lambda error payload is its own message.
      }
      out.push({ state, error: String(details.error), message });
    }
    return out;
  };
  const stateOutput = (executionArn: string, state: string) => {
    const exited = runtime.sfn
      .getExecutionHistory(executionArn)
      .filter((e) => e.type.endsWith("StateExited") && e.stateExitedEventDetails?.name === state)
      .at(-1);
    const output = exited?.stateExitedEventDetails?.output;
    return typeof output === "string" ? (JSON.parse(output) as Record<string, unknown>) : undefined;
  };
  const ending = (executionArn: string): Ending | undefined => {
    const described = runtime.sfn.describeExecution(executionArn);
    if (described.status === "RUNNING") return undefined;
    if (described.status === "SUCCEEDED") return { state: "Healthy" };
    const error = described.error ?? described.status;
    if (error === "ExecutionSuperseded") return { state: "Superseded" };
    if (error === "RolloutAborted") {
      const output = stateOutput(executionArn, "Abort") as
        | { last?: { value?: { message?: string } } }
        | undefined;
      return { state: "Aborted", message: String(output?.last?.value?.message) };
    }
    return { state: "Failed", error, cause: described.cause ?? "" };
  };
  const run: EmbeddedRollout["run"] = async (executionArn, runOptions = {}) => {
    for (let fired = 0; fired < 100_000; fired++) {
      await runtime.settle();
      const ended = ending(executionArn);
      if (ended) return ended;
      const next = runtime.timer.nextDueAt();
      if (next !== undefined) {
        await runtime.advanceTo(next);
        continue;
      }
      const at = currentState(executionArn) ?? "?";
      if (!runOptions.decide || !(await runOptions.decide(at, await item()))) return { state: "Waiting", at };
    }
    throw new Error(`${executionArn}: timers keep firing without an end`);
  };
  const executionArnOf = (outcome: RolloutTriggerOutcome) => {
    if (outcome.outcome !== "started" && outcome.outcome !== "duplicate")
      throw new Error(`the push started nothing: ${outcome.message}`);
    return outcome.outcome === "started"
      ? outcome.executionArn
      : `${stateMachineArn.replace(":stateMachine:", ":execution:")}:${outcome.executionName}`;
  };
  const push: EmbeddedRollout["push"] = async (image) => {
    const n = ++pushes;
    const result = await startRollout(
      triggerDeps,
      ecrPush({
        id: `push-${n}`,
        time: new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
        repository,
        digest: image.digest,
        tag: image.tag,
      }),
    );
    if (result.kind !== "handled" || result.rollouts.length !== 1)
      throw new Error(`the push was not handled: ${JSON.stringify(result)}`);
    return result.rollouts[0] as RolloutTriggerOutcome;
  };
  return {
    runtime,
    clock,
    name: spec.name,
    stateMachineArn,
    definition,
    deps,
    store,
    tokens,
    events,
    metrics,
    resumed,
    delivery,
    targets,
    push,
    executionArnOf,
    run,
    rollOut: async (image, runOptions) => run(executionArnOf(await push(image)), runOptions),
    currentState,
    failedTasks,
    stateOutput,
    item,
    firings: () =>
      runtime.timer
        .pending()
        .filter((f) => !f.key.startsWith(SLEEP_KEY_PREFIX) && !f.key.startsWith(SCHEDULE_KEY_PREFIX)),
    idle: () => runtime.runUntilIdle(),
    close: async () => {
      sfnClient.destroy();
      await runtime.close();
    },
  };
}
