import { randomUUID } from "node:crypto";
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import { JSONPath } from "jsonpath-plus";
import { RolloutsError } from "../../statemachine/errors.ts";
import { Activity } from "./activity.ts";
import { type LambdaErrorPayload, lambdaTaskFailure, TaskFailure } from "./errors.ts";
import { ExecutionHistory, type HistoryEvent } from "./history.ts";
import { LOCAL_ACCOUNT, LOCAL_REGION, localStateMachineArn } from "./intrinsics.ts";
import { ensurePromiseWithResolvers } from "./polyfill.ts";
import { CONTEXT_START_TIME, type PreparedDefinition, prepareDefinition, type StateInfo } from "./prepare.ts";
import { RetryState } from "./retry.ts";
import type { Sleeper } from "./sleeper.ts";
import { TaskTokenRegistry } from "./tokens.ts";

ensurePromiseWithResolvers();

/** What invoking a function gave: its JSON result, or the error payload Lambda reports. */
export type InvokeOutcome = { ok: true; payload: unknown } | { ok: false; error: LambdaErrorPayload };

/** How the engine calls a Lambda function (the local Lambda service). */
export type InvokeFunction = (functionNameOrArn: string, payload: unknown) => Promise<InvokeOutcome>;

export type ExecutionStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "ABORTED";

/** `DescribeExecution`'s answer, dates in epoch ms. */
export interface ExecutionDescription {
  executionArn: string;
  stateMachineArn: string;
  name: string;
  status: ExecutionStatus;
  startDate: number;
  stopDate?: number;
  input: string;
  output?: string;
  error?: string;
  cause?: string;
}

/** A registered state machine. */
export interface StateMachineRecord {
  stateMachineArn: string;
  name: string;
  type: "STANDARD" | "EXPRESS";
  creationDate: number;
  definition: Record<string, unknown>;
  /** Its tags (`ListTagsForResource`). */
  tags?: Record<string, string>;
}

/** The Step Functions errors the façade returns, by their AWS names. */
export type SfnErrorName =
  | "ExecutionAlreadyExists"
  | "ExecutionDoesNotExist"
  | "StateMachineDoesNotExist"
  | "StateMachineAlreadyExists"
  | "InvalidName"
  | "InvalidArn"
  | "InvalidDefinition"
  | "InvalidExecutionInput"
  | "InvalidOutput";

/** A Step Functions API call refused, with the error name the SDK maps to its exception class. */
export class SfnError extends RolloutsError {
  override readonly name: SfnErrorName;

  constructor(name: SfnErrorName, message: string) {
    super(message);
    this.name = name;
  }
}

export interface LocalStepFunctionsOptions {
  sleeper: Sleeper;
  invoke: InvokeFunction;
  /** Shared with the rest of the runtime so virtual time only moves when everything is parked. */
  activity?: Activity;
  /**
   * Jitter source for `JitterStrategy: FULL` back-off: a generator for each execution, made once
   * from its ARN, so the back-offs an execution draws do not depend on what other executions drew
   * (a seeded one repeats a run exactly). Default: `Math.random` for every execution.
   */
  random?: (executionArn: string) => () => number;
}

interface Compiled {
  prepared: PreparedDefinition;
  machine: StateMachine;
}

interface Execution {
  description: ExecutionDescription;
  history: ExecutionHistory;
  /** Aborted when the execution ends: cancels its sleeps and token waits. */
  controller: AbortController;
  abortRun: (() => void) | undefined;
  done: Promise<void>;
  currentToken: string | undefined;
  tokens: Set<string>;
  retry: { state: string; retries: RetryState; pending: boolean } | undefined;
  /** This execution's jitter source. */
  random: () => number;
  closed: boolean;
}

interface LibraryEvent {
  type: string;
  state?: { name: string; type: string; input: unknown; output?: unknown };
}

/** Validated state machines, by definition text: validation costs hundreds of ms. */
const compiledCache = new Map<string, Compiled>();

const LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke";
const LAMBDA_INVOKE_TOKEN = "arn:aws:states:::lambda:invoke.waitForTaskToken";
/** Starts another state machine's execution and waits for it (output as JSON). */
const START_EXECUTION_SYNC2 = "arn:aws:states:::states:startExecution.sync:2";

/**
 * Step Functions on one machine: runs the synthesized ASL with `aws-local-stepfunctions` and adds
 * what that library lacks (the `lambda:invoke` result shape, `.waitForTaskToken`, Lambda errors
 * as `Error`/`Cause`, task/heartbeat/execution timeouts and `Wait` on an injectable clock,
 * back-off in virtual time, named idempotent executions, stop, and an AWS-shaped history).
 */
export class LocalStepFunctions {
  readonly tokens: TaskTokenRegistry;
  /**
   * Asynchronous invocations (`lambda:invoke` with `InvocationType: Event`) whose function threw:
   * on AWS, Lambda's own retries and the function's on-failure destination take them.
   */
  readonly asyncInvokeFailures: Array<{ functionName: string; error: LambdaErrorPayload }> = [];
  readonly #sleeper: Sleeper;
  readonly #invoke: InvokeFunction;
  readonly #activity: Activity;
  readonly #random: (executionArn: string) => () => number;
  readonly #machines = new Map<string, StateMachineRecord & { compiled: Compiled }>();
  readonly #executions = new Map<string, Execution>();

  constructor(options: LocalStepFunctionsOptions) {
    this.#sleeper = options.sleeper;
    this.#invoke = options.invoke;
    this.#activity = options.activity ?? new Activity();
    this.#random = options.random ?? (() => Math.random);
    this.tokens = new TaskTokenRegistry(() => this.#sleeper.now());
  }

  /** Registers a state machine; its definition is validated once per distinct definition. */
  createStateMachine(input: {
    name: string;
    definition: Record<string, unknown>;
    arn?: string;
    type?: "STANDARD" | "EXPRESS";
    tags?: Record<string, string>;
  }): StateMachineRecord {
    const arn = input.arn ?? localStateMachineArn(input.name);
    if (this.#machines.has(arn))
      throw new SfnError("StateMachineAlreadyExists", `State Machine Already Exists: '${arn}'`);
    const key = JSON.stringify(input.definition);
    let compiled = compiledCache.get(key);
    if (compiled === undefined) {
      const prepared = prepareDefinition(input.definition);
      let machine: StateMachine;
      try {
        machine = new StateMachine(prepared.engine as unknown as StateMachineDefinition, {
          validationOptions: { checkArn: true, checkPaths: true },
        });
      } catch (error) {
        throw new SfnError("InvalidDefinition", `${input.name}: ${(error as Error).message}`);
      }
      compiled = { prepared, machine };
      compiledCache.set(key, compiled);
    }
    const record = {
      stateMachineArn: arn,
      name: input.name,
      type: input.type ?? "STANDARD",
      creationDate: this.#sleeper.now(),
      definition: input.definition,
      ...(input.tags ? { tags: input.tags } : {}),
    };
    this.#machines.set(arn, { ...record, compiled });
    return record;
  }

  listStateMachines(): StateMachineRecord[] {
    return [...this.#machines.values()].map(({ compiled: _compiled, ...record }) => record);
  }

  /**
   * Starts an execution. As on AWS, a name already used by a running execution with the same
   * input returns that execution (the call is idempotent); any other reuse of a name is
   * `ExecutionAlreadyExists`.
   */
  startExecution(input: { stateMachineArn: string; name?: string; input?: string }): {
    executionArn: string;
    startDate: number;
  } {
    const machine = this.#machines.get(input.stateMachineArn);
    if (machine === undefined) {
      throw new SfnError(
        "StateMachineDoesNotExist",
        `State Machine Does Not Exist: '${input.stateMachineArn}'`,
      );
    }
    const name = input.name ?? randomUUID();
    if (name.length < 1 || name.length > 80 || /[\s<>{}[\]?*"#%\\^|~`$&,;:/]/.test(name)) {
      throw new SfnError("InvalidName", `Invalid Name: '${name}'`);
    }
    const text = input.input ?? "{}";
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SfnError("InvalidExecutionInput", "Invalid State Machine Execution Input: not JSON");
    }
    // In its state machine's region and account, as on AWS (a pass of a release in waves names its own).
    const executionArn = `${machine.stateMachineArn.replace(/:stateMachine:[^:]+$/, ":execution:")}${machine.name}:${name}`;
    const existing = this.#executions.get(executionArn);
    if (existing !== undefined) {
      const same = existing.description.status === "RUNNING" && existing.description.input === text;
      if (same) return { executionArn, startDate: existing.description.startDate };
      throw new SfnError("ExecutionAlreadyExists", `Execution Already Exists: '${executionArn}'`);
    }
    const startDate = this.#sleeper.now();
    let resolveDone!: () => void;
    const execution: Execution = {
      description: {
        executionArn,
        stateMachineArn: machine.stateMachineArn,
        name,
        status: "RUNNING",
        startDate,
        input: text,
      },
      history: new ExecutionHistory(),
      controller: new AbortController(),
      abortRun: undefined,
      done: new Promise<void>((resolve) => {
        resolveDone = resolve;
      }),
      currentToken: undefined,
      tokens: new Set(),
      retry: undefined,
      random: this.#random(executionArn),
      closed: false,
    };
    this.#executions.set(executionArn, execution);
    execution.history.record("ExecutionStarted", startDate, {
      input: text,
      inputDetails: { truncated: false },
      roleArn: `arn:aws:iam::${LOCAL_ACCOUNT}:role/local`,
    });
    const end = this.#activity.begin();
    void this.#run(execution, machine, parsed).finally(() => {
      end();
      resolveDone();
    });
    return { executionArn, startDate };
  }

  describeExecution(executionArn: string): ExecutionDescription {
    return { ...this.#execution(executionArn).description };
  }

  listExecutions(input: { stateMachineArn: string; statusFilter?: ExecutionStatus }): ExecutionDescription[] {
    if (!this.#machines.has(input.stateMachineArn)) {
      throw new SfnError(
        "StateMachineDoesNotExist",
        `State Machine Does Not Exist: '${input.stateMachineArn}'`,
      );
    }
    return [...this.#executions.values()]
      .map((execution) => execution.description)
      .filter((d) => d.stateMachineArn === input.stateMachineArn)
      .filter((d) => input.statusFilter === undefined || d.status === input.statusFilter)
      .reverse()
      .map((d) => ({ ...d }));
  }

  getExecutionHistory(executionArn: string, options: { reverseOrder?: boolean } = {}): HistoryEvent[] {
    const events = [...this.#execution(executionArn).history.events];
    return options.reverseOrder === true ? events.reverse() : events;
  }

  /** Stops a running execution (`ExecutionAborted`); stopping a closed one changes nothing. */
  stopExecution(executionArn: string, input: { error?: string; cause?: string } = {}): { stopDate: number } {
    const execution = this.#execution(executionArn);
    if (execution.description.status !== "RUNNING") {
      return { stopDate: execution.description.stopDate ?? this.#sleeper.now() };
    }
    this.#terminate(execution, "ABORTED", "ExecutionAborted", input.error, input.cause);
    return { stopDate: execution.description.stopDate ?? this.#sleeper.now() };
  }

  sendTaskSuccess(token: string, output: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(output);
    } catch {
      throw new SfnError("InvalidOutput", "Invalid Output: not JSON");
    }
    this.tokens.succeed(token, parsed);
  }

  sendTaskFailure(token: string, error?: string, cause?: string): void {
    this.tokens.fail(token, error ?? "", cause ?? "");
  }

  sendTaskHeartbeat(token: string): void {
    this.tokens.heartbeat(token);
  }

  /** Resolves when the execution has ended (whatever the clock does). */
  async waitForCompletion(executionArn: string): Promise<ExecutionDescription> {
    await this.#execution(executionArn).done;
    return this.describeExecution(executionArn);
  }

  /** Running executions, for the runtime's "stuck in virtual time" diagnostics. */
  running(): ExecutionDescription[] {
    return [...this.#executions.values()]
      .filter((e) => e.description.status === "RUNNING")
      .map((e) => ({ ...e.description }));
  }

  /** Task tokens an execution (or any) is waiting on. */
  openTokens(executionArn?: string): string[] {
    return this.tokens.open(executionArn);
  }

  /** Stops every running execution and waits for them to settle. */
  async close(): Promise<void> {
    const running = [...this.#executions.values()].filter((e) => e.description.status === "RUNNING");
    for (const execution of running) {
      this.#terminate(
        execution,
        "ABORTED",
        "ExecutionAborted",
        "RuntimeClosed",
        "the local runtime was closed",
      );
    }
    await Promise.all(running.map((e) => e.done));
  }

  #execution(executionArn: string): Execution {
    const execution = this.#executions.get(executionArn);
    if (execution === undefined) {
      throw new SfnError("ExecutionDoesNotExist", `Execution Does Not Exist: '${executionArn}'`);
    }
    return execution;
  }

  async #run(execution: Execution, machine: StateMachineRecord & { compiled: Compiled }, input: unknown) {
    const { prepared, machine: engine } = machine.compiled;
    const description = execution.description;
    const tokens = this.tokens;
    const context = {
      Execution: {
        Id: description.executionArn,
        Name: description.name,
        RoleArn: `arn:aws:iam::${LOCAL_ACCOUNT}:role/local`,
        StartTime: new Date(description.startDate).toISOString(),
        // The library overwrites StartTime with the wall clock's: the engine's copy reads this.
        [CONTEXT_START_TIME]: new Date(description.startDate).toISOString(),
      },
      StateMachine: { Id: machine.stateMachineArn, Name: machine.name },
      Task: {
        get Token(): string {
          execution.currentToken ??= tokens.issue(description.executionArn);
          execution.tokens.add(execution.currentToken);
          return execution.currentToken;
        },
      },
    };
    const handlers: Record<string, (input: unknown) => Promise<unknown>> = {};
    const retryIntervals: Record<string, number> = {};
    for (const info of prepared.states.values()) {
      if (info.type === "Task" || info.type === "Wait") {
        handlers[info.name] = (stateInput) => this.#state(execution, info, stateInput);
      }
      if (info.retry.length > 0) retryIntervals[info.name] = 0;
    }
    const run = engine.run(input as never, {
      overrides: { taskResourceLocalHandlers: handlers as never, retryIntervalOverrides: retryIntervals },
      context: context as never,
      noThrowOnAbort: true,
    });
    execution.abortRun = run.abort;
    if (execution.controller.signal.aborted) run.abort();
    if (prepared.timeoutSeconds !== undefined) {
      void this.#sleeper
        .sleepUntil(description.startDate + prepared.timeoutSeconds * 1000, execution.controller.signal)
        .then((woke) => {
          if (woke === "woke" && execution.description.status === "RUNNING") {
            this.#terminate(
              execution,
              "TIMED_OUT",
              "ExecutionTimedOut",
              "States.Timeout",
              "execution timed out",
            );
          }
        });
    }
    const pump = (async () => {
      for await (const event of run.eventLogs as AsyncGenerator<LibraryEvent>) {
        this.#recordLibraryEvent(execution, prepared, event);
      }
    })();
    let outcome: { ok: true; output: unknown } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, output: await run.result };
    } catch (error) {
      outcome = { ok: false, error };
    }
    await pump;
    if (description.status === "RUNNING") {
      const now = this.#sleeper.now();
      if (outcome.ok) {
        const output = JSON.stringify(outcome.output ?? null);
        Object.assign(description, { status: "SUCCEEDED", stopDate: now, output });
        this.#close(execution, "ExecutionSucceeded", { output, outputDetails: { truncated: false } });
      } else {
        const inner = (outcome.error as { cause?: unknown })?.cause ?? outcome.error;
        const error = inner instanceof Error ? inner.name : "States.Runtime";
        const cause = inner instanceof Error ? inner.message : String(inner);
        Object.assign(description, { status: "FAILED", stopDate: now, error, cause });
        this.#close(execution, "ExecutionFailed", { error, cause });
      }
    }
    execution.controller.abort();
  }

  #terminate(
    execution: Execution,
    status: "ABORTED" | "TIMED_OUT",
    eventType: string,
    error: string | undefined,
    cause: string | undefined,
  ): void {
    const description = execution.description;
    Object.assign(description, {
      status,
      stopDate: this.#sleeper.now(),
      ...(error === undefined ? {} : { error }),
      ...(cause === undefined ? {} : { cause }),
    });
    this.#close(execution, eventType, {
      ...(error === undefined ? {} : { error }),
      ...(cause === undefined ? {} : { cause }),
    });
    execution.controller.abort();
    for (const token of execution.tokens) {
      this.tokens.close(
        token,
        "done",
        new TaskFailure("States.Runtime", "the execution is no longer running"),
      );
    }
    execution.abortRun?.();
  }

  #record(execution: Execution, type: string, details?: Record<string, unknown>): void {
    if (execution.closed) return;
    execution.history.record(type, this.#sleeper.now(), details);
  }

  #close(execution: Execution, type: string, details: Record<string, unknown>): void {
    this.#record(execution, type, details);
    execution.closed = true;
  }

  #recordLibraryEvent(execution: Execution, prepared: PreparedDefinition, event: LibraryEvent): void {
    const state = event.state;
    if (state === undefined) return;
    const type = prepared.states.get(state.name)?.type ?? state.type;
    if (event.type === "StateEntered") {
      this.#record(execution, `${type}StateEntered`, {
        name: state.name,
        input: JSON.stringify(state.input ?? null),
        inputDetails: { truncated: false },
      });
    } else if (event.type === "StateExited") {
      this.#record(execution, `${type}StateExited`, {
        name: state.name,
        output: JSON.stringify(state.output ?? null),
        outputDetails: { truncated: false },
      });
    }
  }

  /** The local handler of every Task and rewritten Wait state. */
  async #state(execution: Execution, info: StateInfo, input: unknown): Promise<unknown> {
    const signal = execution.controller.signal;
    const token = execution.currentToken;
    execution.currentToken = undefined;
    if (signal.aborted) throw new TaskFailure("States.Runtime", "the execution is no longer running");
    // Let the event pump record `…StateEntered` before this state's own events.
    await new Promise((resolve) => setImmediate(resolve));
    const retry = execution.retry;
    if (retry === undefined || retry.state !== info.name || !retry.pending) {
      execution.retry = { state: info.name, retries: new RetryState(info.retry), pending: false };
    } else {
      retry.pending = false;
    }
    try {
      if (info.type === "Wait") return await this.#wait(execution, info, input);
      return await this.#task(execution, info, input, token);
    } catch (thrown) {
      const failure =
        thrown instanceof TaskFailure
          ? thrown
          : new TaskFailure((thrown as Error)?.name ?? "Error", (thrown as Error)?.message ?? String(thrown));
      const current = execution.retry;
      if (!signal.aborted && current !== undefined) {
        const delay = current.retries.next(failure.name, execution.random);
        if (delay !== undefined) {
          current.pending = true;
          if (delay > 0)
            await this.#activity.park(this.#sleeper.sleepUntil(this.#sleeper.now() + delay, signal));
        }
      }
      throw failure;
    }
  }

  async #wait(execution: Execution, info: StateInfo, input: unknown): Promise<unknown> {
    const wait = info.wait ?? {};
    const now = this.#sleeper.now();
    let until = now;
    if (wait.seconds !== undefined) until = now + wait.seconds * 1000;
    else if (wait.timestamp !== undefined) until = Date.parse(wait.timestamp);
    else if (wait.secondsPath !== undefined)
      until = now + Number(this.#path(wait.secondsPath, input, execution)) * 1000;
    else if (wait.timestampPath !== undefined)
      until = Date.parse(String(this.#path(wait.timestampPath, input, execution)));
    if (!Number.isFinite(until)) {
      throw new TaskFailure(
        "States.Runtime",
        `${info.name}: the wait's time did not resolve to a number or timestamp`,
      );
    }
    const woke = await this.#activity.park(this.#sleeper.sleepUntil(until, execution.controller.signal));
    if (woke === "aborted") throw new TaskFailure("States.Runtime", "the execution is no longer running");
    return input;
  }

  #path(path: string, input: unknown, execution: Execution): unknown {
    const json = path.startsWith("$$") ? { Execution: { Id: execution.description.executionArn } } : input;
    return JSONPath({
      path: path.startsWith("$$") ? path.slice(1) : path,
      json: json as object,
      wrap: false,
    });
  }

  async #task(
    execution: Execution,
    info: StateInfo,
    input: unknown,
    issued: string | undefined,
  ): Promise<unknown> {
    const resource = info.resource ?? "";
    const parameters = (input ?? {}) as {
      FunctionName?: unknown;
      Payload?: unknown;
      InvocationType?: unknown;
    };
    let call: {
      functionName: string;
      payload: unknown;
      wrap: boolean;
      token: boolean;
      resource: string;
      event?: boolean;
    };
    if (resource === LAMBDA_INVOKE || resource === LAMBDA_INVOKE_TOKEN) {
      const token = resource === LAMBDA_INVOKE_TOKEN;
      call = {
        functionName: String(parameters.FunctionName ?? ""),
        payload: parameters.Payload ?? {},
        wrap: !token,
        token,
        resource: token ? "invoke.waitForTaskToken" : "invoke",
        ...(!token && parameters.InvocationType === "Event" ? { event: true } : {}),
      };
    } else if (resource.startsWith("arn:aws:lambda:")) {
      call = { functionName: resource, payload: input, wrap: false, token: false, resource };
    } else if (resource === START_EXECUTION_SYNC2) {
      return await this.#startExecutionSync(execution, info, input);
    } else {
      throw new TaskFailure("States.Runtime", `${info.name}: resource ${resource} is not supported locally`);
    }
    const timeoutSeconds =
      info.timeoutSeconds ??
      (info.timeoutSecondsPath === undefined
        ? undefined
        : Number(this.#path(info.timeoutSecondsPath, input, execution)));
    const heartbeatSeconds =
      info.heartbeatSeconds ??
      (info.heartbeatSecondsPath === undefined
        ? undefined
        : Number(this.#path(info.heartbeatSecondsPath, input, execution)));
    const resourceType = "lambda";
    this.#record(execution, "TaskScheduled", {
      resourceType,
      resource: call.resource,
      region: LOCAL_REGION,
      parameters: JSON.stringify(input ?? null),
      ...(timeoutSeconds === undefined ? {} : { timeoutInSeconds: timeoutSeconds }),
      ...(heartbeatSeconds === undefined ? {} : { heartbeatInSeconds: heartbeatSeconds }),
    });
    this.#record(execution, "TaskStarted", { resourceType, resource: call.resource });
    const startedAt = this.#sleeper.now();
    const local = new AbortController();
    const signal = AbortSignal.any([local.signal, execution.controller.signal]);
    const token = call.token ? (issued ?? this.tokens.issue(execution.description.executionArn)) : undefined;
    if (token !== undefined) execution.tokens.add(token);
    const racers: Array<Promise<unknown>> = [this.#work(execution, call, token)];
    if (timeoutSeconds !== undefined) {
      racers.push(
        this.#failAt(startedAt + timeoutSeconds * 1000, signal, "States.Timeout", `${info.name} timed out`),
      );
    }
    if (token !== undefined && heartbeatSeconds !== undefined) {
      racers.push(this.#heartbeatWatch(token, heartbeatSeconds * 1000, signal, info.name));
    }
    try {
      const result = await Promise.race(racers);
      this.#record(execution, "TaskSucceeded", {
        resourceType,
        resource: call.resource,
        output: JSON.stringify(result ?? null),
        outputDetails: { truncated: false },
      });
      if (token !== undefined) this.tokens.close(token, "done");
      return result;
    } catch (thrown) {
      const failure =
        thrown instanceof TaskFailure ? thrown : new TaskFailure("States.Runtime", String(thrown));
      const timedOut = failure.name === "States.Timeout" || failure.name === "States.HeartbeatTimeout";
      this.#record(execution, timedOut ? "TaskTimedOut" : "TaskFailed", {
        resourceType,
        resource: call.resource,
        error: failure.name,
        cause: failure.message,
      });
      if (token !== undefined) this.tokens.close(token, timedOut ? "timed-out" : "done", failure);
      throw failure;
    } finally {
      local.abort();
    }
  }

  /**
   * `states:startExecution.sync:2`: starts the child execution on this engine and waits for it to
   * end, answering as Step Functions does: the child's description with its input and output as
   * JSON on success; `States.TaskFailed` with that description as the cause on any other end. A
   * `Credentials` role (another account on AWS) changes nothing here: every state machine runs on
   * this one engine. The parent parks while it waits, so virtual time moves with the child.
   */
  async #startExecutionSync(execution: Execution, info: StateInfo, input: unknown): Promise<unknown> {
    const parameters = (input ?? {}) as { StateMachineArn?: unknown; Name?: unknown; Input?: unknown };
    const resource = "startExecution.sync:2";
    const resourceType = "states";
    this.#record(execution, "TaskScheduled", {
      resourceType,
      resource,
      region: LOCAL_REGION,
      parameters: JSON.stringify(input ?? null),
    });
    this.#record(execution, "TaskStarted", { resourceType, resource });
    const fail = (error: string, cause: string): never => {
      this.#record(execution, "TaskFailed", { resourceType, resource, error, cause });
      throw new TaskFailure(error, cause);
    };
    const childInput =
      parameters.Input === undefined
        ? "{}"
        : typeof parameters.Input === "string"
          ? parameters.Input
          : JSON.stringify(parameters.Input);
    let started: { executionArn: string };
    try {
      started = this.startExecution({
        stateMachineArn: String(parameters.StateMachineArn ?? ""),
        ...(parameters.Name === undefined ? {} : { name: String(parameters.Name) }),
        input: childInput,
      });
    } catch (error) {
      const name = error instanceof SfnError ? `StepFunctions.${error.name}Exception` : "States.TaskFailed";
      return fail(name, `${info.name}: ${(error as Error).message}`);
    }
    const child = this.#execution(started.executionArn);
    const signal = execution.controller.signal;
    const aborted = new Promise<void>((resolve) =>
      signal.addEventListener("abort", () => resolve(), { once: true }),
    );
    await this.#activity.park(Promise.race([child.done, aborted]));
    if (signal.aborted) throw new TaskFailure("States.Runtime", "the execution is no longer running");
    const d = child.description;
    const description = {
      ExecutionArn: d.executionArn,
      StateMachineArn: d.stateMachineArn,
      Name: d.name,
      Status: d.status,
      StartDate: d.startDate,
      StopDate: d.stopDate,
      Input: JSON.parse(d.input) as unknown,
      InputDetails: { Included: true },
      ...(d.output === undefined
        ? {}
        : { Output: JSON.parse(d.output) as unknown, OutputDetails: { Included: true } }),
      ...(d.error === undefined ? {} : { Error: d.error }),
      ...(d.cause === undefined ? {} : { Cause: d.cause }),
    };
    if (d.status !== "SUCCEEDED") return fail("States.TaskFailed", JSON.stringify(description));
    this.#record(execution, "TaskSucceeded", {
      resourceType,
      resource,
      output: JSON.stringify(description),
      outputDetails: { truncated: false },
    });
    return description;
  }

  async #work(
    execution: Execution,
    call: { functionName: string; payload: unknown; wrap: boolean; resource: string; event?: boolean },
    token: string | undefined,
  ): Promise<unknown> {
    if (call.event === true) {
      // Lambda accepts the event (202) and runs the function on its own; the task ends at once.
      void this.#invoke(call.functionName, call.payload).then((outcome) => {
        if (!outcome.ok)
          this.asyncInvokeFailures.push({ functionName: call.functionName, error: outcome.error });
      });
      return { ...invokeResponse(""), StatusCode: 202 };
    }
    const outcome = await this.#invoke(call.functionName, call.payload);
    if (!outcome.ok) throw lambdaTaskFailure(outcome.error);
    if (token === undefined) return call.wrap ? invokeResponse(outcome.payload) : outcome.payload;
    this.#record(execution, "TaskSubmitted", {
      resourceType: "lambda",
      resource: call.resource,
      output: JSON.stringify(invokeResponse(outcome.payload)),
      outputDetails: { truncated: false },
    });
    return await this.#activity.park(this.tokens.outcome(token));
  }

  async #failAt(at: number, signal: AbortSignal, error: string, cause: string): Promise<never> {
    const woke = await this.#sleeper.sleepUntil(at, signal);
    if (woke === "woke") throw new TaskFailure(error, cause);
    return new Promise<never>(() => {});
  }

  async #heartbeatWatch(token: string, everyMs: number, signal: AbortSignal, state: string): Promise<never> {
    for (;;) {
      const due = this.tokens.lastHeartbeat(token) + everyMs;
      const woke = await this.#sleeper.sleepUntil(due, signal);
      if (woke === "aborted") return new Promise<never>(() => {});
      if (this.tokens.lastHeartbeat(token) + everyMs <= this.#sleeper.now()) {
        throw new TaskFailure("States.HeartbeatTimeout", `${state}: no heartbeat for ${everyMs / 1000} s`);
      }
    }
  }
}

/**
 * The result of the optimized `lambda:invoke` integration: the function's JSON under `Payload`,
 * with the status and HTTP metadata Step Functions adds, so `ResultSelector: {"value.$":
 * "$.Payload"}` reads exactly what it reads on AWS.
 */
export function invokeResponse(payload: unknown): Record<string, unknown> {
  const requestId = randomUUID();
  const headers = {
    Connection: "keep-alive",
    "Content-Type": "application/json",
    "X-Amz-Executed-Version": "$LATEST",
    "x-amzn-RequestId": requestId,
  };
  return {
    ExecutedVersion: "$LATEST",
    Payload: payload ?? null,
    SdkHttpMetadata: { AllHttpHeaders: headers, HttpHeaders: headers, HttpStatusCode: 200 },
    SdkResponseMetadata: { RequestId: requestId },
    StatusCode: 200,
  };
}
