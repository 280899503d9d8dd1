import { RolloutsError } from "../errors.ts";
import { compileRe2, RegexSyntaxError } from "../re2.ts";
import type { Node, NodeOf } from "./ast.ts";
import { BUILTIN_INDEX, type Builtin, BuiltinError, builtinType } from "./builtins.ts";
import { ExprError } from "./errors.ts";
import { timeMethodType } from "./time.ts";
import {
  ARRAY,
  arrayOfNature,
  assignableTo,
  comparableTo,
  deref,
  elemOf,
  funcOf,
  type GoType,
  isAnyOf,
  isArray,
  isBool,
  isByteSlice,
  isDuration,
  isFloat,
  isFunc,
  isInteger,
  isMap,
  isNumber,
  isString,
  isTime,
  isUnknown,
  keyOf,
  kindOf,
  MAP,
  mapOf,
  maybeCompatible,
  type Nature,
  NIL,
  nat,
  natureString,
  promoteNumeric,
  sliceOf,
  T,
  UNKNOWN,
} from "./types.ts";

/**
 * expr-lang's type checker, run against the environment's Go types before anything runs. It
 * decides which expressions are refused outright (Argo then reports the message and the
 * measurement is an Error) and records each node's nature for the optimizer and the evaluator.
 */

export interface Env {
  /** The environment's entries and their natures (Argo: `result` and its helpers). */
  readonly fields: ReadonlyMap<string, Nature>;
}

interface Scope {
  collection: Nature;
  vars: { name: string; nature: Nature }[];
}

class CheckFailure extends RolloutsError {
  override readonly name = "CheckFailure";
  constructor(readonly error: ExprError) {
    super(error.message);
  }
}

function fail(node: Node, message: string): never {
  throw new CheckFailure(new ExprError(message, node.loc, "check"));
}

const BOOL = nat(T.bool);
const INT = nat(T.int);
const FLOAT = nat(T.float64);
const STRING = nat(T.string);

/** A call whose arguments do not fit; soft, because another overload may fit. */
interface Mismatch {
  node: Node;
  message: string;
}

function funcNature(n: Nature): GoType | undefined {
  return isFunc(n) ? n.type : undefined;
}

function numIn(n: Nature): number {
  return funcNature(n)?.ins?.length ?? 0;
}

function numOut(n: Nature): number {
  return funcNature(n)?.outs?.length ?? 0;
}

function outOf(n: Nature, i: number): Nature {
  return nat(funcNature(n)?.outs?.[i]);
}

function firstArgUnknown(n: Nature): boolean {
  const t = funcNature(n)?.ins?.[0];
  return t !== undefined && isUnknown(nat(t));
}

function isPredicateFunc(n: Nature): boolean {
  return isFunc(n) && numOut(n) === 1 && numIn(n) === 1 && firstArgUnknown(n);
}

/**
 * What a binary operator gives for operands of natures `l` and `r`, each family of operators by
 * its own rules; undefined when the operands do not fit it, which the caller reports as expr does.
 */
function binaryNature(node: NodeOf<"binary">, l: Nature, r: Nature): Nature | undefined {
  switch (node.op) {
    case "==":
    case "!=":
      return comparableTo(l, r) ? BOOL : undefined;
    case "or":
    case "||":
    case "and":
    case "&&":
      return (isBool(l) && isBool(r)) || maybeCompatible(l, r, "bool") ? BOOL : undefined;
    case "<":
    case ">":
    case ">=":
    case "<=":
      return ordered(l, r) ? BOOL : undefined;
    case "-":
    case "*":
    case "/":
    case "**":
    case "^":
    case "%":
    case "+":
      return arithmeticNature(node.op, l, r);
    case "in":
      return membership(node, l, r);
    case "matches":
    case "contains":
    case "startsWith":
    case "endsWith":
      return stringOperator(node, l, r);
    case "..":
      return (isInteger(l) && isInteger(r)) || maybeCompatible(l, r, "integer")
        ? arrayOfNature(INT)
        : undefined;
    case "??":
      return coalesced(l, r);
    default:
      return fail(node, `unknown operator (${node.op})`);
  }
}

/** Whether `<`, `>`, `<=` and `>=` order `l` and `r`: numbers, strings, times or durations. */
function ordered(l: Nature, r: Nature): boolean {
  return (
    (isNumber(l) && isNumber(r)) ||
    (isString(l) && isString(r)) ||
    (isTime(l) && isTime(r)) ||
    (isDuration(l) && isDuration(r)) ||
    maybeCompatible(l, r, "number", "string", "time", "duration")
  );
}

/**
 * The arithmetic operators: numbers promote as Go's do, and times and durations add, subtract and
 * scale as Go's time package allows.
 */
function arithmeticNature(op: string, l: Nature, r: Nature): Nature | undefined {
  switch (op) {
    case "-":
      if (isNumber(l) && isNumber(r)) return promoteNumeric(l, r);
      if (isTime(l) && isTime(r)) return nat(T.duration);
      if (isTime(l) && isDuration(r)) return nat(T.time);
      if (isDuration(l) && isDuration(r)) return nat(T.duration);
      if (maybeCompatible(l, r, "number", "time", "duration")) return UNKNOWN;
      return undefined;
    case "*":
      if (isNumber(l) && isNumber(r)) return promoteNumeric(l, r);
      if ((isNumber(l) && isDuration(r)) || (isDuration(l) && (isNumber(r) || isDuration(r)))) {
        return nat(T.duration);
      }
      if (maybeCompatible(l, r, "number", "duration")) return UNKNOWN;
      return undefined;
    case "/":
    case "**":
    case "^":
      return (isNumber(l) && isNumber(r)) || maybeCompatible(l, r, "number") ? FLOAT : undefined;
    case "%":
      return (isInteger(l) && isInteger(r)) || maybeCompatible(l, r, "integer") ? INT : undefined;
    default:
      if (isNumber(l) && isNumber(r)) return promoteNumeric(l, r);
      if (isString(l) && isString(r)) return STRING;
      if (isTime(l) && isDuration(r)) return nat(T.time);
      if (isDuration(l) && isTime(r)) return nat(T.time);
      if (isDuration(l) && isDuration(r)) return nat(T.duration);
      if (maybeCompatible(l, r, "number", "string", "time", "duration")) return UNKNOWN;
      return undefined;
  }
}

/**
 * `in`: the left operand must fit a map's key or an array's element; an unknown left operand fits
 * a string, array or map, and anything fits an unknown right operand.
 */
function membership(node: NodeOf<"binary">, l: Nature, r: Nature): Nature | undefined {
  if (isMap(r)) {
    const key = keyOf(r);
    if (!isUnknown(l) && !assignableTo(l, key)) {
      fail(node, `cannot use ${natureString(l)} as type ${natureString(key)} in map key`);
    }
    return BOOL;
  }
  if (isArray(r)) {
    const elem = elemOf(r);
    if (!comparableTo(l, elem))
      fail(node, `cannot use ${natureString(l)} as type ${natureString(elem)} in array`);
    return BOOL;
  }
  if (isUnknown(l) && isAnyOf(r, ["string", "array", "map"])) return BOOL;
  if (isUnknown(r)) return BOOL;
  return undefined;
}

/**
 * `matches`, `contains`, `startsWith` and `endsWith` over strings (`matches` also over bytes); a
 * constant pattern must compile as RE2, at check time as in expr.
 */
function stringOperator(node: NodeOf<"binary">, l: Nature, r: Nature): Nature | undefined {
  if (node.op !== "matches") {
    return (isString(l) && isString(r)) || maybeCompatible(l, r, "string") ? BOOL : undefined;
  }
  if (node.right.t === "string") {
    try {
      compileRe2(node.right.value);
    } catch (e) {
      if (e instanceof RegexSyntaxError) fail(node, e.message);
      throw e;
    }
  }
  if (((isString(l) || isByteSlice(l)) && isString(r)) || maybeCompatible(l, r, "string")) return BOOL;
  return undefined;
}

/** `??`: the side that is not nil, nil when both are, else the left when the right fits it. */
function coalesced(l: Nature, r: Nature): Nature {
  if (l.nil && !r.nil) return r;
  if (!l.nil && r.nil) return l;
  if (l.nil && r.nil) return NIL;
  if (assignableTo(r, l)) return l;
  return UNKNOWN;
}

class Checker {
  private readonly scopes: Scope[] = [];
  private readonly vars: { name: string; nature: Nature }[] = [];

  constructor(private readonly env: Env) {}

  visit(node: Node): Nature {
    const n = this.nature(node);
    node.nature = n;
    return n;
  }

  private nature(node: Node): Nature {
    switch (node.t) {
      case "nil":
        return NIL;
      case "ident":
        return this.identifier(node);
      case "int":
        return INT;
      case "float":
        return FLOAT;
      case "bool":
        return BOOL;
      case "string":
        return STRING;
      case "bytes":
        return nat(sliceOf(T.uint8));
      case "constant":
        return node.nature ?? UNKNOWN;
      case "unary":
        return this.unary(node);
      case "binary":
        return this.binary(node);
      case "chain":
        return this.visit(node.node);
      case "member":
        return this.member(node);
      case "slice":
        return this.slice(node);
      case "call":
        return this.call(node);
      case "builtin":
        return this.builtin(node);
      case "predicate":
        return this.predicate(node);
      case "pointer":
        return this.pointer(node);
      case "let":
        return this.letNode(node);
      case "sequence": {
        let last: Nature = UNKNOWN;
        for (const n of node.nodes) last = this.visit(n);
        return last;
      }
      case "conditional":
        return this.conditional(node);
      case "array":
        return this.array(node);
      case "map":
        for (const p of node.pairs) this.visit(p);
        return nat(MAP);
      case "pair":
        this.visit(node.key);
        this.visit(node.value);
        return NIL;
    }
  }

  private identifier(node: NodeOf<"ident">): Nature {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i] as { name: string; nature: Nature };
      if (v.name === node.name) return v.nature;
    }
    if (node.name === "$env") return UNKNOWN;
    return this.ident(node, node.name, true, true);
  }

  private ident(node: Node, name: string, strict: boolean, builtins: boolean): Nature {
    const field = this.env.fields.get(name);
    if (field) return field;
    if (builtins) {
      const b = BUILTIN_INDEX.get(name);
      if (b) return { type: builtinType(b), func: b };
    }
    if (strict) fail(node, `unknown name ${name}`);
    return UNKNOWN;
  }

  private unary(node: NodeOf<"unary">): Nature {
    const n = deref(this.visit(node.node));
    switch (node.op) {
      case "!":
      case "not":
        if (isBool(n) || isUnknown(n)) return BOOL;
        break;
      case "+":
      case "-":
        if (isNumber(n)) return n;
        if (isUnknown(n)) return UNKNOWN;
        break;
      default:
        fail(node, `unknown operator (${node.op})`);
    }
    return fail(node, `invalid operation: ${node.op} (mismatched type ${natureString(n)})`);
  }

  private binary(node: NodeOf<"binary">): Nature {
    const l = deref(this.visit(node.left));
    const r = deref(this.visit(node.right));
    const result = binaryNature(node, l, r);
    if (result) return result;
    return fail(
      node,
      `invalid operation: ${node.op} (mismatched types ${natureString(l)} and ${natureString(r)})`,
    );
  }

  private member(node: NodeOf<"member">): Nature {
    if (node.node.t === "ident" && node.node.name === "$env") {
      node.node.nature = UNKNOWN;
      if (node.property.t === "string") {
        node.property.nature = STRING;
        return this.ident(node, node.property.value, !node.optional, false);
      }
      return UNKNOWN;
    }
    const base0 = this.visit(node.node);
    let prop = this.visit(node.property);
    if (isUnknown(base0)) return UNKNOWN;
    if (node.property.t === "string") {
      if (base0.nil) fail(node, `type nil has no field ${node.property.value}`);
      const m = base0.type ? timeMethodType(base0.type, node.property.value) : undefined;
      if (m) return nat(m);
    }
    const base = deref(base0);
    switch (kindOf(base)) {
      case "map": {
        const key = keyOf(base);
        if (!assignableTo(prop, key)) {
          const d = deref(prop);
          if (assignableTo(d, key)) prop = d;
        }
        if (!assignableTo(prop, key) && !isUnknown(prop)) {
          fail(
            node.property,
            `cannot use ${natureString(prop)} to get an element from ${natureString(base)}`,
          );
        }
        if (node.property.t === "string" && base.fields) {
          const f = base.fields.get(node.property.value);
          if (f) return f;
          if (base.strict) fail(node.property, `unknown field ${node.property.value}`);
        }
        return elemOf(base);
      }
      case "slice":
      case "array": {
        const p = deref(prop);
        if (!isInteger(p) && !isUnknown(p)) {
          fail(
            node.property,
            `array elements can only be selected using an integer (got ${natureString(p)})`,
          );
        }
        return elemOf(base);
      }
      case "struct":
        if (node.property.t === "string") {
          fail(
            node,
            `type ${natureString(base)} has no ${node.method ? "method" : "field"} ${node.property.value}`,
          );
        }
    }
    if (node.property.t === "string") {
      fail(
        node,
        `type ${natureString(base)} has no ${node.method ? "method" : "field"} ${node.property.value}`,
      );
    }
    return fail(node, `type ${natureString(base)}[${natureString(prop)}] is undefined`);
  }

  private slice(node: NodeOf<"slice">): Nature {
    const n = this.visit(node.node);
    if (isUnknown(n)) return UNKNOWN;
    const k = kindOf(n);
    if (k !== "string" && k !== "slice" && k !== "array") fail(node, `cannot slice ${natureString(n)}`);
    if (node.from) {
      const from = deref(this.visit(node.from));
      if (!isInteger(from) && !isUnknown(from))
        fail(node.from, `non-integer slice index ${natureString(from)}`);
    }
    if (node.to) {
      const to = deref(this.visit(node.to));
      if (!isInteger(to) && !isUnknown(to)) fail(node.to, `non-integer slice index ${natureString(to)}`);
    }
    return n;
  }

  private call(node: NodeOf<"call">): Nature {
    if (node.callee.t === "ident" && node.callee.name === "$env") fail(node, `${MAP.name} is not callable`);
    const n = this.visit(node.callee);
    if (isUnknown(n)) return UNKNOWN;
    if (n.func) return this.checkFunction(n.func as Builtin, node, node.args);
    let name = "function";
    if (node.callee.t === "ident") name = node.callee.name;
    if (node.callee.t === "member" && node.callee.property.t === "string") name = node.callee.property.value;
    if (n.nil) fail(node, `${name} is nil; cannot call nil as function`);
    if (isFunc(n)) {
      const out = this.checkArguments(name, n, node.args, node);
      if ("message" in out) fail(out.node, out.message);
      return out;
    }
    return fail(node, `${natureString(n)} is not callable`);
  }

  private collection(node: NodeOf<"builtin">): Nature {
    const c = deref(this.visit(node.args[0] as Node));
    if (!isArray(c) && !isUnknown(c)) {
      fail(node.args[0] as Node, `builtin ${node.name} takes only array (got ${natureString(c)})`);
    }
    return c;
  }

  private predicateOf(node: NodeOf<"builtin">, collection: Nature, vars: Scope["vars"] = []): Nature {
    this.scopes.push({ collection, vars });
    try {
      return this.visit(node.args[1] as Node);
    } finally {
      this.scopes.pop();
    }
  }

  private boolPredicate(node: NodeOf<"builtin">, predicate: Nature): void {
    const out = outOf(predicate, 0);
    if (!isBool(out) && !isUnknown(out)) {
      fail(node.args[1] as Node, `predicate should return boolean (got ${natureString(out)})`);
    }
  }

  private badPredicate(node: NodeOf<"builtin">, two = false): never {
    return fail(
      node.args[1] as Node,
      `predicate should has ${two ? "two" : "one"} input and one output param`,
    );
  }

  private builtin(node: NodeOf<"builtin">): Nature {
    switch (node.name) {
      case "all":
      case "none":
      case "any":
      case "one": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c);
        if (!isPredicateFunc(p)) this.badPredicate(node);
        this.boolPredicate(node, p);
        return BOOL;
      }
      case "filter": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c);
        if (!isPredicateFunc(p)) this.badPredicate(node);
        this.boolPredicate(node, p);
        if (isUnknown(c)) return nat(ARRAY);
        return arrayOfNature(elemOf(c));
      }
      case "map": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c, [{ name: "index", nature: INT }]);
        if (!isPredicateFunc(p)) this.badPredicate(node);
        return arrayOfNature(p.ref ?? UNKNOWN);
      }
      case "count": {
        const c = this.collection(node);
        if (node.args.length === 1) return INT;
        const p = this.predicateOf(node, c);
        if (!isPredicateFunc(p)) this.badPredicate(node);
        this.boolPredicate(node, p);
        return INT;
      }
      case "sum": {
        const c = this.collection(node);
        if (node.args.length === 2) {
          const p = this.predicateOf(node, c);
          if (isPredicateFunc(p)) return outOf(p, 0);
          break;
        }
        if (isUnknown(c)) return UNKNOWN;
        return elemOf(c);
      }
      case "find":
      case "findLast": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c);
        if (!isPredicateFunc(p)) this.badPredicate(node);
        this.boolPredicate(node, p);
        if (isUnknown(c)) return UNKNOWN;
        return elemOf(c);
      }
      case "findIndex":
      case "findLastIndex": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c);
        if (!isPredicateFunc(p)) this.badPredicate(node);
        this.boolPredicate(node, p);
        return INT;
      }
      case "groupBy": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c);
        if (!isPredicateFunc(p)) this.badPredicate(node);
        return { type: mapOf(T.any, ARRAY), ref: arrayOfNature(elemOf(c)) };
      }
      case "sortBy": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c);
        if (node.args.length === 3) {
          const order = this.visit(node.args[2] as Node);
          if (!isString(order) && !isUnknown(order)) {
            fail(node.args[2] as Node, `sortBy order argument must be a string (got ${natureString(order)})`);
          }
        }
        if (!isPredicateFunc(p)) this.badPredicate(node);
        return c;
      }
      case "reduce": {
        const c = this.collection(node);
        const p = this.predicateOf(node, c, [
          { name: "index", nature: INT },
          { name: "acc", nature: UNKNOWN },
        ]);
        if (node.args.length === 3) this.visit(node.args[2] as Node);
        if (isFunc(p) && numOut(p) === 1) return p.ref ?? UNKNOWN;
        return this.badPredicate(node, true);
      }
    }
    const b = BUILTIN_INDEX.get(node.name);
    if (b) {
      if (b.name === "get") return this.builtinGet(node);
      return this.checkFunction(b, node, node.args);
    }
    return fail(node, `unknown builtin ${node.name}`);
  }

  private builtinGet(node: NodeOf<"builtin">): Nature {
    if (node.args.length !== 2)
      fail(node, `invalid number of arguments (expected 2, got ${node.args.length})`);
    const [baseNode, propNode] = node.args as [Node, Node];
    const base = this.visit(baseNode);
    const prop = deref(this.visit(propNode));
    if (baseNode.t === "ident" && baseNode.name === "$env") {
      if (propNode.t === "string") return this.env.fields.get(propNode.value) ?? UNKNOWN;
      return UNKNOWN;
    }
    if (isUnknown(base)) return UNKNOWN;
    switch (kindOf(base)) {
      case "slice":
      case "array":
        if (!isInteger(prop) && !isUnknown(prop))
          fail(propNode, `non-integer slice index ${natureString(prop)}`);
        return elemOf(base);
      case "map":
        if (!assignableTo(prop, keyOf(base)) && !isUnknown(prop)) {
          fail(propNode, `cannot use ${natureString(prop)} to get an element from ${natureString(base)}`);
        }
        return elemOf(base);
    }
    return fail(baseNode, `type ${natureString(base)} does not support indexing`);
  }

  private checkFunction(f: Builtin, node: Node, args: Node[]): Nature {
    if (f.validate) {
      const types = args.map((a) => {
        const n = this.visit(a);
        return isUnknown(n) ? T.any : n.type;
      });
      try {
        return nat(f.validate(types));
      } catch (e) {
        if (e instanceof BuiltinError) fail(node, e.message);
        throw e;
      }
    }
    const overloads = f.types ?? [];
    if (overloads.length === 0) {
      const out = this.checkArguments(f.name, nat(builtinType(f)), args, node);
      if ("message" in out) fail(out.node, out.message);
      return out;
    }
    let last: Mismatch | undefined;
    for (const t of overloads) {
      const out = this.checkArguments(f.name, nat(t), args, node);
      if ("message" in out) {
        last = out;
        continue;
      }
      return out;
    }
    if (last) fail(last.node, last.message);
    return fail(node, `no matching overload for ${f.name}`);
  }

  private checkArguments(name: string, fn: Nature, args: Node[], node: Node): Nature | Mismatch {
    if (isUnknown(fn)) return UNKNOWN;
    const t = fn.type as GoType;
    const outs = t.outs?.length ?? 0;
    if (outs === 0) return { node, message: `func ${name} doesn't return value` };
    if (outs > 2) return { node, message: `func ${name} returns more then two values` };
    const ins = t.ins ?? [];
    const n = ins.length;
    let arity: string | undefined;
    if (t.variadic) {
      if (args.length < n - 1) arity = `not enough arguments to call ${name}`;
    } else {
      if (args.length > n) arity = `too many arguments to call ${name}`;
      if (args.length < n) arity = `not enough arguments to call ${name}`;
    }
    if (arity) {
      for (const a of args) this.visit(a);
      return { node, message: arity };
    }
    for (let i = 0; i < args.length; i++) {
      const arg = args[i] as Node;
      const argNature = this.visit(arg);
      const inType = t.variadic && i >= n - 1 ? ((ins[n - 1] as GoType).elem as GoType) : (ins[i] as GoType);
      const inNature = nat(inType);
      if (isFloat(inNature) && isInteger(argNature)) {
        integersToFloats(arg, inType);
        continue;
      }
      if (isInteger(inNature) && isInteger(argNature) && kindOf(argNature) !== kindOf(inNature)) {
        retypeIntegers(arg, inType);
        continue;
      }
      if (argNature.nil) {
        if (inType.kind === "ptr" || inType.kind === "interface") continue;
        return { node: arg, message: `cannot use nil as argument (type ${inType.name}) to call ${name}` };
      }
      if (!assignableTo(argNature, inNature) && !isUnknown(argNature)) {
        return {
          node: arg,
          message: `cannot use ${natureString(argNature)} as argument (type ${inType.name}) to call ${name} `,
        };
      }
    }
    return nat(t.outs?.[0]);
  }

  private predicate(node: NodeOf<"predicate">): Nature {
    const n = this.visit(node.node);
    const outs = isUnknown(n) ? [T.any] : n.nil ? [] : n.type ? [n.type] : [];
    return { type: funcOf([T.any], outs), ref: n };
  }

  private pointer(node: NodeOf<"pointer">): Nature {
    const scope = this.scopes.at(-1);
    if (!scope) return fail(node, "cannot use pointer accessor outside predicate");
    if (node.name === "") {
      if (isUnknown(scope.collection)) return UNKNOWN;
      if (isArray(scope.collection)) return elemOf(scope.collection);
      return fail(node, `cannot use ${natureString(scope.collection)} as array`);
    }
    const v = scope.vars.find((x) => x.name === node.name);
    if (v) return v.nature;
    return fail(node, `unknown pointer #${node.name}`);
  }

  private letNode(node: NodeOf<"let">): Nature {
    if (this.env.fields.has(node.name)) fail(node, `cannot redeclare ${node.name}`);
    if (BUILTIN_INDEX.has(node.name)) fail(node, `cannot redeclare builtin ${node.name}`);
    if (this.vars.some((v) => v.name === node.name)) fail(node, `cannot redeclare variable ${node.name}`);
    const value = this.visit(node.value);
    this.vars.push({ name: node.name, nature: value });
    try {
      return this.visit(node.expr);
    } finally {
      this.vars.pop();
    }
  }

  private conditional(node: NodeOf<"conditional">): Nature {
    const c = deref(this.visit(node.cond));
    if (!isBool(c) && !isUnknown(c)) {
      fail(node.cond, `non-bool expression (type ${natureString(c)}) used as condition`);
    }
    const t1 = this.visit(node.exp1);
    const t2 = this.visit(node.exp2);
    if (t1.nil && !t2.nil) return t2;
    if (!t1.nil && t2.nil) return t1;
    if (t1.nil && t2.nil) return NIL;
    if (assignableTo(t1, t2)) {
      if (isArray(t1) && isArray(t2)) {
        const e1 = elemOf(t1);
        const e2 = elemOf(t2);
        if (!assignableTo(e1, e2) || !assignableTo(e2, e1)) return nat(ARRAY);
      }
      return t1;
    }
    return UNKNOWN;
  }

  private array(node: NodeOf<"array">): Nature {
    let prev: Nature = UNKNOWN;
    let same = true;
    node.nodes.forEach((n, i) => {
      const curr = this.visit(n);
      if (i > 0 && kindOf(curr) !== kindOf(prev)) same = false;
      prev = curr;
    });
    return same ? arrayOfNature(prev) : nat(ARRAY);
  }
}

/** expr rewrites integer literals passed where a float is expected into float literals. */
function integersToFloats(node: Node, to: GoType): void {
  if (node.t === "int") {
    const n = node as unknown as { t: string; value: unknown; nature?: Nature };
    n.t = "float";
    n.value = Number(node.value);
    n.nature = nat(to);
    return;
  }
  if (node.t === "unary") integersToFloats(node.node, to);
  if (node.t === "binary" && (node.op === "+" || node.op === "-" || node.op === "*")) {
    integersToFloats(node.left, to);
    integersToFloats(node.right, to);
  }
}

/** ... and integer literals passed where another integer type is expected into that type. */
function retypeIntegers(node: Node, to: GoType): void {
  if (node.t === "int") {
    node.nature = nat(to);
    return;
  }
  if (node.t === "unary") {
    node.nature = nat(to);
    retypeIntegers(node.node, to);
  }
  if (node.t === "binary" && (node.op === "+" || node.op === "-" || node.op === "*")) {
    retypeIntegers(node.left, to);
    retypeIntegers(node.right, to);
  }
}

/** Type-checks the tree against the environment; throws {@link ExprError} (stage "check"). */
export function check(root: Node, env: Env): Nature {
  try {
    return new Checker(env).visit(root);
  } catch (e) {
    if (e instanceof CheckFailure) throw e.error;
    throw e;
  }
}
