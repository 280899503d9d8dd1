import type { Metric } from "../spec.ts";
import { type Finding, finding, unique } from "./finding.ts";
import {
  binaryOp,
  descendants,
  edit,
  functionName,
  type Matcher,
  operands,
  type ParsedQuery,
  placeholdersIn,
  restore,
  type SyntaxNode,
  selectors,
  textOf,
} from "./promql.ts";
import { type QueryAt, queryName } from "./queries.ts";

/**
 * Check 3, the empty-numerator trap: `sum(rate(x{code=~"5.."}[1m])) / sum(rate(x[1m]))` has no
 * numerator series for a version that never answered a 5xx, and a division by an empty vector is
 * an empty vector, not 0. `(… or vector(0))` around the numerator makes it 0.
 */

/** Labels that hold a request's outcome: `code`, `status_code`, `envoy_response_code_class`, `outcome`... */
const OUTCOME_LABEL = /(^|_)(code|status|status_code|response_code|code_class|result|outcome|error|errors)$/i;
const SUCCESS = /^[([]?(2|ok$|success|succeeded|pass|passed|healthy)/i;
const NO_ERROR = /^(false|0|no|none|)$/i;

/** A regular expression's top-level alternatives: `2..|3..` → `2..`, `3..`. */
function alternatives(value: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (const c of value) {
    if (c === "(" || c === "[") depth++;
    if (c === ")" || c === "]") depth--;
    if (c === "|" && depth === 0) {
      out.push(current);
      current = "";
    } else current += c;
  }
  out.push(current);
  return out;
}

/** Whether a value names a healthy outcome (`2..`, `200`, `ok`; `false` for an error flag). */
function healthy(label: string, value: string): boolean {
  return /(^|_)errors?$/i.test(label) ? NO_ERROR.test(value) : SUCCESS.test(value);
}

/**
 * A matcher that a healthy version may never produce: an outcome label selected for failures
 * (`code=~"5.."`, `status="500"`), or selected against success (`status_code!~"2.."`).
 */
export function trapMatcher(q: ParsedQuery, m: Matcher): boolean {
  if (!OUTCOME_LABEL.test(m.label) || placeholdersIn(q, m.value).length > 0) return false;
  const alts = alternatives(m.value);
  if (m.op === "=" || m.op === "=~") return m.value !== "" && !alts.some((a) => healthy(m.label, a));
  return alts.some((a) => a !== "" && healthy(m.label, a));
}

const unparen = (node: SyntaxNode): SyntaxNode =>
  node.name === "ParenExpr" ? unparen(operands(node)[0] ?? node) : node;

/** Whether an `… or vector(N)` (`or on() vector(0)`) above the node gives it a value when it has none. */
function covered(q: ParsedQuery, node: SyntaxNode): boolean {
  for (let child = node, parent = node.parent; parent; child = parent, parent = parent.parent) {
    if (parent.name !== "BinaryExpr" || binaryOp(parent) !== "Or") continue;
    const [left, right] = operands(parent);
    if (!left || !right || child.from < left.from || child.to > left.to) continue;
    const r = unparen(right);
    if (r.name === "FunctionCall" && functionName(q, r) === "vector") return true;
  }
  return false;
}

/** A condition that reads result[0] without first making sure there is one. */
const READS_FIRST = /result\s*\[\s*0\s*\]/;
const GUARDED = /len\s*\(\s*result\s*\)|isNil\s*\(|default\s*\(/;

/** Whether a metric's conditions read result[0] unguarded: an empty answer is then an Error measurement. */
export function readsFirst(m: Metric): boolean {
  const conditions = [m.successCondition, m.failureCondition].filter((c): c is string => !!c);
  return conditions.some((c) => READS_FIRST.test(c) && !GUARDED.test(c));
}

/** A judge's count readings (`bad`, `n`) read an empty answer as 0: nothing to trap. */
export const countsReading = (at: QueryAt): boolean => at.query.reading === "bad" || at.query.reading === "n";

function severityOf(at: QueryAt): "error" | "warning" | undefined {
  // A judge's stable side repeats its candidate side's query: one finding, at the candidate's.
  if (at.query.side) return countsReading(at) || at.query.side === "stable" ? undefined : "warning";
  return readsFirst(at.metric.metric) ? "error" : "warning";
}

function checkDivision(at: QueryAt, division: SyntaxNode, severity: "error" | "warning"): Finding[] {
  const q = at.parsed;
  const [numerator] = operands(division);
  if (!numerator) return [];
  const traps = selectors(q).filter(
    (s) =>
      s.node.from >= numerator.from &&
      s.node.to <= numerator.to &&
      !covered(q, s.node) &&
      s.matchers.some((m) => trapMatcher(q, m)),
  );
  const first = traps[0];
  if (!first) return [];
  const m = first.matchers.find((x) => trapMatcher(q, x)) as Matcher;
  const inner = numerator.name === "ParenExpr" ? (operands(numerator)[0] ?? numerator) : numerator;
  const fixed = edit(q, [
    { from: numerator.from, to: numerator.to, text: `(${textOf(q, inner)} or vector(0))` },
  ]);
  const m0 = at.metric.metric.consecutiveErrorLimit;
  const why =
    severity === "error"
      ? `A healthy version may never produce ${m.label}${m.op}"${m.value}", so the numerator has no series and the ratio is an empty vector, not 0: result[0] cannot be evaluated, every measurement is an Error, and ${m0 + 1} Errors in a row (consecutiveErrorLimit ${m0}) abort a healthy version.`
      : undefined;
  return [
    finding("empty-numerator", severity, at.where, {
      message: `${queryName(at)}: the numerator ${restore(q, textOf(q, numerator)).trim()} selects ${m.label}${m.op}"${m.value}" and is not wrapped in (… or vector(0)): while the version serves no such request the division returns an empty vector`,
      fix: `wrap the numerator: ${fixed.trim()}`,
      ...(why ? { why } : {}),
    }),
  ];
}

/** Check 3 over every query of the rollout. */
export function emptyNumeratorFindings(queries: readonly QueryAt[]): Finding[] {
  return unique(
    queries.flatMap((at) => {
      const severity = severityOf(at);
      if (!severity || at.parsed.syntaxError) return [];
      return descendants(at.parsed.top, "BinaryExpr")
        .filter((b) => binaryOp(b) === "Div")
        .flatMap((d) => checkDivision(at, d, severity));
    }),
  );
}
