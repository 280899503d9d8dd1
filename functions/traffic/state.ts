import type { z } from "zod";
import { TargetStateError } from "./errors.ts";
import type { TargetState, WeightChange } from "./port.ts";
import { describeIssues } from "./settings.ts";

/**
 * Parses a router state handed back by the caller. The state round-trips through DynamoDB, so it
 * is external input: a state written by another target type, or by an older version of this
 * code, must fail loudly here rather than half-work.
 */
export function parseTargetState<S extends z.ZodType>(schema: S, state: unknown, target: string): z.infer<S> {
  const parsed = schema.safeParse(state);
  if (!parsed.success) {
    throw new TargetStateError(describeIssues(parsed.error, `${target} router state`), {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** Seconds until `at` (ms), at least 1, for a Wait state. */
export function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}

/**
 * A weight or a mirror percentage as every target takes it: an integer from 0 to 100, or a
 * `TargetStateError` naming what it is and what was given.
 */
export function requirePercent(value: number, what: "weight" | "mirror percentage"): void {
  if (!Number.isInteger(value) || value < 0 || value > 100) {
    throw new TargetStateError(
      what === "weight"
        ? `a weight is an integer percent between 0 and 100, got ${value}`
        : `a mirror percentage is an integer between 0 and 100, got ${value}`,
    );
  }
}

/** A weight the target now has as the rollout set it: the candidate `percent`, no drift. */
export function appliedWeight(state: TargetState, percent: number, detail: string): WeightChange {
  return {
    outcome: "applied",
    state,
    weights: { canary: percent, stable: 100 - percent, expectedCanary: percent, drift: false, detail },
  };
}

/** Shares a target computes from its weights (floating point) are equal within this. */
export const SHARE_EPSILON = 1e-6;

/** True when observed shares give the candidate `expected` percent and the stable side the rest. */
export function sharesMatch(canary: number, stable: number, expected: number): boolean {
  return Math.abs(canary - expected) <= SHARE_EPSILON && Math.abs(canary + stable - 100) <= SHARE_EPSILON;
}
