import type { LoadedTemplate } from "../analysis-resolve.ts";
import { joinPath } from "../problems.ts";
import type { AnalysisSpec, AnalysisTemplateSpec, Metric, RolloutSpec } from "../spec.ts";
import type { Where } from "./finding.ts";

/**
 * What a review reads: the loaded rollout (the normalized spec every other command runs) and, for
 * each analysis it runs, where each template, metric and query is in the user's files, with the
 * queries as the templates have them (their `{{args.x}}` still in place) and the arguments the
 * rollout gives them. The checks find problems in the spec's numbers and report them at the
 * user's own field paths.
 */

/** A Prometheus query of a metric, where the user wrote it. */
export interface QuerySource {
  /** Field path of the query in its document. */
  path: string;
  /** The query with its placeholders. */
  text: string;
  /** A judge's side: the candidate's readings must select the candidate, the stable's the stable. */
  side?: "candidate" | "stable";
  /** A judge's reading (`bad`, `n`, `value`, `p95`...). */
  reading?: string;
}

/** A metric of a template: the spec's (defaults applied) and where its queries are. */
export interface MetricSource {
  metric: Metric;
  /** The metric's document, and its path there (`spec.metrics[0]`). */
  where: Where & { path: string };
  queries: QuerySource[];
}

export interface TemplateUse {
  spec: AnalysisTemplateSpec;
  /** The template as the files have it; absent when the spec generated it (a native `health` block). */
  source?: LoadedTemplate;
  metrics: MetricSource[];
}

/** One analysis the rollout runs (a step's, the background one), or a template it never runs. */
export interface AnalysisUse {
  kind: "step" | "background" | "unused";
  /** The spec's step (from 0) for a step's analysis; the starting step for the background one. */
  step?: number;
  /** The analysis reference in the rollout's document (`spec.strategy.canary.steps[1].analysis`). */
  where: Where;
  /** Argument values as resolved for this analysis: `{{rollout.latest}}` for `podTemplateHashValue: Latest`. */
  args: Record<string, string>;
  templates: TemplateUse[];
}

/** What ties a literal value to a version: the pod template's values, the selector's labels, services. */
export interface VersionEvidence {
  /** Values of the pod template that change with the version (image tag, env, labels outside the selector), with where. */
  candidate: Map<string, string>;
  /** Values every version carries (the selector's labels, the rollout's name), with where. */
  shared: Map<string, string>;
  /** Services that select only the candidate (canary, preview) or only the stable version (stable, active). */
  candidateServices: string[];
  stableServices: string[];
}

export interface ReviewSubject {
  spec: RolloutSpec;
  /** The files given, in order. */
  files: string[];
  form: "argo" | "native" | "descriptor";
  rollout: Where;
  /** Field path of each spec step in the rollout's document. */
  stepPaths: string[];
  analyses: AnalysisUse[];
  evidence: VersionEvidence;
  /** Where the rollout's error budget is (or would be) written. */
  budgetPath: string;
}

/** Every Prometheus query in a metric (or a judge's readings), with its path and side. */
export function queriesIn(value: unknown, base: string): QuerySource[] {
  const out: QuerySource[] = [];
  const walk = (
    node: unknown,
    path: Array<string | number>,
    side?: QuerySource["side"],
    reading?: string,
  ) => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => {
        walk(item, [...path, i], side, reading);
      });
      return;
    }
    if (node === null || typeof node !== "object") return;
    for (const [key, child] of Object.entries(node as Record<string, unknown>)) {
      const query = key === "prometheus" ? (child as { query?: unknown } | null)?.query : undefined;
      if (typeof query === "string") {
        out.push({
          path: joinPath([base, ...path, key, "query"]),
          text: query,
          ...(side ? { side } : {}),
          ...(side ? { reading: reading ?? "value" } : {}),
        });
        continue;
      }
      if (key === "candidate" || key === "stable") walk(child, [...path, key], key, undefined);
      else if (side && reading === undefined && key !== "provider") walk(child, [...path, key], side, key);
      else walk(child, [...path, key], side, reading);
    }
  };
  walk(value, []);
  return out;
}

/** The metrics of a template used by an analysis, each at its place in the files. */
export function metricSources(
  spec: AnalysisTemplateSpec,
  source: LoadedTemplate | undefined,
  fallback: Where & { path: string },
  rawPath: (metric: { name: string }) => string | undefined,
): MetricSource[] {
  return spec.metrics.map((metric, m) => {
    if (source) {
      const path = `${source.basePath}.metrics[${m}]`;
      return {
        metric,
        where: { ...source.origin, path },
        queries: queriesIn(source.metrics[m], path),
      };
    }
    // A generated template (a native health block): its queries are the spec's, each at the user's
    // metric of the same name (a score's or Kayenta's metrics are the user's metrics).
    const path = rawPath(metric) ?? fallback.path;
    const judged = metric.provider.judge;
    const subs = judged && (judged.test === "score" || judged.test === "kayenta") ? judged.metrics : [];
    const queries = queriesIn(metric.provider, "provider").map((q) => {
      const k = /^provider\.judge\.metrics\[(\d+)\]/.exec(q.path)?.[1];
      const sub = k === undefined ? undefined : subs[Number(k)];
      return { ...q, path: `${(sub && rawPath(sub)) ?? path}.query` };
    });
    return { metric, where: { ...fallback, path }, queries };
  });
}

/** The analyses of a spec, in step order, then the background analysis. */
export function analysesOf(spec: RolloutSpec): Array<{ step?: number; analysis: AnalysisSpec }> {
  const out: Array<{ step?: number; analysis: AnalysisSpec }> = [];
  spec.steps.forEach((step, i) => {
    if (step.kind === "analysis") out.push({ step: i, analysis: step.analysis });
  });
  if (spec.backgroundAnalysis) out.push({ analysis: spec.backgroundAnalysis.analysis });
  return out;
}
