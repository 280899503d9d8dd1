/**
 * Time as a port. Everything that decides "is it due yet?" (pauses, analysis ticks, cooldowns,
 * timestamps on the rollout item) reads the time through a `Clock` so that tests can freeze it and
 * the simulator can run a whole rollout in virtual time.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** A clock whose time can be moved by whoever owns it (tests, the in-process timer). */
export interface SettableClock extends Clock {
  /** Moves the clock to `epochMs`; moving backwards is refused (time never runs backwards). */
  set(epochMs: number): void;
}

/** The wall clock, for Lambdas and the CLI. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * A clock that only moves when told to: tests freeze time with it, and the in-process timer
 * advances it in virtual time so hours of rollout run in milliseconds.
 */
export class ManualClock implements SettableClock {
  #now: number;

  constructor(startEpochMs = 0) {
    if (!Number.isFinite(startEpochMs))
      throw new RangeError(`ManualClock: start must be finite, got ${startEpochMs}`);
    this.#now = startEpochMs;
  }

  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` (≥ 0) and returns the new time. */
  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`ManualClock.advance: ms must be ≥ 0, got ${ms}`);
    this.#now += ms;
    return this.#now;
  }

  set(epochMs: number): void {
    if (!Number.isFinite(epochMs))
      throw new RangeError(`ManualClock.set: time must be finite, got ${epochMs}`);
    if (epochMs < this.#now) {
      throw new RangeError(`ManualClock.set: cannot move backwards from ${this.#now} to ${epochMs}`);
    }
    this.#now = epochMs;
  }
}

/** True when the clock can be moved (a `ManualClock` or any other `SettableClock`). */
export function isSettableClock(clock: Clock): clock is SettableClock {
  return typeof (clock as Partial<SettableClock>).set === "function";
}
