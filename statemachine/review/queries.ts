import { type Finding, finding, unique, type Where } from "./finding.ts";
import { type ParsedQuery, parseQuery, restore } from "./promql.ts";
import type { AnalysisUse, MetricSource, QuerySource, ReviewSubject, TemplateUse } from "./subject.ts";

/** One Prometheus query of one analysis, parsed, with where a finding about it goes. */
export interface QueryAt {
  use: AnalysisUse;
  template: TemplateUse;
  metric: MetricSource;
  query: QuerySource;
  parsed: ParsedQuery;
  /** The query's document and field path, and the step that runs it. */
  where: Where;
}

/** Every Prometheus query of every analysis (and of templates no analysis runs), each parsed once. */
export function queriesOf(subject: ReviewSubject): QueryAt[] {
  const parsed = new Map<string, ParsedQuery>();
  const parse = (text: string) => {
    let q = parsed.get(text);
    if (!q) {
      q = parseQuery(text);
      parsed.set(text, q);
    }
    return q;
  };
  return subject.analyses.flatMap((use) =>
    use.templates.flatMap((template) =>
      template.metrics.flatMap((metric) =>
        metric.queries.map((query) => ({
          use,
          template,
          metric,
          query,
          parsed: parse(query.text),
          where: {
            file: metric.where.file,
            ...(metric.where.document !== undefined ? { document: metric.where.document } : {}),
            ...(metric.where.object !== undefined ? { object: metric.where.object } : {}),
            path: query.path,
            ...(use.kind === "step" && use.step !== undefined ? { step: use.step } : {}),
          },
        })),
      ),
    ),
  );
}

/** `metric "errors"` or `metric "errors", candidate reading bad`: which query, in words. */
export function queryName(at: QueryAt): string {
  const side = at.query.side ? `, ${at.query.side} reading ${at.query.reading ?? "value"}` : "";
  return `metric "${at.metric.metric.name}"${side}`;
}

/** A query the grammar cannot read: every measurement of it would be an Error. */
export function syntaxFindings(queries: readonly QueryAt[]): Finding[] {
  return unique(
    queries.flatMap((at) => {
      const error = at.parsed.syntaxError;
      if (!error) return [];
      const near = restore(at.parsed, error.near).trim();
      return [
        finding("query-syntax", "error", at.where, {
          message: `${queryName(at)}: the query is not valid PromQL${near ? ` near "${near}"` : ""}`,
          fix: "correct the expression (Prometheus' expression browser or promtool check shows where); the other query checks skip it",
        }),
      ];
    }),
  );
}
