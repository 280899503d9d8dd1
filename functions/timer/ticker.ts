import { type SFNClient, StartExecutionCommand, StopExecutionCommand } from "@aws-sdk/client-sfn";
import { isAwsError } from "../aws-errors.ts";
import { type Clock, systemClock } from "../clock.ts";
import { deriveName, EXECUTION_NAME_MAX } from "./names.ts";
import {
  type ScheduleOutcome,
  type ScheduleRequest,
  type Timer,
  TimerError,
  type TimerFiring,
} from "./port.ts";

export interface TickerTimerOptions {
  client: SFNClient;
  /** The ticker state machine: `Wait` (`SecondsPath: $.seconds`) then invoke `resume` with `$.payload`. */
  stateMachineArn: string;
  clock?: Clock;
}

/** The ticker execution's input. `payload` is the `TimerFiring` the resume Lambda receives. */
export interface TickerInput {
  seconds: number;
  payload: TimerFiring;
}

/**
 * Timer for delays under a minute, which EventBridge Scheduler cannot honour (60 s precision): a
 * tiny Standard state machine whose `Wait` state sleeps `seconds` and then invokes `resume`.
 * The execution is named after the key, so scheduling a key twice hits `ExecutionAlreadyExists`:
 * a no-op. `cancel` stops that execution.
 */
export class TickerTimer implements Timer {
  readonly #options: TickerTimerOptions;
  readonly #clock: Clock;

  constructor(options: TickerTimerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  async schedule(request: ScheduleRequest): Promise<ScheduleOutcome> {
    const name = tickerExecutionName(request.key);
    const input: TickerInput = {
      seconds: Math.max(0, Math.ceil((request.at - this.#clock.now()) / 1000)),
      payload: { key: request.key, at: request.at, payload: request.payload },
    };
    try {
      await this.#options.client.send(
        new StartExecutionCommand({
          stateMachineArn: this.#options.stateMachineArn,
          name,
          input: JSON.stringify(input),
        }),
      );
      return { via: "ticker", name, created: true };
    } catch (error) {
      if (isAwsError(error, "ExecutionAlreadyExists")) {
        return { via: "ticker", name, created: false };
      }
      throw new TimerError("StartExecution of the ticker failed", request.key, { cause: error });
    }
  }

  async cancel(key: string): Promise<void> {
    try {
      await this.#options.client.send(
        new StopExecutionCommand({
          executionArn: executionArnFor(this.#options.stateMachineArn, tickerExecutionName(key)),
          error: "TimerCancelled",
          cause: `timer key ${key} cancelled`,
        }),
      );
    } catch (error) {
      if (isAwsError(error, "ExecutionDoesNotExist")) return;
      throw new TimerError("StopExecution of the ticker failed", key, { cause: error });
    }
  }
}

/** The ticker execution name for a key: deterministic, `[A-Za-z0-9_-]`, ≤ 80 characters. */
export function tickerExecutionName(key: string): string {
  return deriveName(key, EXECUTION_NAME_MAX);
}

/**
 * An execution's ARN from its state machine's ARN and its name
 * (`arn:aws:states:r:a:stateMachine:sm` → `arn:aws:states:r:a:execution:sm:name`), so a named
 * execution can be stopped without listing executions.
 */
export function executionArnFor(stateMachineArn: string, executionName: string): string {
  const marker = ":stateMachine:";
  const at = stateMachineArn.indexOf(marker);
  if (at < 0) throw new RangeError(`not a state machine ARN: ${stateMachineArn}`);
  return `${stateMachineArn.slice(0, at)}:execution:${stateMachineArn.slice(at + marker.length)}:${executionName}`;
}
