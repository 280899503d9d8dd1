import { re2Search } from "./re2.ts";

/**
 * The expression language of `successCondition` / `failureCondition`.
 *
 * Argo Rollouts evaluates conditions with expr-lang (github.com/expr-lang/expr) in an environment
 * holding `result` and the helpers `asInt`, `asFloat`, `isNaN`, `isInf`, `isNil`, `default`. Users
 * move their AnalysisTemplates to us unchanged, so this is a hand-written Pratt parser for the part
 * of expr-lang that analysis templates use, with expr's operator precedences and its runtime rules
 * (missing map keys are nil, negative indexes count from the end, `/` is float division, `&&`
 * wants booleans). It lives in `statemachine/` because the spec parser compiles every condition
 * when a template is loaded: a typo is reported then, not at the first measurement.
 */

/** A compiled condition: parse once, evaluate against every measurement's result. */
export interface Condition {
  /** The expression as written in the template (used verbatim in Argo's error messages). */
  readonly text: string;
  /**
   * True or false for this result; throws {@link ConditionEvaluationError} when the expression
   * cannot be evaluated (index out of range on an empty vector, a non-boolean outcome, ...).
   */
  evaluate(result: unknown): boolean;
}

/** A condition that cannot be parsed; the message names the column and shows a caret. */
export class ConditionSyntaxError extends Error {
  override name = "ConditionSyntaxError";
  /** Zero-based offset in the expression where the problem was found. */
  readonly position: number;
  readonly expression: string;
  readonly detail: string;
  constructor(detail: string, expression: string, position: number) {
    const line = expression.replace(/\n/g, " ");
    super(`${detail} (column ${position + 1})\n | ${line}\n | ${".".repeat(Math.max(0, position))}^`);
    this.detail = detail;
    this.expression = expression;
    this.position = position;
  }
}

/** A condition that parsed but cannot be evaluated for a given result: an Error measurement. */
export class ConditionEvaluationError extends Error {
  override name = "ConditionEvaluationError";
}

// ---------------------------------------------------------------------------------------------
// Tokens

type TokenKind = "number" | "string" | "ident" | "op" | "eof";
interface Token {
  kind: TokenKind;
  value: string;
  /** Parsed value of number and string literals. */
  literal?: number | string;
  pos: number;
}

const OPERATORS = [
  "**",
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "??",
  "?.",
  "..",
  "+",
  "-",
  "*",
  "/",
  "%",
  "^",
  "<",
  ">",
  "!",
  "?",
  ":",
  ".",
  ",",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  "#",
];

const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  "\\": "\\",
  '"': '"',
  "'": "'",
  "0": "\0",
  b: "\b",
  f: "\f",
  v: "\v",
};

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fail = (detail: string, at: number): never => {
    throw new ConditionSyntaxError(detail, text, at);
  };
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(text[i + 1] ?? ""))) {
      const hex = /^0[xX][0-9a-fA-F_]+/.exec(text.slice(i));
      if (hex) {
        i += hex[0].length;
        tokens.push({
          kind: "number",
          value: hex[0],
          literal: Number.parseInt(hex[0].slice(2).replace(/_/g, ""), 16),
          pos: start,
        });
        continue;
      }
      // A range `1..3` must not read `1.` as a float.
      const m = /^(?:[0-9][0-9_]*(?:\.(?!\.)[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9]+)?/.exec(
        text.slice(i),
      );
      const raw = m?.[0] ?? c;
      i += raw.length;
      const n = Number(raw.replace(/_/g, ""));
      if (Number.isNaN(n)) fail(`invalid number ${JSON.stringify(raw)}`, start);
      tokens.push({ kind: "number", value: raw, literal: n, pos: start });
      continue;
    }
    if (c === '"' || c === "'") {
      let out = "";
      i++;
      for (;;) {
        if (i >= text.length) fail("literal not terminated", start);
        const ch = text[i] as string;
        if (ch === c) {
          i++;
          break;
        }
        if (ch === "\\") {
          const next = text[i + 1] ?? "";
          if (next === "u") {
            const hex = text.slice(i + 2, i + 6);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("invalid unicode escape", i);
            out += String.fromCharCode(Number.parseInt(hex, 16));
            i += 6;
            continue;
          }
          const esc = ESCAPES[next];
          if (esc === undefined) fail(`invalid escape \\${next}`, i);
          out += esc;
          i += 2;
          continue;
        }
        out += ch;
        i++;
      }
      tokens.push({ kind: "string", value: text.slice(start, i), literal: out, pos: start });
      continue;
    }
    if (c === "`") {
      const end = text.indexOf("`", i + 1);
      if (end < 0) fail("literal not terminated", start);
      tokens.push({
        kind: "string",
        value: text.slice(start, end + 1),
        literal: text.slice(i + 1, end),
        pos: start,
      });
      i = end + 1;
      continue;
    }
    if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(text.slice(i));
      const word = m?.[0] ?? c;
      i += word.length;
      tokens.push({ kind: "ident", value: word, pos: start });
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i));
    if (!op)
      fail(
        `unrecognized character: U+${c.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")} '${c}'`,
        i,
      );
    i += (op as string).length;
    tokens.push({ kind: "op", value: op as string, pos: start });
  }
  tokens.push({ kind: "eof", value: "", pos: text.length });
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// AST

type Node =
  | { t: "lit"; v: unknown }
  | { t: "result" }
  | { t: "pointer" }
  | { t: "array"; items: Node[] }
  | { t: "map"; entries: [Node, Node][] }
  | { t: "member"; obj: Node; name: Node; optional: boolean }
  | { t: "slice"; obj: Node; from?: Node; to?: Node }
  | { t: "unary"; op: string; arg: Node }
  | { t: "binary"; op: string; left: Node; right: Node }
  | { t: "cond"; test: Node; then: Node; else: Node }
  | { t: "call"; fn: string; args: Node[] }
  | { t: "predicate"; fn: string; arg: Node; body: Node };

/** Binary operators and their precedence, as expr-lang's parser defines them. */
const BINARY: Record<string, { prec: number; right?: boolean }> = {
  or: { prec: 10 },
  "||": { prec: 10 },
  and: { prec: 15 },
  "&&": { prec: 15 },
  "==": { prec: 20 },
  "!=": { prec: 20 },
  "<": { prec: 20 },
  ">": { prec: 20 },
  "<=": { prec: 20 },
  ">=": { prec: 20 },
  in: { prec: 20 },
  matches: { prec: 20 },
  contains: { prec: 20 },
  startsWith: { prec: 20 },
  endsWith: { prec: 20 },
  "..": { prec: 25 },
  "+": { prec: 30 },
  "-": { prec: 30 },
  "*": { prec: 60 },
  "/": { prec: 60 },
  "%": { prec: 60 },
  "**": { prec: 100, right: true },
  "^": { prec: 100, right: true },
  "??": { prec: 500 },
};
const UNARY_PREC: Record<string, number> = { not: 50, "!": 50, "-": 90, "+": 90 };
const KEYWORD_ALIASES: Record<string, string> = { or: "||", and: "&&", not: "!" };

/** Functions taking a collection and a predicate over `#` (expr-lang builtins). */
const PREDICATE_FUNCS = new Set(["all", "any", "none", "one", "filter", "map", "count", "find", "findIndex"]);

class Parser {
  private i = 0;
  private closureDepth = 0;
  constructor(
    private readonly text: string,
    private readonly tokens: Token[],
  ) {}

  parse(): Node {
    if (this.peek().kind === "eof") this.fail("empty expression", 0);
    const node = this.expression(0);
    const t = this.peek();
    if (t.kind !== "eof") this.fail(`unexpected token ${describe(t)}`, t.pos);
    return node;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)] as Token;
  }
  private next(): Token {
    const t = this.peek();
    if (this.i < this.tokens.length - 1) this.i++;
    return t;
  }
  private isOp(value: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t.kind === "op" && t.value === value;
  }
  private expect(value: string): Token {
    const t = this.peek();
    if (t.kind !== "op" || t.value !== value) {
      this.fail(`unexpected token ${describe(t)}, expected "${value}"`, t.pos);
    }
    return this.next();
  }
  private fail(detail: string, pos: number): never {
    throw new ConditionSyntaxError(detail, this.text, pos);
  }

  /** A binary operator at the current token, including `not in`. */
  private binaryAt(): { op: string; width: number } | undefined {
    const t = this.peek();
    if (
      t.kind === "ident" &&
      t.value === "not" &&
      this.peek(1).kind === "ident" &&
      this.peek(1).value === "in"
    ) {
      return { op: "not in", width: 2 };
    }
    if ((t.kind === "op" || t.kind === "ident") && BINARY[t.value]) return { op: t.value, width: 1 };
    return undefined;
  }

  private expression(minPrec: number): Node {
    let left = this.unary();
    for (;;) {
      const found = this.binaryAt();
      if (!found) break;
      const info =
        found.op === "not in" ? { prec: 20 } : (BINARY[found.op] as { prec: number; right?: boolean });
      if (info.prec < minPrec) break;
      for (let k = 0; k < found.width; k++) this.next();
      const right = this.expression(info.right ? info.prec : info.prec + 1);
      const op = KEYWORD_ALIASES[found.op] ?? found.op;
      left = { t: "binary", op, left, right };
    }
    if (minPrec === 0 && this.isOp("?")) {
      this.next();
      const then = this.expression(0);
      this.expect(":");
      const otherwise = this.expression(0);
      left = { t: "cond", test: left, then, else: otherwise };
    }
    return left;
  }

  private unary(): Node {
    const t = this.peek();
    const prec = UNARY_PREC[t.value];
    if ((t.kind === "op" || t.kind === "ident") && prec !== undefined) {
      this.next();
      const arg = this.expression(prec);
      return { t: "unary", op: KEYWORD_ALIASES[t.value] ?? t.value, arg };
    }
    return this.postfix(this.primary());
  }

  private primary(): Node {
    const t = this.next();
    if (t.kind === "number") return { t: "lit", v: t.literal };
    if (t.kind === "string") return { t: "lit", v: t.literal };
    if (t.kind === "eof") this.fail("unexpected end of expression", t.pos);
    if (t.kind === "op") {
      switch (t.value) {
        case "(": {
          const inner = this.expression(0);
          this.expect(")");
          return inner;
        }
        case "[": {
          const items: Node[] = [];
          while (!this.isOp("]")) {
            items.push(this.expression(0));
            if (!this.isOp(",")) break;
            this.next();
          }
          this.expect("]");
          return { t: "array", items };
        }
        case "{": {
          const entries: [Node, Node][] = [];
          while (!this.isOp("}")) {
            const k = this.next();
            let key: Node;
            if (k.kind === "ident" || k.kind === "string")
              key = { t: "lit", v: k.kind === "ident" ? k.value : k.literal };
            else if (k.kind === "number") key = { t: "lit", v: k.literal };
            else if (k.kind === "op" && k.value === "(") {
              key = this.expression(0);
              this.expect(")");
            } else this.fail(`unexpected token ${describe(k)}, expected a map key`, k.pos);
            this.expect(":");
            entries.push([key, this.expression(0)]);
            if (!this.isOp(",")) break;
            this.next();
          }
          this.expect("}");
          return { t: "map", entries };
        }
        case "#":
          if (this.closureDepth === 0) this.fail("cannot use pointer accessor outside predicate", t.pos);
          return { t: "pointer" };
        case ".": {
          // `.field` inside a predicate is `#.field`.
          if (this.closureDepth === 0) this.fail(`unexpected token ${describe(t)}`, t.pos);
          const name = this.next();
          if (name.kind !== "ident") this.fail(`expected name after "."`, name.pos);
          return { t: "member", obj: { t: "pointer" }, name: { t: "lit", v: name.value }, optional: false };
        }
      }
      this.fail(`unexpected token ${describe(t)}`, t.pos);
    }
    // identifier
    switch (t.value) {
      case "true":
        return { t: "lit", v: true };
      case "false":
        return { t: "lit", v: false };
      case "nil":
        return { t: "lit", v: null };
      case "result":
        if (this.isOp("(")) this.fail("result is not callable", this.peek().pos);
        return { t: "result" };
    }
    if (this.isOp("(")) return this.call(t);
    if (FUNCTIONS[t.value] || PREDICATE_FUNCS.has(t.value)) {
      this.fail(`function ${t.value} must be called`, t.pos);
    }
    return this.fail(`unknown name ${t.value}`, t.pos);
  }

  private call(name: Token): Node {
    this.expect("(");
    if (PREDICATE_FUNCS.has(name.value)) {
      const arg = this.expression(0);
      this.expect(",");
      this.closureDepth++;
      let body: Node;
      if (this.isOp("{")) {
        this.next();
        body = this.expression(0);
        this.expect("}");
      } else {
        body = this.expression(0);
      }
      this.closureDepth--;
      this.expect(")");
      return { t: "predicate", fn: name.value, arg, body };
    }
    const spec = FUNCTIONS[name.value];
    if (!spec) this.fail(`unknown func ${name.value}`, name.pos);
    const args: Node[] = [];
    while (!this.isOp(")")) {
      args.push(this.expression(0));
      if (!this.isOp(",")) break;
      this.next();
    }
    this.expect(")");
    if (args.length < spec.min || args.length > spec.max) {
      const want = spec.min === spec.max ? `${spec.min}` : `${spec.min} to ${spec.max}`;
      this.fail(
        `invalid number of arguments to ${name.value} (expected ${want}, got ${args.length})`,
        name.pos,
      );
    }
    return { t: "call", fn: name.value, args };
  }

  private postfix(node: Node): Node {
    let out = node;
    for (;;) {
      if (this.isOp(".") || this.isOp("?.")) {
        const optional = this.next().value === "?.";
        if (optional && this.isOp("[")) {
          out = this.index(out, true);
          continue;
        }
        const name = this.next();
        if (name.kind !== "ident") this.fail(`expected name after "."`, name.pos);
        out = { t: "member", obj: out, name: { t: "lit", v: name.value }, optional };
        continue;
      }
      if (this.isOp("[")) {
        out = this.index(out, false);
        continue;
      }
      return out;
    }
  }

  private index(obj: Node, optional: boolean): Node {
    this.expect("[");
    let from: Node | undefined;
    if (!this.isOp(":")) from = this.expression(0);
    if (this.isOp(":")) {
      this.next();
      let to: Node | undefined;
      if (!this.isOp("]")) to = this.expression(0);
      this.expect("]");
      return { t: "slice", obj, from, to };
    }
    this.expect("]");
    if (!from) this.fail("expected an index", this.peek().pos);
    return { t: "member", obj, name: from, optional };
  }
}

function describe(t: Token): string {
  if (t.kind === "eof") return "end of expression";
  return JSON.stringify(t.value);
}

// ---------------------------------------------------------------------------------------------
// Runtime

/** The Go type name expr-lang would print, so error messages read like Argo's. */
function typeName(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float64";
  if (typeof v === "string") return "string";
  if (typeof v === "boolean") return "bool";
  if (Array.isArray(v)) return "[]interface {}";
  return "map[string]interface {}";
}

function fail(message: string): never {
  throw new ConditionEvaluationError(message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function num(v: unknown, fn: string): number {
  if (typeof v !== "number") fail(`${fn}: invalid argument of type ${typeName(v)} (expected float64)`);
  return v;
}

function list(v: unknown, fn: string): unknown[] {
  if (!Array.isArray(v)) fail(`${fn}: invalid argument of type ${typeName(v)} (expected array)`);
  return v;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === undefined) return equal(null, b);
  if (b === undefined) return equal(a, null);
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, k) => equal(x, b[k]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && equal(a[k], b[k]));
  }
  return a === b;
}

function toInt(v: unknown, fn: string): number {
  if (typeof v === "number") return Math.trunc(v);
  if (typeof v === "string") {
    if (!/^[+-]?[0-9]+$/.test(v.trim()) || v.trim() !== v) {
      fail(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
    }
    return Number.parseInt(v, 10);
  }
  if (typeof v === "boolean" && fn === "int") return v ? 1 : 0;
  return fail(`${fn}() not supported on ${typeName(v)} ${String(v)}`);
}

function toFloat(v: unknown, fn: string): number {
  if (typeof v === "number") return v;
  if (typeof v === "string") {
    const s = v.trim();
    const special: Record<string, number> = {
      nan: Number.NaN,
      inf: Number.POSITIVE_INFINITY,
      "+inf": Number.POSITIVE_INFINITY,
      "-inf": Number.NEGATIVE_INFINITY,
      infinity: Number.POSITIVE_INFINITY,
      "+infinity": Number.POSITIVE_INFINITY,
      "-infinity": Number.NEGATIVE_INFINITY,
    };
    const sp = special[s.toLowerCase()];
    if (sp !== undefined && s === v) return sp;
    if (s !== v || s === "" || Number.isNaN(Number(s))) {
      fail(`strconv.ParseFloat: parsing ${JSON.stringify(v)}: invalid syntax`);
    }
    return Number(s);
  }
  return fail(`${fn}() not supported on ${typeName(v)} ${String(v)}`);
}

/** Go's strconv 'g'-like formatting for `string(x)`: integers without a decimal point. */
function goString(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "NaN";
    if (v === Number.POSITIVE_INFINITY) return "+Inf";
    if (v === Number.NEGATIVE_INFINITY) return "-Inf";
    return String(v);
  }
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

interface FnSpec {
  min: number;
  max: number;
  /** Receives evaluated arguments and the run's whole result (for Argo's isNil/default). */
  run: (args: unknown[], result: unknown) => unknown;
}

function numbersOf(args: unknown[], fn: string): number[] {
  const flat = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  return flat.map((x) => num(x, fn));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  if (s.length === 0) return fail("median: empty array");
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

const FUNCTIONS: Record<string, FnSpec> = {
  // Argo Rollouts' environment (utils/evaluate/evaluate.go).
  isNaN: { min: 1, max: 1, run: ([x]) => Number.isNaN(num(x, "isNaN")) },
  isInf: { min: 1, max: 1, run: ([x]) => Math.abs(num(x, "isInf")) === Number.POSITIVE_INFINITY },
  asInt: { min: 1, max: 1, run: ([x]) => toInt(x, "asInt") },
  asFloat: { min: 1, max: 1, run: ([x]) => toFloat(x, "asFloat") },
  // Argo's isNil and default ignore their first argument and look at the whole result.
  isNil: { min: 1, max: 1, run: (_args, result) => result === null || result === undefined },
  default: {
    min: 2,
    max: 2,
    run: ([, fallback], result) => (result === null || result === undefined ? fallback : result),
  },
  // expr-lang builtins that appear in analysis templates.
  len: {
    min: 1,
    max: 1,
    run: ([x]) => {
      if (typeof x === "string") return [...x].length;
      if (Array.isArray(x)) return x.length;
      if (isObject(x)) return Object.keys(x).length;
      return fail(`invalid argument for len (type ${typeName(x)})`);
    },
  },
  abs: { min: 1, max: 1, run: ([x]) => Math.abs(num(x, "abs")) },
  ceil: { min: 1, max: 1, run: ([x]) => Math.ceil(num(x, "ceil")) },
  floor: { min: 1, max: 1, run: ([x]) => Math.floor(num(x, "floor")) },
  round: {
    min: 1,
    max: 1,
    run: ([x]) => {
      const n = num(x, "round");
      return Math.sign(n) * Math.round(Math.abs(n));
    },
  },
  int: { min: 1, max: 1, run: ([x]) => toInt(x, "int") },
  float: { min: 1, max: 1, run: ([x]) => toFloat(x, "float") },
  string: { min: 1, max: 1, run: ([x]) => goString(x) },
  max: {
    min: 1,
    max: Number.POSITIVE_INFINITY,
    run: (args) => {
      const xs = numbersOf(args, "max");
      return xs.length ? Math.max(...xs) : null;
    },
  },
  min: {
    min: 1,
    max: Number.POSITIVE_INFINITY,
    run: (args) => {
      const xs = numbersOf(args, "min");
      return xs.length ? Math.min(...xs) : null;
    },
  },
  sum: { min: 1, max: 1, run: ([x]) => list(x, "sum").reduce<number>((a, b) => a + num(b, "sum"), 0) },
  mean: {
    min: 1,
    max: 1,
    run: ([x]) => {
      const xs = list(x, "mean").map((v) => num(v, "mean"));
      return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
    },
  },
  median: { min: 1, max: 1, run: ([x]) => median(list(x, "median").map((v) => num(v, "median"))) },
  first: { min: 1, max: 1, run: ([x]) => list(x, "first")[0] ?? null },
  last: { min: 1, max: 1, run: ([x]) => list(x, "last").at(-1) ?? null },
  keys: {
    min: 1,
    max: 1,
    run: ([x]) => (isObject(x) ? Object.keys(x) : fail(`keys: invalid argument of type ${typeName(x)}`)),
  },
  values: {
    min: 1,
    max: 1,
    run: ([x]) => (isObject(x) ? Object.values(x) : fail(`values: invalid argument of type ${typeName(x)}`)),
  },
  lower: { min: 1, max: 1, run: ([x]) => str(x, "lower").toLowerCase() },
  upper: { min: 1, max: 1, run: ([x]) => str(x, "upper").toUpperCase() },
  trim: { min: 1, max: 1, run: ([x]) => str(x, "trim").trim() },
};

function str(v: unknown, fn: string): string {
  if (typeof v !== "string") fail(`${fn}: invalid argument of type ${typeName(v)} (expected string)`);
  return v;
}

function truthy(v: unknown, op: string): boolean {
  if (typeof v !== "boolean") fail(`invalid operation: ${op} (mismatched type ${typeName(v)})`);
  return v;
}

function compare(op: string, a: unknown, b: unknown): boolean {
  if (typeof a === "number" && typeof b === "number") {
    switch (op) {
      case "<":
        return a < b;
      case ">":
        return a > b;
      case "<=":
        return a <= b;
      default:
        return a >= b;
    }
  }
  if (typeof a === "string" && typeof b === "string") {
    switch (op) {
      case "<":
        return a < b;
      case ">":
        return a > b;
      case "<=":
        return a <= b;
      default:
        return a >= b;
    }
  }
  return fail(`invalid operation: ${typeName(a)} ${op} ${typeName(b)}`);
}

function arithmetic(op: string, a: unknown, b: unknown): unknown {
  if (op === "+" && typeof a === "string" && typeof b === "string") return a + b;
  if (typeof a !== "number" || typeof b !== "number") {
    return fail(`invalid operation: ${typeName(a)} ${op} ${typeName(b)}`);
  }
  switch (op) {
    case "+":
      return a + b;
    case "-":
      return a - b;
    case "*":
      return a * b;
    case "/":
      return a / b;
    case "%":
      if (Math.trunc(b) === 0) fail("integer divide by zero");
      return Math.trunc(a) % Math.trunc(b);
    default:
      return a ** b;
  }
}

function fetch(obj: unknown, key: unknown, optional: boolean): unknown {
  if (obj === null || obj === undefined) {
    if (optional) return null;
    return fail(`cannot fetch ${goString(key)} from <nil>`);
  }
  if (Array.isArray(obj) || typeof obj === "string") {
    if (typeof key !== "number" || !Number.isInteger(key)) {
      return fail(`cannot fetch ${goString(key)} from ${typeName(obj)}`);
    }
    const idx = key < 0 ? obj.length + key : key;
    if (idx < 0 || idx >= obj.length) {
      return fail(`index out of range: ${key} (array length is ${obj.length})`);
    }
    return obj[idx];
  }
  if (isObject(obj)) {
    const k = typeof key === "number" ? String(key) : key;
    if (typeof k !== "string") return fail(`cannot fetch ${goString(key)} from ${typeName(obj)}`);
    return Object.hasOwn(obj, k) ? obj[k] : null;
  }
  return fail(`cannot fetch ${goString(key)} from ${typeName(obj)}`);
}

interface Scope {
  result: unknown;
  pointer: unknown[];
}

function evaluateNode(node: Node, scope: Scope): unknown {
  switch (node.t) {
    case "lit":
      return node.v;
    case "result":
      return scope.result === undefined ? null : scope.result;
    case "pointer":
      return scope.pointer.at(-1);
    case "array":
      return node.items.map((n) => evaluateNode(n, scope));
    case "map": {
      const out: Record<string, unknown> = {};
      for (const [k, v] of node.entries) out[goString(evaluateNode(k, scope))] = evaluateNode(v, scope);
      return out;
    }
    case "member":
      return fetch(evaluateNode(node.obj, scope), evaluateNode(node.name, scope), node.optional);
    case "slice": {
      const obj = evaluateNode(node.obj, scope);
      if (!Array.isArray(obj) && typeof obj !== "string") return fail(`cannot slice ${typeName(obj)}`);
      const from = node.from ? toInt(evaluateNode(node.from, scope), "slice") : 0;
      const to = node.to ? toInt(evaluateNode(node.to, scope), "slice") : obj.length;
      const norm = (k: number) => Math.min(obj.length, Math.max(0, k < 0 ? obj.length + k : k));
      return obj.slice(norm(from), norm(to));
    }
    case "unary": {
      const v = evaluateNode(node.arg, scope);
      if (node.op === "!") return !truthy(v, "!");
      if (typeof v !== "number") return fail(`invalid operation: ${node.op}${typeName(v)}`);
      return node.op === "-" ? -v : v;
    }
    case "cond":
      return truthy(evaluateNode(node.test, scope), "?:")
        ? evaluateNode(node.then, scope)
        : evaluateNode(node.else, scope);
    case "binary":
      return binary(node.op, node.left, node.right, scope);
    case "call": {
      const spec = FUNCTIONS[node.fn] as FnSpec;
      return spec.run(
        node.args.map((a) => evaluateNode(a, scope)),
        scope.result,
      );
    }
    case "predicate":
      return predicate(node.fn, evaluateNode(node.arg, scope), node.body, scope);
  }
}

function binary(op: string, leftNode: Node, rightNode: Node, scope: Scope): unknown {
  if (op === "&&") {
    return truthy(evaluateNode(leftNode, scope), op) && truthy(evaluateNode(rightNode, scope), op);
  }
  if (op === "||") {
    return truthy(evaluateNode(leftNode, scope), op) || truthy(evaluateNode(rightNode, scope), op);
  }
  if (op === "??") {
    const l = evaluateNode(leftNode, scope);
    return l === null || l === undefined ? evaluateNode(rightNode, scope) : l;
  }
  const a = evaluateNode(leftNode, scope);
  const b = evaluateNode(rightNode, scope);
  switch (op) {
    case "==":
      return equal(a, b);
    case "!=":
      return !equal(a, b);
    case "<":
    case ">":
    case "<=":
    case ">=":
      return compare(op, a, b);
    case "in":
    case "not in": {
      let found: boolean;
      if (Array.isArray(b)) found = b.some((x) => equal(x, a));
      else if (isObject(b)) found = typeof a === "string" && Object.hasOwn(b, a);
      else if (b === null || b === undefined) found = false;
      else return fail(`invalid operation: ${typeName(a)} ${op} ${typeName(b)}`);
      return op === "in" ? found : !found;
    }
    case "contains":
      return str(a, op).includes(str(b, op));
    case "startsWith":
      return str(a, op).startsWith(str(b, op));
    case "endsWith":
      return str(a, op).endsWith(str(b, op));
    case "matches": {
      // Go's regexp (RE2): linear time whatever the pattern, Argo's semantics.
      try {
        return re2Search(str(b, op), str(a, op));
      } catch (e) {
        if (e instanceof ConditionEvaluationError) throw e;
        return fail((e as Error).message);
      }
    }
    case "..": {
      const from = toInt(a, ".."),
        to = toInt(b, "..");
      const out: number[] = [];
      for (let k = from; k <= to; k++) out.push(k);
      return out;
    }
    default:
      return arithmetic(op, a, b);
  }
}

function predicate(fn: string, collection: unknown, body: Node, scope: Scope): unknown {
  const items = collection === null || collection === undefined ? [] : list(collection, fn);
  const test = (item: unknown): unknown => {
    scope.pointer.push(item);
    try {
      return evaluateNode(body, scope);
    } finally {
      scope.pointer.pop();
    }
  };
  const bool = (item: unknown) => truthy(test(item), fn);
  switch (fn) {
    case "all":
      return items.every(bool);
    case "any":
      return items.some(bool);
    case "none":
      return !items.some(bool);
    case "one":
      return items.filter(bool).length === 1;
    case "filter":
      return items.filter(bool);
    case "count":
      return items.filter(bool).length;
    case "find":
      return items.find(bool) ?? null;
    case "findIndex":
      return items.findIndex(bool);
    default:
      return items.map(test);
  }
}

class CompiledExpression implements Expression {
  constructor(
    readonly text: string,
    private readonly ast: Node,
  ) {}

  value(result: unknown): unknown {
    try {
      return evaluateNode(this.ast, { result, pointer: [] });
    } catch (e) {
      if (e instanceof ConditionEvaluationError) throw e;
      // A JavaScript fault inside the evaluator is still an evaluation failure, never a crash.
      throw new ConditionEvaluationError((e as Error).message);
    }
  }
}

class CompiledCondition extends CompiledExpression implements Condition {
  evaluate(result: unknown): boolean {
    const out = this.value(result);
    if (typeof out !== "boolean") fail(`expected bool, but got ${typeName(out)}`);
    return out;
  }
}

/** An expression of the condition language whose value is any value, not only a boolean. */
export interface Expression {
  readonly text: string;
  /** The expression's value for this result; throws {@link ConditionEvaluationError} when it cannot be evaluated. */
  value(result: unknown): unknown;
}

/**
 * Parses an expression that reads a value out of a provider's result (`result.requests - result.ok`,
 * `result[0]`): what a judge's readings use to pick counts and samples out of an answer. Same
 * language, same errors as conditions.
 */
export function compileExpression(text: string): Expression {
  return new CompiledExpression(text, new Parser(text, tokenize(text)).parse());
}

/**
 * Parses a condition once. Throws {@link ConditionSyntaxError} for text expr-lang would reject at
 * compile time (syntax, unknown names and functions, wrong argument counts), so the spec parser can
 * report it when the template is loaded.
 */
export function compileCondition(text: string): Condition {
  const ast = new Parser(text, tokenize(text)).parse();
  return new CompiledCondition(text, ast);
}

/** The names a condition may use besides `result`: for documentation and error hints. */
export const CONDITION_FUNCTIONS: readonly string[] = [...Object.keys(FUNCTIONS), ...PREDICATE_FUNCS];
