import type { Clock } from "../clock.ts";
import type { ScheduleOutcome, ScheduleRequest, Timer } from "./port.ts";

/** Below this delay the ticker is used; from it on, EventBridge Scheduler (docs/state.md, "The Timer"). */
export const SCHEDULER_MIN_DELAY_MS = 60_000;

export interface RoutingTimerOptions {
  /** For delays ≥ 60 s: `SchedulerTimer`. */
  scheduler: Timer;
  /** For delays < 60 s: `TickerTimer`. */
  ticker: Timer;
  clock: Clock;
}

/**
 * The Timer a Lambda gets on AWS: each request goes to the backend that can honour its delay.
 * Scheduler fires within a minute of `at`, fine for a 5-minute pause and useless for a 10 s
 * analysis interval; the ticker is precise to the second but costs a state-machine execution.
 * `cancel` goes to both, because the caller does not remember which one took the key (the one
 * that did not is a no-op).
 */
export class RoutingTimer implements Timer {
  readonly #options: RoutingTimerOptions;

  constructor(options: RoutingTimerOptions) {
    this.#options = options;
  }

  schedule(request: ScheduleRequest): Promise<ScheduleOutcome> {
    return routeFor(request.at - this.#options.clock.now()) === "ticker"
      ? this.#options.ticker.schedule(request)
      : this.#options.scheduler.schedule(request);
  }

  async cancel(key: string): Promise<void> {
    await Promise.all([this.#options.scheduler.cancel(key), this.#options.ticker.cancel(key)]);
  }
}

/** Which backend handles a delay (pure, for tests and for the construct's documentation). */
export function routeFor(delayMs: number): "ticker" | "scheduler" {
  return delayMs < SCHEDULER_MIN_DELAY_MS ? "ticker" : "scheduler";
}
