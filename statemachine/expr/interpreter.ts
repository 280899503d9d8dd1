import { compileRe2, RegexSyntaxError } from "../re2.ts";
import type { Node, NodeOf } from "./ast.ts";
import { BUILTIN_INDEX, BuiltinError, type CallContext, sortValues } from "./builtins.ts";
import {
  ARRAY,
  assignable,
  type GoType,
  isFloatKind,
  isIntegerKind,
  mapOf,
  type Nature,
  T,
} from "./types.ts";
import {
  arithmetic,
  asBool,
  asString,
  assertionError,
  compare,
  equal,
  fetch,
  GoFunc,
  goPow,
  goType,
  inside,
  isNil,
  mapKey,
  negate,
  panic,
  RunError,
  reflectLen,
  slice,
  TypedFloat,
  TypedInt,
  toFloat64,
  toInt,
  typedArray,
  typedMap,
  typeOf,
  zeroOf,
} from "./values.ts";

/**
 * Runs a checked, optimized tree with the semantics of expr-lang's compiled program: the same
 * order of evaluation, the same run-time type assertions (`interface conversion: ...`), the same
 * short circuits, and expr's memory budget (ranges, arrays and maps cost their length; a run may
 * allocate at most 1,000,000). On top of expr, a run is capped in steps, so an expression that
 * allocates nothing but loops over constant arrays cannot hang a Lambda.
 */

const MEMORY_BUDGET = 1_000_000;
export const DEFAULT_STEP_BUDGET = 10_000_000;

/** `now()` without a clock of its own: the wall clock. */
const WALL_CLOCK: CallContext = { now: () => Date.now() };

class ChainNil {}

interface Scope {
  items: unknown[];
  index: number;
  count: number;
  acc: unknown;
}

function kindName(v: unknown): string {
  const t = goType(v);
  if (!t) return "zero";
  return t.kind === "interface" ? "interface" : t.kind;
}

/** The elements a predicate loop walks over (expr's OpBegin on any slice, array or reflectable). */
function itemsOf(v: unknown): { items: unknown[] } | { len: number; index: () => never } {
  if (Array.isArray(v)) return { items: v };
  if (typeof v === "string") {
    const bytes = new TextEncoder().encode(v);
    return { items: Array.from(bytes, (b) => new TypedInt(BigInt(b), T.uint8)) };
  }
  if (v instanceof Uint8Array) return { items: Array.from(v, (b) => new TypedInt(BigInt(b), T.uint8)) };
  if (v instanceof Map) {
    return {
      len: v.size,
      index: () => panic("reflect: call of reflect.Value.Index on map Value"),
    };
  }
  return panic(`reflect: call of reflect.Value.Len on ${kindName(v)} Value`);
}

export class Interpreter {
  private memory = 0;
  private steps = 0;
  private readonly scopes: Scope[] = [];
  private readonly vars: { name: string; value: unknown }[] = [];

  constructor(
    private readonly env: Map<unknown, unknown>,
    private readonly stepBudget: number = DEFAULT_STEP_BUDGET,
    /** What `now()` reads (milliseconds since the Unix epoch). */
    private readonly context: CallContext = WALL_CLOCK,
  ) {}

  private grow(size: number): void {
    this.memory += size;
    if (this.memory >= MEMORY_BUDGET) panic("memory budget exceeded");
  }

  run(node: Node): unknown {
    try {
      return this.eval(node);
    } catch (e) {
      if (e instanceof RunError) throw e;
      if (e instanceof BuiltinError) throw new RunError(e.message);
      if (e instanceof ChainNil) return null;
      if (e instanceof RangeError && /call stack/i.test(e.message)) throw new RunError("evaluation too deep");
      throw e;
    }
  }

  eval(node: Node): unknown {
    if (++this.steps > this.stepBudget) {
      panic(`evaluation cost exceeded (more than ${this.stepBudget} steps)`);
    }
    switch (node.t) {
      case "nil":
        return null;
      case "ident":
        return this.identifier(node.name);
      case "int":
        return intLiteral(node.value, node.nature);
      case "float":
        return node.nature?.type === T.float32 ? new TypedFloat(node.value, T.float32) : node.value;
      case "bool":
      case "string":
      case "bytes":
      case "constant":
        return node.value;
      case "unary": {
        const v = this.eval(node.node);
        if (node.op === "!" || node.op === "not") return !asBool(v);
        if (node.op === "-") return negate(v);
        return v;
      }
      case "binary":
        return this.binary(node);
      case "chain": {
        // A chain's nil is untyped nil, unless `??` takes it as it is.
        const v = this.chain(node);
        return isNil(v) ? null : v;
      }
      case "member":
        return this.member(node);
      case "slice":
        return this.slice(node);
      case "call":
        return this.call(node);
      case "builtin":
        return this.builtin(node);
      case "predicate":
        return this.eval(node.node);
      case "pointer": {
        const scope = this.scopes.at(-1) as Scope;
        if (node.name === "index") return BigInt(scope.index);
        if (node.name === "acc") return scope.acc;
        return scope.items[scope.index];
      }
      case "let":
        return this.let(node);
      case "sequence": {
        let last: unknown = null;
        for (const n of node.nodes) last = this.eval(n);
        return last;
      }
      case "conditional":
        return asBool(this.eval(node.cond)) ? this.eval(node.exp1) : this.eval(node.exp2);
      case "array": {
        const items = node.nodes.map((n) => this.eval(n));
        this.grow(items.length);
        return items;
      }
      case "map":
        return this.mapLiteral(node);
      case "pair":
        return null;
    }
  }

  /** `a.b` or `a?.b`: a nil base of an optional member ends its chain with nil. */
  private member(node: NodeOf<"member">): unknown {
    const base = this.eval(node.node);
    if (node.optional && isNil(base)) throw new ChainNil();
    const prop = this.eval(node.property);
    return fetch(base, prop);
  }

  /** `a[from:to]`: a missing bound is the start or the length, as expr's OpSlice fills it in. */
  private slice(node: NodeOf<"slice">): unknown {
    const v = this.eval(node.node);
    let to: unknown;
    if (node.to) to = this.eval(node.to);
    else {
      const n = reflectLen(v);
      if (n === undefined) panic(`invalid argument for len (type ${typeOf(v)})`);
      to = BigInt(n as number);
    }
    const from = node.from ? this.eval(node.from) : 0n;
    return slice(v, from, to);
  }

  /** `let name = value; expr`: the variable is visible in `expr` only, over any outer one of its name. */
  private let(node: NodeOf<"let">): unknown {
    const value = this.eval(node.value);
    this.vars.push({ name: node.name, value });
    try {
      return this.eval(node.expr);
    } finally {
      this.vars.pop();
    }
  }

  /**
   * `{k: v, ...}`: keys and values evaluated in order, then set from the last pair to the first,
   * so that a repeated key keeps its first value as expr's map literal does.
   */
  private mapLiteral(node: NodeOf<"map">): Map<unknown, unknown> {
    const pairs = node.pairs.map((p) => {
      const pair = p as NodeOf<"pair">;
      return [this.eval(pair.key), this.eval(pair.value)] as const;
    });
    this.grow(pairs.length);
    const m = new Map<unknown, unknown>();
    for (let i = pairs.length - 1; i >= 0; i--) {
      const [k, v] = pairs[i] as readonly [unknown, unknown];
      m.set(asString(k), v);
    }
    return m;
  }

  private chain(node: NodeOf<"chain">): unknown {
    try {
      return this.eval(node.node);
    } catch (e) {
      if (e instanceof ChainNil) return null;
      throw e;
    }
  }

  private identifier(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i] as { name: string; value: unknown };
      if (v.name === name) return v.value;
    }
    if (name === "$env") return this.env;
    return this.env.has(name) ? this.env.get(name) : null;
  }

  private binary(node: NodeOf<"binary">): unknown {
    switch (node.op) {
      case "||":
      case "or": {
        const l = this.eval(node.left);
        return asBool(l) ? l : this.eval(node.right);
      }
      case "&&":
      case "and": {
        const l = this.eval(node.left);
        return !asBool(l) ? l : this.eval(node.right);
      }
      case "??": {
        const l = node.left.t === "chain" ? this.chain(node.left) : this.eval(node.left);
        if (!isNil(l)) return l;
        return node.right.t === "chain" ? this.chain(node.right) : this.eval(node.right);
      }
    }
    const a = this.eval(node.left);
    if (node.op === "matches" && node.right.t === "string") {
      if (isNil(a)) return false;
      return matches(node.right.value, a);
    }
    const b = this.eval(node.right);
    switch (node.op) {
      case "==":
      case "!=": {
        const eq = equalNodes(node, a, b);
        return node.op === "==" ? eq : !eq;
      }
      case "<":
      case ">":
      case "<=":
      case ">=":
        return compare(node.op, a, b);
      case "+":
      case "-":
      case "*":
      case "/":
      case "%":
        return arithmetic(node.op, a, b);
      case "**":
      case "^":
        return goPow(toFloat64(a), toFloat64(b));
      case "in":
        return inside(a, b);
      case "matches":
        if (isNil(a) || isNil(b)) return false;
        if (typeof a === "string") return matches(asString(b), a);
        return matches(asString(b), a);
      case "contains":
      case "startsWith":
      case "endsWith": {
        if (isNil(a) || isNil(b)) return false;
        const s = asString(a);
        const t = asString(b);
        return node.op === "contains"
          ? s.includes(t)
          : node.op === "startsWith"
            ? s.startsWith(t)
            : s.endsWith(t);
      }
      case "..": {
        const min = toInt(a);
        const max = toInt(b);
        let size = BigInt.asIntN(64, max - min + 1n);
        if (size <= 0n) size = 0n;
        this.grow(Number(size));
        const out: bigint[] = [];
        for (let k = 0n; k < size; k++) out.push(min + k);
        return typedArray(out, INTS);
      }
    }
    return panic(`unknown operator (${node.op})`);
  }

  private call(node: NodeOf<"call">): unknown {
    const args = node.args.map((a) => this.eval(a));
    const fn = this.eval(node.callee);
    if (isNil(fn)) panic("invalid operation: cannot call nil");
    if (!(fn instanceof GoFunc))
      return panic(`invalid operation: cannot call non-function of type ${typeOf(fn)}`);
    return callFunc(fn, args);
  }

  private loop(node: NodeOf<"builtin">): Scope {
    const collection = this.eval(node.args[0] as Node);
    const items = itemsOf(collection);
    const scope: Scope = {
      items:
        "items" in items
          ? items.items
          : new Proxy([], { get: (_t, p) => (p === "length" ? items.len : items.index()) }),
      index: 0,
      count: 0,
      acc: null,
    };
    this.scopes.push(scope);
    return scope;
  }

  /** A builtin call: the predicate builtins loop in a scope of their own, the others just run. */
  private builtin(node: NodeOf<"builtin">): unknown {
    switch (node.name) {
      case "all":
      case "none":
      case "any":
      case "one":
      case "filter":
      case "map":
      case "count":
      case "sum":
      case "find":
      case "findIndex":
      case "findLast":
      case "findLastIndex":
      case "groupBy":
      case "sortBy":
      case "reduce":
        break;
      default:
        return this.callBuiltin(node);
    }
    const scope = this.loop(node);
    try {
      return this.predicateLoop(node, scope, scope.items.length);
    } finally {
      this.scopes.pop();
    }
  }

  /**
   * A predicate builtin's loop over the `len` elements of its scope, each family in its own method;
   * `#`, `#index` and `#acc` in the predicate read that scope.
   */
  private predicateLoop(node: NodeOf<"builtin">, scope: Scope, len: number): unknown {
    switch (node.name) {
      case "all":
      case "none":
      case "any":
      case "one":
        return this.quantifier(node, scope, len);
      case "filter":
        return this.filter(node, scope, len);
      case "map": {
        const predicate = node.args[1] as Node;
        const out: unknown[] = [];
        for (; scope.index < len; scope.index++) out.push(this.eval(predicate));
        this.grow(len);
        return out;
      }
      case "count":
        return this.count(node, scope, len);
      case "sum":
        return this.sum(node, scope, len);
      case "find":
      case "findIndex":
        return this.find(node, scope, len);
      case "findLast":
      case "findLastIndex":
        return this.findLast(node, scope, len);
      case "groupBy":
        return this.groupBy(node, scope, len);
      case "sortBy":
        return this.sortBy(node, scope, len);
      default:
        return this.reduce(node, scope, len);
    }
  }

  /** `all`, `none`, `any` and `one`: each stops at the first element that decides it, as expr's do. */
  private quantifier(node: NodeOf<"builtin">, scope: Scope, len: number): boolean {
    const predicate = node.args[1] as Node;
    switch (node.name) {
      case "all":
        for (; scope.index < len; scope.index++) if (!asBool(this.eval(predicate))) return false;
        return true;
      case "none":
        for (; scope.index < len; scope.index++) if (asBool(this.eval(predicate))) return false;
        return true;
      case "any":
        for (; scope.index < len; scope.index++) if (asBool(this.eval(predicate))) return true;
        return false;
      default:
        for (; scope.index < len; scope.index++) if (asBool(this.eval(predicate))) scope.count++;
        return scope.count === 1;
    }
  }

  /** `filter`: the elements its predicate keeps, or their mapping when the optimizer fused a `map`. */
  private filter(node: NodeOf<"builtin">, scope: Scope, len: number): unknown[] {
    const predicate = node.args[1] as Node;
    const out: unknown[] = [];
    for (; scope.index < len; scope.index++) {
      if (asBool(this.eval(predicate))) {
        scope.count++;
        out.push(node.map ? this.eval(node.map) : scope.items[scope.index]);
      }
    }
    this.grow(out.length);
    return out;
  }

  /**
   * `count`: the elements its predicate holds for (or, without one, the true elements), stopping at
   * the optimizer's threshold when `count(...) > n` needs no more.
   */
  private count(node: NodeOf<"builtin">, scope: Scope, len: number): bigint {
    const predicate = node.args[1] as Node;
    for (; scope.index < len; scope.index++) {
      const v = node.args.length === 2 ? this.eval(predicate) : scope.items[scope.index];
      if (asBool(v)) {
        scope.count++;
        if (node.threshold !== undefined && scope.count >= node.threshold) return BigInt(scope.count);
      }
    }
    return BigInt(scope.count);
  }

  /** `sum`: of the elements' predicate values, or of the elements themselves without one, from 0. */
  private sum(node: NodeOf<"builtin">, scope: Scope, len: number): unknown {
    const predicate = node.args[1] as Node;
    scope.acc = 0n;
    for (; scope.index < len; scope.index++) {
      const v = node.args.length === 2 ? this.eval(predicate) : scope.items[scope.index];
      scope.acc = arithmetic("+", v, scope.acc);
    }
    return scope.acc;
  }

  /**
   * `find` and `findIndex`: the first element its predicate holds for, or its index, else nil;
   * `filter(...)[0]`, rewritten by the optimizer, fails as its index would.
   */
  private find(node: NodeOf<"builtin">, scope: Scope, len: number): unknown {
    const predicate = node.args[1] as Node;
    for (; scope.index < len; scope.index++) {
      if (asBool(this.eval(predicate))) {
        if (node.name === "findIndex") return BigInt(scope.index);
        return node.map ? this.eval(node.map) : scope.items[scope.index];
      }
    }
    if (node.throws) panic("reflect: slice index out of range");
    return null;
  }

  /** `findLast` and `findLastIndex`: as `find` and `findIndex`, from the last element back. */
  private findLast(node: NodeOf<"builtin">, scope: Scope, len: number): unknown {
    const predicate = node.args[1] as Node;
    for (scope.index = len - 1; scope.index >= 0; scope.index--) {
      if (asBool(this.eval(predicate))) {
        if (node.name === "findLastIndex") return BigInt(scope.index);
        return node.map ? this.eval(node.map) : scope.items[scope.index];
      }
    }
    if (node.throws) panic("reflect: slice index out of range");
    return null;
  }

  /** `groupBy`: the elements under their keys, in a `map[interface {}][]interface {}`. */
  private groupBy(node: NodeOf<"builtin">, scope: Scope, len: number): Map<unknown, unknown> {
    const predicate = node.args[1] as Node;
    const groups = typedMap(new Map(), GROUPS);
    for (; scope.index < len; scope.index++) {
      const key = this.eval(predicate);
      if (Array.isArray(key) || key instanceof Map || key instanceof GoFunc) {
        panic(`runtime error: hash of unhashable type ${typeOf(key)}`);
      }
      const k = mapKey(key);
      const list = (groups.get(k) as unknown[] | undefined) ?? [];
      list.push(scope.items[scope.index]);
      groups.set(k, list);
    }
    return groups;
  }

  /** `sortBy`: the elements ordered by their keys, `asc` unless the third argument says `desc`. */
  private sortBy(node: NodeOf<"builtin">, scope: Scope, len: number): unknown[] {
    const predicate = node.args[1] as Node;
    const order = node.args.length === 3 ? this.eval(node.args[2] as Node) : "asc";
    if (typeof order !== "string") panic("sortBy order argument must be a string");
    if (order !== "asc" && order !== "desc") panic("unknown order, use asc or desc");
    const values: unknown[] = [];
    const items: unknown[] = [];
    for (; scope.index < len; scope.index++) {
      values.push(this.eval(predicate));
      items.push(scope.items[scope.index]);
    }
    const sorted = sortValues(items, values, order === "desc");
    this.grow(len);
    return sorted;
  }

  /** `reduce`: `#acc` starts at the third argument, or at the first element, which an empty array lacks. */
  private reduce(node: NodeOf<"builtin">, scope: Scope, len: number): unknown {
    if (node.args.length === 3) scope.acc = this.eval(node.args[2] as Node);
    else {
      if (len === 0) panic("reduce of empty array with no initial value");
      scope.acc = scope.items[scope.index];
      scope.index++;
    }
    for (; scope.index < len; scope.index++) scope.acc = this.eval(node.args[1] as Node);
    return scope.acc;
  }

  private callBuiltin(node: NodeOf<"builtin">): unknown {
    const b = BUILTIN_INDEX.get(node.name);
    if (!b?.run) return panic(`unknown builtin ${node.name}`);
    const args = node.args.map((a) => this.eval(a));
    try {
      const out = b.run(b.fast ? args.slice(0, 1) : args, this.context);
      if (b.memory) this.grow(b.memory(out, args));
      return out;
    } catch (e) {
      if (e instanceof BuiltinError) throw new RunError(e.message);
      throw e;
    }
  }
}

const INTS = { kind: "slice", name: "[]int" } as GoType;
const GROUPS = mapOf(T.any, ARRAY);

function intLiteral(value: bigint, nature: Nature | undefined): unknown {
  const t = nature?.type;
  if (!t || t === T.int || t.kind === "interface") return value;
  if (isFloatKind(t.kind)) return t === T.float32 ? new TypedFloat(Number(value), t) : Number(value);
  if (isIntegerKind(t.kind)) return new TypedInt(value, t);
  return value;
}

/** `==` compiles to an int or string comparison when both sides are statically of that type. */
function equalNodes(node: NodeOf<"binary">, a: unknown, b: unknown): boolean {
  const l = node.left.nature?.type;
  const r = node.right.nature?.type;
  if (l && r && l === r && l === T.int) {
    if (typeof a !== "bigint") assertionError(a, "int");
    if (typeof b !== "bigint") assertionError(b, "int");
    return a === b;
  }
  if (l && r && l === r && l === T.string) {
    return asString(a) === asString(b);
  }
  return equal(a, b);
}

function matches(pattern: string, subject: unknown): boolean {
  let re: ReturnType<typeof compileRe2>;
  try {
    re = compileRe2(pattern);
  } catch (e) {
    if (e instanceof RegexSyntaxError) return panic(e.message);
    throw e;
  }
  if (typeof subject === "string") return re.matcher(subject).find();
  if (subject instanceof Uint8Array) return re.matcher(new TextDecoder().decode(subject)).find();
  return assertionError(subject, "[]uint8");
}

/** Calls an environment function the way expr's VM does (a typed fast path or reflection). */
function callFunc(fn: GoFunc, args: unknown[]): unknown {
  const ins = fn.type.ins ?? [];
  const variadic = fn.type.variadic ?? false;
  const prepared = args.map((arg, i) => {
    const param =
      variadic && i >= ins.length - 1 ? ((ins[ins.length - 1] as GoType).elem as GoType) : (ins[i] as GoType);
    if (!param) return arg;
    if (fn.typed) {
      if (param.kind === "interface") return arg;
      if (goType(arg) !== param) assertionError(arg, param.name);
      return arg;
    }
    if (isNil(arg)) return zeroOf(param);
    const t = goType(arg) as GoType;
    if (!assignable(t, param)) panic(`reflect: Call using ${t.name} as type ${param.name}`);
    return arg;
  });
  if (!fn.typed && !variadic && args.length !== ins.length) {
    panic(`invalid number of arguments: expected ${ins.length}, got ${args.length}`);
  }
  return fn.call(prepared);
}
