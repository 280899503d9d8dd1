import { RolloutsError } from "../errors.ts";
import { ARRAY, type GoType, isFloatKind, isIntegerKind, MAP, sliceOf, T } from "./types.ts";

/**
 * Values at run time, with the Go semantics expr-lang gives them.
 *
 * - Go `int` is a `bigint` (64-bit, wrapping); other integer types (`int64` from Argo's `asInt`,
 *   `time.Duration`) are a {@link TypedInt}; `float64` is a `number`, `float32` a {@link TypedFloat}.
 * - A Go slice is a JavaScript array; its Go type (`[]float64` for a Prometheus vector,
 *   `[]interface {}` by default) is remembered beside it, because equality and messages use it.
 * - A Go map is a `Map` (keys may be any comparable value), typed the same way.
 * - nil is `null`.
 */

export class TypedInt {
  constructor(
    readonly value: bigint,
    readonly type: GoType,
  ) {}
}

export class TypedFloat {
  constructor(
    readonly value: number,
    readonly type: GoType,
  ) {}
}

/** A function value: Argo's helpers in the environment, or a method bound to its receiver. */
export class GoFunc {
  constructor(
    readonly type: GoType,
    readonly call: (args: unknown[]) => unknown,
    /** Called through a typed fast path: a wrong argument type fails as a Go type assertion. */
    readonly typed: boolean,
  ) {}
}

/**
 * A Go value of a defined type with methods (`time.Time`, `*time.Location`): it says how it
 * compares, adds and prints, so this module needs no knowledge of the time package.
 */
export abstract class GoValue {
  abstract readonly goType: GoType;
  /** `%v`. */
  abstract format(): string;
  /** `==` when the other side has the same type. */
  equals(_other: GoValue): boolean {
    return false;
  }
  /** Ordering against a value of the same type, or undefined when not ordered. */
  compare(_other: GoValue): number | undefined {
    return undefined;
  }
  /** `this op other` (or `other op this` when `right`), or undefined when not defined. */
  arith(_op: string, _other: unknown, _right: boolean): unknown {
    return undefined;
  }
  method(_name: string): GoFunc | undefined {
    return undefined;
  }
}

/** Methods of `time.Duration` values, installed by the time module. */
export const DURATION_METHODS: { get: (v: TypedInt, name: string) => GoFunc | undefined } = {
  get: () => undefined,
};

/** A failure while running, with expr's message (a recovered Go panic). */
export class RunError extends RolloutsError {
  override name = "RunError";
}

export function panic(message: string): never {
  throw new RunError(message);
}

const arrayTypes = new WeakMap<object, GoType>();
const nilSlices = new WeakSet<object>();

/** A typed nil slice (`[]interface {}(nil)`): empty, but nil to `??`, `== nil` and JSON. */
export function nilSlice(type: GoType): unknown[] {
  const out = typedArray<unknown>([], type);
  nilSlices.add(out);
  if (type === ARRAY) arrayTypes.set(out, type);
  return out;
}

export function typedArray<V>(items: V[], type: GoType): V[] {
  if (type !== ARRAY) arrayTypes.set(items, type);
  return items;
}

export function typedMap(m: Map<unknown, unknown>, type: GoType): Map<unknown, unknown> {
  if (type !== MAP) arrayTypes.set(m, type);
  return m;
}

/** Go's `%T`. */
export function typeOf(v: unknown): string {
  return goType(v)?.name ?? "<nil>";
}

export function goType(v: unknown): GoType | undefined {
  if (v === null || v === undefined) return undefined;
  switch (typeof v) {
    case "bigint":
      return T.int;
    case "number":
      return T.float64;
    case "string":
      return T.string;
    case "boolean":
      return T.bool;
  }
  if (Array.isArray(v)) return arrayTypes.get(v) ?? ARRAY;
  if (v instanceof Map) return arrayTypes.get(v) ?? MAP;
  if (v instanceof TypedInt || v instanceof TypedFloat || v instanceof GoFunc) return v.type;
  if (v instanceof Uint8Array) return sliceOf(T.uint8);
  if (v instanceof GoValue) return v.goType;
  return T.any;
}

/** Go's message for a failed type assertion `v.(want)`. */
export function assertionError(v: unknown, want: string): never {
  return panic(
    `interface conversion: interface {} is ${v === null || v === undefined ? "nil" : typeOf(v)}, not ${want}`,
  );
}

export function asBool(v: unknown): boolean {
  if (typeof v !== "boolean") assertionError(v, "bool");
  return v;
}

export function asString(v: unknown): string {
  if (typeof v !== "string") assertionError(v, "string");
  return v;
}

export function isNil(v: unknown): boolean {
  return v === null || v === undefined || (Array.isArray(v) && nilSlices.has(v));
}

// ---------------------------------------------------------------------------------------------
// Numbers

const MIN_INT64 = -(2n ** 63n);
const TWO63 = 2 ** 63;

export function wrap(v: bigint): bigint {
  return BigInt.asIntN(64, v);
}

/** Go's `int(f)` on amd64: truncation, and the minimum int for NaN or out of range. */
export function floatToInt(f: number): bigint {
  if (Number.isNaN(f) || f >= TWO63 || f < -TWO63) return MIN_INT64;
  return BigInt(Math.trunc(f));
}

/** An integer of a builtin integer type (not `time.Duration`), as an int. */
export function intValue(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v;
  if (v instanceof TypedInt && !v.type.named) {
    return v.type.kind.startsWith("u") ? BigInt.asIntN(64, v.value) : v.value;
  }
  return undefined;
}

/** A float of a builtin float type, as a float64. */
export function floatValue(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (v instanceof TypedFloat) return v.value;
  return undefined;
}

export function isDurationValue(v: unknown): v is TypedInt {
  return v instanceof TypedInt && v.type === T.duration;
}

export function duration(ns: bigint): TypedInt {
  return new TypedInt(wrap(ns), T.duration);
}

/** expr's `runtime.ToInt`. */
export function toInt(v: unknown): bigint {
  const i = intValue(v);
  if (i !== undefined) return i;
  const f = floatValue(v);
  if (f !== undefined) return floatToInt(f);
  return panic(`invalid operation: int(${typeOf(v)})`);
}

/** expr's `runtime.ToFloat64`. */
export function toFloat64(v: unknown): number {
  const f = floatValue(v);
  if (f !== undefined) return f;
  const i = intValue(v);
  if (i !== undefined) return Number(i);
  return panic(`invalid operation: float(${typeOf(v)})`);
}

type Num = { int: bigint } | { float: number };

function numeric(v: unknown): Num | undefined {
  const i = intValue(v);
  if (i !== undefined) return { int: i };
  const f = floatValue(v);
  if (f !== undefined) return { float: f };
  return undefined;
}

function asFloat(n: Num): number {
  return "int" in n ? Number(n.int) : n.float;
}

export function equal(a: unknown, b: unknown): boolean {
  const x = numeric(a);
  const y = numeric(b);
  if (x && y) {
    if ("int" in x && "int" in y) return x.int === y.int;
    return asFloat(x) === asFloat(y);
  }
  if (Array.isArray(a) && Array.isArray(b) && elementwise(a, b)) {
    return a.length === b.length && a.every((v, i) => equal(v, b[i]));
  }
  if (typeof a === "string" && typeof b === "string") return a === b;
  if (typeof a === "boolean" && typeof b === "boolean") return a === b;
  if (a instanceof GoValue && b instanceof GoValue && a.goType === b.goType) return a.equals(b);
  if (isDurationValue(a) && isDurationValue(b)) return a.value === b.value;
  if (isNil(a) && isNil(b)) return true;
  return deepEqual(a, b);
}

const PRIMITIVE_SLICES = new Set([
  "[]string",
  "[]uint",
  "[]uint8",
  "[]uint16",
  "[]uint32",
  "[]uint64",
  "[]int",
  "[]int8",
  "[]int16",
  "[]int32",
  "[]int64",
  "[]float32",
  "[]float64",
  "[]bool",
]);

/** Go's `Equal` compares slices element by element when one is `[]any` or both have one primitive type. */
function elementwise(a: unknown[], b: unknown[]): boolean {
  const ta = typeOf(a);
  const tb = typeOf(b);
  if (ta === "[]interface {}") return tb === ta || PRIMITIVE_SLICES.has(tb);
  if (tb === "[]interface {}") return PRIMITIVE_SLICES.has(ta);
  return ta === tb && PRIMITIVE_SLICES.has(ta);
}

/** `reflect.DeepEqual`: identical Go types, then deep equality. */
function deepEqual(a: unknown, b: unknown): boolean {
  if (isNil(a) || isNil(b)) return isNil(a) && isNil(b);
  if (typeOf(a) !== typeOf(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) {
      if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
    }
    return true;
  }
  if (a instanceof TypedInt && b instanceof TypedInt) return a.value === b.value;
  if (a instanceof TypedFloat && b instanceof TypedFloat) return a.value === b.value;
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((v, i) => v === b[i]);
  }
  if (a instanceof GoValue && b instanceof GoValue) return a.equals(b);
  if (a instanceof GoFunc || b instanceof GoFunc) return false;
  return a === b;
}

function ordered(op: string, a: unknown, b: unknown): boolean {
  const x = numeric(a);
  const y = numeric(b);
  let c: number | undefined;
  if (x && y) {
    if ("int" in x && "int" in y) c = x.int < y.int ? -1 : x.int > y.int ? 1 : 0;
    else {
      const p = asFloat(x);
      const q = asFloat(y);
      switch (op) {
        case "<":
          return p < q;
        case ">":
          return p > q;
        case "<=":
          return p <= q;
        default:
          return p >= q;
      }
    }
  } else if (typeof a === "string" && typeof b === "string") c = compareStrings(a, b);
  else if (a instanceof GoValue && b instanceof GoValue && a.goType === b.goType) c = a.compare(b);
  else if (isDurationValue(a) && isDurationValue(b)) c = a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
  if (c === undefined) return panic(`invalid operation: ${typeOf(a)} ${op} ${typeOf(b)}`);
  switch (op) {
    case "<":
      return c < 0;
    case ">":
      return c > 0;
    case "<=":
      return c <= 0;
    default:
      return c >= 0;
  }
}

/** Go compares strings byte by byte (UTF-8), which code point order matches. */
function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = (x.value as string).codePointAt(0) as number;
    const cy = (y.value as string).codePointAt(0) as number;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

export function less(a: unknown, b: unknown): boolean {
  return ordered("<", a, b);
}

export function compare(op: "<" | ">" | "<=" | ">=", a: unknown, b: unknown): boolean {
  return ordered(op, a, b);
}

export function arithmetic(op: "+" | "-" | "*" | "/" | "%", a: unknown, b: unknown): unknown {
  const x = numeric(a);
  const y = numeric(b);
  if (x && y) {
    if (op === "/") return asFloat(x) / asFloat(y);
    if ("int" in x && "int" in y) {
      switch (op) {
        case "+":
          return wrap(x.int + y.int);
        case "-":
          return wrap(x.int - y.int);
        case "*":
          return wrap(x.int * y.int);
        default:
          if (y.int === 0n) panic("runtime error: integer divide by zero");
          return wrap(x.int % y.int);
      }
    }
    if (op === "%") return panic(`invalid operation: ${typeOf(a)} % ${typeOf(b)}`);
    const p = asFloat(x);
    const q = asFloat(y);
    return op === "+" ? p + q : op === "-" ? p - q : p * q;
  }
  if (op === "+" && typeof a === "string" && typeof b === "string") return a + b;
  if (a instanceof GoValue) {
    const r = a.arith(op, b, false);
    if (r !== undefined) return r;
  }
  if (b instanceof GoValue) {
    const r = b.arith(op, a, true);
    if (r !== undefined) return r;
  }
  const da = isDurationValue(a) ? a.value : undefined;
  const db = isDurationValue(b) ? b.value : undefined;
  switch (op) {
    case "+":
      if (da !== undefined && db !== undefined) return duration(da + db);
      break;
    case "-":
      if (da !== undefined && db !== undefined) return duration(da - db);
      break;
    case "*": {
      if (da !== undefined && db !== undefined) return duration(da * db);
      if (da !== undefined && y) return "int" in y ? duration(da * y.int) : Number(da) * y.float;
      if (db !== undefined && x) return "int" in x ? duration(x.int * db) : x.float * Number(db);
      break;
    }
    case "/":
      break;
  }
  return panic(`invalid operation: ${typeOf(a)} ${op} ${typeOf(b)}`);
}

/** Wraps an integer to its Go type's width (`-uint8(115)` is 141). */
function wrapTo(v: bigint, type: GoType): bigint {
  const bits = { int8: 8, int16: 16, int32: 32, uint8: 8, uint16: 16, uint32: 32 }[type.kind as string] ?? 64;
  return type.kind.startsWith("u") ? BigInt.asUintN(bits, v) : BigInt.asIntN(bits, v);
}

export function negate(v: unknown): unknown {
  if (typeof v === "bigint") return wrap(-v);
  if (typeof v === "number") return -v;
  if (v instanceof TypedInt && !v.type.named) return new TypedInt(wrapTo(-v.value, v.type), v.type);
  if (v instanceof TypedFloat) return new TypedFloat(-v.value, v.type);
  return panic(`invalid operation: - ${typeOf(v)}`);
}

// ---------------------------------------------------------------------------------------------
// Strings are Go strings: UTF-8 bytes where expr counts bytes.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

export function fromUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

export function byteLength(s: string): number {
  return encoder.encode(s).length;
}

/** Go's `strings.Index`: the byte offset of `sub` in `s`, or -1. */
export function byteIndex(s: string, sub: string): number {
  const i = s.indexOf(sub);
  return i < 0 ? -1 : byteLength(s.slice(0, i));
}

export function byteLastIndex(s: string, sub: string): number {
  const i = s.lastIndexOf(sub);
  return i < 0 ? -1 : byteLength(s.slice(0, i));
}

// ---------------------------------------------------------------------------------------------
// Collections

/** The length Go's reflection gives (bytes for a string). */
export function reflectLen(v: unknown): number | undefined {
  if (Array.isArray(v)) return v.length;
  if (v instanceof Map) return v.size;
  if (typeof v === "string") return byteLength(v);
  if (v instanceof Uint8Array) return v.length;
  return undefined;
}

/** The zero value of a map's element type, which Go returns for a missing key. */
export function zeroOf(type: GoType | undefined): unknown {
  if (!type) return null;
  if (type === T.duration) return duration(0n);
  if (isIntegerKind(type.kind)) return type === T.int ? 0n : new TypedInt(0n, type);
  if (isFloatKind(type.kind)) return type === T.float64 ? 0 : new TypedFloat(0, type);
  if (type.kind === "string") return "";
  if (type.kind === "bool") return false;
  if (type.kind === "slice") return nilSlice(type);
  return null;
}

/** A map key as Go hashes it: ints and floats of one value are different keys. */
export function mapKey(v: unknown): unknown {
  if (v instanceof TypedInt) return `${TYPED_KEY}${v.type.name}:${v.value}`;
  if (v instanceof TypedFloat) return `${TYPED_KEY}${v.type.name}:${v.value}`;
  return v;
}

const TYPED_KEY = "\u0000typed:";
const typedKeyTypes = new Map<string, GoType>();
for (const t of Object.values(T)) typedKeyTypes.set(t.name, t);

function keyAssignable(key: unknown, type: GoType | undefined): boolean {
  if (!type || type.kind === "interface") return true;
  return goType(key) === type;
}

/** Reads a map entry as `reflect.Value.MapIndex` does: a key of the wrong type panics. */
export function mapIndex(m: Map<unknown, unknown>, key: unknown): { found: boolean; value: unknown } {
  const type = goType(m) as GoType;
  let k = key;
  if (isNil(key)) k = zeroOf(type.key);
  else if (!keyAssignable(key, type.key)) {
    panic(`reflect.Value.MapIndex: value of type ${typeOf(key)} is not assignable to type ${type.key?.name}`);
  }
  const mk = mapKey(k);
  if (m.has(mk)) return { found: true, value: m.get(mk) };
  return { found: false, value: zeroOf(type.elem) };
}

/** expr's `runtime.Fetch`: `a[i]`, `a.b`, negative indexes from the end, missing keys are zero. */
export function fetch(from: unknown, i: unknown): unknown {
  if (isNil(from)) return panic(`cannot fetch ${format(i)} from ${typeOf(from)}`);
  if (typeof i === "string") {
    const method = methodOf(from, i);
    if (method) return method;
  }
  if (Array.isArray(from) || typeof from === "string" || from instanceof Uint8Array) {
    let index = toInt(i);
    const bytes = typeof from === "string" ? utf8(from) : from;
    const l = BigInt(bytes.length);
    if (index < 0n) index = l + index;
    if (index < 0n || index >= l) panic(`index out of range: ${index} (array length is ${l})`);
    const item = bytes[Number(index)];
    return typeof from === "string" || from instanceof Uint8Array
      ? new TypedInt(BigInt(item as number), T.uint8)
      : item;
  }
  if (from instanceof Map) return mapIndex(from, i).value;
  return panic(`cannot fetch ${format(i)} from ${typeOf(from)}`);
}

/** Methods of the Go values expressions meet (`time.Time`, `time.Duration`, `*time.Location`). */
export function methodOf(v: unknown, name: string): GoFunc | undefined {
  if (v instanceof GoValue) return v.method(name);
  if (isDurationValue(v)) return DURATION_METHODS.get(v, name);
  return undefined;
}

/** expr's `runtime.Slice`. */
export function slice(v: unknown, from: unknown, to: unknown): unknown {
  if (Array.isArray(v) || typeof v === "string" || v instanceof Uint8Array) {
    const bytes = typeof v === "string" ? utf8(v) : v;
    const length = BigInt(bytes.length);
    let a = toInt(from);
    let b = toInt(to);
    if (Array.isArray(v) && isNil(v)) return v;
    if (a < 0n) a = length + a;
    if (a < 0n) a = 0n;
    if (b < 0n) b = length + b;
    if (b < 0n) b = 0n;
    if (b > length) b = length;
    if (a > b) a = b;
    const part = bytes.slice(Number(a), Number(b));
    if (typeof v === "string") return fromUtf8(part as Uint8Array);
    if (Array.isArray(v)) return typedArray(part as unknown[], goType(v) as GoType);
    return part;
  }
  return panic(`cannot slice ${format(from)}`);
}

/** expr's `runtime.In`. */
export function inside(needle: unknown, haystack: unknown): boolean {
  if (isNil(haystack)) return false;
  if (Array.isArray(haystack)) return haystack.some((v) => equal(v, needle));
  if (haystack instanceof Map) return mapIndex(haystack, needle).found;
  if (haystack instanceof Set) {
    const set = haystack as Set<unknown> & { keyType?: GoType };
    const type = (haystack as unknown as { keyType: GoType }).keyType;
    if (isNil(needle)) return set.has(zeroOf(type));
    if (goType(needle) !== type) {
      panic(`reflect.Value.MapIndex: value of type ${typeOf(needle)} is not assignable to type ${type.name}`);
    }
    return set.has(needle);
  }
  return panic(`operator "in" not defined on ${typeOf(haystack)}`);
}

/** A constant set the optimizer builds for `x in [1, 2, 3]` (Go's `map[int]struct {}`). */
export function constantSet(values: unknown[], keyType: GoType): Set<unknown> {
  const set = new Set(values) as Set<unknown> & { keyType?: GoType };
  set.keyType = keyType;
  return set;
}

// ---------------------------------------------------------------------------------------------
// Go's fmt %v

function toPlain(f: number): string {
  const [mant, e] = f.toExponential().split("e") as [string, string];
  const x = Number(e);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  let out: string;
  if (x >= 0) {
    out =
      digits.length > x + 1
        ? `${digits.slice(0, x + 1)}.${digits.slice(x + 1)}`
        : digits + "0".repeat(x + 1 - digits.length);
  } else out = `0.${"0".repeat(-x - 1)}${digits}`;
  return neg ? `-${out}` : out;
}

/** Go's `%v` with `fmt.Sprint` rules for the values expressions produce. */
export function format(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  switch (typeof v) {
    case "bigint":
      return String(v);
    case "number":
      return formatG(v);
    case "string":
      return v;
    case "boolean":
      return String(v);
  }
  if (v instanceof TypedInt) return v.type === T.duration ? durationString(v.value) : String(v.value);
  if (v instanceof TypedFloat) return formatG(v.value);
  if (Array.isArray(v)) return `[${v.map(format).join(" ")}]`;

  if (v instanceof Uint8Array) return `[${Array.from(v).join(" ")}]`;
  if (v instanceof Map) {
    const entries = [...v.entries()].map(([k, x]) => [format(unMapKey(k)), format(x)] as const);
    entries.sort((p, q) => compareStrings(p[0], q[0]));
    return `map[${entries.map(([k, x]) => `${k}:${x}`).join(" ")}]`;
  }
  if (v instanceof GoValue) return v.format();
  if (v instanceof GoFunc) return "0x0";
  return String(v);
}

/** The Go value a map key stands for (see {@link mapKey}). */
export function unMapKey(k: unknown): unknown {
  if (typeof k === "string" && k.startsWith(TYPED_KEY)) {
    const rest = k.slice(TYPED_KEY.length);
    const i = rest.lastIndexOf(":");
    const type = typedKeyTypes.get(rest.slice(0, i)) as GoType;
    const v = rest.slice(i + 1);
    return isFloatKind(type.kind) ? new TypedFloat(Number(v), type) : new TypedInt(BigInt(v), type);
  }
  return k;
}

/**
 * `%v` of a float64 (strconv's 'g' with the shortest digits): an exponent when it is below -4 or
 * at least 6 (`1e+06`, `1.234567e+06`, `123456`, `0.0001`, `1e-05`).
 */
function formatG(f: number): string {
  if (Number.isNaN(f)) return "NaN";
  if (f === Number.POSITIVE_INFINITY) return "+Inf";
  if (f === Number.NEGATIVE_INFINITY) return "-Inf";
  if (f === 0) return Object.is(f, -0) ? "-0" : "0";
  const [mant, e] = f.toExponential().split("e") as [string, string];
  const x = Number(e);
  if (x < -4 || x >= 6) return `${mant}e${x < 0 ? "-" : "+"}${String(Math.abs(x)).padStart(2, "0")}`;
  return toPlain(f);
}

/** Go's `Duration.String()`: `1h0m0s`, `1.5s`, `500ms`, `0s`. */
export function durationString(ns: bigint): string {
  if (ns === 0n) return "0s";
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < 1_000_000_000n) {
    const [unit, scale] = u < 1_000n ? ["ns", 1n] : u < 1_000_000n ? ["µs", 1_000n] : ["ms", 1_000_000n];
    out = fraction(u, scale as bigint) + unit;
  } else {
    const h = u / 3_600_000_000_000n;
    u -= h * 3_600_000_000_000n;
    const m = u / 60_000_000_000n;
    u -= m * 60_000_000_000n;
    const s = `${fraction(u, 1_000_000_000n)}s`;
    out = h > 0n ? `${h}h${m}m${s}` : m > 0n ? `${m}m${s}` : s;
  }
  return neg ? `-${out}` : out;
}

function fraction(v: bigint, scale: bigint): string {
  const whole = v / scale;
  const rem = v % scale;
  if (rem === 0n) return String(whole);
  const digits = String(scale).length - 1;
  return `${whole}.${String(rem).padStart(digits, "0").replace(/0+$/, "")}`;
}

/**
 * Go's `math.Pow`, which `**` and `^` use: special cases, then `x**yi` by repeated squaring and
 * `x**yf` through exp and log. Its results differ from IEEE `pow` in the last bit for some
 * fractional exponents, and a condition at a boundary should give Go's verdict.
 */
export function goPow(x: number, y: number): number {
  if (y === 0 || x === 1) return 1;
  if (y === 1) return x;
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.NaN;
  const isOddInt = (v: number) => Number.isInteger(v) && Math.abs(v) < 2 ** 53 && Math.abs(v % 2) === 1;
  if (x === 0) {
    const neg = Object.is(x, -0);
    if (y < 0) return neg && isOddInt(y) ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    return neg && isOddInt(y) ? x : 0;
  }
  if (!Number.isFinite(y)) {
    if (x === -1) return 1;
    return Math.abs(x) < 1 === y > 0 ? 0 : Number.POSITIVE_INFINITY;
  }
  if (!Number.isFinite(x)) {
    if (x < 0) return goPow(1 / x, -y);
    return y < 0 ? 0 : Number.POSITIVE_INFINITY;
  }
  if (y === 0.5) return Math.sqrt(x);
  if (y === -0.5) return 1 / Math.sqrt(x);
  let yi = Math.trunc(Math.abs(y));
  let yf = Math.abs(y) - yi;
  if (yf !== 0 && x < 0) return Number.NaN;
  if (yi >= 2 ** 63) {
    if (x === -1) return 1;
    return Math.abs(x) < 1 === y > 0 ? 0 : Number.POSITIVE_INFINITY;
  }
  let a1 = 1;
  let ae = 0;
  if (yf !== 0) {
    if (yf > 0.5) {
      yf--;
      yi++;
    }
    a1 = Math.exp(yf * Math.log(x));
  }
  let [x1, xe] = frexp(x);
  for (let i = BigInt(yi); i !== 0n; i >>= 1n) {
    if (xe < -(1 << 12) || 1 << 12 < xe) {
      ae += xe;
      break;
    }
    if ((i & 1n) === 1n) {
      a1 *= x1;
      ae += xe;
    }
    x1 *= x1;
    xe <<= 1;
    if (x1 < 0.5) {
      x1 += x1;
      xe--;
    }
  }
  if (y < 0) {
    a1 = 1 / a1;
    ae = -ae;
  }
  return ldexp(a1, ae);
}

function frexp(f: number): [number, number] {
  if (f === 0 || !Number.isFinite(f) || Number.isNaN(f)) return [f, 0];
  let e = Math.max(-1073, Math.floor(Math.log2(Math.abs(f))) + 1);
  let x = f * 2 ** -e;
  while (Math.abs(x) < 0.5) {
    x *= 2;
    e--;
  }
  while (Math.abs(x) >= 1) {
    x /= 2;
    e++;
  }
  return [x, e];
}

function ldexp(frac: number, exp: number): number {
  if (frac === 0 || !Number.isFinite(frac)) return frac;
  let x = frac;
  let e = exp;
  while (e > 1000) {
    x *= 2 ** 1000;
    e -= 1000;
  }
  while (e < -1000) {
    // Go rounds a subnormal result once; step so the last multiplication does the rounding.
    if (e > -1074 - 60) break;
    x *= 2 ** -1000;
    e += 1000;
  }
  if (e < -1022) {
    const [m, me] = frexp(x);
    const total = me + e;
    if (total < -1074) return 0 * Math.sign(x);
    return m * 2 ** (total + 60) * 2 ** -60;
  }
  return x * 2 ** e;
}
