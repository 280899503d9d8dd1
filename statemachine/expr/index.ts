import { compileRe2, RegexSyntaxError } from "../re2.ts";
import { type Node, walk } from "./ast.ts";
import { BUILTIN_NAMES, fromJSONValue } from "./builtins.ts";
import { check, type Env } from "./checker.ts";
import { ExprError } from "./errors.ts";
import { DEFAULT_STEP_BUDGET, Interpreter } from "./interpreter.ts";
import { optimize } from "./optimizer.ts";
import { parse } from "./parser.ts";
import { type GoType, MAP, type Nature, NIL, nat, parseGoType, sliceOf, T } from "./types.ts";
import {
  format,
  GoFunc,
  goType,
  isNil,
  RunError,
  TypedFloat,
  TypedInt,
  typedArray,
  typedMap,
  typeOf,
  unMapKey,
} from "./values.ts";

/**
 * An implementation of expr-lang (github.com/expr-lang/expr, v1.17, the version Argo Rollouts
 * pins) for analysis conditions: the same grammar, the same type checker over the environment's Go
 * types, the same optimizer rewrites and the same run-time semantics and messages, written from the
 * language's specification and checked against the outcomes of expr's own test suite.
 *
 *   const program = compile('result[0] < 0.5', envTypes({ result: "[]float64" }));
 *   program.run(env({ result: typedArray([0.1], parseGoType("[]float64")) }));
 */

export { ExprError } from "./errors.ts";
export { funcOf, mapOf } from "./types.ts";
export {
  format,
  fromJSONValue,
  GoFunc,
  type GoType,
  goType,
  isNil,
  type Nature,
  NIL,
  nat,
  parseGoType,
  RunError,
  sliceOf,
  T,
  TypedFloat,
  TypedInt,
  typedArray,
  typedMap,
  typeOf,
  unMapKey,
};

export interface RunOptions {
  /** At most this many evaluation steps (default 10,000,000); beyond it the run fails. */
  readonly stepBudget?: number;
  /**
   * The clock `now()` reads, in milliseconds since the Unix epoch: a measurement's time, so an
   * expression sees the instant it is evaluated for (virtual in the embedded runtime). Default:
   * the wall clock.
   */
  readonly now?: () => number;
}

/** A parsed, checked and optimized expression, ready to run against environments of the same types. */
export class Program {
  constructor(
    readonly source: string,
    private readonly tree: Node,
  ) {}

  /** Runs against the environment's values; throws {@link ExprError} (stage "run") on failure. */
  run(env: ReadonlyMap<string, unknown>, options: RunOptions = {}): unknown {
    const values = typedMap(new Map(env), MAP);
    try {
      return new Interpreter(
        values,
        options.stepBudget ?? DEFAULT_STEP_BUDGET,
        options.now ? { now: options.now } : undefined,
      ).run(this.tree);
    } catch (e) {
      if (e instanceof RunError) throw new ExprError(e.message, -1, "run");
      throw e;
    }
  }
}

/** The natures of an environment's entries: what the checker knows before anything runs. */
export function envOf(fields: Record<string, Nature> | ReadonlyMap<string, Nature>): Env {
  return { fields: fields instanceof Map ? fields : new Map(Object.entries(fields)) };
}

/** The nature expr gives an environment value (an untyped nil is `nil`, not unknown). */
export function natureOfValue(v: unknown): Nature {
  if (v === null || v === undefined) return NIL;
  return nat(goType(v));
}

/**
 * Parses, type-checks and optimizes. Throws {@link ExprError}: stage "parse" for syntax, "check"
 * for what the checker or the optimizer refuses (unknown names, mismatched types, `5 % 0`).
 */
export function compile(source: string, env: Env): Program {
  let tree: Node;
  try {
    tree = parse(source, { builtins: BUILTIN_NAMES, overridden: (name) => env.fields.has(name) });
  } catch (e) {
    if (e instanceof RangeError) throw new ExprError("expression is too deeply nested", 0, "parse");
    throw e;
  }
  try {
    check(tree, env);
    tree = optimize(tree);
  } catch (e) {
    if (e instanceof RangeError) throw new ExprError("expression is too deeply nested", 0, "check");
    throw e;
  }
  // expr compiles a constant pattern once; one that only became constant by folding fails here.
  walk({ get: () => tree, set: (n) => (tree = n) }, (at) => {
    const n = at.get();
    if (n.t === "binary" && n.op === "matches" && n.right.t === "string") {
      try {
        compileRe2(n.right.value);
      } catch (e) {
        if (e instanceof RegexSyntaxError) throw new ExprError(e.message, n.loc, "check");
        throw e;
      }
    }
  });
  return new Program(source, tree);
}

/** JavaScript's view of a result: Go ints and typed numbers as numbers, maps as plain objects. */
export function toJS(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (v instanceof TypedInt) return Number(v.value);
  if (v instanceof TypedFloat) return v.value;
  if (Array.isArray(v)) return v.map(toJS);
  if (v instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of v) out[String(unMapKey(k))] = toJS(x);
    return out;
  }
  if (v instanceof GoFunc) return format(v);
  if (v !== null && typeof v === "object" && !(v instanceof Uint8Array)) return format(v);
  return v;
}

export const FLOAT64S: GoType = sliceOf(T.float64);
