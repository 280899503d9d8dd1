import { RolloutsError } from "../errors.ts";
import { goQuote } from "./errors.ts";
import { goJSONFloat, goJSONString, goStringCompare } from "./go-json.ts";
import { goJSONSyntaxError } from "./json.ts";
import { GoTime, Location, loadLocation, parseDuration, parseTime, UTC } from "./time.ts";
import {
  ARRAY,
  arrayOf,
  funcOf,
  type GoType,
  isFloatKind,
  isIntegerKind,
  type Kind,
  MAP,
  mapOf,
  sliceOf,
  T,
} from "./types.ts";
import {
  asString,
  byteIndex,
  byteLastIndex,
  equal,
  fetch,
  floatToInt,
  floatValue,
  format,
  fromUtf8,
  GoFunc,
  GoValue,
  goType,
  intValue,
  isDurationValue,
  isNil,
  less,
  mapIndex,
  mapKey,
  methodOf,
  nilSlice,
  panic,
  RunError,
  reflectLen,
  TypedFloat,
  TypedInt,
  toInt,
  typedArray,
  typedMap,
  typeOf,
  unMapKey,
  utf8,
  wrap,
} from "./values.ts";

/**
 * expr-lang's builtin functions: their names, how the checker types a call (overloads or a
 * validator, with expr's messages), and what they do at run time, including the failures a Go
 * panic gives. Predicate builtins (`all`, `map`, `reduce`, ...) are only declared here; the checker
 * and the evaluator handle their closures.
 */

export class BuiltinError extends RolloutsError {
  override readonly name = "BuiltinError";
}

export interface Builtin {
  readonly name: string;
  readonly predicate?: boolean;
  /** Overloads, tried in order; the first whose arguments fit decides the result type. */
  readonly types?: readonly GoType[];
  /** A validator over the argument types (`interface {}` for unknown, undefined for nil). */
  readonly validate?: (args: (GoType | undefined)[]) => GoType;
  /** Runs the call; returns the value and the memory it allocated (expr's memory budget). */
  readonly run?: (args: unknown[], call: CallContext) => unknown;
  /** Memory the result costs against the budget (expr's "safe" builtins). */
  readonly memory?: (result: unknown, args: unknown[]) => number;
  /** Only the first argument is passed (expr's fast one-argument builtins). */
  readonly fast?: boolean;
}

/** What a call may read of the evaluation it runs in. */
export interface CallContext {
  /** The instant `now()` answers, in milliseconds since the Unix epoch. */
  readonly now: () => number;
}

const ANY = T.any;
const STRING = T.string;
const INT = T.int;
const BOOL = T.bool;
const FLOAT = T.float64;
const ERROR = T.error;
const STRINGS = sliceOf(STRING);

function fail(message: string): never {
  throw new BuiltinError(message);
}

/** expr's `kind()`: the kind after dereferencing pointers; Invalid for nil. */
function kind(t: GoType | undefined): Kind | "invalid" {
  if (!t) return "invalid";
  if (t.kind === "ptr") return (t.elem as GoType).kind;
  return t.kind;
}

/** `%s` of a reflect.Type in expr's messages; Go prints a nil type as `%!s(<nil>)`. */
function typeName(t: GoType | undefined): string {
  return t ? t.name : "%!s(<nil>)";
}

/** reflect.Kind's name for a value (`cannot take from int`). */
function kindName(v: unknown): string {
  if (isNil(v)) return "invalid";
  const t = goType(v) as GoType;
  return t.kind === "interface" ? "interface" : t.kind;
}

const NUMERIC_KINDS = new Set<string>([
  "float32",
  "float64",
  "int",
  "int8",
  "int16",
  "int32",
  "int64",
  "uint",
  "uint8",
  "uint16",
  "uint32",
  "uint64",
]);

function oneArg(args: (GoType | undefined)[]): GoType | undefined {
  if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
  return args[0];
}

function validateRound(name: string) {
  return (args: (GoType | undefined)[]): GoType => {
    const a = oneArg(args);
    const k = kind(a);
    if (NUMERIC_KINDS.has(k) || k === "interface") return FLOAT;
    return fail(`invalid argument for ${name} (type ${typeName(a)})`);
  };
}

function validateAggregate(name: string) {
  return (args: (GoType | undefined)[]): GoType => {
    if (args.length === 0) fail(`not enough arguments to call ${name}`);
    for (const a of args) {
      const k = kind(a);
      if (k === "interface" || k === "slice" || k === "array") return ANY;
      if (!NUMERIC_KINDS.has(k)) fail(`invalid argument for ${name} (type ${typeName(a)})`);
    }
    return args[0] as GoType;
  };
}

function arrayValidator(message: string, out: GoType) {
  return (args: (GoType | undefined)[]): GoType => {
    const a = oneArg(args);
    const k = kind(a);
    if (k === "interface" || k === "slice" || k === "array") return out;
    return fail(`${message} ${typeName(a)}`);
  };
}

// ---------------------------------------------------------------------------------------------
// Run-time helpers

function str(v: unknown): string {
  return asString(v);
}

const GO_SPACES =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

function trimSet(s: string, cutset: string, left: boolean, right: boolean): string {
  const set = new Set(Array.from(cutset));
  const runes = Array.from(s);
  let a = 0;
  let b = runes.length;
  if (left) while (a < b && set.has(runes[a] as string)) a++;
  if (right) while (b > a && set.has(runes[b - 1] as string)) b--;
  return runes.slice(a, b).join("");
}

/** Go maps case rune by rune; a rune without a single-rune mapping stays as it is. */
function mapCase(s: string, upper: boolean): string {
  let out = "";
  for (const ch of s) {
    const m = upper ? ch.toUpperCase() : ch.toLowerCase();
    out += Array.from(m).length === 1 ? m : ch;
  }
  return out;
}

function splitGo(s: string, sep: string, n: number, after: boolean): string[] | null {
  if (n === 0) return null;
  if (sep === "") {
    const runes = Array.from(s);
    if (n > 0 && runes.length > n) return [...runes.slice(0, n - 1), runes.slice(n - 1).join("")];
    return runes;
  }
  const out: string[] = [];
  let rest = s;
  while (n < 0 || out.length < n - 1) {
    const i = rest.indexOf(sep);
    if (i < 0) break;
    out.push(rest.slice(0, after ? i + sep.length : i));
    rest = rest.slice(i + sep.length);
  }
  out.push(rest);
  return out;
}

function replaceGo(s: string, old: string, replacement: string, n: number): string {
  if (old === replacement || n === 0) return s;
  if (old === "") {
    const runes = Array.from(s);
    let out = "";
    let done = 0;
    for (let i = 0; i <= runes.length; i++) {
      if (n < 0 || done < n) {
        out += replacement;
        done++;
      }
      if (i < runes.length) out += runes[i];
    }
    return out;
  }
  let out = "";
  let rest = s;
  let done = 0;
  for (;;) {
    if (n >= 0 && done >= n) break;
    const i = rest.indexOf(old);
    if (i < 0) break;
    out += rest.slice(0, i) + replacement;
    rest = rest.slice(i + old.length);
    done++;
  }
  return out + rest;
}

/** `strings.Index` semantics on `[]any` of strings for join. */
function joinGo(arr: unknown, glue: string): string {
  if (!Array.isArray(arr)) return fail(`invalid argument for join (type ${typeOf(arr)})`);
  const t = typeOf(arr);
  if (t !== "[]string" && t !== "[]interface {}") return fail(`invalid argument for join (type ${t})`);
  return arr.map((x) => str(x)).join(glue);
}

function goInt(x: unknown, name: string): bigint {
  const i = intValue(x);
  if (i === undefined) return fail(`cannot use ${typeOf(x)} as argument (type int) to call ${name}`);
  return i;
}

function bitFunc(name: string, op: (x: bigint, y: bigint) => bigint): Builtin {
  return {
    name,
    types: [funcOf([INT, INT], [INT])],
    run: (args) => {
      if (args.length !== 2) fail(`invalid number of arguments for ${name} (expected 2, got ${args.length})`);
      const x = goInt(args[0], name);
      const y = goInt(args[1], name);
      return wrap(op(x, y));
    },
  };
}

function shift(y: bigint): bigint {
  if (y < 0n) fail(`invalid operation: negative shift count ${y} (type int)`);
  return y;
}

function parseGoInt(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const v = BigInt(s);
  return v > 9223372036854775807n || v < -9223372036854775808n ? undefined : v;
}

/** Go's `strconv.ParseFloat(s, 64)`: the value, or Go's error (`invalid syntax`, `value out of range`). */
export function goParseFloat(s: string): { value: number } | { error: string } {
  const quoted = `strconv.ParseFloat: parsing ${goQuote(s)}`;
  const v = parseGoFloat(s);
  if (v !== undefined) return { value: v };
  const plain = s.replace(/_/g, "");
  if (
    (!s.includes("_") || underscoreOK(s)) &&
    /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(plain)
  ) {
    return { error: `${quoted}: value out of range` };
  }
  return { error: `${quoted}: invalid syntax` };
}

/** Go's `strconv.ParseInt(s, 10, 64)`: the value, or Go's error. */
export function goParseInt(s: string): { value: bigint } | { error: string } {
  const quoted = `strconv.ParseInt: parsing ${goQuote(s)}`;
  if (!/^[+-]?[0-9]+$/.test(s)) return { error: `${quoted}: invalid syntax` };
  const v = BigInt(s);
  if (v > 9223372036854775807n || v < -9223372036854775808n)
    return { error: `${quoted}: value out of range` };
  return { value: v };
}

/** Go's `underscoreOK`: each `_` sits between digits (or after a base prefix). */
function underscoreOK(input: string): boolean {
  let s = input;
  if (s.startsWith("-") || s.startsWith("+")) s = s.slice(1);
  let saw = "^";
  let i = 0;
  let hex = false;
  if (s.length >= 2 && s[0] === "0" && /[bBoOxX]/.test(s[1] as string)) {
    i = 2;
    saw = "0";
    hex = /[xX]/.test(s[1] as string);
  }
  for (; i < s.length; i++) {
    const c = s[i] as string;
    if ((c >= "0" && c <= "9") || (hex && /[a-fA-F]/.test(c))) {
      saw = "0";
      continue;
    }
    if (c === "_") {
      if (saw !== "0") return false;
      saw = "_";
      continue;
    }
    if (saw === "_") return false;
    saw = "!";
  }
  return saw !== "_";
}

/** Go's `strconv.ParseFloat(s, 64)`; undefined for a syntax or range error. */
function parseGoFloat(s: string): number | undefined {
  if (s.includes("_") && !underscoreOK(s)) return undefined;
  const t = s.replace(/_/g, "");
  if (/^[+-]?(inf|infinity)$/i.test(t))
    return t.startsWith("-") ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (/^[+-]?nan$/i.test(t)) return Number.NaN;
  if (/^[+-]?0[xX]/.test(t)) {
    const m = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?[0-9]+)$/.exec(t);
    if (!m || (m[2] === "" && (m[3] ?? "") === "")) return undefined;
    const mant = Number.parseInt(`${m[2] || "0"}${m[3] ?? ""}`, 16) / 16 ** (m[3] ?? "").length;
    const v = mant * 2 ** Number(m[4]);
    return m[1] === "-" ? -v : v;
  }
  if (!/^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(t)) return undefined;
  const v = Number(t);
  return Number.isFinite(v) ? v : undefined;
}

function absValue(x: unknown): unknown {
  if (typeof x === "bigint") return x < 0n ? wrap(-x) : x;
  if (typeof x === "number") return x < 0 ? -x : x;
  if (x instanceof TypedInt && !x.type.named) {
    if (x.type.kind.startsWith("u")) return x;
    return x.value < 0n ? new TypedInt(BigInt.asIntN(64, -x.value), x.type) : x;
  }
  if (x instanceof TypedFloat) return x.value < 0 ? new TypedFloat(-x.value, x.type) : x;
  return panic(`invalid argument for abs (type ${typeOf(x)})`);
}

function roundLike(name: string, fn: (f: number) => number) {
  return (x: unknown): unknown => {
    const f = floatValue(x);
    if (f !== undefined) return fn(f);
    const i = intValue(x);
    if (i !== undefined) return Number(i);
    return panic(`invalid argument for ${name} (type ${typeOf(x)})`);
  };
}

function goRound(f: number): number {
  if (!Number.isFinite(f)) return f;
  const r = Math.sign(f) * Math.round(Math.abs(f));
  return r === 0 ? (Object.is(f, -0) || f < 0 ? -0 : 0) : r;
}

function isNumberValue(v: unknown): boolean {
  return intValue(v) !== undefined || floatValue(v) !== undefined;
}

function minMax(
  name: string,
  better: (a: unknown, b: unknown) => boolean,
  depth: number,
  args: unknown[],
): unknown {
  if (depth > 10_000) fail("recursion depth exceeded");
  let val: unknown = null;
  const consider = (e: unknown) => {
    if (isNil(val) || better(val, e)) val = e;
  };
  for (const arg of args) {
    if (Array.isArray(arg)) {
      for (const e of arg) {
        if (isNumberValue(e)) consider(e);
        else if (Array.isArray(e)) {
          const nested = minMax(name, better, depth + 1, [e]);
          if (!isNil(nested)) consider(nested);
        } else {
          const nested = minMax(name, better, depth + 1, [e]);
          if (!isNumberValue(nested)) fail(`invalid argument for ${name} (type ${typeOf(e)})`);
          consider(nested);
        }
      }
      continue;
    }
    if (isNumberValue(arg)) {
      consider(arg);
      continue;
    }
    if (args.length === 1) return args[0];
    fail(`invalid argument for ${name} (type ${typeOf(arg)})`);
  }
  return val;
}

function numbersOf(name: string, depth: number, args: unknown[], out: number[]): void {
  if (depth > 10_000) fail("recursion depth exceeded");
  for (const arg of args) {
    if (Array.isArray(arg)) {
      for (const e of arg) {
        if (Array.isArray(e)) numbersOf(name, depth + 1, [e], out);
        else if (isNumberValue(e)) out.push(Number(floatValue(e) ?? intValue(e)));
        else fail(`invalid argument for ${name} (type ${typeOf(e)})`);
      }
      continue;
    }
    if (isNumberValue(arg)) out.push(Number(floatValue(arg) ?? intValue(arg)));
    else fail(`invalid argument for ${name} (type ${typeOf(arg)})`);
  }
}

function asArray(v: unknown): unknown[] | undefined {
  if (Array.isArray(v)) return v;
  if (v instanceof Uint8Array) return Array.from(v, (b) => new TypedInt(BigInt(b), T.uint8));
  return undefined;
}

function flattenGo(v: unknown[], depth: number): unknown[] {
  if (depth > 10_000) fail("recursion depth exceeded");
  const out: unknown[] = [];
  for (const x of v) {
    const inner = asArray(x);
    if (inner) out.push(...flattenGo(inner, depth + 1));
    else out.push(x);
  }
  return out;
}

// Go's encoding/json, for toJSON / fromJSON.

function jsonString(s: string): string {
  return goJSONString(s);
}

function jsonFloat(f: number): string {
  return goJSONFloat(f) ?? fail(`json: unsupported value: ${format(f)}`);
}

function toJSONGo(v: unknown, indent: string): string {
  const next = `${indent}  `;
  if (isNil(v)) return "null";
  if (typeof v === "boolean") return String(v);
  if (typeof v === "bigint") return String(v);
  if (typeof v === "number") return jsonFloat(v);
  if (typeof v === "string") return jsonString(v);
  if (v instanceof TypedInt) return String(v.value);
  if (v instanceof TypedFloat) return jsonFloat(v.value);
  if (v instanceof Uint8Array) return jsonString(Buffer.from(v).toString("base64"));
  if (v instanceof GoTime) return jsonString(v.layout("2006-01-02T15:04:05.999999999Z07:00"));
  if (v instanceof GoValue) return "{}";
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    return `[\n${v.map((x) => next + toJSONGo(x, next)).join(",\n")}\n${indent}]`;
  }
  if (v instanceof Map) {
    const t = goType(v) as GoType;
    const entries = [...v.entries()].map(([k, x]) => {
      const key = unMapKey(k);
      if (t.key?.kind !== "string" && t.key?.kind !== "interface" && !isIntegerKind(t.key?.kind)) {
        fail(`json: unsupported type: ${t.name}`);
      }
      if (typeof key !== "string" && intValue(key) === undefined) fail(`json: unsupported type: ${t.name}`);
      return [String(intValue(key) ?? key), x] as const;
    });
    entries.sort((a, b) => goStringCompare(a[0], b[0]));
    if (entries.length === 0) return "{}";
    return `{\n${entries.map(([k, x]) => `${next}${jsonString(k)}: ${toJSONGo(x, next)}`).join(",\n")}\n${indent}}`;
  }
  if (v instanceof GoFunc) return fail(`json: unsupported type: ${v.type.name}`);
  return "null";
}

/** A JSON value as Go decodes it into `any`: float64 numbers, `map[string]interface {}`, `[]interface {}`. */
export function fromJSONValue(v: unknown): unknown {
  if (v === null) return null;
  if (Array.isArray(v)) return v.map(fromJSONValue);
  if (typeof v === "object") {
    const m = new Map<unknown, unknown>();
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) m.set(k, fromJSONValue(x));
    return m;
  }
  return v;
}

function fromJSONGo(s: string): unknown {
  const syntax = goJSONSyntaxError(s);
  if (syntax) return fail(syntax);
  for (const m of s.matchAll(/-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g)) {
    if (!Number.isFinite(Number(m[0])))
      fail(`json: cannot unmarshal number ${m[0]} into Go value of type float64`);
  }
  return fromJSONValue(JSON.parse(s));
}

function fromBase64Go(s: string): string {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
    const bad = s.search(/[^A-Za-z0-9+/=]/);
    const at = bad >= 0 ? bad : s.length - (s.length % 4 || 4) + (s.length % 4 === 0 ? 0 : 0);
    return fail(`illegal base64 data at input byte ${Math.max(0, at)}`);
  }
  return fromUtf8(new Uint8Array(Buffer.from(s, "base64")));
}

function toIntGo(x: unknown): unknown {
  const i = intValue(x);
  if (i !== undefined) return i;
  const f = floatValue(x);
  if (f !== undefined) return floatToInt(f);
  if (typeof x === "string") {
    const v = parseGoInt(x);
    if (v === undefined) return panic(`invalid operation: int(${x})`);
    return v;
  }
  if (isDurationValue(x)) return x.value;
  return panic(`invalid operation: int(${typeOf(x)})`);
}

function toFloatGo(x: unknown): unknown {
  const f = floatValue(x);
  if (f !== undefined) return f;
  const i = intValue(x);
  if (i !== undefined) return Number(i);
  if (typeof x === "string") {
    const v = parseGoFloat(x);
    if (v === undefined) return panic(`invalid operation: float(${x})`);
    return v;
  }
  return panic(`invalid operation: float(${typeOf(x)})`);
}

function typeString(v: unknown): string {
  if (v === null || v === undefined) return "nil";
  const t = goType(v) as GoType;
  if (t.named && t.kind !== "interface") return t.name.replace(/^\*/, "");
  if (v instanceof Location) return "unknown";
  if (isIntegerKind(t.kind)) return t.kind.startsWith("u") ? "uint" : "int";
  if (isFloatKind(t.kind)) return "float";
  switch (t.kind) {
    case "bool":
    case "string":
    case "map":
    case "func":
    case "struct":
      return t.kind;
    case "slice":
    case "array":
      return "array";
  }
  return "unknown";
}

const DATE_LAYOUTS = [
  "2006-01-02",
  "15:04:05",
  "2006-01-02 15:04:05",
  "2006-01-02T15:04:05Z07:00",
  "02 Jan 06 15:04 MST",
  "Monday, 02-Jan-06 15:04:05 MST",
  "Mon, 02 Jan 2006 15:04:05 MST",
];

function dateGo(input: unknown[]): GoTime {
  let args = input;
  let tz: Location | undefined;
  if (args[0] instanceof Location) {
    tz = args[0];
    args = args.slice(1);
  }
  const date = str(args[0]);
  if (args.length === 2) return parseTime(str(args[1]), date, tz ?? UTC);
  if (args.length === 3) return parseTime(str(args[1]), date, loadLocation(str(args[2])));
  for (const layout of DATE_LAYOUTS) {
    try {
      return parseTime(layout, date, tz ?? UTC);
    } catch (e) {
      if (!(e instanceof RunError)) throw e;
    }
  }
  return fail(`invalid date ${date}`);
}

function takeGo(args: unknown[]): unknown {
  if (args.length !== 2) fail(`invalid number of arguments (expected 2, got ${args.length})`);
  const [v, n] = args;
  if (!Array.isArray(v)) return fail(`cannot take from ${kindName(v)}`);
  const count = intValue(n);
  if (count === undefined || (n instanceof TypedInt && n.type.kind.startsWith("u"))) {
    return fail(`cannot take ${kindName(n)} elements`);
  }
  const to = count > BigInt(v.length) ? v.length : Number(count);
  if (to < 0) return panic("reflect.Value.Slice: slice index out of bounds");
  return typedArray(v.slice(0, to), goType(v) as GoType);
}

function mapOnly(v: unknown, message: string): Map<unknown, unknown> {
  if (!(v instanceof Map)) return fail(`${message} ${kindName(v)}`);
  return v;
}

function sortGo(args: unknown[]): unknown {
  if (args.length !== 1 && args.length !== 2)
    fail(`invalid number of arguments (expected 1 or 2, got ${args.length})`);
  const input = args[0];
  const t = typeOf(input);
  let array: unknown[] | null = null;
  if (Array.isArray(input) && ["[]interface {}", "[]int", "[]float64", "[]string"].includes(t))
    array = [...input];
  let desc = false;
  if (args.length === 2) {
    const order = args[1];
    if (typeof order !== "string") fail(`sort order argument must be a string (got ${typeOf(order)})`);
    if (order === "desc") desc = true;
    else if (order !== "asc") fail(`invalid order ${order}, expected asc or desc`);
  }
  if (!array) return nilSlice(ARRAY);
  return sortValues(array, array, desc);
}

/** Go's `sort.Sort` with `runtime.Less` (insertion sort below 13 elements, so stable there). */
export function sortValues<V>(items: V[], keys: unknown[], desc: boolean): V[] {
  const idx = items.map((_, i) => i);
  idx.sort((i, j) => {
    const a = keys[i];
    const b = keys[j];
    if (desc ? less(b, a) : less(a, b)) return -1;
    if (desc ? less(a, b) : less(b, a)) return 1;
    return 0;
  });
  return idx.map((i) => items[i] as V);
}

function getGo(args: unknown[]): unknown {
  if (args.length < 2) fail(`invalid number of arguments (expected 2, got ${args.length})`);
  const [from, i] = args;
  if (isNil(from)) return null;
  if (typeof i === "string") {
    const m = methodOf(from, i);
    if (m) return m;
  }
  if (Array.isArray(from) || typeof from === "string") {
    const len = BigInt(reflectLen(from) as number);
    let index = toInt(i);
    if (index < 0n) index = len + index;
    if (index >= 0n && index < len) return fetch(from, index);
    return null;
  }
  if (from instanceof Map) {
    const r = mapIndex(from, i);
    return r.found ? r.value : null;
  }
  return null;
}

const sig = funcOf;
const ANY_FUNC = sig([sliceOf(ANY)], [ANY, ERROR], true);
const PREDICATE_TYPE = (out: GoType, extra: GoType[] = []) => [
  sig([ARRAY, sig([ANY], [BOOL]), ...extra], [out]),
];

const BUILTINS: readonly Builtin[] = [
  { name: "all", predicate: true, types: PREDICATE_TYPE(BOOL) },
  { name: "none", predicate: true, types: PREDICATE_TYPE(BOOL) },
  { name: "any", predicate: true, types: PREDICATE_TYPE(BOOL) },
  { name: "one", predicate: true, types: PREDICATE_TYPE(BOOL) },
  { name: "filter", predicate: true, types: PREDICATE_TYPE(ARRAY) },
  { name: "map", predicate: true, types: [sig([ARRAY, sig([ANY], [ANY])], [ARRAY])] },
  { name: "find", predicate: true, types: PREDICATE_TYPE(ANY) },
  { name: "findIndex", predicate: true, types: PREDICATE_TYPE(INT) },
  { name: "findLast", predicate: true, types: PREDICATE_TYPE(ANY) },
  { name: "findLastIndex", predicate: true, types: PREDICATE_TYPE(INT) },
  { name: "count", predicate: true, types: PREDICATE_TYPE(INT) },
  { name: "sum", predicate: true, types: PREDICATE_TYPE(INT) },
  { name: "groupBy", predicate: true, types: [sig([ARRAY, sig([ANY], [ANY])], [mapOf(ANY, ARRAY)])] },
  { name: "sortBy", predicate: true, types: PREDICATE_TYPE(ARRAY, [STRING]) },
  { name: "reduce", predicate: true, types: [sig([ARRAY, sig([ANY, ANY], [ANY]), ANY], [ANY])] },
  {
    name: "len",
    fast: true,
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "array" || k === "map" || k === "slice" || k === "string" || k === "interface") return INT;
      return fail(`invalid argument for len (type ${typeName(a)})`);
    },
    run: ([x]) => {
      if (typeof x === "string") return BigInt(Array.from(x).length);
      const n = reflectLen(x);
      if (n === undefined) return panic(`invalid argument for len (type ${typeOf(x)})`);
      return BigInt(n);
    },
  },
  { name: "type", fast: true, types: [sig([ANY], [STRING])], run: ([x]) => typeString(x) },
  {
    name: "abs",
    fast: true,
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (NUMERIC_KINDS.has(k) || k === "interface") return a as GoType;
      return fail(`invalid argument for abs (type ${typeName(a)})`);
    },
    run: ([x]) => absValue(x),
  },
  {
    name: "ceil",
    fast: true,
    validate: validateRound("ceil"),
    run: ([x]) => roundLike("ceil", Math.ceil)(x),
  },
  {
    name: "floor",
    fast: true,
    validate: validateRound("floor"),
    run: ([x]) => roundLike("floor", Math.floor)(x),
  },
  {
    name: "round",
    fast: true,
    validate: validateRound("round"),
    run: ([x]) => roundLike("round", goRound)(x),
  },
  {
    name: "int",
    fast: true,
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface" || NUMERIC_KINDS.has(k) || k === "string") return INT;
      return fail(`invalid argument for int (type ${typeName(a)})`);
    },
    run: ([x]) => toIntGo(x),
  },
  {
    name: "float",
    fast: true,
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface" || NUMERIC_KINDS.has(k) || k === "string") return FLOAT;
      return fail(`invalid argument for float (type ${typeName(a)})`);
    },
    run: ([x]) => toFloatGo(x),
  },
  { name: "string", fast: true, types: [sig([ANY], [STRING])], run: ([x]) => format(x) },
  {
    name: "trim",
    types: [sig([STRING], [STRING]), sig([STRING, STRING], [STRING])],
    run: (args) => {
      if (args.length === 1) return str(args[0]).replace(GO_SPACES, "");
      if (args.length === 2) return trimSet(str(args[0]), str(args[1]), true, true);
      return fail(`invalid number of arguments for trim (expected 1 or 2, got ${args.length})`);
    },
  },
  {
    name: "trimPrefix",
    types: [sig([STRING, STRING], [STRING]), sig([STRING], [STRING])],
    run: (args) => {
      const p = args.length === 2 ? str(args[1]) : " ";
      const s = str(args[0]);
      return s.startsWith(p) ? s.slice(p.length) : s;
    },
  },
  {
    name: "trimSuffix",
    types: [sig([STRING, STRING], [STRING]), sig([STRING], [STRING])],
    run: (args) => {
      const p = args.length === 2 ? str(args[1]) : " ";
      const s = str(args[0]);
      return p !== "" && s.endsWith(p) ? s.slice(0, s.length - p.length) : s;
    },
  },
  { name: "upper", fast: true, types: [sig([STRING], [STRING])], run: ([x]) => mapCase(str(x), true) },
  { name: "lower", fast: true, types: [sig([STRING], [STRING])], run: ([x]) => mapCase(str(x), false) },
  {
    name: "split",
    types: [sig([STRING, STRING], [STRINGS]), sig([STRING, STRING, INT], [STRINGS])],
    run: (args) => {
      if (args.length !== 2 && args.length !== 3) {
        fail(`invalid number of arguments for split (expected 2 or 3, got ${args.length})`);
      }
      const n = args.length === 3 ? Number(toInt(args[2])) : -1;
      const out = splitGo(str(args[0]), str(args[1]), n, false);
      return out === null ? nilSlice(STRINGS) : typedArray(out, STRINGS);
    },
  },
  {
    name: "splitAfter",
    types: [sig([STRING, STRING], [STRINGS]), sig([STRING, STRING, INT], [STRINGS])],
    run: (args) => {
      if (args.length !== 2 && args.length !== 3) {
        fail(`invalid number of arguments for splitAfter (expected 2 or 3, got ${args.length})`);
      }
      const n = args.length === 3 ? Number(toInt(args[2])) : -1;
      const out = splitGo(str(args[0]), str(args[1]), n, true);
      return out === null ? nilSlice(STRINGS) : typedArray(out, STRINGS);
    },
  },
  {
    name: "replace",
    types: [sig([STRING, STRING, STRING, INT], [STRING]), sig([STRING, STRING, STRING], [STRING])],
    run: (args) => {
      if (args.length === 4)
        return replaceGo(str(args[0]), str(args[1]), str(args[2]), Number(toInt(args[3])));
      if (args.length === 3) return replaceGo(str(args[0]), str(args[1]), str(args[2]), -1);
      return fail(`invalid number of arguments for replace (expected 3 or 4, got ${args.length})`);
    },
  },
  {
    name: "repeat",
    types: [sig([STRING, INT], [STRING])],
    run: (args) => {
      const s = str(args[0]);
      const n = toInt(args[1]);
      if (n < 0n) fail(`invalid argument for repeat (expected positive integer, got ${n})`);
      if (n > 1_000_000n) fail("memory budget exceeded");
      return s.repeat(Number(n));
    },
    memory: (result) => utf8(result as string).length,
  },
  {
    name: "join",
    types: [
      sig([STRINGS, STRING], [STRING]),
      sig([ARRAY, STRING], [STRING]),
      sig([ARRAY], [STRING]),
      sig([STRINGS, STRING], [STRING]),
      sig([STRINGS], [STRING]),
    ],
    run: (args) => joinGo(args[0], args.length === 2 ? str(args[1]) : ""),
  },
  {
    name: "indexOf",
    types: [sig([STRING, STRING], [INT])],
    run: (args) => BigInt(byteIndex(str(args[0]), str(args[1]))),
  },
  {
    name: "lastIndexOf",
    types: [sig([STRING, STRING], [INT])],
    run: (args) => BigInt(byteLastIndex(str(args[0]), str(args[1]))),
  },
  {
    name: "hasPrefix",
    types: [sig([STRING, STRING], [BOOL])],
    run: (args) => str(args[0]).startsWith(str(args[1])),
  },
  {
    name: "hasSuffix",
    types: [sig([STRING, STRING], [BOOL])],
    run: (args) => str(args[0]).endsWith(str(args[1])),
  },
  { name: "max", validate: validateAggregate("max"), run: (args) => minMax("max", less, 0, args) },
  {
    name: "min",
    validate: validateAggregate("min"),
    run: (args) => minMax("min", (a, b) => less(b, a), 0, args),
  },
  {
    name: "mean",
    validate: validateAggregate("mean"),
    run: (args) => {
      const xs: number[] = [];
      numbersOf("mean", 0, args, xs);
      return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
    },
  },
  {
    name: "median",
    validate: validateAggregate("median"),
    run: (args) => {
      const xs: number[] = [];
      numbersOf("median", 0, args, xs);
      if (xs.length === 0) return 0;
      xs.sort((a, b) => (Number.isNaN(a) ? -1 : Number.isNaN(b) ? 1 : a - b));
      const n = xs.length;
      return n % 2 === 1
        ? (xs[(n - 1) / 2] as number)
        : ((xs[n / 2 - 1] as number) + (xs[n / 2] as number)) / 2;
    },
  },
  { name: "toJSON", types: [sig([ANY], [STRING])], run: ([x]) => toJSONGo(x, "") },
  { name: "fromJSON", types: [sig([STRING], [ANY])], run: ([x]) => fromJSONGo(str(x)) },
  {
    name: "toBase64",
    types: [sig([STRING], [STRING])],
    run: ([x]) => Buffer.from(utf8(str(x))).toString("base64"),
  },
  { name: "fromBase64", types: [sig([STRING], [STRING])], run: ([x]) => fromBase64Go(str(x)) },
  {
    name: "now",
    validate: (args) => {
      if (args.length === 0) return T.time;
      if (args.length === 1 && args[0] === T.location) return T.time;
      return fail(`invalid number of arguments (expected 0, got ${args.length})`);
    },
    run: (args, call) => {
      if (args.length === 0) return GoTime.at(call.now());
      if (args.length === 1 && args[0] instanceof Location)
        return new GoTime(GoTime.at(call.now()).ns, args[0]);
      return fail(`invalid number of arguments (expected 0, got ${args.length})`);
    },
  },
  {
    name: "duration",
    types: [sig([STRING], [T.duration, ERROR])],
    run: ([x]) => {
      try {
        return parseDuration(str(x));
      } catch (e) {
        if (e instanceof RunError) fail(e.message);
        throw e;
      }
    },
  },
  {
    name: "date",
    validate: (input) => {
      if (input.length < 1) fail(`invalid number of arguments (expected at least 1, got ${input.length})`);
      const args = input[0] === T.location ? input.slice(1) : input;
      if (args.length > 3) fail(`invalid number of arguments (expected at most 3, got ${args.length})`);
      return T.time;
    },
    run: (args) => {
      try {
        return dateGo(args);
      } catch (e) {
        if (e instanceof RunError && !e.message.startsWith("interface conversion")) fail(e.message);
        throw e;
      }
    },
  },
  {
    name: "timezone",
    types: [sig([STRING], [T.location, ERROR])],
    run: ([x]) => {
      try {
        return loadLocation(str(x));
      } catch (e) {
        if (e instanceof RunError) fail(e.message);
        throw e;
      }
    },
  },
  {
    name: "first",
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface") return ANY;
      if (k === "slice" || k === "array") return (a as GoType).elem as GoType;
      return fail(`cannot get first element from ${typeName(a)}`);
    },
    run: ([x]) => {
      try {
        return fetch(x, 0n);
      } catch (e) {
        if (e instanceof RunError) return null;
        throw e;
      }
    },
  },
  {
    name: "last",
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface") return ANY;
      if (k === "slice" || k === "array") return (a as GoType).elem as GoType;
      return fail(`cannot get last element from ${typeName(a)}`);
    },
    run: ([x]) => {
      try {
        return fetch(x, -1n);
      } catch (e) {
        if (e instanceof RunError) return null;
        throw e;
      }
    },
  },
  { name: "get", run: (args) => getGo(args) },
  {
    name: "take",
    validate: (args) => {
      if (args.length !== 2) fail(`invalid number of arguments (expected 2, got ${args.length})`);
      const k0 = kind(args[0]);
      if (k0 !== "interface" && k0 !== "slice" && k0 !== "array")
        fail(`cannot take from ${typeName(args[0])}`);
      const k1 = kind(args[1]);
      if (!["interface", "int", "int8", "int16", "int32", "int64"].includes(k1)) {
        fail(`cannot take ${typeName(args[1])} elements`);
      }
      return args[0] as GoType;
    },
    run: (args) => takeGo(args),
  },
  {
    name: "keys",
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface" || k === "map") return ARRAY;
      return fail(`cannot get keys from ${typeName(a)}`);
    },
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
      return [...mapOnly(args[0], "cannot get keys from").keys()].map(unMapKey);
    },
  },
  {
    name: "values",
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface" || k === "map") return ARRAY;
      return fail(`cannot get values from ${typeName(a)}`);
    },
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
      return [...mapOnly(args[0], "cannot get values from").values()];
    },
  },
  {
    name: "toPairs",
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface" || k === "map") return ARRAY;
      return fail(`cannot transform ${typeName(a)} to pairs`);
    },
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
      const m = mapOnly(args[0], "cannot transform");
      const pair = arrayOf(ANY, 2);
      return typedArray(
        [...m.entries()].map(([k, v]) => typedArray([unMapKey(k), v], pair)),
        sliceOf(pair),
      );
    },
  },
  {
    name: "fromPairs",
    validate: (args) => {
      const a = oneArg(args);
      const k = kind(a);
      if (k === "interface" || k === "slice" || k === "array") return mapOf(ANY, ANY);
      return fail(`cannot transform ${typeName(a)} from pairs`);
    },
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
      const v = args[0];
      if (!Array.isArray(v)) return fail(`cannot transform ${format(v)} from pairs`);
      const out = typedMap(new Map(), mapOf(ANY, ANY));
      for (const pair of v) {
        const p = asArray(pair);
        if (!p) return fail(`invalid pair ${format(pair)}`);
        if (p.length !== 2) return fail(`invalid pair length ${format(pair)}`);
        if (Array.isArray(p[0]) || p[0] instanceof Map)
          panic(`runtime error: hash of unhashable type ${typeOf(p[0])}`);
        out.set(mapKey(p[0]), p[1]);
      }
      return out;
    },
  },
  {
    name: "reverse",
    validate: arrayValidator("cannot reverse", ARRAY),
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
      const v = asArray(args[0]);
      if (!v) return fail(`cannot reverse ${kindName(args[0])}`);
      return [...v].reverse();
    },
    memory: (result) => (result as unknown[]).length,
  },
  {
    name: "uniq",
    validate: arrayValidator("cannot uniq", ARRAY),
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
      const v = asArray(args[0]);
      if (!v) return fail(`cannot uniq ${kindName(args[0])}`);
      const out: unknown[] = [];
      for (const x of v) if (!out.some((r) => equal(x, r))) out.push(x);
      return out;
    },
  },
  {
    name: "concat",
    validate: (args) => {
      if (args.length === 0) fail("invalid number of arguments (expected at least 1, got 0)");
      for (const a of args) {
        const k = kind(a);
        if (k !== "interface" && k !== "slice" && k !== "array") fail(`cannot concat ${typeName(a)}`);
      }
      return ARRAY;
    },
    run: (args) => {
      if (args.length === 0) fail("invalid number of arguments (expected at least 1, got 0)");
      const out: unknown[] = [];
      for (const a of args) {
        const v = asArray(a);
        if (!v) return fail(`cannot concat ${kindName(a)}`);
        out.push(...v);
      }
      return out.length === 0 ? nilSlice(ARRAY) : out;
    },
    memory: (result) => (Array.isArray(result) ? result.length : 0),
  },
  {
    name: "flatten",
    validate: arrayValidator("cannot flatten", ARRAY),
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments (expected 1, got ${args.length})`);
      const v = asArray(args[0]);
      if (!v) return fail(`cannot flatten ${kindName(args[0])}`);
      return flattenGo(v, 0);
    },
    memory: (result) => (result as unknown[]).length,
  },
  {
    name: "sort",
    types: [
      sig([ARRAY, STRING], [ARRAY]),
      sig([sliceOf(INT), STRING], [ARRAY]),
      sig([sliceOf(FLOAT), STRING], [ARRAY]),
      sig([STRINGS, STRING], [ARRAY]),
      sig([ARRAY], [ARRAY]),
      sig([sliceOf(FLOAT)], [ARRAY]),
      sig([STRINGS], [ARRAY]),
      sig([sliceOf(INT)], [ARRAY]),
    ],
    run: (args) => sortGo(args),
    memory: (result) => (Array.isArray(result) ? result.length : 0),
  },
  bitFunc("bitand", (x, y) => x & y),
  bitFunc("bitor", (x, y) => x | y),
  bitFunc("bitxor", (x, y) => x ^ y),
  bitFunc("bitnand", (x, y) => x & ~y),
  bitFunc("bitshl", (x, y) => (shift(y) >= 64n ? 0n : x << y)),
  bitFunc("bitshr", (x, y) => (shift(y) >= 64n ? (x < 0n ? -1n : 0n) : x >> y)),
  bitFunc("bitushr", (x, y) => (shift(y) >= 64n ? 0n : BigInt.asUintN(64, x) >> y)),
  {
    name: "bitnot",
    types: [sig([INT], [INT])],
    run: (args) => {
      if (args.length !== 1) fail(`invalid number of arguments for bitnot (expected 1, got ${args.length})`);
      return wrap(~goInt(args[0], "bitnot"));
    },
  },
];

export const BUILTIN_INDEX: ReadonlyMap<string, Builtin> = new Map(BUILTINS.map((b) => [b.name, b]));
export const BUILTIN_NAMES: ReadonlySet<string> = new Set(BUILTIN_INDEX.keys());

/** The Go type of a builtin used as a value (`len` without a call). */
export function builtinType(b: Builtin): GoType {
  return b.types?.[0] ?? ANY_FUNC;
}

export { MAP };
