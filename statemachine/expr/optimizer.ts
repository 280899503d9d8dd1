import { type Node, type NodeOf, printNode, type Slot, walk } from "./ast.ts";
import { ExprError } from "./errors.ts";
import { ARRAY, type GoType, mapOf, type Nature, nat, T } from "./types.ts";
import { constantSet, goPow, goType, typedArray, wrap } from "./values.ts";

/**
 * expr-lang's optimizer. Its rewrites are part of the language's observable behaviour: constant
 * folding makes `5 % 0` a compile error, `x in 1..1000000` a bounds check that never builds the
 * range, `true && x` just `x`, and `filter(...)[0]` a `find` that fails like an index. Each pass
 * below is one of expr's, applied in expr's order.
 */

const EMPTY_STRUCT: GoType = { kind: "struct", name: "struct {}" };

function typeOfNew(node: Node): Nature {
  switch (node.t) {
    case "bool":
      return nat(T.bool);
    case "int":
      return nat(T.int);
    case "float":
      return nat(T.float64);
    case "string":
      return nat(T.string);
    case "constant":
      return nat(goType(node.value));
    default:
      return node.nature ?? {};
  }
}

/** Replaces the node in its slot, typed by what it is (expr's `patchWithType`). */
function patchWithType(at: Slot, node: Node): void {
  node.loc = at.get().loc;
  node.nature = typeOfNew(node);
  at.set(node);
}

/** Replaces the node in its slot, keeping the replaced node's type (expr's `patchCopyType`). */
function patchCopyType(at: Slot, node: Node): void {
  const old = at.get();
  node.loc = old.loc;
  node.nature = old.nature ?? {};
  at.set(node);
}

function kindIsInt(n: Node): boolean {
  return n.nature?.type?.kind === "int";
}

function inArray(at: Slot): void {
  const n = at.get();
  if (n.t !== "binary" || n.op !== "in" || n.right.t !== "array" || n.right.nodes.length === 0) return;
  const items = n.right.nodes;
  if (kindIsInt(n.left) && items.every((a) => a.t === "int")) {
    const value = constantSet(
      items.map((a) => (a as NodeOf<"int">).value),
      T.int,
    );
    const m: Node = { t: "constant", value, loc: n.right.loc, nature: nat(mapOf(T.int, EMPTY_STRUCT)) };
    patchCopyType(at, { t: "binary", op: n.op, left: n.left, right: m, loc: n.loc });
  }
  const now = at.get() as NodeOf<"binary">;
  if (now.right.t !== "array") return;
  if (!items.every((a) => a.t === "string")) return;
  const value = constantSet(
    items.map((a) => (a as NodeOf<"string">).value),
    T.string,
  );
  const m: Node = { t: "constant", value, loc: n.right.loc, nature: nat(mapOf(T.string, EMPTY_STRUCT)) };
  patchCopyType(at, { t: "binary", op: n.op, left: now.left, right: m, loc: n.loc });
}

class Fold {
  applied = false;
  error: ExprError | undefined;

  visit = (at: Slot): void => {
    if (this.error) return;
    const n = at.get();
    const patch = (node: Node) => {
      this.applied = true;
      patchWithType(at, node);
    };
    const patchCopy = (node: Node) => {
      this.applied = true;
      patchCopyType(at, node);
    };
    const int = (x: Node) => (x.t === "int" ? x.value : undefined);
    const float = (x: Node) => (x.t === "float" ? x.value : undefined);
    const loc = n.loc;
    switch (n.t) {
      case "unary":
        if (n.op === "-" || n.op === "+") {
          const neg = n.op === "-";
          const i = int(n.node);
          if (i !== undefined) patch({ t: "int", value: neg ? wrap(-i) : i, loc });
          const f = float(n.node);
          if (f !== undefined) patch({ t: "float", value: neg ? -f : f, loc });
        } else if (n.op === "!" || n.op === "not") {
          if (n.node.t === "bool") patch({ t: "bool", value: !n.node.value, loc });
        }
        return;
      case "binary":
        this.binary(n, patch, patchCopy);
        return;
      case "array": {
        if (n.nodes.length === 0) return;
        if (!n.nodes.every((a) => a.t === "int" || a.t === "float" || a.t === "string" || a.t === "bool"))
          return;
        const value = n.nodes.map((a) => (a as { value: unknown }).value);
        patch({ t: "constant", value: typedArray(value, ARRAY), loc });
        return;
      }
      case "builtin":
        if (n.name === "filter" && n.args.length === 2) {
          const base = n.args[0] as Node;
          if (base.t === "builtin" && base.name === "filter") {
            patchCopy({
              t: "builtin",
              name: "filter",
              args: [
                base.args[0] as Node,
                {
                  t: "predicate",
                  node: {
                    t: "binary",
                    op: "&&",
                    left: (base.args[1] as NodeOf<"predicate">).node,
                    right: (n.args[1] as NodeOf<"predicate">).node,
                    loc: 0,
                  },
                  loc: 0,
                },
              ],
              loc,
            });
          }
        }
        return;
    }
  };

  private binary(n: NodeOf<"binary">, patch: (x: Node) => void, patchCopy: (x: Node) => void): void {
    const loc = n.loc;
    const li = n.left.t === "int" ? n.left.value : undefined;
    const ri = n.right.t === "int" ? n.right.value : undefined;
    const lf = n.left.t === "float" ? n.left.value : undefined;
    const rf = n.right.t === "float" ? n.right.value : undefined;
    const lnum = li !== undefined ? Number(li) : lf;
    const rnum = ri !== undefined ? Number(ri) : rf;
    const bothInt = li !== undefined && ri !== undefined;
    const anyFloat = lnum !== undefined && rnum !== undefined && !bothInt;
    switch (n.op) {
      case "+":
      case "-":
      case "*":
        if (bothInt) {
          const v = n.op === "+" ? li + ri : n.op === "-" ? li - ri : li * ri;
          patch({ t: "int", value: wrap(v), loc });
        } else if (anyFloat) {
          const a = lnum as number;
          const b = rnum as number;
          patch({ t: "float", value: n.op === "+" ? a + b : n.op === "-" ? a - b : a * b, loc });
        } else if (n.op === "+" && n.left.t === "string" && n.right.t === "string") {
          patch({ t: "string", value: n.left.value + n.right.value, loc });
        }
        return;
      case "/":
        if (lnum !== undefined && rnum !== undefined) patch({ t: "float", value: lnum / rnum, loc });
        return;
      case "%":
        if (bothInt) {
          if (ri === 0n) {
            this.error = new ExprError("integer divide by zero", loc, "check");
            return;
          }
          patch({ t: "int", value: wrap(li % ri), loc });
        }
        return;
      case "**":
      case "^":
        if (lnum !== undefined && rnum !== undefined) patch({ t: "float", value: goPow(lnum, rnum), loc });
        return;
      case "and":
      case "&&": {
        const a = n.left.t === "bool" ? n.left.value : undefined;
        const b = n.right.t === "bool" ? n.right.value : undefined;
        if (a === true) patchCopy(n.right);
        else if (b === true) patchCopy(n.left);
        else if (a === false || b === false) patch({ t: "bool", value: false, loc });
        return;
      }
      case "or":
      case "||": {
        const a = n.left.t === "bool" ? n.left.value : undefined;
        const b = n.right.t === "bool" ? n.right.value : undefined;
        if (a === false) patchCopy(n.right);
        else if (b === false) patchCopy(n.left);
        else if (a === true || b === true) patch({ t: "bool", value: true, loc });
        return;
      }
      case "==":
        if (bothInt) patch({ t: "bool", value: li === ri, loc });
        else if (n.left.t === "string" && n.right.t === "string") {
          patch({ t: "bool", value: n.left.value === n.right.value, loc });
        } else if (n.left.t === "bool" && n.right.t === "bool") {
          patch({ t: "bool", value: n.left.value === n.right.value, loc });
        }
        return;
    }
  }
}

function inRange(at: Slot): void {
  const n = at.get();
  if (n.t !== "binary" || n.op !== "in" || !kindIsInt(n.left)) return;
  const r = n.right;
  if (r.t !== "binary" || r.op !== ".." || r.left.t !== "int" || r.right.t !== "int") return;
  patchCopyType(at, {
    t: "binary",
    op: "and",
    left: { t: "binary", op: ">=", left: n.left, right: r.left, loc: n.loc },
    right: { t: "binary", op: "<=", left: n.left, right: r.right, loc: n.loc },
    loc: n.loc,
  });
}

function containsIndexPointer(node: Node): boolean {
  let found = false;
  walk(
    {
      get: () => node,
      set: () => {},
    },
    (s) => {
      const x = s.get();
      if (x.t === "pointer" && x.name === "index") found = true;
    },
  );
  return found;
}

function filterMap(at: Slot): void {
  const n = at.get();
  if (n.t !== "builtin" || n.name !== "map" || n.args.length !== 2) return;
  const predicate = n.args[1] as Node;
  if (containsIndexPointer(predicate) || predicate.t !== "predicate") return;
  const filter = n.args[0] as Node;
  if (filter.t !== "builtin" || filter.name !== "filter" || filter.map) return;
  patchCopyType(at, { t: "builtin", name: "filter", args: filter.args, map: predicate.node, loc: n.loc });
}

function filterLen(at: Slot): void {
  const n = at.get();
  if (n.t !== "builtin" || n.name !== "len" || n.args.length !== 1) return;
  const filter = n.args[0] as Node;
  if (filter.t !== "builtin" || filter.name !== "filter" || filter.args.length !== 2) return;
  patchCopyType(at, { t: "builtin", name: "count", args: filter.args, loc: n.loc });
}

function filterEnds(last: boolean) {
  return (at: Slot): void => {
    const n = at.get();
    const index = last ? -1n : 0n;
    if (n.t === "member" && !n.optional && n.property.t === "int" && n.property.value === index) {
      const filter = n.node;
      if (filter.t === "builtin" && filter.name === "filter" && filter.args.length === 2) {
        patchCopyType(at, {
          t: "builtin",
          name: last ? "findLast" : "find",
          args: filter.args,
          throws: true,
          ...(filter.map ? { map: filter.map } : {}),
          loc: n.loc,
        });
      }
    }
    const m = at.get();
    if (m.t === "builtin" && m.name === (last ? "last" : "first") && m.args.length === 1) {
      const filter = m.args[0] as Node;
      if (filter.t === "builtin" && filter.name === "filter" && filter.args.length === 2) {
        patchCopyType(at, {
          t: "builtin",
          name: last ? "findLast" : "find",
          args: filter.args,
          throws: false,
          ...(filter.map ? { map: filter.map } : {}),
          loc: m.loc,
        });
      }
    }
  };
}

function combinedOperator(fn: string, op: string): string | undefined {
  if (fn === "all" && (op === "and" || op === "&&")) return op;
  if (fn === "any" && (op === "or" || op === "||")) return op;
  if (fn === "none" && op === "and") return "or";
  if (fn === "none" && op === "&&") return "||";
  return undefined;
}

function predicateCombination(at: Slot): void {
  const n = at.get();
  if (n.t !== "binary" || !["and", "or", "&&", "||"].includes(n.op)) return;
  const left = n.left;
  const right = n.right;
  if (left.t !== "builtin" || right.t !== "builtin" || right.name !== left.name) return;
  const op = combinedOperator(left.name, n.op);
  if (!op) return;
  const a = left.args[0] as Node;
  const b = right.args[0] as Node;
  if ((a.nature?.type ?? T.any) !== (b.nature?.type ?? T.any) || printNode(a) !== printNode(b)) return;
  const predicate: NodeOf<"predicate"> = {
    t: "predicate",
    node: {
      t: "binary",
      op,
      left: (left.args[1] as NodeOf<"predicate">).node,
      right: (right.args[1] as NodeOf<"predicate">).node,
      loc: 0,
    },
    loc: 0,
  };
  predicateCombination({ get: () => predicate.node, set: (x) => (predicate.node = x) });
  patchCopyType(at, { t: "builtin", name: left.name, args: [a, predicate], loc: n.loc });
}

function sumRange(at: Slot): void {
  const n = at.get();
  if (n.t !== "builtin") return;
  const range = n.args[0];
  const bounds =
    range?.t === "binary" && range.op === ".." && range.left.t === "int" && range.right.t === "int"
      ? { m: range.left.value, n: range.right.value }
      : undefined;
  if (!bounds || bounds.n < bounds.m) return;
  const count = wrap(bounds.n - bounds.m + 1n);
  const sum = wrap(wrap(count * wrap(bounds.m + bounds.n)) / 2n);
  if (n.name === "sum" && (n.args.length === 1 || n.args.length === 2)) {
    if (n.args.length === 1) {
      patchWithType(at, { t: "int", value: sum, loc: n.loc });
      return;
    }
    const result = applySumPredicate(sum, count, n.args[1] as Node);
    if (result !== undefined) patchWithType(at, { t: "int", value: result, loc: n.loc });
    return;
  }
  if (
    n.name === "reduce" &&
    (n.args.length === 2 || n.args.length === 3) &&
    isPointerPlusAcc(n.args[1] as Node)
  ) {
    if (n.args.length === 3) {
      const init = n.args[2] as Node;
      if (init.t === "int") patchWithType(at, { t: "int", value: wrap(init.value + sum), loc: n.loc });
    } else patchWithType(at, { t: "int", value: sum, loc: n.loc });
  }
}

function isPointerPlusAcc(node: Node): boolean {
  if (node.t !== "predicate" || node.node.t !== "binary" || node.node.op !== "+") return false;
  const { left, right } = node.node;
  if (left.t !== "pointer" || right.t !== "pointer") return false;
  return (left.name === "" && right.name === "acc") || (left.name === "acc" && right.name === "");
}

function applySumPredicate(sum: bigint, count: bigint, arg: Node): bigint | undefined {
  if (arg.t !== "predicate") return undefined;
  const body = arg.node;
  if (body.t === "pointer" && body.name === "") return sum;
  if (body.t !== "binary") return undefined;
  let k: bigint | undefined;
  let pointerOnLeft = false;
  if (body.left.t === "pointer" && body.left.name === "" && body.right.t === "int") {
    k = body.right.value;
    pointerOnLeft = true;
  } else if (body.left.t === "int" && body.right.t === "pointer" && body.right.name === "") {
    k = body.left.value;
  }
  if (k === undefined) return undefined;
  switch (body.op) {
    case "*":
      return wrap(k * sum);
    case "+":
      return wrap(sum + count * k);
    case "-":
      return pointerOnLeft ? wrap(sum - count * k) : wrap(count * k - sum);
  }
  return undefined;
}

function sumArray(at: Slot): void {
  const n = at.get();
  if (n.t !== "builtin" || n.name !== "sum" || n.args.length !== 1) return;
  const array = n.args[0] as Node;
  if (array.t !== "array" || array.nodes.length < 2) return;
  const fold = (nodes: Node[]): Node =>
    nodes.length > 2
      ? { t: "binary", op: "+", left: nodes[0] as Node, right: fold(nodes.slice(1)), loc: 0 }
      : { t: "binary", op: "+", left: nodes[0] as Node, right: nodes[1] as Node, loc: 0 };
  patchCopyType(at, fold(array.nodes));
}

function sumMap(at: Slot): void {
  const n = at.get();
  if (n.t !== "builtin" || n.name !== "sum" || n.args.length !== 1) return;
  const m = n.args[0] as Node;
  if (m.t !== "builtin" || m.name !== "map" || m.args.length !== 2) return;
  patchCopyType(at, { t: "builtin", name: "sum", args: [m.args[0] as Node, m.args[1] as Node], loc: n.loc });
}

function countAny(at: Slot): void {
  const n = at.get();
  if (n.t !== "binary") return;
  const count = n.left;
  if (count.t !== "builtin" || count.name !== "count" || count.args.length !== 2) return;
  if (n.right.t !== "int") return;
  const v = n.right.value;
  if ((n.op === ">" && v === 0n) || (n.op === ">=" && v === 1n)) {
    patchCopyType(at, { t: "builtin", name: "any", args: count.args, loc: n.loc });
  }
}

function countThreshold(at: Slot): void {
  const n = at.get();
  if (n.t !== "binary") return;
  const count = n.left;
  if (count.t !== "builtin" || count.name !== "count" || count.args.length !== 2) return;
  if (n.right.t !== "int" || n.right.value < 0n) return;
  const v = Number(n.right.value);
  let threshold: number;
  switch (n.op) {
    case ">":
      threshold = v + 1;
      break;
    case ">=":
      threshold = v;
      break;
    case "<":
      threshold = v;
      break;
    case "<=":
      threshold = v + 1;
      break;
    default:
      return;
  }
  if (threshold <= 1) return;
  count.threshold = threshold;
}

/** Runs expr's passes over a checked tree; returns the (possibly new) root. */
export function optimize(root: Node): Node {
  let tree = root;
  const top: Slot = { get: () => tree, set: (n) => (tree = n) };
  walk(top, inArray);
  for (let limit = 1000; limit >= 0; limit--) {
    const fold = new Fold();
    walk(top, fold.visit);
    if (fold.error) throw fold.error;
    if (!fold.applied) break;
  }
  for (const pass of [
    inRange,
    filterMap,
    filterLen,
    filterEnds(true),
    filterEnds(false),
    predicateCombination,
    sumRange,
    sumArray,
    sumMap,
    countAny,
    countThreshold,
  ]) {
    walk(top, pass);
  }
  return tree;
}
