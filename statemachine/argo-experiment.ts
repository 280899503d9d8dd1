import type { z } from "zod";
import { type ArgContext, type LoadedTemplate, type Origin, resolveAnalysis } from "./analysis-resolve.ts";
import type { ArgoStepSchemas } from "./argo-schema.ts";
import { parseDuration } from "./duration.ts";
import type { Problem } from "./problems.ts";
import type { AnalysisSpec, Step } from "./spec.ts";

export type ArgoExperiment = z.infer<(typeof ArgoStepSchemas)["experiment"]>;
type ExperimentStep = Extract<Step, { kind: "experiment" }>;

/** Argo's `{{templates.<name>.podTemplateHash}}`, as an experiment analysis's argument may use it. */
export const TEMPLATE_HASH = /\{\{\s*templates\.([a-z0-9-]+)\.podTemplateHash\s*\}\}/g;

/** An experiment template's name: it ends the ReplicaSet's name, so it is a DNS label. */
const TEMPLATE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Argo's `experiment` step, as far as it runs here: one ReplicaSet per template from the stable or
 * the candidate's pod template (`specRef`, `replicas`), available before the analyses start; the
 * analyses, every one `requiredForCompletion` (the step ends when they complete, as Argo's
 * experiment does once its required analyses succeed, whatever the duration); without analyses,
 * `duration` (absent: until `rollouts promote`, as Argo's experiment runs until terminated).
 * What needs more (traffic to the experiment's pods, its own Services, labels or selectors, an
 * analysis in the background of the duration, values only the experiment knows) is refused,
 * naming the field.
 */
export function normalizeExperiment(
  raw: ArgoExperiment,
  at: Origin & { path: string; step: number },
  count: number,
  templates: ReadonlyMap<string, LoadedTemplate>,
  context: ArgContext,
  problems: Problem[],
): ExperimentStep | undefined {
  const before = problems.length;
  const path = `${at.path}.experiment`;
  const refuse = (field: string, message: string) =>
    problems.push({ ...at, path: `${path}.${field}`, message: `step ${at.step} of ${count}: ${message}` });
  const names = new Set<string>();
  raw.templates.forEach((t, i) => {
    const where = `templates[${i}]`;
    if (!TEMPLATE_NAME.test(t.name) || t.name.length > 63) {
      refuse(
        `${where}.name`,
        `experiment template "${t.name}": a DNS label (lower-case letters, digits, '-'), as it ends the ReplicaSet's name`,
      );
    } else if (names.has(t.name)) {
      refuse(`${where}.name`, `experiment template "${t.name}" is defined twice`);
    }
    names.add(t.name);
    if (t.weight !== undefined) {
      refuse(
        `${where}.weight`,
        `experiment template "${t.name}": experiment template weight needs a Service per template and a router that splits traffic to it (Argo: SMI and ALB); not supported: the experiment's pods get no traffic from the rollout's router`,
      );
    }
    if (t.service !== undefined) {
      refuse(
        `${where}.service`,
        `experiment template "${t.name}": a Service per experiment template is not supported`,
      );
    }
    if (t.selector !== undefined) {
      refuse(
        `${where}.selector`,
        `experiment template "${t.name}": a selector of its own is not supported: the ReplicaSet selects the pod template's labels`,
      );
    }
    if (t.metadata !== undefined) {
      refuse(
        `${where}.metadata`,
        `experiment template "${t.name}": labels and annotations of its own are not supported: the pods carry the pod template's`,
      );
    }
  });
  if (raw.dryRun !== undefined) refuse("dryRun", "an experiment's dryRun is not supported");
  if (raw.analysisRunMetadata !== undefined) {
    refuse("analysisRunMetadata", "an experiment's analysisRunMetadata is not supported");
  }
  let duration: number | undefined;
  if (raw.duration !== undefined) {
    const d = parseDuration(raw.duration);
    if ("error" in d) problems.push({ ...at, path: `${path}.duration`, message: d.error });
    else duration = d.seconds;
  }
  const analyses = raw.analyses ?? [];
  const analysisNames = new Set<string>();
  analyses.forEach((a, i) => {
    const where = `analyses[${i}]`;
    if (analysisNames.has(a.name))
      refuse(`${where}.name`, `experiment analysis "${a.name}" is defined twice`);
    analysisNames.add(a.name);
    if (a.requiredForCompletion !== true) {
      refuse(
        `${where}.requiredForCompletion`,
        `experiment analysis "${a.name}": only analyses with requiredForCompletion: true are supported (the step ends when they complete); one that runs in the background of the duration, or until the experiment is terminated, is not`,
      );
    }
    (a.args ?? []).forEach((arg, j) => {
      // `{{templates.<name>.podTemplateHash}}` of a template of this experiment is filled in when
      // the analysis starts, from the ReplicaSet the target made.
      const rest = (arg.value ?? "").replace(TEMPLATE_HASH, (whole, name: string) =>
        names.has(name) ? "" : whole,
      );
      if (/\{\{\s*(templates|experiment)\./.test(rest)) {
        refuse(
          `${where}.args[${j}].value`,
          `experiment analysis "${a.name}" arg "${arg.name}": ${arg.value}: of the values only the experiment knows, {{templates.<name>.podTemplateHash}} of one of its templates (${[...names].join(", ")}) is supported, not {{templates.<name>.replicaset.name}} or {{experiment.*}}; or use valueFrom.podTemplateHashValue (Stable or Latest) or a literal`,
        );
      }
    });
  });
  // The analyses are resolved whatever else is refused: every problem of the step is named at once.
  const analysis = mergeAnalyses(raw, at, path, templates, context, problems);
  if (problems.length > before) return undefined;
  return {
    kind: "experiment",
    ...(duration !== undefined ? { duration } : {}),
    templates: raw.templates.map((t) => ({
      name: t.name,
      specRef: t.specRef,
      ...(t.replicas !== undefined ? { replicas: t.replicas } : {}),
    })),
    ...(analysis ? { analysis } : {}),
  };
}

/**
 * The experiment's analyses as one analysis: each resolved with its own args, their templates
 * side by side. Argo runs one AnalysisRun per analysis and the experiment takes the worst phase;
 * one run of all their metrics takes the worst too. A metric name used by two analyses is
 * refused, as two metrics of one run cannot share a name.
 */
function mergeAnalyses(
  raw: ArgoExperiment,
  at: Origin & { step: number },
  path: string,
  templates: ReadonlyMap<string, LoadedTemplate>,
  context: ArgContext,
  problems: Problem[],
): AnalysisSpec | undefined {
  const analyses = raw.analyses ?? [];
  if (analyses.length === 0) return undefined;
  const merged: AnalysisSpec = { templates: [], args: {} };
  const metrics = new Map<string, string>();
  analyses.forEach((a, i) => {
    const where = `${path}.analyses[${i}]`;
    const from = problems.length;
    const resolved = resolveAnalysis(
      {
        templates: [{ templateName: a.templateName, ...(a.clusterScope ? { clusterScope: true } : {}) }],
        args: a.args ?? [],
        dryRun: [],
        measurementRetention: [],
      },
      templates,
      { ...at, path: where },
      context,
      problems,
    );
    // The analysis names its one template itself: `analyses[i].templateName`, not a templates list.
    for (const problem of problems.slice(from)) {
      if (problem.path?.startsWith(`${where}.templates[0].`)) {
        problem.path = `${where}.${problem.path.slice(`${where}.templates[0].`.length)}`;
      }
    }
    if (!resolved) return;
    for (const template of resolved.templates) {
      for (const metric of template.metrics) {
        const other = metrics.get(metric.name);
        if (other !== undefined) {
          problems.push({
            ...at,
            path: `${where}.templateName`,
            message: `experiment analyses "${other}" and "${a.name}" both have a metric "${metric.name}": one run cannot hold two metrics of one name`,
          });
        }
        metrics.set(metric.name, a.name);
      }
      merged.templates.push(template);
    }
    Object.assign(merged.args, resolved.args);
  });
  return merged.templates.length > 0 ? merged : undefined;
}
