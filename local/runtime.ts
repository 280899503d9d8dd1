import { pathToFileURL } from "node:url";
import { type Clock, isSettableClock, systemClock } from "../functions/clock.ts";
import { type FiringHandler, InProcessTimer } from "../functions/timer/in-process.ts";
import type { TimerFiring } from "../functions/timer/port.ts";
import { RolloutsError } from "../statemachine/errors.ts";
import { Activity } from "./asl/activity.ts";
import { type ExecutionDescription, LocalStepFunctions } from "./asl/engine.ts";
import { type ExtractedRule, type ExtractedStack, extractFunctionUrls, extractStack } from "./asl/extract.ts";
import { localFunctionArn, localStateMachineArn } from "./asl/intrinsics.ts";
import { TimerSleeper } from "./asl/sleeper.ts";
import { type Facade, type FacadeInterceptor, startFacade } from "./aws/facade.ts";
import { type LambdaHandler, LocalLambda } from "./aws/lambda.ts";
import { functionUrlRefs, type RunningFunctionUrl, startFunctionUrls } from "./aws/lambda-urls.ts";
import { LocalSageMaker } from "./aws/sagemaker.ts";
import { LocalScheduler } from "./aws/scheduler.ts";
import { installScopedEnv, uninstallScopedEnv } from "./aws/scoped-env.ts";
import { LocalEventBus, type PutEventsEntry, type PutEventsResult } from "./events/bus.ts";

/** How a function is bound to code: a handler, a factory given its env, or a module to import. */
export interface RuntimeFunction {
  /** The handler itself (runs with the function's env as `process.env`, see `aws/scoped-env.ts`). */
  handler?: LambdaHandler;
  /** Builds the handler from the function's env, once (the cold start). */
  factory?: (env: Readonly<Record<string, string>>) => LambdaHandler | Promise<LambdaHandler>;
  /**
   * A module to import at the cold start, inside the function's env: a TS entry such as
   * `functions/handlers/begin.ts` (fast path) or a bundled `cdk.out/asset.<hash>/index.js`.
   */
  module?: string;
  /** The export to call; default `handler`. */
  exportName?: string;
  /** Extra env for this function, over the template's. */
  env?: Record<string, string>;
}

/** A state machine given directly rather than through a template. */
export interface RuntimeDefinition {
  name: string;
  definition: Record<string, unknown>;
  /** `DefinitionSubstitutions`; by default every `${XxxFunctionArn}` left is not substituted. */
  substitutions?: Record<string, string>;
}

export interface StartRuntimeOptions {
  /** A synthesized CloudFormation template (the JSON object `cdk synth` writes). */
  template?: unknown;
  /** Resolver overrides for the template: logical id → `Ref` value, `Id.Attr` → `Fn::GetAtt` value. */
  refs?: Record<string, string>;
  /** What to run, already extracted (several templates merged, see `mergeStacks`): instead of `template`. */
  stack?: ExtractedStack;
  definitions?: RuntimeDefinition[];
  /**
   * Code for the functions, keyed by function name, logical id or ARN. Functions given here that
   * the template does not declare are registered too (name → `arn:aws:lambda:local:…:function:name`).
   */
  functions?: Map<string, RuntimeFunction> | Record<string, RuntimeFunction>;
  /** Extra EventBridge rules (the template's are added automatically). */
  rules?: ExtractedRule[];
  /**
   * The clock. A settable clock (`ManualClock`) runs the runtime in virtual time: nothing waits
   * on real timers, and `advanceTo`/`runUntilIdle`/`waitForExecution` move time. Any other clock
   * (default `systemClock`) runs in real time.
   */
  clock?: Clock;
  /** Env given to every function (e.g. `AWS_ENDPOINT_URL_DYNAMODB` of a dynalite). */
  env?: Record<string, string>;
  /** Region the SDK clients are told (`AWS_REGION`); ARNs always say `local`. */
  region?: string;
  /** SageMaker: how long an endpoint change takes, and container image → the URL serving it. */
  sagemaker?: { updateSeconds?: number; images?: Record<string, string> };
  /** Receives timer firings that are neither engine sleeps nor schedules (the handlers' own timer use). */
  onTimerFiring?: FiringHandler;
  /** Sees every call to the AWS API façade and may refuse it (fault injection, request counts). */
  intercept?: FacadeInterceptor;
  /** The engine's jitter source for `JitterStrategy: FULL` retries, one per execution (default `Math.random`). */
  random?: (executionArn: string) => () => number;
}

/** A running embedded runtime. */
export interface Runtime {
  facadeUrl: string;
  /** What to give handlers and the CLI: `AWS_ENDPOINT_URL_*` to the façade and dummy credentials. */
  env: Record<string, string>;
  clock: Clock;
  /** The in-process timer every wait of the runtime goes through (shared with the handlers' Timer). */
  timer: InProcessTimer;
  stack: ExtractedStack | undefined;
  sfn: LocalStepFunctions;
  bus: LocalEventBus;
  lambda: LocalLambda;
  scheduler: LocalScheduler;
  /** The local SageMaker behind `AWS_ENDPOINT_URL_SAGEMAKER` and `_SAGEMAKER_RUNTIME`. */
  sagemaker: LocalSageMaker;
  /** The template's Function URLs (`AWS::Lambda::Url`), each served on this machine. */
  functionUrls: RunningFunctionUrl[];
  /** The ARN of a state machine by name or logical id. */
  stateMachineArn(nameOrLogicalId: string): string;
  putEvents(entries: PutEventsEntry[]): Promise<PutEventsResult>;
  startExecution(input: { stateMachineArn: string; name?: string; input?: unknown }): {
    executionArn: string;
  };
  /**
   * Resolves when the execution has ended. In virtual time it drives the clock from due timer
   * to due timer, and throws `ExecutionStuckError` if the execution waits on a task token while
   * nothing is scheduled (nobody could ever complete it).
   */
  waitForExecution(executionArn: string): Promise<ExecutionDescription>;
  /** Resolves when no execution, invocation or request is in flight. */
  settle(): Promise<void>;
  /** Virtual time: fires everything due up to `epochMs`, settling after each firing. */
  advanceTo(epochMs: number): Promise<void>;
  advanceBy(ms: number): Promise<void>;
  /** Virtual time: fires timers until none is pending. */
  runUntilIdle(): Promise<void>;
  close(): Promise<void>;
}

/** A virtual-time wait that can never end: the execution waits on a token nobody will send. */
export class ExecutionStuckError extends RolloutsError {
  override readonly name = "ExecutionStuckError";
}

/** The local services and the wiring between them, before the façade is in front of them. */
interface Services {
  activity: Activity;
  timer: InProcessTimer;
  sleeper: TimerSleeper;
  lambda: LocalLambda;
  sfn: LocalStepFunctions;
  bus: LocalEventBus;
  scheduler: LocalScheduler;
}

/**
 * Starts the embedded runtime: the state machines of a synthesized template (or given
 * directly) on the local engine, its functions in-process, its EventBridge rules on the local bus,
 * Scheduler on the in-process timer, and the AWS API façade in front of them all.
 */
export async function startRuntime(options: StartRuntimeOptions = {}): Promise<Runtime> {
  const clock = options.clock ?? systemClock;
  const virtual = isSettableClock(clock);
  const services = buildServices(clock, options.onTimerFiring, options.random);
  const { timer, sfn, bus, lambda, scheduler } = services;
  const sagemaker = new LocalSageMaker({ clock, ...options.sagemaker });
  // Refused (BUFFERED, …) before anything starts.
  const urlResources =
    options.template === undefined ? [] : extractFunctionUrls(options.template, { refs: options.refs ?? {} });

  installScopedEnv();
  let facade: Facade;
  try {
    facade = await startFacade({
      ...services,
      sagemaker,
      ...(options.intercept ? { intercept: options.intercept } : {}),
    });
  } catch (error) {
    uninstallScopedEnv();
    throw error;
  }
  const env = runtimeEnv(facade.url, options);
  let urls: Awaited<ReturnType<typeof startFunctionUrls>> | undefined;
  let stack: ExtractedStack | undefined;
  try {
    // Started before the rest is extracted: `Fn::GetAtt [<Url>, FunctionUrl]` is their address.
    urls = await startFunctionUrls(urlResources, lambda, {
      credentials: {
        accessKeyId: env.AWS_ACCESS_KEY_ID ?? "",
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? "",
        ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
      },
      region: env.AWS_REGION ?? "",
    });
    stack =
      options.stack ??
      (options.template === undefined
        ? undefined
        : extractStack(options.template, { refs: { ...functionUrlRefs(urls.running), ...options.refs } }));
  } catch (error) {
    await urls?.close();
    await facade.close();
    uninstallScopedEnv();
    throw error;
  }
  const functionUrls = urls.running;
  const closeUrls = urls.close;
  registerFunctions(lambda, stack, options.functions, env);
  const byName = registerStateMachines(sfn, stack, options.definitions ?? []);
  for (const rule of [...(stack?.rules ?? []), ...(options.rules ?? [])]) bus.addRule(rule);
  for (const destination of stack?.apiDestinations ?? []) bus.addApiDestination(destination);
  if (!virtual) timer.start();

  let closed = false;
  return {
    facadeUrl: facade.url,
    env,
    clock,
    timer,
    stack,
    sfn,
    bus,
    lambda,
    scheduler,
    sagemaker,
    functionUrls,
    stateMachineArn(nameOrLogicalId) {
      return byName.get(nameOrLogicalId) ?? localStateMachineArn(nameOrLogicalId);
    },
    putEvents: (entries) => bus.putEvents(entries),
    startExecution(input) {
      return sfn.startExecution({
        stateMachineArn: input.stateMachineArn,
        ...(input.name === undefined ? {} : { name: input.name }),
        input: typeof input.input === "string" ? input.input : JSON.stringify(input.input ?? {}),
      });
    },
    ...timeDriver(services, clock, virtual),
    async close() {
      if (closed) return;
      closed = true;
      timer.stop();
      await closeUrls();
      await sfn.close();
      await facade.close();
      uninstallScopedEnv();
    },
  };
}

/**
 * The engine, Lambda, bus and Scheduler over one activity counter and one in-process timer: the
 * bus starts executions and invokes functions, Scheduler fires into either, and every timer
 * firing goes to the engine's sleeps, then the schedules, then `onTimerFiring`.
 */
function buildServices(
  clock: Clock,
  onTimerFiring: FiringHandler | undefined,
  random: StartRuntimeOptions["random"],
): Services {
  const activity = new Activity();
  const timer = new InProcessTimer({ clock });
  const sleeper = new TimerSleeper(timer, clock);
  const lambda = new LocalLambda({ activity });
  const sfn = new LocalStepFunctions({
    sleeper,
    activity,
    invoke: (name, payload) => lambda.invoke(name, payload),
    ...(random ? { random } : {}),
  });
  const bus = new LocalEventBus({
    clock,
    targets: {
      startExecution: (stateMachineArn, input) => {
        sfn.startExecution({ stateMachineArn, input });
      },
      invokeFunction: (arn, event) => {
        void lambda.invoke(arn, event);
      },
    },
  });
  const scheduler = new LocalScheduler({
    timer,
    now: () => clock.now(),
    invoke: async (targetArn, input) => {
      if (targetArn.includes(":stateMachine:")) {
        sfn.startExecution({ stateMachineArn: targetArn, input });
        return;
      }
      const outcome = await lambda.invoke(targetArn, JSON.parse(input));
      if (!outcome.ok) throw new Error(`${outcome.error.errorType}: ${outcome.error.errorMessage}`);
    },
  });
  timer.setHandler(async (firing: TimerFiring) => {
    if (sleeper.deliver(firing)) return;
    if (await scheduler.deliver(firing)) return;
    await onTimerFiring?.(firing);
  });
  return { activity, timer, sleeper, lambda, sfn, bus, scheduler };
}

/** The env of every function and of the CLI: the SDK pointed at the façade, dummy credentials. */
function runtimeEnv(
  facadeUrl: string,
  options: Pick<StartRuntimeOptions, "region" | "env">,
): Record<string, string> {
  const region = options.region ?? "us-east-1";
  return {
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
    AWS_SESSION_TOKEN: "local",
    AWS_ENDPOINT_URL_SFN: facadeUrl,
    AWS_ENDPOINT_URL_EVENTBRIDGE: facadeUrl,
    AWS_ENDPOINT_URL_LAMBDA: facadeUrl,
    AWS_ENDPOINT_URL_SCHEDULER: facadeUrl,
    AWS_ENDPOINT_URL_SAGEMAKER: facadeUrl,
    AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME: facadeUrl,
    ...options.env,
  };
}

/**
 * Registers the template's functions with the code bound to them (by ARN, name or logical id),
 * then every binding the template does not declare, under its own name.
 */
function registerFunctions(
  lambda: LocalLambda,
  stack: ExtractedStack | undefined,
  functions: StartRuntimeOptions["functions"],
  env: Record<string, string>,
): void {
  const bindings = new Map<string, RuntimeFunction>(
    functions instanceof Map ? functions : Object.entries(functions ?? {}),
  );
  const used = new Set<string>();
  const binding = (...keys: string[]): RuntimeFunction | undefined => {
    for (const key of keys) {
      const found = bindings.get(key);
      if (found !== undefined) {
        used.add(key);
        return found;
      }
    }
    return undefined;
  };
  for (const fn of stack?.functions ?? []) {
    const bound = binding(fn.arn, fn.name, fn.logicalId);
    lambda.register({
      name: fn.name,
      arn: fn.arn,
      env: { ...env, ...fn.env, ...bound?.env },
      ...(fn.timeoutSeconds === undefined ? {} : { timeoutSeconds: fn.timeoutSeconds }),
      load: loaderFor(bound, fn.name),
    });
  }
  for (const [key, bound] of bindings) {
    if (used.has(key)) continue;
    const name = key.startsWith("arn:") ? (key.split(":function:")[1] ?? key) : key;
    lambda.register({
      name,
      arn: localFunctionArn(name),
      env: { ...env, ...bound.env },
      load: loaderFor(bound, name),
    });
  }
}

/** Creates the template's state machines and the given ones; answers name or logical id → ARN. */
function registerStateMachines(
  sfn: LocalStepFunctions,
  stack: ExtractedStack | undefined,
  definitions: readonly RuntimeDefinition[],
): Map<string, string> {
  const byName = new Map<string, string>();
  for (const machine of stack?.stateMachines ?? []) {
    sfn.createStateMachine({
      name: machine.name,
      arn: machine.arn,
      type: machine.type,
      definition: machine.definition,
      ...(machine.tags ? { tags: machine.tags } : {}),
    });
    byName.set(machine.name, machine.arn);
    byName.set(machine.logicalId, machine.arn);
  }
  for (const given of definitions) {
    const text = JSON.stringify(given.definition).replace(/\$\{([^}]+)\}/g, (whole, key: string) => {
      const value = given.substitutions?.[key];
      return value === undefined ? whole : value;
    });
    const record = sfn.createStateMachine({
      name: given.name,
      definition: JSON.parse(text) as Record<string, unknown>,
    });
    byName.set(given.name, record.stateMachineArn);
  }
  return byName;
}

/** How a caller moves time: settling, and in virtual time driving the clock from timer to timer. */
function timeDriver(
  { activity, timer, sfn }: Services,
  clock: Clock,
  virtual: boolean,
): Pick<Runtime, "waitForExecution" | "settle" | "advanceTo" | "advanceBy" | "runUntilIdle"> {
  const settle = () => activity.idle();
  const requireVirtual = (what: string) => {
    if (!virtual) throw new TypeError(`${what} runs in virtual time: start the runtime with a ManualClock`);
  };
  const advanceTo = async (epochMs: number) => {
    requireVirtual("advanceTo");
    for (;;) {
      await settle();
      const next = timer.nextDueAt();
      if (next === undefined || next > epochMs) break;
      await timer.advanceTo(next);
    }
    await timer.advanceTo(epochMs);
    await settle();
  };
  return {
    async waitForExecution(executionArn) {
      if (!virtual) return sfn.waitForCompletion(executionArn);
      let fired = 0;
      for (;;) {
        await settle();
        const description = sfn.describeExecution(executionArn);
        if (description.status !== "RUNNING") return description;
        const next = timer.nextDueAt();
        if (next === undefined) {
          const tokens = sfn.openTokens(executionArn);
          throw new ExecutionStuckError(
            `${executionArn} is still running and nothing is scheduled: ` +
              (tokens.length > 0
                ? `it waits on ${tokens.length} task token(s) nobody will send`
                : "it is stuck"),
          );
        }
        if (++fired > 100_000)
          throw new ExecutionStuckError(`${executionArn}: timers keep firing without an end`);
        await timer.advanceTo(next);
      }
    },
    settle,
    advanceTo,
    advanceBy: (ms) => advanceTo(clock.now() + ms),
    async runUntilIdle() {
      requireVirtual("runUntilIdle");
      for (let fired = 0; ; fired++) {
        await settle();
        const next = timer.nextDueAt();
        if (next === undefined) return;
        if (fired > 100_000) throw new ExecutionStuckError("timers keep firing without becoming idle");
        await timer.advanceTo(next);
      }
    },
  };
}

function loaderFor(bound: RuntimeFunction | undefined, name: string) {
  return async (env: Readonly<Record<string, string>>): Promise<LambdaHandler> => {
    if (bound?.handler !== undefined) return bound.handler;
    if (bound?.factory !== undefined) return bound.factory(env);
    if (bound?.module !== undefined) {
      const url = pathToFileURL(bound.module);
      // One module instance per function: a bundled asset then shares nothing with another function.
      url.searchParams.set("function", name);
      const loaded = (await import(url.href)) as Record<string, unknown>;
      const exported = loaded[bound.exportName ?? "handler"];
      if (typeof exported !== "function") {
        throw new Error(`${bound.module} has no exported function ${bound.exportName ?? "handler"}`);
      }
      return exported as LambdaHandler;
    }
    const error = new Error(`no code is bound to function ${name}: pass it in startRuntime({functions})`);
    error.name = "Runtime.HandlerNotFound";
    throw error;
  };
}
