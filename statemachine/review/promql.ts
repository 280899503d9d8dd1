import { parser } from "@prometheus-io/lezer-promql";

/**
 * PromQL as Prometheus' own grammar reads it (`@prometheus-io/lezer-promql`, the parser of
 * Prometheus' web UI), for the checks that look inside a query: its selectors and their matchers,
 * the windows of its range functions, its divisions. A template's placeholders (`{{args.x}}`,
 * `{{ args.x }}`, `{{rollout.latest}}`, `{{judge.elapsed}}`) are not PromQL: each is replaced by a
 * marker that parses where it stands (a string, a duration, a name, a number) and is remembered, so
 * a matcher's value is known to come from an argument, and a fix can be written back with the
 * placeholders as the template has them.
 */

type Tree = ReturnType<typeof parser.parse>;
/** A node of the syntax tree (lezer's `SyntaxNode`). */
export type SyntaxNode = Tree["topNode"];

/** A `{{...}}` in the query: its name (`args.version`), its text, and where it stood. */
export interface Placeholder {
  name: string;
  original: string;
  marker: string;
  /** Inside a string literal (a matcher's value): its value is text. */
  inString: boolean;
}

export interface ParsedQuery {
  /** The query as the template has it. */
  source: string;
  /** The same with each placeholder replaced by its marker: what was parsed. */
  text: string;
  placeholders: Placeholder[];
  top: SyntaxNode;
  /** The first place the grammar could not read, when there is one. */
  syntaxError?: { offset: number; near: string };
}

export type MatchOp = "=" | "!=" | "=~" | "!~";

export interface Matcher {
  label: string;
  op: MatchOp;
  /** The value, unquoted; a placeholder is still its marker. */
  value: string;
  node: SyntaxNode;
}

export interface Selector {
  node: SyntaxNode;
  metric?: string;
  matchers: Matcher[];
}

const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9_.-]*)\s*\}\}/g;
const MARKER_BASE = 9_876_500_000;
const MARKER = /__sfnph(\d+)__|\b98765(\d{5})s?\b/g;
const NAME_CHAR = /[A-Za-z0-9_]/;

/** Where each character of the query is inside a string literal ("...", '...', `...`). */
function stringMask(text: string): boolean[] {
  const inside: boolean[] = [];
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote === undefined) {
      if (c === '"' || c === "'" || c === "`") quote = c;
      inside.push(false);
      continue;
    }
    inside.push(true);
    if (c === "\\" && quote !== "`") {
      inside.push(true);
      i++;
    } else if (c === quote) quote = undefined;
  }
  return inside;
}

/** The marker a placeholder outside a string becomes: a name, a duration or a number, by its neighbours. */
function markerFor(text: string, from: number, to: number, i: number): string {
  const before = text[from - 1] ?? "";
  const after = text[to] ?? "";
  if (NAME_CHAR.test(before) || NAME_CHAR.test(after)) return `__sfnph${i}__`;
  const prev = text.slice(0, from).trimEnd();
  const next = text.slice(to).trimStart();
  const duration = /[[:]$/.test(prev) || /\boffset$/i.test(prev) || /^[\]:]/.test(next);
  return duration ? `${MARKER_BASE + i}s` : String(MARKER_BASE + i);
}

/** Replaces every placeholder by its marker, remembering each. */
function mark(source: string): { text: string; placeholders: Placeholder[] } {
  const mask = stringMask(source);
  const placeholders: Placeholder[] = [];
  const text = source.replace(PLACEHOLDER, (whole: string, name: string, offset: number) => {
    const i = placeholders.length;
    const inString = mask[offset] === true;
    const marker = inString ? `__sfnph${i}__` : markerFor(source, offset, offset + whole.length, i);
    placeholders.push({ name, original: whole, marker, inString });
    return marker;
  });
  return { text, placeholders };
}

/** Parses a query, its placeholders replaced by markers. */
export function parseQuery(source: string): ParsedQuery {
  const { text, placeholders } = mark(source);
  const tree = parser.parse(text);
  let syntaxError: ParsedQuery["syntaxError"];
  tree.iterate({
    enter(node) {
      if (syntaxError || !node.type.isError) return !syntaxError;
      syntaxError = { offset: node.from, near: text.slice(node.from, node.from + 20) };
      return false;
    },
  });
  if (!syntaxError && text.trim() === "") syntaxError = { offset: 0, near: "" };
  return { source, text, placeholders, top: tree.topNode, ...(syntaxError ? { syntaxError } : {}) };
}

/** Text with every marker written back as the placeholder it stands for. */
export function restore(q: ParsedQuery, text: string): string {
  return text.replace(MARKER, (whole, a: string | undefined, b: string | undefined) => {
    const i = Number(a ?? b);
    return q.placeholders[i]?.original ?? whole;
  });
}

/** The placeholders a text (a matcher's value, a window) holds, by their markers. */
export function placeholdersIn(q: ParsedQuery, text: string): Placeholder[] {
  return [...text.matchAll(MARKER)].flatMap((m) => {
    const p = q.placeholders[Number(m[1] ?? m[2])];
    return p ? [p] : [];
  });
}

export const textOf = (q: ParsedQuery, node: SyntaxNode): string => q.text.slice(node.from, node.to);

/** Every node named `name` under `node` (itself included). */
export function descendants(node: SyntaxNode, name: string): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const cursor = node.cursor();
  const walk = (): void => {
    if (cursor.name === name) out.push(cursor.node);
    if (cursor.firstChild()) {
      do walk();
      while (cursor.nextSibling());
      cursor.parent();
    }
  };
  walk();
  return out;
}

/** A node's children, in order. */
export function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

/** A PromQL string literal's value: `"5.."`, `'5..'` or a raw `` `5..` ``. */
function unquote(literal: string): string {
  if (literal.startsWith("`")) return literal.slice(1, -1);
  if (literal.startsWith('"')) {
    try {
      return JSON.parse(literal) as string;
    } catch {
      return literal.slice(1, -1);
    }
  }
  return literal.slice(1, -1).replace(/\\(.)/g, "$1");
}

function matcherOf(q: ParsedQuery, node: SyntaxNode): Matcher | undefined {
  const labelNode = node.getChild("LabelName") ?? node.getChild("QuotedLabelName");
  const opNode = node.getChild("MatchOp");
  const values = node.getChildren("StringLiteral");
  const valueNode = values.at(-1);
  if (!labelNode || !opNode || !valueNode) return undefined;
  const rawLabel = textOf(q, labelNode);
  const label = labelNode.name === "QuotedLabelName" ? unquote(rawLabel) : rawLabel;
  return { label, op: textOf(q, opNode) as MatchOp, value: unquote(textOf(q, valueNode)), node };
}

/** Every vector selector of the query, with its metric name and matchers. */
export function selectors(q: ParsedQuery): Selector[] {
  return descendants(q.top, "VectorSelector").map((node) => {
    const name = node.getChild("Identifier");
    const matchers = node.getChild("LabelMatchers");
    const list = matchers
      ? children(matchers).flatMap((m) => {
          if (m.name !== "UnquotedLabelMatcher" && m.name !== "QuotedLabelMatcher") return [];
          const matcher = matcherOf(q, m);
          return matcher ? [matcher] : [];
        })
      : [];
    return { node, ...(name ? { metric: textOf(q, name) } : {}), matchers: list };
  });
}

const quote = (value: string) => JSON.stringify(value);

/**
 * A selector written again (in the parsed text: {@link restore} it, or give it to {@link edit}): one
 * matcher's value replaced, or a matcher added (`replace` undefined), as a fix names it.
 */
export function rewriteSelector(
  q: ParsedQuery,
  selector: Selector,
  change: { label: string; value: string; replace?: Matcher },
): string {
  const parts = selector.matchers.map((m) =>
    m === change.replace ? `${m.label}=${quote(change.value)}` : textOf(q, m.node),
  );
  if (!change.replace) parts.push(`${change.label}=${quote(change.value)}`);
  return `${selector.metric ?? ""}{${parts.join(",")}}`;
}

/** The query with edits applied (`from`/`to` in the parsed text), its placeholders restored. */
export function edit(q: ParsedQuery, edits: Array<{ from: number; to: number; text: string }>): string {
  let text = q.text;
  const sorted = [...edits].sort((a, b) => b.from - a.from);
  let limit = Number.POSITIVE_INFINITY;
  for (const e of sorted) {
    if (e.to > limit) continue; // overlapping an edit already made
    text = text.slice(0, e.from) + e.text + text.slice(e.to);
    limit = e.from;
  }
  return restore(q, text);
}

/** The name of a function call (`rate`), lower-case. */
export function functionName(q: ParsedQuery, call: SyntaxNode): string {
  const id = call.getChild("FunctionIdentifier");
  return id ? textOf(q, id).toLowerCase() : "";
}

/** The expressions of a node that are its operands (a binary expression's two sides, a call's arguments). */
export function operands(node: SyntaxNode): SyntaxNode[] {
  return children(node).filter((c) => EXPRESSIONS.has(c.name));
}

const EXPRESSIONS = new Set([
  "AggregateExpr",
  "BinaryExpr",
  "FunctionCall",
  "MatrixSelector",
  "NumberDurationLiteral",
  "OffsetExpr",
  "ParenExpr",
  "StringLiteral",
  "SubqueryExpr",
  "UnaryExpr",
  "VectorSelector",
  "StepInvariantExpr",
  "AnchoredExpr",
  "SmoothedExpr",
]);

/** The operator of a binary expression (`Div`, `Or`, ...). */
export function binaryOp(node: SyntaxNode): string | undefined {
  return children(node).find((c) => !EXPRESSIONS.has(c.name) && /^[A-Z]/.test(c.name))?.name;
}

/**
 * The query with each placeholder given a value (`value` undefined leaves it missing): a value in a
 * string is escaped for it. What a live Prometheus is asked.
 */
export function fill(
  q: ParsedQuery,
  text: string,
  value: (p: Placeholder) => string | undefined,
): { text: string; missing: Placeholder[] } {
  const missing: Placeholder[] = [];
  const out = text.replace(MARKER, (whole, a: string | undefined, b: string | undefined) => {
    const p = q.placeholders[Number(a ?? b)];
    if (!p) return whole;
    const v = value(p);
    if (v === undefined) {
      if (!missing.includes(p)) missing.push(p);
      return whole;
    }
    return p.inString ? v.replace(/\\/g, "\\\\").replace(/"/g, '\\"') : v;
  });
  return { text: out, missing };
}
