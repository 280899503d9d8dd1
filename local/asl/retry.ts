import type { Retrier } from "./prepare.ts";

const DEFAULT_MAX_ATTEMPTS = 3;
const DEFAULT_INTERVAL_SECONDS = 1;
const DEFAULT_BACKOFF_RATE = 2;

/**
 * Retry bookkeeping of one visit of one state. The library retries with a real `setTimeout`;
 * the runtime sets its retry intervals to 0 and sleeps the back-off on its own clock before it
 * lets the failure through, which is why this mirrors the library's decision exactly (first
 * matching retrier decides; an exhausted one ends the retries; `States.ALL` and
 * `States.TaskFailed` match everything).
 */
export class RetryState {
  readonly #retriers: readonly Retrier[];
  readonly #attempts: number[];

  constructor(retriers: readonly Retrier[]) {
    this.#retriers = retriers;
    this.#attempts = retriers.map(() => 0);
  }

  /**
   * The back-off in ms before the retry of a failure with this error name, or `undefined` when
   * the state will not be retried. Counts the attempt.
   */
  next(errorName: string, random: () => number = Math.random): number | undefined {
    for (const [i, retrier] of this.#retriers.entries()) {
      const matches = retrier.ErrorEquals.some(
        (name) => name === errorName || name === "States.ALL" || name === "States.TaskFailed",
      );
      if (!matches) continue;
      const attempts = this.#attempts[i] ?? 0;
      if (attempts >= (retrier.MaxAttempts ?? DEFAULT_MAX_ATTEMPTS)) return undefined;
      this.#attempts[i] = attempts + 1;
      const interval =
        (retrier.IntervalSeconds ?? DEFAULT_INTERVAL_SECONDS) *
        (retrier.BackoffRate ?? DEFAULT_BACKOFF_RATE) ** attempts;
      const capped =
        retrier.MaxDelaySeconds === undefined ? interval : Math.min(interval, retrier.MaxDelaySeconds);
      const ms = capped * 1000;
      return retrier.JitterStrategy === "FULL" ? Math.floor(random() * (ms + 1)) : ms;
    }
    return undefined;
  }
}
