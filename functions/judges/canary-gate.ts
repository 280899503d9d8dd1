import { z } from "zod";
import { RolloutsError } from "../../statemachine/errors.ts";
import { CANARY_GATE_DEFAULTS } from "../../statemachine/judge-load.ts";
import { issueLines } from "../../statemachine/problems.ts";
import type { Decision } from "./verdict.ts";

/** The canary gate's rollout policy. Each number changes the risk profile of every rollout that uses it. */
export interface CanaryPolicy {
  /** Traffic percentages per step; the last one is 100. */
  readonly stepSchedule: readonly number[];
  /** Candidate p95 must stay at or under this multiple of the anchored baseline p95. */
  readonly p95BudgetRatio: number;
  /** An error rate at or above this rolls back. */
  readonly errorRateCeiling: number;
  /** Below this many requests in a window the gate holds: never promote on cold metrics. */
  readonly minSampleCount: number;
  /** Clean windows at 100% before the candidate is anchored: one clean window is not proof. */
  readonly fullRolloutDwell: number;
  /** A fingerprint that rolled back less than this long ago is not re-canaried (debounces flapping). */
  readonly rollbackCooldownSeconds: number;
  /** This many rollbacks of one fingerprint within an hour escalate to a hard FAIL for the offline evaluator. */
  readonly maxRollbacksPerHour: number;
}

/** The numbers of the canary gate's threshold reference. */
export const defaultCanaryPolicy: CanaryPolicy = {
  stepSchedule: [5, 25, 50, 100],
  ...CANARY_GATE_DEFAULTS,
};

/**
 * The observation payload (the canary gate's JSON Schema, as zod): the scored verdict joined to one
 * telemetry window. Strict — an unknown field is refused — and every field required, because a
 * missing `sample_count` silently read as zero is the difference between "hold on cold metrics"
 * and "promote on nothing". Only PASS and WARN verdicts may enter: a FAIL never reaches the canary.
 */
export function canaryObservationSchema(stepCount = defaultCanaryPolicy.stepSchedule.length) {
  return z.strictObject({
    query_hash: z.string().regex(/^[a-f0-9]{64}$/, "must be 64 lowercase hex characters"),
    verdict: z.enum(["PASS", "WARN"]),
    step_index: z
      .number()
      .int()
      .min(0)
      .max(stepCount - 1),
    baseline_p95_ms: z.number().positive(),
    candidate_p95_ms: z.number().min(0),
    candidate_error_rate: z.number().min(0).max(1),
    sample_count: z.number().int().min(0),
  });
}

/** A validated observation. */
export type CanaryObservation = z.infer<ReturnType<typeof canaryObservationSchema>>;

/** A payload the gate refuses to decide on; `issues` name each field path. */
export class InvalidObservationError extends RolloutsError {
  override readonly name = "InvalidObservationError";
  constructor(readonly issues: string[]) {
    super(`invalid canary observation: ${issues.join("; ")}`);
  }
}

/** Validates a payload before any decision; throws {@link InvalidObservationError} naming the fields. */
export function parseObservation(
  input: unknown,
  policy: CanaryPolicy = defaultCanaryPolicy,
): CanaryObservation {
  const parsed = canaryObservationSchema(policy.stepSchedule.length).safeParse(input);
  if (!parsed.success) {
    throw new InvalidObservationError(issueLines(parsed.error, "(payload)"));
  }
  return parsed.data;
}

/** A window's decision and the reason an on-call engineer reads. */
export interface WindowDecision {
  readonly decision: Decision;
  readonly reason: string;
}

/**
 * The canary gate's pure decision for one window. A missing signal holds (never promotes): a rollout
 * that cannot see its own signal must not advance. A cold window holds whatever its numbers say
 * (the seed's prose: "hold dominates both when the sample is cold" — three requests with one
 * error are not a 33% error rate). Otherwise rollback dominates promote: p95 over the budget or
 * an error rate at the ceiling reverts at once.
 */
export function decideWindow(
  observation: CanaryObservation | null | undefined,
  policy: CanaryPolicy = defaultCanaryPolicy,
): WindowDecision {
  if (observation === null || observation === undefined) {
    return { decision: "hold", reason: "signal unavailable: no observation for this window" };
  }
  if (observation.sample_count < policy.minSampleCount) {
    return {
      decision: "hold",
      reason: `cold window: ${observation.sample_count} samples < ${policy.minSampleCount}`,
    };
  }
  const budget = observation.baseline_p95_ms * policy.p95BudgetRatio;
  const breaches: string[] = [];
  if (observation.candidate_p95_ms > budget) {
    breaches.push(
      `p95 ${observation.candidate_p95_ms} ms > ${policy.p95BudgetRatio} × baseline ${observation.baseline_p95_ms} ms`,
    );
  }
  if (observation.candidate_error_rate >= policy.errorRateCeiling) {
    breaches.push(`error rate ${observation.candidate_error_rate} >= ceiling ${policy.errorRateCeiling}`);
  }
  if (breaches.length > 0) return { decision: "rollback", reason: breaches.join("; ") };
  return {
    decision: "promote",
    reason: `p95 ${observation.candidate_p95_ms} ms within budget, error rate ${observation.candidate_error_rate}`,
  };
}

/** Where one candidate is in the step schedule. */
export interface CanaryState {
  readonly fingerprint: string;
  readonly stepIndex: number;
  /** Clean (promote) windows observed at the last step so far. */
  readonly cleanWindowsAtFull: number;
  readonly status: "progressing" | "anchored" | "rolled-back";
}

/** The state of a candidate that has just been admitted. */
export function startCanary(fingerprint: string): CanaryState {
  return { fingerprint, stepIndex: 0, cleanWindowsAtFull: 0, status: "progressing" };
}

/** A window's effect on a rollout: the decision, why, the new state and the weight to set. */
export interface CanaryStep extends WindowDecision {
  readonly state: CanaryState;
  /** Traffic percentage for the candidate after this window (0 after a rollback). */
  readonly weight: number;
  /** Set when the payload was refused: the window held because of it. */
  readonly error?: string;
}

/**
 * Feeds one window into the rollout: validates the raw payload (an invalid or missing payload
 * holds, with the error kept beside the decision), refuses a window measured at another step,
 * decides, and moves along the schedule — next step on promote, `min(step + 1, last)`; at 100%
 * it counts clean windows and anchors after `fullRolloutDwell` of them; rollback sets weight 0.
 */
export function observeWindow(
  state: CanaryState,
  raw: unknown,
  policy: CanaryPolicy = defaultCanaryPolicy,
): CanaryStep {
  const last = policy.stepSchedule.length - 1;
  const weightAt = (s: CanaryState) => (s.status === "rolled-back" ? 0 : policy.stepSchedule[s.stepIndex]!);
  if (state.status !== "progressing") {
    return { decision: "hold", reason: `rollout already ${state.status}`, state, weight: weightAt(state) };
  }
  let observation: CanaryObservation | null = null;
  if (raw !== null && raw !== undefined) {
    try {
      observation = parseObservation(raw, policy);
    } catch (error) {
      if (!(error instanceof InvalidObservationError)) throw error;
      return {
        decision: "hold",
        reason: error.message,
        error: error.message,
        state,
        weight: weightAt(state),
      };
    }
    if (observation.query_hash !== state.fingerprint || observation.step_index !== state.stepIndex) {
      const reason = `stale window: observation is for ${observation.query_hash.slice(0, 12)}… step ${observation.step_index}, rollout is at step ${state.stepIndex}`;
      return { decision: "hold", reason, state, weight: weightAt(state) };
    }
  }
  const { decision, reason } = decideWindow(observation, policy);
  let next: CanaryState = state;
  if (decision === "rollback") next = { ...state, status: "rolled-back" };
  else if (decision === "promote") {
    if (state.stepIndex < last) next = { ...state, stepIndex: Math.min(state.stepIndex + 1, last) };
    else {
      const clean = state.cleanWindowsAtFull + 1;
      next = {
        ...state,
        cleanWindowsAtFull: clean,
        status: clean >= policy.fullRolloutDwell ? "anchored" : "progressing",
      };
    }
  }
  return { decision, reason, state: next, weight: weightAt(next) };
}

/** A past rollback of a fingerprint, at epoch milliseconds. */
export interface RollbackRecord {
  readonly fingerprint: string;
  readonly at: number;
}

/** Whether a candidate may enter the canary, and whether it must go back to the offline evaluator. */
export interface Admission {
  readonly admitted: boolean;
  /** Repeated rollbacks: a hard FAIL for the offline evaluator, not another canary. */
  readonly escalate: boolean;
  readonly reason: string;
}

/**
 * Admission control before a canary starts: the verdict precondition (only PASS or WARN enter:
 * there is no point routing live traffic onto a plan the offline evaluator rejected), the
 * rollback cooldown (a fingerprint that rolled back recently is not re-canaried, which stops a
 * borderline candidate from flapping) and escalation after too many rollbacks in an hour.
 * `now` is epoch milliseconds from an injected clock.
 */
export function admitCanary(
  candidate: { readonly fingerprint: string; readonly verdict: string },
  rollbacks: readonly RollbackRecord[],
  now: number,
  policy: CanaryPolicy = defaultCanaryPolicy,
): Admission {
  if (candidate.verdict !== "PASS" && candidate.verdict !== "WARN") {
    return {
      admitted: false,
      escalate: false,
      reason: `verdict ${candidate.verdict} may not enter a canary`,
    };
  }
  const mine = rollbacks.filter((r) => r.fingerprint === candidate.fingerprint && r.at <= now);
  const lastHour = mine.filter((r) => now - r.at < 3_600_000);
  if (lastHour.length >= policy.maxRollbacksPerHour) {
    return {
      admitted: false,
      escalate: true,
      reason: `${lastHour.length} rollbacks in the last hour: hard FAIL, back to the offline evaluator`,
    };
  }
  const latest = mine.reduce((max, r) => Math.max(max, r.at), Number.NEGATIVE_INFINITY);
  const cooldownMs = policy.rollbackCooldownSeconds * 1000;
  if (now - latest < cooldownMs) {
    const wait = Math.ceil((cooldownMs - (now - latest)) / 1000);
    return {
      admitted: false,
      escalate: false,
      reason: `rolled back ${Math.floor((now - latest) / 1000)} s ago: cooldown, ${wait} s left`,
    };
  }
  return { admitted: true, escalate: false, reason: "admitted" };
}
