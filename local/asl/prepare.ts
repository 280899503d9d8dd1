/** A retrier as the ASL writes it. */
export interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: "NONE" | "FULL";
}

/** What the engine needs to know about one state of the original definition. */
export interface StateInfo {
  name: string;
  /** The original type (`Wait` states run as Tasks in the engine's copy). */
  type: string;
  resource: string | undefined;
  timeoutSeconds: number | undefined;
  timeoutSecondsPath: string | undefined;
  heartbeatSeconds: number | undefined;
  heartbeatSecondsPath: string | undefined;
  retry: Retrier[];
  wait: { seconds?: number; timestamp?: string; secondsPath?: string; timestampPath?: string } | undefined;
}

/** An ASL definition ready for `aws-local-stepfunctions`, with the index of its states. */
export interface PreparedDefinition {
  /** The definition handed to the library. */
  engine: Record<string, unknown>;
  states: Map<string, StateInfo>;
  /** The definition's top-level `TimeoutSeconds`, enforced by the runtime on its clock. */
  timeoutSeconds: number | undefined;
}

/**
 * `TimeoutSeconds` written on every Task of the engine's copy. The library enforces a Task's
 * timeout with a real `setTimeout` (60 s when none is given), which would kill a human approval
 * after a minute and cannot follow virtual time: the runtime enforces the definition's own
 * `TimeoutSeconds`/`HeartbeatSeconds` on its clock and lifts the library's out of the way
 * (23 days, under `setTimeout`'s 2^31 ms ceiling).
 */
export const ENGINE_TASK_TIMEOUT_SECONDS = 2_000_000;

/**
 * Where the engine's copy reads `$$.Execution.StartTime`: the library overwrites the context's
 * `StartTime` with the wall clock's time, so the runtime gives the execution's start on its own
 * clock under this name, and the copy's paths and intrinsics read it there.
 */
export const CONTEXT_START_TIME = "StartTimeOnRuntimeClock";

const START_TIME_PATH = /\$\$\.Execution\.StartTime(?![A-Za-z0-9_])/g;

/** Every string of the copy that reads `$$.Execution.StartTime` reads `CONTEXT_START_TIME` instead. */
function onRuntimeClock(value: unknown): unknown {
  if (typeof value === "string")
    return value.replace(START_TIME_PATH, `$$$$.Execution.${CONTEXT_START_TIME}`);
  if (Array.isArray(value)) return value.map(onRuntimeClock);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, onRuntimeClock(v)]));
  }
  return value;
}

/** The resource the engine's copy gives a rewritten `Wait` state. */
export const LOCAL_WAIT_RESOURCE = "arn:aws:lambda:us-east-1:000000000000:function:local-sfn-wait";

/**
 * Copies a definition for the library: every `Wait` state becomes a Task whose local handler
 * sleeps on the runtime's clock (the library's Wait sleeps with `setTimeout` and has no way to
 * follow virtual time), every Task gets the lifted timeout, the top-level `TimeoutSeconds` is
 * removed (enforced by the runtime), and `HeartbeatSeconds` is kept only in the index.
 * Nested `Parallel` branches and `Map` processors are prepared the same way; their state names
 * share one namespace with the top level (the library keys overrides by state name).
 */
export function prepareDefinition(definition: Record<string, unknown>): PreparedDefinition {
  const states = new Map<string, StateInfo>();
  const engine = onRuntimeClock(prepareMachine(definition, states)) as Record<string, unknown>;
  delete engine.TimeoutSeconds;
  const timeout = definition.TimeoutSeconds;
  return { engine, states, timeoutSeconds: typeof timeout === "number" ? timeout : undefined };
}

function prepareMachine(
  machine: Record<string, unknown>,
  index: Map<string, StateInfo>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...machine };
  const states = (machine.States ?? {}) as Record<string, Record<string, unknown>>;
  const rewritten: Record<string, Record<string, unknown>> = {};
  for (const [name, state] of Object.entries(states)) {
    if (index.has(name)) {
      throw new Error(`state name "${name}" is used twice (nested states share one namespace locally)`);
    }
    const type = String(state.Type);
    index.set(name, {
      name,
      type,
      resource: typeof state.Resource === "string" ? state.Resource : undefined,
      timeoutSeconds: numberOf(state.TimeoutSeconds),
      timeoutSecondsPath: stringOf(state.TimeoutSecondsPath),
      heartbeatSeconds: numberOf(state.HeartbeatSeconds),
      heartbeatSecondsPath: stringOf(state.HeartbeatSecondsPath),
      retry: Array.isArray(state.Retry) ? (state.Retry as Retrier[]) : [],
      wait:
        type === "Wait"
          ? {
              ...(typeof state.Seconds === "number" ? { seconds: state.Seconds } : {}),
              ...(typeof state.Timestamp === "string" ? { timestamp: state.Timestamp } : {}),
              ...(typeof state.SecondsPath === "string" ? { secondsPath: state.SecondsPath } : {}),
              ...(typeof state.TimestampPath === "string" ? { timestampPath: state.TimestampPath } : {}),
            }
          : undefined,
    });
    if (type === "Wait") {
      const task: Record<string, unknown> = {
        Type: "Task",
        Resource: LOCAL_WAIT_RESOURCE,
        TimeoutSeconds: ENGINE_TASK_TIMEOUT_SECONDS,
      };
      for (const key of ["Comment", "InputPath", "OutputPath", "Next", "End"]) {
        if (Object.hasOwn(state, key)) task[key] = state[key];
      }
      rewritten[name] = task;
    } else if (type === "Task") {
      const task: Record<string, unknown> = { ...state, TimeoutSeconds: ENGINE_TASK_TIMEOUT_SECONDS };
      delete task.TimeoutSecondsPath;
      delete task.HeartbeatSeconds;
      delete task.HeartbeatSecondsPath;
      rewritten[name] = task;
    } else if (type === "Parallel") {
      const branches = (state.Branches ?? []) as Array<Record<string, unknown>>;
      rewritten[name] = { ...state, Branches: branches.map((branch) => prepareMachine(branch, index)) };
    } else if (type === "Map") {
      const copy: Record<string, unknown> = { ...state };
      for (const key of ["Iterator", "ItemProcessor"]) {
        if (state[key] !== undefined)
          copy[key] = prepareMachine(state[key] as Record<string, unknown>, index);
      }
      rewritten[name] = copy;
    } else {
      rewritten[name] = state;
    }
  }
  out.States = rewritten;
  return out;
}

function numberOf(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}
