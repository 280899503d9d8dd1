import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  type SchedulerClient,
} from "@aws-sdk/client-scheduler";
import { isAwsError } from "../aws-errors.ts";
import { type Clock, systemClock } from "../clock.ts";
import { TIMER_DELIVERY } from "../config.ts";
import { deriveName, SCHEDULE_NAME_MAX } from "./names.ts";
import {
  type ScheduleOutcome,
  type ScheduleRequest,
  type Timer,
  TimerError,
  type TimerFiring,
} from "./port.ts";

export interface SchedulerTimerOptions {
  client: SchedulerClient;
  /** The schedule group the construct creates (its IAM policy is scoped to it). */
  groupName: string;
  /** The `resume` Lambda's ARN. */
  targetArn: string;
  /** The role Scheduler assumes to invoke the target (`lambda:InvokeFunction` on it). */
  roleArn: string;
  /** Reads "now" to keep `at` at least a minute ahead (see `schedule`). */
  clock?: Clock;
  /**
   * Retries Scheduler makes if the invoke fails (0–185), while the firing is younger than
   * `TIMER_DELIVERY.schedulerMaximumEventAgeSeconds`. Default 3.
   */
  maximumRetryAttempts?: number;
  /**
   * The SQS queue Scheduler sends the firing to once its retries are exhausted (it writes with
   * `roleArn`, which needs `sqs:SendMessage` on it). Without one a firing that cannot be
   * delivered is dropped.
   */
  deadLetterArn?: string;
}

/**
 * Timer on EventBridge Scheduler one-time schedules: `at(yyyy-mm-ddThh:mm:ss)` in UTC, flexible
 * window OFF, deleted after they fire (`ActionAfterCompletion: DELETE`, so the group does not
 * accumulate thousands of spent schedules and a key's name is free again afterwards). Scheduler
 * fires within a minute of `at`, which is why delays under 60 s go to the ticker (`routing.ts`).
 *
 * The schedule name is derived from the key, so a second `schedule` of a pending key hits
 * `ConflictException`, which is the no-op it should be.
 */
export class SchedulerTimer implements Timer {
  readonly #options: SchedulerTimerOptions;
  readonly #clock: Clock;

  constructor(options: SchedulerTimerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  async schedule(request: ScheduleRequest): Promise<ScheduleOutcome> {
    const name = scheduleName(request.key);
    const firing: TimerFiring = { key: request.key, at: request.at, payload: request.payload };
    // Scheduler cannot honour less than about a minute, and a past `at` would be refused: such a
    // request (the router sends those to the ticker) fires a minute from now instead.
    const due = Math.max(request.at, this.#clock.now() + 60_000);
    try {
      await this.#options.client.send(
        new CreateScheduleCommand({
          Name: name,
          GroupName: this.#options.groupName,
          ScheduleExpression: atExpression(due),
          ScheduleExpressionTimezone: "UTC",
          FlexibleTimeWindow: { Mode: "OFF" },
          ActionAfterCompletion: "DELETE",
          Description: truncate(`sfn-rollouts timer ${request.key}`, 512),
          Target: {
            Arn: this.#options.targetArn,
            RoleArn: this.#options.roleArn,
            Input: JSON.stringify(firing),
            RetryPolicy: {
              MaximumRetryAttempts:
                this.#options.maximumRetryAttempts ?? TIMER_DELIVERY.schedulerRetryAttempts,
              // Bounds how late a delivered firing can be (the watchdog's grace counts on it).
              MaximumEventAgeInSeconds: TIMER_DELIVERY.schedulerMaximumEventAgeSeconds,
            },
            ...(this.#options.deadLetterArn
              ? { DeadLetterConfig: { Arn: this.#options.deadLetterArn } }
              : {}),
          },
        }),
      );
      return { via: "scheduler", name, created: true };
    } catch (error) {
      if (isAwsError(error, "ConflictException")) {
        return { via: "scheduler", name, created: false };
      }
      throw new TimerError("CreateSchedule failed", request.key, { cause: error });
    }
  }

  async cancel(key: string): Promise<void> {
    try {
      await this.#options.client.send(
        new DeleteScheduleCommand({ Name: scheduleName(key), GroupName: this.#options.groupName }),
      );
    } catch (error) {
      if (isAwsError(error, "ResourceNotFoundException")) return;
      throw new TimerError("DeleteSchedule failed", key, { cause: error });
    }
  }
}

/** The schedule name for a key: deterministic, `[A-Za-z0-9_-]`, ≤ 64 characters. */
export function scheduleName(key: string): string {
  return deriveName(key, SCHEDULE_NAME_MAX);
}

/**
 * `at(yyyy-mm-ddThh:mm:ss)` in UTC. Rounded up to the next whole second: `at()` has no
 * milliseconds, and firing early would find the work not yet due.
 */
export function atExpression(epochMs: number): string {
  const seconds = Math.ceil(epochMs / 1000) * 1000;
  return `at(${new Date(seconds).toISOString().slice(0, 19)})`;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}
