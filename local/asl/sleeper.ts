import type { Clock } from "../../functions/clock.ts";
import type { InProcessTimer } from "../../functions/timer/in-process.ts";
import type { TimerFiring } from "../../functions/timer/port.ts";

/**
 * How the engine waits: `Wait` states, retry back-off, task and heartbeat timeouts all sleep
 * through this, never through `setTimeout`, so the same run works in real time and in virtual time.
 */
export interface Sleeper {
  now(): number;
  /** Resolves `"woke"` at `epochMs`, or `"aborted"` as soon as `signal` aborts (the timer entry is cancelled). */
  sleepUntil(epochMs: number, signal?: AbortSignal): Promise<"woke" | "aborted">;
}

/** Prefix of the timer keys the sleeper owns. */
export const SLEEP_KEY_PREFIX = "local-sfn/sleep/";

/**
 * A `Sleeper` on the project's `InProcessTimer` (the one the handlers' Timer and the local
 * Scheduler share): virtual time when the timer is driven with `advanceTo`/`runUntilIdle`, real
 * time when it was `start()`ed. The timer's firing handler must offer each firing to `deliver`.
 */
export class TimerSleeper implements Sleeper {
  readonly #timer: InProcessTimer;
  readonly #clock: Clock;
  readonly #waiters = new Map<string, () => void>();
  #seq = 0;

  constructor(timer: InProcessTimer, clock: Clock) {
    this.#timer = timer;
    this.#clock = clock;
  }

  now(): number {
    return this.#clock.now();
  }

  sleepUntil(epochMs: number, signal?: AbortSignal): Promise<"woke" | "aborted"> {
    if (signal?.aborted) return Promise.resolve("aborted");
    if (epochMs <= this.#clock.now()) return Promise.resolve("woke");
    const key = `${SLEEP_KEY_PREFIX}${++this.#seq}`;
    return new Promise((resolve) => {
      const onAbort = () => {
        this.#waiters.delete(key);
        void this.#timer.cancel(key);
        resolve("aborted");
      };
      this.#waiters.set(key, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve("woke");
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      void this.#timer.schedule({ key, at: epochMs, payload: null });
    });
  }

  /** Wakes the sleep a firing belongs to; `false` when the firing is not a sleep. */
  deliver(firing: TimerFiring): boolean {
    if (!firing.key.startsWith(SLEEP_KEY_PREFIX)) return false;
    const wake = this.#waiters.get(firing.key);
    this.#waiters.delete(firing.key);
    wake?.();
    return true;
  }
}
