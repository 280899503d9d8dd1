import { RolloutsError } from "../../statemachine/errors.ts";
import { type Clock, isSettableClock } from "../clock.ts";
import type { ScheduleOutcome, ScheduleRequest, Timer, TimerFiring } from "./port.ts";

/** Receives each firing; the local runtime wires it to the `resume` handler. */
export type FiringHandler = (firing: TimerFiring) => void | Promise<void>;

export interface InProcessTimerOptions {
  clock: Clock;
  /** Can also be set later with `setHandler` (the handler usually needs the timer itself). */
  onFire?: FiringHandler;
  /** Real-time mode only: where errors thrown by the handler go. Default: `console.error`. */
  onError?: (error: unknown, firing: TimerFiring) => void;
}

export interface RunOptions {
  /** Guard against a handler that keeps rescheduling itself forever. Default 10 000. */
  maxFirings?: number;
}

/** `runUntilIdle`/`advanceTo` fired more than `maxFirings` callbacks: something reschedules forever. */
export class TimerRunawayError extends RolloutsError {
  override readonly name = "TimerRunawayError";

  constructor(maxFirings: number, options?: ErrorOptions) {
    super(`in-process timer fired ${maxFirings} callbacks without becoming idle`, options);
  }
}

interface Entry {
  firing: TimerFiring;
  seq: number;
}

/**
 * The Timer of the embedded runtime. Two ways to drive it:
 *
 * - **Virtual time** (tests, the simulator): give it a `ManualClock`, then `advanceTo(ms)` or
 *   `runUntilIdle()`. Due callbacks fire one at a time in order of (`at`, scheduling order), with
 *   the clock set to each one's `at` first, so a handler sees exactly the time it was due and a
 *   callback it schedules is fired in the same run if it falls due. Hours of rollout take
 *   milliseconds and every run is deterministic.
 * - **Real time** (the demo): give it `systemClock` and call `start()`; a `setTimeout` wakes it at
 *   the earliest due time. `stop()` disarms it.
 *
 * Like Scheduler and the ticker, scheduling a key that is already pending is a no-op.
 */
export class InProcessTimer implements Timer {
  readonly #clock: Clock;
  readonly #onError: (error: unknown, firing: TimerFiring) => void;
  #onFire: FiringHandler | undefined;
  readonly #pending = new Map<string, Entry>();
  #seq = 0;
  #handle: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #chain: Promise<void> = Promise.resolve();

  constructor(options: InProcessTimerOptions) {
    this.#clock = options.clock;
    this.#onFire = options.onFire;
    this.#onError =
      options.onError ?? ((error, firing) => console.error(`timer ${firing.key} failed:`, error));
  }

  setHandler(onFire: FiringHandler): void {
    this.#onFire = onFire;
  }

  async schedule(request: ScheduleRequest): Promise<ScheduleOutcome> {
    if (!Number.isFinite(request.at)) throw new RangeError(`timer ${request.key}: at must be finite`);
    if (this.#pending.has(request.key)) return { via: "in-process", name: request.key, created: false };
    this.#pending.set(request.key, {
      firing: { key: request.key, at: request.at, payload: structuredClone(request.payload) },
      seq: this.#seq++,
    });
    this.#arm();
    return { via: "in-process", name: request.key, created: true };
  }

  async cancel(key: string): Promise<void> {
    this.#pending.delete(key);
    this.#arm();
  }

  /** Pending firings, earliest first. */
  pending(): TimerFiring[] {
    return this.#ordered().map((entry) => entry.firing);
  }

  /** When the next firing is due, or `undefined` when idle. */
  nextDueAt(): number | undefined {
    return this.#ordered()[0]?.firing.at;
  }

  /**
   * Virtual time: fires, in order, every callback due at or before `epochMs` (including those the
   * callbacks schedule), then leaves the clock at `epochMs`. Needs a settable clock.
   * Returns the number of callbacks fired.
   */
  async advanceTo(epochMs: number, options: RunOptions = {}): Promise<number> {
    const clock = this.#settable("advanceTo");
    let fired = 0;
    const max = options.maxFirings ?? 10_000;
    for (;;) {
      const next = this.#ordered()[0];
      if (next === undefined || next.firing.at > epochMs) break;
      if (fired >= max) throw new TimerRunawayError(max);
      if (next.firing.at > clock.now()) clock.set(next.firing.at);
      await this.#fire(next);
      fired++;
    }
    if (epochMs > clock.now()) clock.set(epochMs);
    return fired;
  }

  /** Virtual time: fires everything, moving the clock to each due time, until nothing is pending. */
  async runUntilIdle(options: RunOptions = {}): Promise<number> {
    const max = options.maxFirings ?? 10_000;
    let fired = 0;
    for (;;) {
      const next = this.#ordered()[0];
      if (next === undefined) return fired;
      if (fired >= max) throw new TimerRunawayError(max);
      fired += await this.advanceTo(next.firing.at, { maxFirings: max - fired });
    }
  }

  /** Fires what is due at the clock's current time without moving it (real-time mode uses this). */
  async fireDue(): Promise<number> {
    let fired = 0;
    for (;;) {
      const next = this.#ordered()[0];
      if (next === undefined || next.firing.at > this.#clock.now()) return fired;
      await this.#fire(next);
      fired++;
    }
  }

  /** Real time: arms a `setTimeout` for the earliest due firing, and re-arms after each. */
  start(): void {
    this.#running = true;
    this.#arm();
  }

  stop(): void {
    this.#running = false;
    if (this.#handle !== undefined) clearTimeout(this.#handle);
    this.#handle = undefined;
  }

  #arm(): void {
    if (!this.#running) return;
    if (this.#handle !== undefined) clearTimeout(this.#handle);
    this.#handle = undefined;
    const at = this.nextDueAt();
    if (at === undefined) return;
    const delay = Math.min(Math.max(0, at - this.#clock.now()), 2_147_483_647);
    this.#handle = setTimeout(() => {
      this.#handle = undefined;
      // Serialised: a slow handler never overlaps the next wake-up.
      this.#chain = this.#chain.then(() => this.#fireDueReportingErrors()).then(() => this.#arm());
    }, delay);
  }

  async #fireDueReportingErrors(): Promise<void> {
    for (;;) {
      const next = this.#ordered()[0];
      if (next === undefined || next.firing.at > this.#clock.now()) return;
      try {
        await this.#fire(next);
      } catch (error) {
        this.#onError(error, next.firing);
      }
    }
  }

  async #fire(entry: Entry): Promise<void> {
    this.#pending.delete(entry.firing.key);
    if (this.#onFire === undefined) throw new Error(`timer ${entry.firing.key} fired with no handler set`);
    await this.#onFire(entry.firing);
  }

  #ordered(): Entry[] {
    return [...this.#pending.values()].sort((a, b) => a.firing.at - b.firing.at || a.seq - b.seq);
  }

  #settable(operation: string) {
    if (!isSettableClock(this.#clock)) {
      throw new TypeError(`InProcessTimer.${operation} runs in virtual time and needs a ManualClock`);
    }
    return this.#clock;
  }
}
