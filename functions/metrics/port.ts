import type { ResultType } from "../../statemachine/conditions.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import type { Metric } from "../../statemachine/spec.ts";

/**
 * The metric provider port (Argo's `metric/provider.go`, narrowed to what a stateless Lambda needs).
 * Most measurements complete within one call. A provider whose system takes longer (Kayenta's
 * canary execution) answers {@link ProviderRunning} with what it needs to ask again: the analysis
 * stores it as a Running measurement and calls `resume` at a later tick, as Argo's controller calls
 * Resume on a later reconciliation, until the answer is a value or a failure.
 *
 * A query that fails is data, not an exception: adapters resolve to `{ ok: false, message }` with
 * the server's own message, and the analysis records an Error measurement, which only fails the
 * metric after `consecutiveErrorLimit` errors in a row. An adapter throws only for faults of its own
 * wiring (a metric that names no provider it supports); the analysis turns even those into an Error
 * measurement, as Argo does when it cannot build a provider.
 */
export interface MetricProvider {
  measure(metric: Metric, ctx: MeasureContext): Promise<ProviderAnswer>;
  /** Argo's Resume: asks again about a measurement still running, with the metadata it stored. */
  resume?(metric: Metric, running: RunningMeasurement, ctx: MeasureContext): Promise<ProviderAnswer>;
  /**
   * Argo's Terminate: ends a measurement still running when its run is terminated (a Job is
   * deleted). Undefined when the metric's provider leaves a running measurement as it is.
   */
  terminate?(
    metric: Metric,
    running: RunningMeasurement,
    ctx: MeasureContext,
  ): Promise<ProviderResult | undefined>;
}

/** A measurement still running, as the run stored it. */
export interface RunningMeasurement {
  metadata: Record<string, string>;
  /** When it was started (its first call). */
  startedAt: Date;
}

/** What a provider may know about the measurement it takes. */
export interface MeasureContext {
  /** The tick's time; providers that query "now" (Prometheus, CloudWatch) use it, not the wall clock. */
  now: Date;
  /** When the analysis run started: a judge reads the window since then (`{{judge.elapsed}}`). */
  startedAt?: Date;
  /** Aborts an in-flight query when the caller gives up (the CLI on Ctrl-C). */
  signal?: AbortSignal;
  /**
   * The run the measurement belongs to, for a provider that creates objects named after it (a
   * Job): its id, and the measurement's number for its metric (from 1: Argo's `count + error + 1`).
   */
  run?: { id: string; measurement: number };
  /** The rollout's traffic target settings, for a provider that runs in its cluster (a Job). */
  target?: unknown;
}

/** One provider answer: the value conditions see, and its display form stored on the measurement. */
export type ProviderResult = ProviderValue | ProviderFailure;

/** What a provider may answer: a result, or a measurement that is still running. */
export type ProviderAnswer = ProviderResult | ProviderRunning;

/**
 * A measurement the outside system is still taking (Argo's Running measurement with its
 * `resumeAt`): `metadata` is what `resume` needs (Kayenta's `canaryExecutionId`), kept on the
 * measurement and shown with it.
 */
export interface ProviderRunning {
  ok: "running";
  metadata: Record<string, string>;
  /** How long to wait before resuming (Argo's `resumeDelay`). */
  resumeAfterSeconds: number;
}

export interface ProviderValue {
  ok: true;
  /** What `result` is in successCondition/failureCondition: number[] for a vector, a number, JSON... */
  result: unknown;
  /**
   * The Go type Argo gives this result, which decides how conditions type-check: `float64s` for a
   * Prometheus vector (`[]float64`), `float64` for a scalar; decoded JSON when absent.
   */
  resultType?: ResultType;
  /** The measurement's `value` as Argo prints it (`[0.5]`, `0.97`, the JSON of a web jsonPath). */
  value: string;
  metadata?: Record<string, string>;
  /**
   * The provider's own verdict, when its system judges (Kayenta's score against its thresholds):
   * the measurement takes it and the metric's conditions are not evaluated, as in Argo.
   */
  phase?: "Successful" | "Failed" | "Inconclusive";
  /**
   * A Prometheus vector's samples with their labels, in the order of `result` (conditions see only
   * the values, as in Argo; a judge reads histogram buckets by their `le` label).
   */
  series?: Array<{ labels: Record<string, string>; value: number }>;
}

export interface ProviderFailure {
  ok: false;
  /** The reason, as the outside system said it (`bad_data: 1:5: parse error: ...`). */
  message: string;
  metadata?: Record<string, string>;
}

/** Thrown when a metric names a provider this build cannot serve: a wiring fault, not a measurement. */
export class UnsupportedProviderError extends RolloutsError {
  override readonly name = "UnsupportedProviderError";
}

/** Go's `strconv.FormatFloat(v, 'f', -1, 64)`, which Prometheus and Argo use to print sample values. */
export function formatFloat(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  const s = String(v);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, lead, frac = "", exp] = m;
  const digits = `${lead}${frac}`;
  const e = Number(exp);
  if (e >= 0) {
    const whole = digits.padEnd(e + 1, "0");
    const point = e + 1;
    return `${sign}${whole.slice(0, point)}${whole.length > point ? `.${whole.slice(point)}` : ""}`;
  }
  return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
}
