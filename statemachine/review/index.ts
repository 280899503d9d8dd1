import { plan } from "../plan.ts";
import { emptyNumeratorFindings } from "./empty-numerator.ts";
import { type ExposureOptions, exposureFindings } from "./exposure-budget.ts";
import { type Finding, sortFindings } from "./finding.ts";
import { repeatedFindings, sampleSizeFindings } from "./judges.ts";
import { notificationFindings } from "./notifications.ts";
import { podFindings } from "./pod-rounding.ts";
import { queriesOf, syntaxFindings } from "./queries.ts";
import { candidateFindings } from "./query-candidate.ts";
import type { ReviewSubject } from "./subject.ts";
import { windowFindings } from "./windows.ts";

/**
 * `rollouts review`'s domain: static checks of a rollout and its analysis templates, each finding at
 * its file, document, field path and step with a stable id, a severity, why it matters and the fix.
 * One file per check; the live Prometheus check's pure half is `live.ts`.
 */

export {
  CHECKS,
  type CheckId,
  type Finding,
  SEVERITIES,
  type Severity,
  severityRank,
  sortFindings,
} from "./finding.ts";
export { type LiveAnswer, type LiveProbe, type LiveValues, liveFindings, liveProbes } from "./live.ts";
export { loadReview, reviewSources } from "./load.ts";
export { queriesOf } from "./queries.ts";
export type { ReviewSubject } from "./subject.ts";

export interface ReviewOptions extends ExposureOptions {
  /** Prometheus' scrape interval in seconds (its default: 15). */
  scrapeIntervalSeconds?: number;
}

/** Prometheus' default `scrape_interval`. */
export const DEFAULT_SCRAPE_SECONDS = 15;

/** Every static check over a loaded rollout, the findings in the order of the files given. */
export function review(subject: ReviewSubject, options: ReviewOptions = {}): Finding[] {
  const rows = plan(subject.spec, options.rps !== undefined ? { rps: options.rps } : {});
  const queries = queriesOf(subject);
  return sortFindings(
    [
      ...podFindings(subject, rows),
      ...syntaxFindings(queries),
      ...candidateFindings(subject, queries, rows),
      ...emptyNumeratorFindings(queries),
      ...windowFindings(
        queries,
        subject.spec,
        rows.steps,
        options.scrapeIntervalSeconds ?? DEFAULT_SCRAPE_SECONDS,
      ),
      ...exposureFindings(subject, rows, options),
      ...sampleSizeFindings(subject, rows, options.rps),
      ...repeatedFindings(subject),
      ...notificationFindings(subject),
    ],
    subject.files,
  );
}
