/**
 * Go types, as far as the expression language sees them.
 *
 * expr-lang type-checks an expression against the Go types of its environment before it runs it,
 * and Argo Rollouts builds that environment from the provider's result: a Prometheus vector is a
 * `[]float64`, a web metric's JSON is `map[string]interface {}` or `[]interface {}`, no data is an
 * untyped nil. Whether `result[0] % 2` is a compile error or a runtime error, and which message it
 * gives, depends on those types, so the checker works on this model of them. Types are interned by
 * their Go spelling (`[]interface {}`), which is also what error messages print.
 */

export type Kind =
  | "bool"
  | "int"
  | "int8"
  | "int16"
  | "int32"
  | "int64"
  | "uint"
  | "uint8"
  | "uint16"
  | "uint32"
  | "uint64"
  | "uintptr"
  | "float32"
  | "float64"
  | "string"
  | "interface"
  | "slice"
  | "array"
  | "map"
  | "func"
  | "struct"
  | "ptr";

export interface GoType {
  readonly kind: Kind;
  /** Go's `reflect.Type.String()`: `int`, `[]interface {}`, `func(float64) bool`, `time.Time`. */
  readonly name: string;
  /** A defined type from a package (`time.Time`, `time.Duration`): not a builtin number. */
  readonly named?: boolean;
  readonly elem?: GoType;
  readonly key?: GoType;
  readonly ins?: readonly GoType[];
  readonly outs?: readonly GoType[];
  readonly variadic?: boolean;
}

const interned = new Map<string, GoType>();

function intern(t: GoType): GoType {
  const found = interned.get(t.name);
  if (found) return found;
  interned.set(t.name, t);
  return t;
}

function basic(kind: Kind, name: string = kind): GoType {
  return intern({ kind, name });
}

export const T = {
  bool: basic("bool"),
  int: basic("int"),
  int8: basic("int8"),
  int16: basic("int16"),
  int32: basic("int32"),
  int64: basic("int64"),
  uint: basic("uint"),
  uint8: basic("uint8"),
  uint16: basic("uint16"),
  uint32: basic("uint32"),
  uint64: basic("uint64"),
  uintptr: basic("uintptr"),
  float32: basic("float32"),
  float64: basic("float64"),
  string: basic("string"),
  any: basic("interface", "interface {}"),
  time: intern({ kind: "struct", name: "time.Time", named: true }),
  duration: intern({ kind: "int64", name: "time.Duration", named: true }),
  location: intern({
    kind: "ptr",
    name: "*time.Location",
    elem: intern({ kind: "struct", name: "time.Location", named: true }),
  }),
  error: intern({ kind: "interface", name: "error", named: true }),
} as const;

export function sliceOf(elem: GoType): GoType {
  return intern({ kind: "slice", name: `[]${elem.name}`, elem });
}

export function arrayOf(elem: GoType, length: number): GoType {
  return intern({ kind: "array", name: `[${length}]${elem.name}`, elem });
}

export function mapOf(key: GoType, elem: GoType): GoType {
  return intern({ kind: "map", name: `map[${key.name}]${elem.name}`, key, elem });
}

export function funcOf(ins: readonly GoType[], outs: readonly GoType[], variadic = false): GoType {
  const params = ins.map((t, i) => (variadic && i === ins.length - 1 ? `...${t.elem?.name}` : t.name));
  const out =
    outs.length === 0
      ? ""
      : outs.length === 1
        ? ` ${outs[0]?.name}`
        : ` (${outs.map((t) => t.name).join(", ")})`;
  return intern({ kind: "func", name: `func(${params.join(", ")})${out}`, ins, outs, variadic });
}

export const ARRAY = sliceOf(T.any);
export const MAP = mapOf(T.string, T.any);

const INTEGER_KINDS = new Set<Kind>([
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
  "uintptr",
]);

export function isIntegerKind(kind: Kind | undefined): boolean {
  return kind !== undefined && INTEGER_KINDS.has(kind);
}

export function isFloatKind(kind: Kind | undefined): boolean {
  return kind === "float32" || kind === "float64";
}

/** Go's assignability for the types expressions meet: identical, or into an interface. */
export function assignable(from: GoType, to: GoType): boolean {
  return from === to || (to.kind === "interface" && to.name === "interface {}") || from.name === to.name;
}

/** Parses a Go type's spelling (`[]int`, `map[string]interface {}`) as the fixtures and docs give it. */
export function parseGoType(spelling: string): GoType {
  const s = spelling.trim();
  if (s === "interface {}" || s === "interface{}" || s === "any") return T.any;
  if (s.startsWith("[]")) return sliceOf(parseGoType(s.slice(2)));
  const arr = /^\[(\d+)\](.*)$/.exec(s);
  if (arr) return arrayOf(parseGoType(arr[2] as string), Number(arr[1]));
  if (s.startsWith("map[")) {
    let depth = 0;
    for (let i = 3; i < s.length; i++) {
      if (s[i] === "[") depth++;
      else if (s[i] === "]" && --depth === 0) {
        return mapOf(parseGoType(s.slice(4, i)), parseGoType(s.slice(i + 1)));
      }
    }
  }
  const known = interned.get(s);
  if (known) return known;
  throw new Error(`unsupported Go type ${JSON.stringify(spelling)}`);
}

// ---------------------------------------------------------------------------------------------
// Natures: what the checker knows about a node.

/** A builtin or environment function attached to a nature, so a call can be checked. */
interface Callable {
  readonly name: string;
}

export interface Nature {
  /** The Go type; undefined when nothing is known (expr's `unknown`). */
  readonly type?: GoType;
  /** The value is the untyped nil literal (or an environment entry that is nil). */
  readonly nil?: boolean;
  /** Element nature of an array whose elements are better known than its Go type says. */
  readonly ref?: Nature;
  /** Fields of a map environment. */
  readonly fields?: ReadonlyMap<string, Nature>;
  readonly strict?: boolean;
  readonly func?: Callable;
}

export const UNKNOWN: Nature = {};
export const NIL: Nature = { nil: true };

const natures = new Map<GoType, Nature>();

/** expr's `FromType`: the nature of a value of this type. */
export function nat(type: GoType | undefined): Nature {
  if (!type) return UNKNOWN;
  let n = natures.get(type);
  if (!n) {
    n = { type };
    natures.set(type, n);
  }
  return n;
}

export function kindOf(n: Nature): Kind | undefined {
  return n.type?.kind;
}

export function isInteger(n: Nature): boolean {
  return n.type !== undefined && !n.type.named && isIntegerKind(n.type.kind);
}

export function isFloat(n: Nature): boolean {
  return n.type !== undefined && !n.type.named && isFloatKind(n.type.kind);
}

export function isNumber(n: Nature): boolean {
  return isInteger(n) || isFloat(n);
}

function isAny(n: Nature): boolean {
  return n.type !== undefined && n.type.kind === "interface";
}

export function isUnknown(n: Nature): boolean {
  return (n.type === undefined && !n.nil) || isAny(n);
}

export function isBool(n: Nature): boolean {
  return kindOf(n) === "bool";
}

export function isString(n: Nature): boolean {
  return kindOf(n) === "string";
}

export function isArray(n: Nature): boolean {
  const k = kindOf(n);
  return k === "slice" || k === "array";
}

export function isMap(n: Nature): boolean {
  return kindOf(n) === "map";
}

export function isFunc(n: Nature): boolean {
  return kindOf(n) === "func";
}

export function isTime(n: Nature): boolean {
  return n.type === T.time;
}

export function isDuration(n: Nature): boolean {
  return n.type === T.duration;
}

export function isByteSlice(n: Nature): boolean {
  return n.type?.name === "[]uint8";
}

export function natureString(n: Nature): string {
  return n.type ? n.type.name : "unknown";
}

/** Pointers are dereferenced where expr dereferences them (`*time.Location` is the only one). */
export function deref(n: Nature): Nature {
  return n.type?.kind === "ptr" ? nat(n.type.elem) : n;
}

export function elemOf(n: Nature): Nature {
  switch (kindOf(n)) {
    case "ptr":
      return nat(n.type?.elem);
    case "map":
      return nat(n.type?.elem);
    case "slice":
    case "array":
      return n.ref ?? nat(n.type?.elem);
  }
  return UNKNOWN;
}

export function keyOf(n: Nature): Nature {
  return kindOf(n) === "map" ? nat(n.type?.key) : UNKNOWN;
}

export function assignableTo(n: Nature, to: Nature): boolean {
  if (n.nil) {
    switch (kindOf(to)) {
      case "ptr":
      case "interface":
      case "func":
      case "map":
      case "slice":
        return true;
    }
  }
  if (!n.type || !to.type) return false;
  if (n.type.kind !== to.type.kind && to.type.kind !== "interface") return false;
  return assignable(n.type, to.type);
}

export function comparableTo(n: Nature, rhs: Nature): boolean {
  return (
    isUnknown(n) ||
    isUnknown(rhs) ||
    n.nil === true ||
    rhs.nil === true ||
    (isNumber(n) && isNumber(rhs)) ||
    (isDuration(n) && isDuration(rhs)) ||
    (isTime(n) && isTime(rhs)) ||
    (isArray(n) && isArray(rhs)) ||
    assignableTo(n, rhs)
  );
}

export type Check = "bool" | "string" | "integer" | "number" | "map" | "array" | "time" | "duration";

export function isAnyOf(n: Nature, checks: readonly Check[]): boolean {
  return checks.some((c) => {
    switch (c) {
      case "bool":
        return isBool(n);
      case "string":
        return isString(n);
      case "integer":
        return isInteger(n);
      case "number":
        return isNumber(n);
      case "map":
        return isMap(n);
      case "array":
        return isArray(n);
      case "time":
        return isTime(n);
      default:
        return isDuration(n);
    }
  });
}

/** One side unknown and the other passes a check, or both unknown: maybe fine, decided at run time. */
export function maybeCompatible(n: Nature, rhs: Nature, ...checks: Check[]): boolean {
  const a = isUnknown(n);
  const b = isUnknown(rhs);
  return (a && b) || (a && isAnyOf(rhs, checks)) || (b && isAnyOf(n, checks));
}

export function promoteNumeric(n: Nature, rhs: Nature): Nature {
  if (isUnknown(n) || isUnknown(rhs)) return UNKNOWN;
  return isFloat(n) || isFloat(rhs) ? nat(T.float64) : nat(T.int);
}

export function arrayOfNature(elem: Nature): Nature {
  return { type: ARRAY, ref: elem };
}
