import {
  type Condition,
  ConditionSyntaxError,
  compileCondition,
  type EvaluationTime,
  type ResultType,
} from "../../statemachine/conditions.ts";
import type { Metric } from "../../statemachine/spec.ts";
import type { MeasurementPhase } from "./types.ts";

/**
 * One measurement's verdict from its result, by Argo's rules (`utils/evaluate/evaluate.go`):
 * only a success condition → anything else fails; only a failure condition → anything else
 * succeeds; both → the band between them is Inconclusive; neither → Successful. A condition that
 * cannot be evaluated is an Error, with Argo's message naming the condition.
 */
export interface Verdict {
  phase: MeasurementPhase;
  message?: string;
}

const cache = new Map<string, Condition | Error>();

/** Conditions are compiled once per process: a run is re-read from the store on every tick. */
function compiled(text: string): Condition | Error {
  let c = cache.get(text);
  if (!c) {
    try {
      c = compileCondition(text);
    } catch (e) {
      c = e instanceof Error ? e : new Error(String(e));
    }
    cache.set(text, c);
  }
  return c;
}

/** Argo's `isNilOrEmpty`: a missing result or an empty vector. */
function isNilOrEmpty(result: unknown): boolean {
  return result === null || result === undefined || (Array.isArray(result) && result.length === 0);
}

function evalCondition(
  which: "successCondition" | "failureCondition",
  text: string,
  result: unknown,
  type: ResultType | undefined,
  at: EvaluationTime | undefined,
): boolean | Verdict {
  const condition = compiled(text);
  try {
    if (condition instanceof Error) throw condition;
    return condition.evaluate(result, type, at);
  } catch (e) {
    const reason = isNilOrEmpty(result)
      ? "metric result is nil or empty: no data returned from the metric provider"
      : e instanceof ConditionSyntaxError
        ? e.detail
        : e instanceof Error
          ? e.message
          : String(e);
    return { phase: "Error", message: `could not evaluate ${which} "${text}": ${reason}` };
  }
}

/**
 * The verdict for one result; never throws. `type` is how the result looks to Go (a Prometheus
 * vector is `[]float64`); without it the result is taken as decoded JSON, as a web metric's is.
 * `at.now` is the measurement's time, what `now()` answers in the conditions (default: the wall clock).
 */
export function evaluateResult(
  result: unknown,
  metric: Pick<Metric, "successCondition" | "failureCondition">,
  type?: ResultType,
  at?: EvaluationTime,
): Verdict {
  const { successCondition: success, failureCondition: failure } = metric;
  let successOk = false;
  let failed = false;
  if (success) {
    const v = evalCondition("successCondition", success, result, type, at);
    if (typeof v !== "boolean") return v;
    successOk = v;
  }
  if (failure) {
    const v = evalCondition("failureCondition", failure, result, type, at);
    if (typeof v !== "boolean") return v;
    failed = v;
  }
  if (!success && !failure) return { phase: "Successful" };
  if (success && !failure) failed = !successOk;
  if (!success && failure) successOk = !failed;
  if (failed) return { phase: "Failed" };
  if (!successOk) return { phase: "Inconclusive" };
  return { phase: "Successful" };
}
