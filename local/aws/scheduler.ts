import type { InProcessTimer } from "../../functions/timer/in-process.ts";
import type { TimerFiring } from "../../functions/timer/port.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import { LOCAL_ACCOUNT, LOCAL_REGION } from "../asl/intrinsics.ts";

/** A schedule as `CreateSchedule` describes it (the fields the project uses). */
export interface ScheduleInput {
  name: string;
  groupName?: string;
  scheduleExpression: string;
  scheduleExpressionTimezone?: string;
  actionAfterCompletion?: "NONE" | "DELETE";
  state?: "ENABLED" | "DISABLED";
  description?: string;
  target: { arn: string; roleArn: string; input?: string };
}

export interface Schedule extends ScheduleInput {
  arn: string;
  groupName: string;
  /** Epoch ms the one-time schedule fires. */
  at: number;
  creationDate: number;
}

/** The Scheduler errors the façade returns, by their AWS names. */
export class SchedulerError extends RolloutsError {
  override readonly name: "ConflictException" | "ResourceNotFoundException" | "ValidationException";

  constructor(name: SchedulerError["name"], message: string) {
    super(message);
    this.name = name;
  }
}

/** Delivers a fired schedule to its target (a Lambda function or a state machine). */
export type ScheduleTargetInvoker = (targetArn: string, input: string) => Promise<void>;

/** Prefix of the timer keys that belong to schedules. */
export const SCHEDULE_KEY_PREFIX = "local-scheduler/";

/**
 * EventBridge Scheduler for one-time `at()` schedules, on the project's in-process timer: the
 * schedule fires its target at its `at` time on the runtime's clock (so in virtual time too), then
 * is deleted when `ActionAfterCompletion` is `DELETE`. Only `at(...)` in UTC is supported: the
 * project never creates `rate()`/`cron()` schedules.
 */
export class LocalScheduler {
  readonly #timer: InProcessTimer;
  readonly #invoke: ScheduleTargetInvoker;
  readonly #now: () => number;
  readonly #schedules = new Map<string, Schedule>();
  /** Firings whose target failed: Scheduler would retry and then drop them. */
  readonly failures: Array<{ schedule: string; error: string }> = [];

  constructor(options: { timer: InProcessTimer; invoke: ScheduleTargetInvoker; now: () => number }) {
    this.#timer = options.timer;
    this.#invoke = options.invoke;
    this.#now = options.now;
  }

  async create(input: ScheduleInput): Promise<{ scheduleArn: string }> {
    const groupName = input.groupName ?? "default";
    const key = keyOf(groupName, input.name);
    if (this.#schedules.has(key)) {
      throw new SchedulerError("ConflictException", `Schedule ${input.name} already exists.`);
    }
    const timezone = input.scheduleExpressionTimezone ?? "UTC";
    if (timezone !== "UTC") {
      throw new SchedulerError(
        "ValidationException",
        `only UTC schedules are supported locally, got ${timezone}`,
      );
    }
    const match = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/.exec(input.scheduleExpression);
    if (match?.[1] === undefined) {
      throw new SchedulerError(
        "ValidationException",
        `only one-time at(yyyy-mm-ddThh:mm:ss) schedules are supported locally, got ${input.scheduleExpression}`,
      );
    }
    const at = Date.parse(`${match[1]}Z`);
    const arn = `arn:aws:scheduler:${LOCAL_REGION}:${LOCAL_ACCOUNT}:schedule/${groupName}/${input.name}`;
    const schedule: Schedule = { ...input, groupName, arn, at, creationDate: this.#now() };
    this.#schedules.set(key, schedule);
    if (schedule.state !== "DISABLED") await this.#timer.schedule({ key, at, payload: null });
    return { scheduleArn: arn };
  }

  get(name: string, groupName = "default"): Schedule {
    const schedule = this.#schedules.get(keyOf(groupName, name));
    if (schedule === undefined)
      throw new SchedulerError("ResourceNotFoundException", `Schedule ${name} does not exist.`);
    return schedule;
  }

  async delete(name: string, groupName = "default"): Promise<void> {
    const key = keyOf(groupName, name);
    if (!this.#schedules.delete(key)) {
      throw new SchedulerError("ResourceNotFoundException", `Schedule ${name} does not exist.`);
    }
    await this.#timer.cancel(key);
  }

  list(): Schedule[] {
    return [...this.#schedules.values()];
  }

  /** Fires the schedule a timer firing belongs to; `false` when the firing is not a schedule's. */
  async deliver(firing: TimerFiring): Promise<boolean> {
    if (!firing.key.startsWith(SCHEDULE_KEY_PREFIX)) return false;
    const schedule = this.#schedules.get(firing.key);
    if (schedule === undefined) return true;
    if (schedule.actionAfterCompletion === "DELETE") this.#schedules.delete(firing.key);
    try {
      await this.#invoke(schedule.target.arn, schedule.target.input ?? "{}");
    } catch (error) {
      this.failures.push({ schedule: schedule.name, error: (error as Error)?.message ?? String(error) });
    }
    return true;
  }
}

function keyOf(groupName: string, name: string): string {
  return `${SCHEDULE_KEY_PREFIX}${groupName}/${name}`;
}
