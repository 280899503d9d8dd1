import { RolloutsError } from "./errors.ts";
import { goParseFloat, goParseInt } from "./expr/builtins.ts";
import {
  compile,
  ExprError,
  envOf,
  FLOAT64S,
  fromJSONValue,
  funcOf,
  GoFunc,
  type GoType,
  isNil,
  type Nature,
  natureOfValue,
  type Program,
  type RunOptions,
  T,
  TypedFloat,
  TypedInt,
  toJS,
  typedArray,
  typeOf,
} from "./expr/index.ts";
import { GoTime, parseDuration } from "./expr/time.ts";
import { floatToInt, format, intValue, panic, RunError } from "./expr/values.ts";

/**
 * `successCondition` / `failureCondition`, evaluated exactly as Argo Rollouts evaluates them
 * (`utils/evaluate/evaluate.go`): expr-lang (statemachine/expr) compiled against an environment of
 * `result` and Argo's helpers `asInt`, `asFloat`, `isNaN`, `isInf`, `isNil`, `default`, whose Go
 * types come from the provider's result. The checker therefore sees a Prometheus vector as
 * `[]float64`, a web metric's JSON as `map[string]interface {}` or `[]interface {}`, and no data as
 * an untyped nil, and accepts or refuses an expression exactly where Argo does.
 *
 * A condition is parsed and checked once when its template is loaded, against a result of unknown
 * type (the most permissive): what fails there fails for every result, so it is reported at load
 * with its position. Each evaluation then compiles for the result's actual Go type (cached).
 */

/** How a provider's result looks to Go: Argo passes `[]float64`, `float64`, decoded JSON or nil. */
export type ResultType = "float64s" | "float64" | "json";

/** A compiled condition: parse once, evaluate against every measurement's result. */
export interface Condition {
  /** The expression as written in the template (used verbatim in Argo's error messages). */
  readonly text: string;
  /**
   * True or false for this result; throws {@link ConditionEvaluationError} with Argo's message when
   * the expression cannot be compiled for this result's type or fails while running.
   */
  evaluate(result: unknown, type?: ResultType, at?: EvaluationTime): boolean;
}

/**
 * The instant an expression is evaluated for: what `now()` answers. A measurement's conditions see
 * the measurement's time (the tick's, virtual in the embedded runtime and `rollouts simulate`);
 * without one, the wall clock.
 */
export interface EvaluationTime {
  readonly now?: Date;
}

/** An expression of the condition language whose value is any value, not only a boolean. */
export interface Expression {
  readonly text: string;
  /** The expression's value for this result; throws {@link ConditionEvaluationError}. */
  value(result: unknown, type?: ResultType, at?: EvaluationTime): unknown;
}

/** A condition that no result can make valid; the message names the column and shows a caret. */
export class ConditionSyntaxError extends RolloutsError {
  override readonly name = "ConditionSyntaxError";
  /** Zero-based offset (in characters) in the expression where the problem was found. */
  readonly position: number;
  readonly expression: string;
  /** expr's message, as Argo would report it. */
  readonly detail: string;
  constructor(error: ExprError, expression: string) {
    super(error.format(expression));
    this.detail = error.message;
    this.expression = expression;
    this.position = Math.max(0, error.from);
  }
}

/** A condition that cannot be evaluated for a given result: an Error measurement. */
export class ConditionEvaluationError extends RolloutsError {
  override readonly name = "ConditionEvaluationError";
}

// ---------------------------------------------------------------------------------------------
// Argo's environment

const INT64 = T.int64;

/** Argo's `asInt`: numbers truncate, strings parse base 10, anything else panics. */
function asInt(v: unknown): TypedInt {
  if (typeof v === "number") return new TypedInt(floatToInt(v), INT64);
  if (v instanceof TypedFloat) return new TypedInt(floatToInt(v.value), INT64);
  const i = intValue(v);
  if (i !== undefined) return new TypedInt(i, INT64);
  if (typeof v === "string") {
    const parsed = goParseInt(v);
    if ("error" in parsed) return panic(parsed.error);
    return new TypedInt(parsed.value, INT64);
  }
  return panic(`asInt() not supported on ${goTypeName(v)} ${format(v)}`);
}

/** Argo's `asFloat`. */
function asFloat(v: unknown): number {
  if (typeof v === "number") return v;
  if (v instanceof TypedFloat) return v.value;
  const i = intValue(v);
  if (i !== undefined) return Number(i);
  if (typeof v === "string") {
    const parsed = goParseFloat(v);
    if ("error" in parsed) return panic(parsed.error);
    return parsed.value;
  }
  return panic(`asFloat() not supported on ${goTypeName(v)} ${format(v)}`);
}

/** `%v` of `reflect.TypeOf(v)`. */
function goTypeName(v: unknown): string {
  return v === null || v === undefined ? "<nil>" : typeOf(v);
}

const ANY = T.any;
const FUNCS: Record<
  string,
  { type: GoType; typed: boolean; make: (result: unknown) => (args: unknown[]) => unknown }
> = {
  asInt: {
    type: funcOf([ANY], [INT64]),
    typed: false,
    make:
      () =>
      ([v]) =>
        asInt(v),
  },
  asFloat: {
    type: funcOf([ANY], [T.float64]),
    typed: true,
    make:
      () =>
      ([v]) =>
        asFloat(v),
  },
  isNaN: {
    type: funcOf([T.float64], [T.bool]),
    typed: true,
    make:
      () =>
      ([v]) =>
        Number.isNaN(v),
  },
  isInf: {
    type: funcOf([T.float64], [T.bool]),
    typed: true,
    make:
      () =>
      ([v]) =>
        v === Number.POSITIVE_INFINITY || v === Number.NEGATIVE_INFINITY,
  },
  // Argo's isNil and default ignore their first argument and look at the result.
  isNil: { type: funcOf([ANY], [T.bool]), typed: true, make: (result) => () => isNil(result) },
  default: {
    type: funcOf([ANY, ANY], [ANY]),
    typed: true,
    make:
      (result) =>
      ([, fallback]) =>
        isNil(result) ? fallback : result,
  },
};

function natures(result: Nature): Map<string, Nature> {
  const out = new Map<string, Nature>([["result", result]]);
  for (const [name, f] of Object.entries(FUNCS)) out.set(name, { type: f.type });
  return out;
}

const LOAD_ENV = envOf(natures({}));

/** The Go value Argo would hand to expr for this result. */
function goResult(result: unknown, type: ResultType = "json"): unknown {
  if (result === null || result === undefined) return null;
  if (type === "float64s" && Array.isArray(result)) return typedArray([...result] as number[], FLOAT64S);
  if (type === "float64" && typeof result === "number") return result;
  return fromJSONValue(result);
}

function values(result: unknown): Map<string, unknown> {
  const out = new Map<string, unknown>([["result", result]]);
  for (const [name, f] of Object.entries(FUNCS)) out.set(name, new GoFunc(f.type, f.make(result), f.typed));
  return out;
}

const MAX_PROGRAMS = 2048;
const programs = new Map<string, Program | ExprError>();

function programFor(text: string, result: unknown): Program {
  const nature = natureOfValue(result);
  const key = `${nature.nil ? "nil" : nature.type?.name}\u0000${text}`;
  let p = programs.get(key);
  if (!p) {
    try {
      p = compile(text, envOf(natures(nature)));
    } catch (e) {
      if (!(e instanceof ExprError)) throw e;
      p = e;
    }
    if (programs.size >= MAX_PROGRAMS) programs.delete(programs.keys().next().value as string);
    programs.set(key, p);
  }
  if (p instanceof ExprError) throw new ConditionEvaluationError(p.message);
  return p;
}

function runOptions(at: EvaluationTime | undefined): RunOptions {
  const now = at?.now;
  return now ? { now: () => now.getTime() } : {};
}

function run(
  text: string,
  result: unknown,
  type: ResultType | undefined,
  at: EvaluationTime | undefined,
): unknown {
  const go = goResult(result, type);
  try {
    return programFor(text, go).run(values(go), runOptions(at));
  } catch (e) {
    if (e instanceof ExprError) throw new ConditionEvaluationError(e.message);
    throw e;
  }
}

class CompiledExpression implements Expression {
  constructor(readonly text: string) {}

  value(result: unknown, type?: ResultType, at?: EvaluationTime): unknown {
    return toJS(run(this.text, result, type, at));
  }
}

class CompiledCondition implements Condition {
  constructor(readonly text: string) {}

  evaluate(result: unknown, type?: ResultType, at?: EvaluationTime): boolean {
    const out = run(this.text, result, type, at);
    if (typeof out !== "boolean") {
      throw new ConditionEvaluationError(`expected bool, but got ${goTypeName(out)}`);
    }
    return out;
  }
}

function checkAtLoad(text: string): void {
  try {
    compile(text, LOAD_ENV);
  } catch (e) {
    if (e instanceof ExprError) throw new ConditionSyntaxError(e, text);
    throw e;
  }
}

/**
 * Parses a condition and checks it against a result of any type. Throws
 * {@link ConditionSyntaxError} for what Argo would refuse whatever the result (syntax, unknown
 * names and functions, wrong argument counts, type errors between literals).
 */
export function compileCondition(text: string): Condition {
  checkAtLoad(text);
  return new CompiledCondition(text);
}

/**
 * An expression that reads a value out of a provider's result (`result.requests - result.ok`,
 * `result[0]`): what a judge's readings use. Same language, same errors as conditions.
 */
export function compileExpression(text: string): Expression {
  checkAtLoad(text);
  return new CompiledExpression(text);
}

/** The environment Argo gives a time expression (`evaluate.EvalTime`): `isNaN` and `isInf` only. */
const TIME_FUNCS = ["isNaN", "isInf"] as const;
const TIME_ENV = envOf(
  new Map<string, Nature>(TIME_FUNCS.map((name) => [name, { type: FUNCS[name]?.type as GoType }])),
);
const TIME_VALUES = new Map<string, unknown>(
  TIME_FUNCS.map((name) => {
    const f = FUNCS[name] as (typeof FUNCS)[string];
    return [name, new GoFunc(f.type, f.make(null), f.typed)];
  }),
);

/**
 * An expression whose value is a time, evaluated as Argo's `evaluate.EvalTime` does (a Prometheus
 * `rangeQuery`'s `start` and `end`: `now() - duration("10m")`), with `now()` at `at.now`. Throws
 * {@link ConditionEvaluationError} with expr's message (`time: invalid duration "??"`), or
 * `expected time.Time, but got <Go type>` when the value is not a time. The instant is returned in
 * nanoseconds since the Unix epoch (Go keeps them; a query's parameters print them).
 */
export function evaluateTime(text: string, at?: EvaluationTime): bigint {
  let out: unknown;
  try {
    out = compile(text, TIME_ENV).run(TIME_VALUES, runOptions(at));
  } catch (e) {
    if (e instanceof ExprError) throw new ConditionEvaluationError(e.message);
    throw e;
  }
  if (!(out instanceof GoTime)) {
    throw new ConditionEvaluationError(`expected time.Time, but got ${goTypeName(out)}`);
  }
  return out.ns;
}

/**
 * Parses and checks a time expression without running it: what fails here fails at every
 * measurement (syntax, unknown names). Throws {@link ConditionSyntaxError}.
 */
export function checkTimeExpression(text: string): void {
  try {
    compile(text, TIME_ENV);
  } catch (e) {
    if (e instanceof ExprError) throw new ConditionSyntaxError(e, text);
    throw e;
  }
}

/**
 * Go's `time.ParseDuration` in nanoseconds, with Go's messages (`time: invalid duration "??"`, what
 * Argo reports for a `rangeQuery.step` it cannot read). Throws {@link ConditionEvaluationError}.
 */
export function goDuration(text: string): bigint {
  try {
    return parseDuration(text).value;
  } catch (e) {
    if (e instanceof RunError) throw new ConditionEvaluationError(e.message);
    throw e;
  }
}
