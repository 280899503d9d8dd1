import {
  envOf,
  GoFunc,
  type GoType,
  goType,
  isNil,
  type Nature,
  NIL,
  nat,
  parseGoType,
  T,
  TypedFloat,
  TypedInt,
  typedArray,
  typedMap,
  typeOf,
  unMapKey,
} from "../../../statemachine/expr/index.ts";

/**
 * Builds expr environments and compares results the way the fixtures describe Go values: a type
 * tree (`"int"`, `{ type: "[]interface {}", items: [...] }`) beside plain JSON.
 */

export type TypeTree =
  | string
  | {
      type: string;
      items?: TypeTree[];
      entries?: Record<string, TypeTree>;
      keyTypes?: Record<string, string>;
    };

function treeType(tree: TypeTree): string {
  return typeof tree === "string" ? tree : tree.type;
}

function special(v: unknown): number | undefined {
  if (v === "NaN") return Number.NaN;
  if (v === "+Inf") return Number.POSITIVE_INFINITY;
  if (v === "-Inf") return Number.NEGATIVE_INFINITY;
  return undefined;
}

/** A JSON value as the Go value of the given type. */
export function goValue(json: unknown, tree: TypeTree | undefined): unknown {
  const typeName = tree === undefined ? undefined : treeType(tree);
  if (json === null) return null;
  if (typeName === undefined || typeName === "interface {}") return fromUntyped(json);
  const t = parseGoType(typeName);
  switch (t.kind) {
    case "int":
      return BigInt(json as number);
    case "int8":
    case "int16":
    case "int32":
    case "int64":
    case "uint":
    case "uint8":
    case "uint16":
    case "uint32":
    case "uint64":
      return new TypedInt(BigInt(json as number), t);
    case "float64":
      return special(json) ?? (json as number);
    case "float32":
      return new TypedFloat(special(json) ?? (json as number), t);
    case "string":
    case "bool":
      return json;
    case "slice":
    case "array": {
      const items = json as unknown[];
      const trees = typeof tree === "object" ? tree.items : undefined;
      return typedArray(
        items.map((x, i) => goValue(x, trees?.[i] ?? (t.elem as GoType).name)),
        t,
      );
    }
    case "map": {
      const entries = typeof tree === "object" ? tree.entries : undefined;
      const m = new Map<unknown, unknown>();
      for (const [k, x] of Object.entries(json as Record<string, unknown>)) {
        m.set(k, goValue(x, entries?.[k] ?? (t.elem as GoType).name));
      }
      return typedMap(m, t);
    }
  }
  return json;
}

function fromUntyped(json: unknown): unknown {
  if (Array.isArray(json)) return json.map(fromUntyped);
  if (json !== null && typeof json === "object") {
    const m = new Map<unknown, unknown>();
    for (const [k, x] of Object.entries(json)) m.set(k, fromUntyped(x));
    return m;
  }
  return json;
}

export function goNature(tree: TypeTree, value: unknown): Nature {
  if (value === null && treeType(tree) === "<nil>") return NIL;
  return nat(parseGoType(treeType(tree)));
}

export function fixtureEnv(env: Record<string, unknown> | null, types: Record<string, TypeTree> | null) {
  const natures = new Map<string, Nature>();
  const values = new Map<string, unknown>();
  for (const [k, json] of Object.entries(env ?? {})) {
    const tree = types?.[k] ?? "<nil>";
    const value = treeType(tree) === "<nil>" ? null : goValue(json, tree);
    values.set(k, value);
    natures.set(k, value === null && treeType(tree) === "<nil>" ? NIL : goNature(tree, value));
  }
  return { env: envOf(natures), values };
}

/** Our value in the fixtures' terms: plain JSON and the Go type of every element. */
export function describe(v: unknown): { value: unknown; type: string; tree: TypeTree } {
  if (v === null || v === undefined) return { value: null, type: "<nil>", tree: "<nil>" };
  const type = typeOf(v);
  if (isNil(v)) return { value: null, type, tree: type };
  if (typeof v === "string" || typeof v === "boolean") return { value: v, type, tree: type };
  if (typeof v === "bigint") return { value: Number(v), type, tree: type };
  if (typeof v === "number") return { value: jsonNumber(v), type, tree: type };
  if (v instanceof TypedInt) return { value: Number(v.value), type, tree: type };
  if (v instanceof TypedFloat) return { value: jsonNumber(v.value), type, tree: type };
  if (Array.isArray(v)) {
    const parts = v.map(describe);
    const concrete = !type.endsWith("interface {}");
    return {
      value: parts.map((p) => p.value),
      type,
      tree: concrete ? { type } : { type, items: parts.map((p) => p.tree) },
    };
  }
  if (v instanceof Map) {
    const value: Record<string, unknown> = {};
    const entries: Record<string, TypeTree> = {};
    const keyTypes: Record<string, string> = {};
    for (const [k, x] of v) {
      const d = describe(x);
      const kd = describe(unMapKey(k));
      const key = kd.value === null ? "<nil>" : String(kd.value);
      value[key] = d.value;
      entries[key] = d.tree;
      keyTypes[key] = kd.type;
    }
    const interfaceKeys = type.startsWith("map[interface {}]");
    const concrete = !type.endsWith("interface {}") && !type.endsWith("[]interface {}");
    return {
      value,
      type,
      tree: concrete ? { type } : { type, entries, ...(interfaceKeys ? { keyTypes } : {}) },
    };
  }
  if (v instanceof GoFunc) return { value: null, type, tree: type };
  return { value: String(v), type: goType(v)?.name ?? "?", tree: type };
}

function jsonNumber(f: number): unknown {
  if (Number.isNaN(f)) return "NaN";
  if (f === Number.POSITIVE_INFINITY) return "+Inf";
  if (f === Number.NEGATIVE_INFINITY) return "-Inf";
  return f;
}

export { T };
