import type { Nature } from "./types.ts";

/**
 * The syntax tree of an expression, node for node as expr-lang builds it, so the checker, the
 * optimizer and the evaluator can follow expr's rules on the same shapes. `loc` is the offset of
 * the node in code points (expr's `Location.From`), which error messages turn into line:column.
 */
interface Base {
  loc: number;
  /** Set by the checker. */
  nature?: Nature;
}

export type Node =
  | (Base & { t: "nil" })
  | (Base & { t: "ident"; name: string })
  | (Base & { t: "int"; value: bigint })
  | (Base & { t: "float"; value: number })
  | (Base & { t: "bool"; value: boolean })
  | (Base & { t: "string"; value: string })
  | (Base & { t: "bytes"; value: Uint8Array })
  | (Base & { t: "constant"; value: unknown })
  | (Base & { t: "unary"; op: string; node: Node })
  | (Base & { t: "binary"; op: string; left: Node; right: Node })
  | (Base & { t: "chain"; node: Node })
  | (Base & { t: "member"; node: Node; property: Node; optional: boolean; method: boolean })
  | (Base & { t: "slice"; node: Node; from?: Node; to?: Node })
  | (Base & { t: "call"; callee: Node; args: Node[] })
  | (Base & {
      t: "builtin";
      name: string;
      args: Node[];
      /** Set by the optimizer: `filter(...)[0]` fails like an index out of range. */
      throws?: boolean;
      /** Set by the optimizer: `map(filter(...), m)` maps while filtering. */
      map?: Node;
      /** Set by the optimizer: `count(...) > n` stops counting at the threshold. */
      threshold?: number;
    })
  | (Base & { t: "predicate"; node: Node })
  | (Base & { t: "pointer"; name: string })
  | (Base & { t: "conditional"; ternary: boolean; cond: Node; exp1: Node; exp2: Node })
  | (Base & { t: "let"; name: string; value: Node; expr: Node })
  | (Base & { t: "sequence"; nodes: Node[] })
  | (Base & { t: "array"; nodes: Node[] })
  | (Base & { t: "map"; pairs: Node[] })
  | (Base & { t: "pair"; key: Node; value: Node });

export type NodeOf<K extends Node["t"]> = Extract<Node, { t: K }>;

/** A slot holding a node, so a visitor can replace it (expr's `ast.Patch`). */
export interface Slot {
  get(): Node;
  set(node: Node): void;
}

function slot<T extends object>(obj: T, key: keyof T): Slot {
  return {
    get: () => obj[key] as unknown as Node,
    set: (n) => {
      obj[key] = n as unknown as T[keyof T];
    },
  };
}

function slots(node: Node): Slot[] {
  const n = node as unknown as Record<string, unknown>;
  switch (node.t) {
    case "unary":
    case "chain":
    case "predicate":
      return [slot(n, "node")];
    case "binary":
      return [slot(n, "left"), slot(n, "right")];
    case "member":
      return [slot(n, "node"), slot(n, "property")];
    case "slice":
      return [slot(n, "node"), ...(node.from ? [slot(n, "from")] : []), ...(node.to ? [slot(n, "to")] : [])];
    case "call":
      return [slot(n, "callee"), ...node.args.map((_, i) => slot(node.args, i))];
    case "builtin":
      // expr's Walk does not enter the optimizer's `map` of a builtin.
      return node.args.map((_, i) => slot(node.args, i));
    case "conditional":
      return [slot(n, "cond"), slot(n, "exp1"), slot(n, "exp2")];
    case "let":
      return [slot(n, "value"), slot(n, "expr")];
    case "sequence":
    case "array":
      return node.nodes.map((_, i) => slot(node.nodes, i));
    case "map":
      return node.pairs.map((_, i) => slot(node.pairs, i));
    case "pair":
      return [slot(n, "key"), slot(n, "value")];
    default:
      return [];
  }
}

/** Visits every node children first, as expr's `ast.Walk` does; the visitor may replace the node. */
export function walk(root: Slot, visit: (at: Slot) => void): void {
  for (const s of slots(root.get())) walk(s, visit);
  visit(root);
}

/** expr's `Node.String()` for the shapes the optimizer compares (`all(x, ...) && all(x, ...)`). */
export function printNode(node: Node): string {
  switch (node.t) {
    case "nil":
      return "nil";
    case "ident":
      return node.name;
    case "int":
      return String(node.value);
    case "float":
      return String(node.value);
    case "bool":
      return String(node.value);
    case "string":
      return JSON.stringify(node.value);
    case "member":
      return node.property.t === "string"
        ? `${printNode(node.node)}${node.optional ? "?." : "."}${node.property.value}`
        : `${printNode(node.node)}${node.optional ? "?." : ""}[${printNode(node.property)}]`;
    case "chain":
      return printNode(node.node);
    case "call":
      return `${printNode(node.callee)}(${node.args.map(printNode).join(", ")})`;
    case "builtin":
      return `${node.name}(${node.args.map(printNode).join(", ")})`;
    case "binary":
      return `(${printNode(node.left)} ${node.op} ${printNode(node.right)})`;
    case "unary":
      return `${node.op}(${printNode(node.node)})`;
    case "array":
      return `[${node.nodes.map(printNode).join(", ")}]`;
    case "pointer":
      return `#${node.name}`;
    default:
      return `<${node.t}@${node.loc}>`;
  }
}
