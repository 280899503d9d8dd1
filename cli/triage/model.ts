import type { GateFigures } from "../../functions/analysis/types.ts";

/**
 * `rollouts triage`'s report as data: what `--json` prints, field for field, and what the text
 * renderer draws. The field names are a contract (docs/cli.md lists them): a script reads
 * `verdict.kind`, `decision.causes[].kind` and `next[].command`. Times are ISO strings, durations
 * seconds; a field that does not apply is null, never absent, so every report has one shape.
 */

/** The verdict of one execution of a rollout, one of a fixed set. */
export type VerdictKind =
  | "aborted-by-analysis"
  | "aborted-by-person"
  | "aborted-by-alarm"
  | "aborted-by-hook"
  | "degraded-by-target-fault"
  | "paused-for-person"
  | "paused-by-drift"
  | "hung"
  | "healthy"
  | "superseded"
  | "progressing";

/** How each verdict starts its line. */
export const VERDICT_TITLES: Record<VerdictKind, string> = {
  "aborted-by-analysis": "Aborted by analysis",
  "aborted-by-person": "Aborted by a person",
  "aborted-by-alarm": "Aborted by an alarm",
  "aborted-by-hook": "Aborted by a lifecycle hook",
  "degraded-by-target-fault": "Degraded by a target fault",
  "paused-for-person": "Paused waiting for a person",
  "paused-by-drift": "Paused by drift",
  hung: "Hung",
  healthy: "Healthy",
  superseded: "Superseded",
  progressing: "Progressing normally",
};

export interface Verdict {
  kind: VerdictKind;
  /** `Aborted by analysis: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)` */
  line: string;
  /** What a person must know before trusting the verdict (a promotion without evidence). */
  warnings: string[];
}

/**
 * Why nothing decided, or what to know about what did: each a kind a script can match and a
 * sentence with the figures.
 */
export type CauseKind =
  /** Error measurements in a row, up to or past the metric's `consecutiveErrorLimit`. */
  | "error-streak"
  /** A condition met an empty vector (`metric result is nil or empty`). */
  | "empty-result"
  /** A measurement's value was NaN (a ratio of zero requests): a condition compared nothing. */
  | "not-a-number"
  /** Neither condition held (the band between them), or `inconclusiveLimit` was passed. */
  | "inconclusive"
  /** The execution waits on a task token only a person ends (`rollouts promote`, `abort`). */
  | "waiting-for-person"
  /** Someone else changed the weights: the step waits for a person to overwrite or abort. */
  | "drift"
  /** A Timer firing (an analysis's next look, a timed pause's end) is past due. */
  | "timer-overdue"
  /** Another execution owns the rollout (a newer push). */
  | "superseded"
  /** The execution ended without writing the rollout's end on the item. */
  | "execution-ended"
  /** A metric took fewer measurements than it was to take, or none. */
  | "missing-measurements"
  /** `rollouts promote --full` skipped the remaining steps. */
  | "skipped-steps"
  /** An analysis is measuring: the next look's due time. */
  | "measuring";

export interface Cause {
  kind: CauseKind;
  message: string;
  /** The analysis run it is about, or null. */
  runId: string | null;
  metric: string | null;
  /** When the wait or streak began, or when the thing was seen. */
  since: string | null;
  /** When a Timer firing was due (`timer-overdue`, `measuring`). */
  due: string | null;
}

/** One measurement as the report shows it. */
export interface TriageMeasurement {
  at: string;
  phase: string;
  value: string | null;
  message: string | null;
}

/** A metric's part in the decision: its conditions, limits, counters and last measurements. */
export interface MetricDecision {
  name: string;
  /** A judge (a gate) rather than conditions on a value: `decision.gate` has its figures. */
  judge: boolean;
  phase: string;
  /** The metric's message (Argo's: `failed (1) > failureLimit (0)`), or null. */
  message: string | null;
  successCondition: string | null;
  failureCondition: string | null;
  /** The limit the counters passed, as Argo writes it; null when none was passed. */
  limitReached: string | null;
  limits: { failureLimit: number; inconclusiveLimit: number; consecutiveErrorLimit: number };
  counts: {
    measured: number;
    successful: number;
    failed: number;
    inconclusive: number;
    error: number;
    consecutiveError: number;
  };
  /** The newest measurements, oldest first. */
  measurements: TriageMeasurement[];
}

/** One analysis run of the execution, in a line. */
export interface RunLine {
  runId: string;
  /** The step (from 0); null for the background analysis. */
  step: number | null;
  templates: string[];
  phase: string;
  message: string | null;
}

export type DecidedBy = "metric" | "gate" | "person" | "alarm" | "hook" | "target" | "promotion" | "nothing";

export interface Decision {
  by: DecidedBy;
  /** One sentence: what decided, or that nothing did. */
  summary: string;
  /** The run that decided (or that is waited on), or null. */
  runId: string | null;
  metric: MetricDecision | null;
  /** A judge's latest decision with its figures, when a gate decided. */
  gate: (GateFigures & { metric: string }) | null;
  causes: Cause[];
  /** Every analysis run of the execution. */
  runs: RunLine[];
}

/** A stretch of time at one weight. */
export interface WeightSpan {
  from: string;
  until: string;
  weight: number;
  seconds: number;
}

export interface Exposure {
  /** The candidate's weight over time, from the execution's events, until its end or now. */
  spans: WeightSpan[];
  seconds: number;
  /** Σ weight × time: seconds of all the traffic the candidate served. */
  fullTrafficSeconds: number;
  rps: number | null;
  /** `rps` × `fullTrafficSeconds`: requests the candidate served; null without `--rps`. */
  requests: number | null;
  errorRate: number | null;
  /** `requests` × `errorRate`; null without `--error-rate`. */
  badRequests: number | null;
  /**
   * A promoted revision serves all the traffic from its promotion until the next one (or now):
   * how long, and the requests at `rps`. Null when the execution was not promoted.
   */
  afterPromotion: {
    from: string;
    until: string;
    seconds: number;
    requests: number | null;
    badRequests: number | null;
  } | null;
}

/** A line of the timeline: an item event, or several alike in a row. */
export interface TimelineEntry {
  at: string;
  /** Seconds since the execution's first event. */
  offsetSeconds: number;
  type: string;
  step: number | null;
  weight: number | null;
  message: string;
  /** Events alike in a row (same type, step and message) folded into this line. */
  count: number;
  /** The last of them, when `count` > 1. */
  lastAt: string | null;
}

/** What Step Functions says about the execution, or why it could not be read. */
export interface ExecutionStatus {
  status: string | null;
  startedAt: string | null;
  stoppedAt: string | null;
  error: string | null;
  cause: string | null;
  /** The state it entered last, from its history. */
  lastState: { name: string; enteredAt: string } | null;
  problem: string | null;
}

export interface NextCommand {
  command: string;
  why: string;
}

export interface TriageReport {
  rollout: string;
  /** The time the report was made at (the CLI's clock). */
  now: string;
  execution: {
    name: string | null;
    arn: string | null;
    revision: number | null;
    /** The candidate's tag (or digest). */
    image: string | null;
    /** The revision that was stable while it ran. */
    stable: string | null;
    /** Whether it is the execution that drives the rollout now. */
    current: boolean;
    /** The rollout item's phase, for the current execution; null for an earlier one. */
    phase: string | null;
    stepFunctions: ExecutionStatus | null;
  };
  verdict: Verdict;
  timeline: TimelineEntry[];
  decision: Decision;
  exposure: Exposure;
  next: NextCommand[];
}
