import type { Origin } from "../analysis-resolve.ts";

/**
 * What `rollouts review` reports: one finding per problem a reviewer would raise, each at its
 * file, document, field path and step, with a stable id, a severity, why it matters and the fix.
 */

export const SEVERITIES = ["info", "warning", "error"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** How serious a severity is, to compare with `--fail-on`: info 0, warning 1, error 2. */
export const severityRank = (s: Severity): number => SEVERITIES.indexOf(s);

/**
 * Every check's id, with the one sentence that says why a finding of it matters. The ids are
 * stable: scripts and `docs/cli.md` name them.
 */
export const CHECKS = {
  "pod-rounding":
    "Without a traffic router a weight is whole pods behind one Service: the candidate gets the share of connections its pods give, not the weight written.",
  "pod-rounding-no-change":
    "A step that leaves the candidate's share where the previous one left it spends its time without exposing the candidate to more traffic.",
  "query-not-candidate":
    "A query that does not select the candidate alone averages it with the stable version, whose traffic dilutes a bad version's signal below the threshold.",
  "query-candidate-unknown":
    "Whether the query selects the candidate depends on a value the review cannot tie to the new version.",
  "query-syntax":
    "A query Prometheus cannot parse fails at every measurement: each one is an Error, and consecutiveErrorLimit errors abort the rollout.",
  "empty-numerator":
    "A healthy version may never produce the numerator's series, and a division by an empty vector is an empty vector, not 0.",
  "window-initial-delay":
    "The first measurements average over a window the candidate has not filled, so they rest on fewer requests than the window suggests (and on none of them at first).",
  "window-scrape":
    "rate() needs two samples in the window: a window shorter than two scrape intervals holds one sample or none, and the query returns nothing.",
  "exposure-budget":
    "Every request a bad version serves before its analysis can stop it is a request served badly; the budget is how many of those the rollout accepts.",
  "gate-sample-size":
    "A gate that cannot reach its minimum sample before the analysis ends can only hold, so the analysis ends Inconclusive and waits for a person.",
  "budget-overspent":
    "The rollout's error budget is the chance, at most, of rolling back an identical release; tests that look again at a fixed level spend it again at every look.",
  "fixed-horizon-repeated":
    "A fixed-level test taken again at every look is one more chance of a false rollback at each look: the chance grows with the number of looks.",
  "check-skipped": "Part of the review could not run; what it would have checked is unchecked.",
  "live-empty":
    "The query answers an empty vector now: result[0] cannot be evaluated, so the measurement would be an Error.",
  "live-nan":
    "The query answers NaN or an infinity now (a 0/0 ratio, a division by a missing rate): a condition like result[0] >= 0.95 is false for NaN, so the measurement fails.",
  "live-both-versions":
    "The selector matches the series of more than one version, so the stable version's requests are counted as the candidate's.",
  "live-error": "Prometheus refuses or fails the query: every measurement would be an Error.",
  "notification-unknown-trigger":
    "A subscription to a trigger nobody defines is ignored, as Argo's controller ignores it: whoever subscribed is never told.",
} as const;

export type CheckId = keyof typeof CHECKS;

/** Where a finding is: the document (file, index, kind and name), the field path, the step. */
export interface Where extends Origin {
  /** Field path in the document: `spec.strategy.canary.steps[3].setWeight`. */
  path?: string;
  /** The step's index from 0, as `rollouts plan` and the field path number it. */
  step?: number;
}

export interface Finding extends Where {
  id: CheckId;
  severity: Severity;
  /** What is wrong, with its figures. */
  message: string;
  /** Why it matters, in one sentence. */
  why: string;
  /** The fix: the corrected expression or field where it can be computed. */
  fix: string;
}

/** A finding of `id` at `where`, with the check's own sentence of why unless another is given. */
export function finding(
  id: CheckId,
  severity: Severity,
  where: Where,
  text: { message: string; fix: string; why?: string },
): Finding {
  return {
    id,
    severity,
    file: where.file,
    ...(where.document !== undefined ? { document: where.document } : {}),
    ...(where.object !== undefined ? { object: where.object } : {}),
    ...(where.path !== undefined ? { path: where.path } : {}),
    ...(where.step !== undefined ? { step: where.step } : {}),
    message: text.message,
    why: text.why ?? CHECKS[id],
    fix: text.fix,
  };
}

/** Findings without repeats: one template used by several steps is reported once, at its first use. */
export function unique(findings: readonly Finding[]): Finding[] {
  const seen = new Set<string>();
  return findings.filter((f) => {
    const key = JSON.stringify([f.id, f.file, f.document, f.path, f.message]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Findings in the order of the files given, then by document; a file's findings keep their order. */
export function sortFindings(findings: readonly Finding[], files: readonly string[]): Finding[] {
  const rank = (f: Finding) => {
    const i = files.indexOf(f.file);
    return i < 0 ? files.length : i;
  };
  return findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || (a.f.document ?? 0) - (b.f.document ?? 0) || a.i - b.i)
    .map(({ f }) => f);
}
