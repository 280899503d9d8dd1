import { type SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
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
  /** The ticker (Express) state machine: `Wait` (`SecondsPath: $.seconds`) then invoke `resume` with `$.payload`. */
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
 * tiny Express state machine whose `Wait` state sleeps `seconds` and then invokes `resume`
 * asynchronously. The execution is named after the key, but an asynchronous Express execution is
 * at-least-once and its name is not unique: scheduling a key twice may start two executions, and
 * resume receives the firing twice. It already must take that (Scheduler and Lambda's async
 * retries deliver at least once too): every firing names its owner, and a tick, a pause or a
 * scale-down done once is refused the second time. (`ExecutionAlreadyExists`, which an Express
 * state machine does not answer, is still taken as already scheduled.) An Express execution
 * cannot be stopped: `cancel` does nothing, and the firing, when it comes, is refused by resume
 * for the same reason (docs/state.md, "The Timer").
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

  /** An Express execution cannot be stopped (`StopExecution` refuses one): nothing to do. */
  async cancel(_key: string): Promise<void> {}
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
