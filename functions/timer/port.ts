import { z } from "zod";
import { RolloutsError } from "../../statemachine/errors.ts";

/**
 * What a timer delivers when it fires: the same shape from EventBridge Scheduler, the ticker state
 * machine and the in-process timer, so the `resume` handler parses one schema whatever woke it.
 */
export const TimerFiringSchema = z.object({
  key: z.string().min(1),
  /** Epoch ms the firing was due (the real firing can be later: Scheduler has 60 s precision). */
  at: z.number(),
  /** JSON chosen by whoever scheduled it (e.g. `{rollout, runId}` for an analysis tick). */
  payload: z.unknown(),
});
export type TimerFiring = z.infer<typeof TimerFiringSchema>;

export interface ScheduleRequest {
  /** Epoch ms when the callback is due. */
  at: number;
  /**
   * Identifies one firing. Scheduling a key that is already pending does nothing (so a retried
   * Lambda cannot schedule a tick twice); choose keys unique per firing, e.g.
   * `<rollout>/<runId>/tick-0007`. (The ticker names its execution after the key, and Step
   * Functions keeps execution names for 90 days, so a key must not be reused for another firing.)
   */
  key: string;
  payload: unknown;
}

export interface ScheduleOutcome {
  /** Which mechanism holds the callback. */
  via: "scheduler" | "ticker" | "in-process";
  /** The schedule or execution name derived from the key. */
  name: string;
  /** `false` when that key was already scheduled (the call was a no-op). */
  created: boolean;
}

/**
 * The Timer port: "call `resume` with this payload at that time". Everything that waits in a
 * rollout (pause durations, analysis ticks, background analysis) goes through it, so the same
 * handlers run on AWS (Scheduler + ticker, see `routing.ts`) and locally in virtual time
 * (`in-process.ts`).
 */
export interface Timer {
  schedule(request: ScheduleRequest): Promise<ScheduleOutcome>;
  /** Cancels a pending firing; cancelling an unknown or already fired key is not an error. */
  cancel(key: string): Promise<void>;
}

/** The timer backend failed to schedule or cancel (not a duplicate: those are no-ops). */
export class TimerError extends RolloutsError {
  override readonly name = "TimerError";
  readonly key: string;

  constructor(message: string, key: string, options?: ErrorOptions) {
    const why = options?.cause instanceof Error ? `: ${options.cause.name}: ${options.cause.message}` : "";
    super(`${message} (key "${key}")${why}`, options);
    this.key = key;
  }
}
