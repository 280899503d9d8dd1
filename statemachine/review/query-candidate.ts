import { RUNTIME_PLACEHOLDERS } from "../analysis-resolve.ts";
import type { Plan } from "../plan.ts";
import { type Finding, finding, unique } from "./finding.ts";
import {
  edit,
  type Matcher,
  placeholdersIn,
  restore,
  rewriteSelector,
  type Selector,
  selectors,
  textOf,
} from "./promql.ts";
import { type QueryAt, queryName } from "./queries.ts";
import type { ReviewSubject } from "./subject.ts";
import { type Classified, classify, VERSION_LABELS } from "./versions.ts";

/**
 * Check 2: every selector of a query that measures the candidate (a threshold metric's query, a
 * judge's candidate readings) must carry a matcher whose value names the candidate alone;
 * `versions.ts` says which values do. A selector without one averages both versions.
 */

interface Verdict {
  selector: Selector;
  kind: Classified["kind"] | "none";
  /** The matcher that decided it, when one did. */
  matcher?: Matcher;
  because: string;
}

const POSITIVE = new Set(["=", "=~"]);

function verdictOf(at: QueryAt, selector: Selector, subject: ReviewSubject): Verdict {
  const classified = selector.matchers
    .filter((m) => POSITIVE.has(m.op))
    .map((m) => ({ m, c: classify(at.parsed, m, at.use.args, subject.evidence) }));
  for (const kind of ["candidate", "stable", "unknown"] as const) {
    const hit = classified.find((x) => x.c.kind === kind);
    if (hit) return { selector, kind, matcher: hit.m, because: hit.c.because };
  }
  const shared = classified.find((x) => VERSION_LABELS.has(x.m.label)) ?? classified[0];
  if (shared) return { selector, kind: "shared", matcher: shared.m, because: shared.c.because };
  return { selector, kind: "none", because: "it has no label matcher" };
}

/** The label the rollout's other queries select the candidate by, else `version`. */
function preferredLabel(queries: readonly QueryAt[], subject: ReviewSubject): string {
  const counts = new Map<string, number>();
  for (const at of queries) {
    if (at.parsed.syntaxError) continue;
    for (const s of selectors(at.parsed)) {
      const v = verdictOf(at, s, subject);
      if (v.kind === "candidate" && v.matcher)
        counts.set(v.matcher.label, (counts.get(v.matcher.label) ?? 0) + 1);
    }
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "version";
}

/** The selector fixed: the deciding version matcher names the candidate, or one is added. */
function fixedSelector(at: QueryAt, v: Verdict, label: string): string {
  const replace =
    v.matcher && (v.kind !== "shared" || VERSION_LABELS.has(v.matcher.label)) ? v.matcher : undefined;
  return rewriteSelector(at.parsed, v.selector, {
    label: replace?.label ?? label,
    value: RUNTIME_PLACEHOLDERS.latest,
    ...(replace ? { replace } : {}),
  });
}

/** The argument a matcher's value comes from, when it is one. */
function argOf(at: QueryAt, m: Matcher | undefined): string | undefined {
  const p = m ? placeholdersIn(at.parsed, m.value).find((x) => x.name.startsWith("args.")) : undefined;
  return p?.name.slice("args.".length);
}

function advice(at: QueryAt, v: Verdict): string {
  const arg = argOf(at, v.matcher);
  const latest = "valueFrom: {podTemplateHashValue: Latest}";
  if (arg && (v.kind === "unknown" || v.kind === "stable")) {
    return `give args.${arg} the candidate's version: {name: ${arg}, ${latest}} in the rollout's analysis args (it becomes ${RUNTIME_PLACEHOLDERS.latest}), or select it in the query`;
  }
  return `select the candidate by the label its metrics carry for the version, from ${RUNTIME_PLACEHOLDERS.latest} or an argument with ${latest}`;
}

function messageOf(at: QueryAt, v: Verdict): string {
  const text = restore(at.parsed, textOf(at.parsed, v.selector.node));
  switch (v.kind) {
    case "stable":
      return `${queryName(at)}: ${text} selects ${v.matcher?.label} by ${v.because}: the stable version, not the candidate`;
    case "unknown":
      return `${queryName(at)}: cannot tell whether ${text} selects the candidate: ${v.because}`;
    case "none":
      return `${queryName(at)}: ${text} has no label matcher: it selects every version's series`;
    default:
      return `${queryName(at)}: ${text} selects ${v.matcher?.label} by ${v.because}; no matcher names the candidate alone`;
  }
}

function checkQuery(at: QueryAt, subject: ReviewSubject, label: string): Finding[] {
  if (at.query.side === "stable" || at.parsed.syntaxError) return [];
  const bad = selectors(at.parsed)
    .map((s) => verdictOf(at, s, subject))
    .filter((v) => v.kind !== "candidate");
  const first = bad.find((v) => v.kind !== "unknown") ?? bad[0];
  if (!first) return [];
  const fixed = edit(
    at.parsed,
    bad.map((v) => ({
      from: v.selector.node.from,
      to: v.selector.node.to,
      text: fixedSelector(at, v, label),
    })),
  );
  const more =
    bad.length > 1 ? ` (and ${bad.length - 1} more selector${bad.length > 2 ? "s" : ""} of this query)` : "";
  const unknown = first.kind === "unknown";
  return [
    finding(
      unknown ? "query-candidate-unknown" : "query-not-candidate",
      unknown ? "info" : "warning",
      at.where,
      {
        message: `${messageOf(at, first)}${more}`,
        fix: `${advice(at, first)}: ${fixed.trim()}`,
      },
    ),
  ];
}

/**
 * Check 2 over every query of the rollout. An analysis at 100% (a blue/green post-promotion
 * analysis, a last step) has no stable traffic left to dilute the candidate's: not a finding.
 */
export function candidateFindings(
  subject: ReviewSubject,
  queries: readonly QueryAt[],
  plan: Plan,
): Finding[] {
  const label = preferredLabel(queries, subject);
  const everything = (at: QueryAt) =>
    at.use.kind === "step" && at.use.step !== undefined && plan.steps[at.use.step]?.share === 100;
  return unique(queries.filter((at) => !everything(at)).flatMap((at) => checkQuery(at, subject, label)));
}
