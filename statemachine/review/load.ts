import { type LoadedTemplate, loadTemplate, type Origin, resolveAnalysis } from "../analysis-resolve.ts";
import type { ArgoArgument } from "../argo-schema.ts";
import { ERROR_BUDGET_ANNOTATION } from "../error-budget.ts";
import { type Loaded, parseRollout, parseSources, readDocuments, readSources, type Source } from "../load.ts";
import { isNativeDocument } from "../native.ts";
import { PATHS as DESCRIPTOR_PATHS, isDescriptor } from "../native-descriptor.ts";
import type { Problem } from "../problems.ts";
import type { AnalysisSpec, RolloutSpec } from "../spec.ts";
import type { Where } from "./finding.ts";
import {
  type AnalysisUse,
  analysesOf,
  metricSources,
  type ReviewSubject,
  type TemplateUse,
  type VersionEvidence,
} from "./subject.ts";

type Doc = Record<string, unknown>;
type Form = ReviewSubject["form"];

const ARGO_API = "argoproj.io/v1alpha1";

const isObject = (v: unknown): v is Doc => v !== null && typeof v === "object" && !Array.isArray(v);
const at = (v: unknown, ...keys: string[]): unknown =>
  keys.reduce<unknown>((node, k) => (isObject(node) ? node[k] : undefined), v);

/**
 * Reads the files as `rollouts plan` reads them (the same loader, the same problems: a
 * {@link SpecError} for anything it cannot use) and what a review needs besides: the rollout's own
 * document and where each of its analyses, templates and queries is.
 */
export async function loadReview(
  paths: readonly string[],
): Promise<{ subject: ReviewSubject; notes: string[] }> {
  const problems: Problem[] = [];
  const sources = await readSources(paths, problems);
  return reviewSources(sources, problems);
}

/** The same as {@link loadReview} for sources already in memory (tests). */
export function reviewSources(
  sources: readonly Source[],
  problems: Problem[] = [],
): { subject: ReviewSubject; notes: string[] } {
  const loaded = parseSources(sources, problems);
  // None or several: the loader's own words for it.
  if (loaded.rollouts.length !== 1) parseRollout(sources);
  const spec = loaded.rollouts[0] as RolloutSpec;
  const found = rolloutDocument(sources);
  const files = sources.map((s) => s.file);
  const subject: ReviewSubject = {
    spec,
    files,
    form: found.form,
    rollout: found.where,
    stepPaths: stepPaths(spec, found.form, found.value),
    analyses: analysisUses(spec, loaded, found),
    evidence: evidenceOf(spec, found.form, found.value),
    budgetPath: budgetPath(found.form, found.value),
  };
  return { subject, notes: loaded.notes };
}

interface Found {
  form: Form;
  value: Doc;
  where: Where;
}

/** The one document that is the rollout (the loader has already made sure there is exactly one). */
function rolloutDocument(sources: readonly Source[]): Found {
  for (const doc of readDocuments(sources, [])) {
    const value = doc.value;
    if (!isObject(value)) continue;
    if (isDescriptor(value)) {
      return { form: "descriptor", value, where: { ...doc.origin, object: "descriptor" } };
    }
    if (isNativeDocument(value)) {
      return { form: "native", value, where: { ...doc.origin, object: `Rollout ${String(value.name)}` } };
    }
    if (value.apiVersion === ARGO_API && value.kind === "Rollout") {
      return {
        form: "argo",
        value,
        where: { ...doc.origin, object: `Rollout ${String(at(value, "metadata", "name"))}` },
      };
    }
  }
  throw new Error("the loader found a rollout that readDocuments does not");
}

/** A native or descriptor field's path: descriptors nest the native fields under `rollout:`. */
const fieldOf = (form: Form, field: string): string =>
  form === "descriptor" ? ((DESCRIPTOR_PATHS as Record<string, string>)[field] ?? `rollout.${field}`) : field;

/** Where each spec step comes from in the rollout's document. */
function stepPaths(spec: RolloutSpec, form: Form, raw: Doc): string[] {
  if (form === "argo") {
    if (spec.strategy === "canary") return spec.steps.map((_, i) => `spec.strategy.canary.steps[${i}]`);
    const bg = "spec.strategy.blueGreen";
    return spec.steps.map((step) => {
      if (step.kind === "preview") return `${bg}.previewService`;
      if (step.kind === "analysis") return `${bg}.${step.origin}`;
      if (step.kind === "pause")
        return `${bg}.${step.duration === undefined ? "autoPromotionEnabled" : "autoPromotionSeconds"}`;
      return `${bg}.activeService`;
    });
  }
  const stepsField = form === "descriptor" ? at(raw, "rollout", "traffic", "steps") : raw.steps;
  const percentages = !Array.isArray(stepsField) || stepsField.every((s) => typeof s === "number");
  let weight = 0;
  let explicit = 0;
  return spec.steps.map((step, i) => {
    if (i === 0 && step.kind === "setHeaderRoute" && spec.testers) return fieldOf(form, "testers");
    if (step.kind === "preview") return fieldOf(form, "strategy");
    if (!percentages) return `${fieldOf(form, "steps")}[${explicit++}]`;
    if (step.kind === "setWeight") return `${fieldOf(form, "steps")}[${weight++}]`;
    if (step.kind === "pause") return fieldOf(form, step.reason === "Approval" ? "approvalsBetween" : "bake");
    if (step.kind === "analysis") return fieldOf(form, isHealth(step.analysis) ? "health" : "analysis");
    return fieldOf(form, "steps");
  });
}

const isHealth = (a: AnalysisSpec) => a.templates.some((t) => t.kind === "inline" && t.name === "health");

/** Every analysis the rollout runs, and the templates given that it never runs. */
function analysisUses(spec: RolloutSpec, loaded: Loaded, found: Found): AnalysisUse[] {
  const paths = stepPaths(spec, found.form, found.value);
  const inline = found.form === "argo" ? new Map() : inlineTemplates(found);
  const uses: AnalysisUse[] = analysesOf(spec).map(({ step, analysis }) => {
    const background = step === undefined;
    const path = background
      ? "spec.strategy.canary.analysis"
      : found.form === "argo" && spec.strategy === "canary"
        ? `${paths[step]}.analysis`
        : (paths[step] as string);
    const where: Where = { ...found.where, path, ...(background ? {} : { step }) };
    return {
      kind: background ? "background" : "step",
      ...(background ? { step: spec.backgroundAnalysis?.startingStep ?? 0 } : { step }),
      where,
      args: analysis.args,
      templates: analysis.templates.map((t) => {
        const source = t.kind === "inline" ? inline.get(t.name) : loaded.templates.get(`${t.kind}/${t.name}`);
        const fallback = { ...found.where, path };
        return {
          spec: t,
          ...(source ? { source } : {}),
          metrics: metricSources(t, source, fallback, healthPath(found)),
        };
      }),
    };
  });
  const used = new Set(uses.flatMap((u) => u.templates.map((t) => `${t.spec.kind}/${t.spec.name}`)));
  for (const [key, template] of loaded.templates)
    if (!used.has(key)) uses.push(...unusedUse(template, loaded));
  return uses;
}

/** A native rollout's inline templates, as the loader reads them (`analysis.templates[i]`). */
function inlineTemplates(found: Found): Map<string, LoadedTemplate> {
  const out = new Map<string, LoadedTemplate>();
  const templates = at(found.value, "analysis", "templates");
  if (!Array.isArray(templates)) return out;
  templates.forEach((t, i) => {
    if (!isObject(t) || typeof t.name !== "string") return;
    const { name, ...rest } = t;
    const loaded = loadTemplate(
      name as string,
      "inline",
      rest,
      found.where as Origin,
      `analysis.templates[${i}]`,
      [],
    );
    if (loaded) out.set(name as string, loaded);
  });
  return out;
}

/** Where a native health metric is, by its name: `health.metrics[1]`, `rollout.health.judge[0]`. */
function healthPath(found: Found): (metric: { name: string }) => string | undefined {
  const base = fieldOf(found.form, "health");
  const health = found.form === "descriptor" ? at(found.value, "rollout", "health") : found.value.health;
  return (metric) => {
    for (const list of ["metrics", "judge"]) {
      const items = at(health, list);
      if (!Array.isArray(items)) continue;
      const i = items.findIndex((m) => isObject(m) && m.name === metric.name);
      if (i >= 0) return `${base}.${list}[${i}]`;
    }
    return undefined;
  };
}

/**
 * A template the rollout never runs, reviewed with its own declared arguments: an argument
 * without a value keeps its `{{args.NAME}}`, so nothing is assumed about it.
 */
function unusedUse(template: LoadedTemplate, loaded: Loaded): AnalysisUse[] {
  const args: ArgoArgument[] = template.args
    .filter((a) => a.value === undefined && !a.valueFrom?.podTemplateHashValue)
    .map((a) => ({ name: a.name, value: `{{args.${a.name}}}` }));
  const where = { ...template.origin, path: template.basePath };
  const analysis = resolveAnalysis(
    {
      templates: [{ templateName: template.name, clusterScope: template.kind === "ClusterAnalysisTemplate" }],
      args,
      dryRun: [],
      measurementRetention: [],
    },
    loaded.templates,
    where,
    {},
    [],
  );
  if (!analysis) return [];
  const templates: TemplateUse[] = analysis.templates.map((t) => ({
    spec: t,
    source: template,
    metrics: metricSources(t, template, where, () => undefined),
  }));
  return [{ kind: "unused", where, args: analysis.args, templates }];
}

/** The tag of an image reference (`shop:1.4.0` → `1.4.0`), not a registry's port. */
function imageTag(image: unknown): string | undefined {
  if (typeof image !== "string") return undefined;
  const name = image.split("@")[0] as string;
  const colon = name.lastIndexOf(":");
  return colon > name.lastIndexOf("/") ? name.slice(colon + 1) : undefined;
}

/** What ties a literal value to the candidate or to every version, from the rollout's document. */
function evidenceOf(spec: RolloutSpec, form: Form, raw: Doc): VersionEvidence {
  const candidate = new Map<string, string>();
  const shared = new Map<string, string>();
  const put = (map: Map<string, string>, value: unknown, where: string) => {
    if (typeof value === "string" && value !== "" && !map.has(value)) map.set(value, where);
  };
  if (form !== "argo") {
    put(shared, spec.name, "the rollout's name");
    const tag = imageTag(raw.image);
    if (tag) put(candidate, tag, "the image tag (image)");
    return { candidate, shared, candidateServices: [], stableServices: [] };
  }
  const selector = at(raw, "spec", "selector", "matchLabels");
  if (isObject(selector))
    for (const [k, v] of Object.entries(selector)) put(shared, v, `spec.selector.matchLabels.${k}`);
  put(shared, spec.name, "the rollout's name");
  const labels = at(raw, "spec", "template", "metadata", "labels");
  if (isObject(labels)) {
    for (const [k, v] of Object.entries(labels))
      if (!shared.has(String(v))) put(candidate, v, `spec.template.metadata.labels.${k}`);
  }
  const containers = at(raw, "spec", "template", "spec", "containers");
  (Array.isArray(containers) ? containers : []).forEach((c, i) => {
    const base = `spec.template.spec.containers[${i}]`;
    const tag = imageTag(at(c, "image"));
    if (tag) put(candidate, tag, `the image tag (${base}.image)`);
    const env = at(c, "env");
    (Array.isArray(env) ? env : []).forEach((e, j) => {
      put(candidate, at(e, "value"), `${base}.env[${j}].value (${String(at(e, "name"))})`);
    });
  });
  return {
    candidate,
    shared,
    candidateServices: [spec.canaryService, spec.previewService].filter((s): s is string => !!s),
    stableServices: [spec.stableService, spec.activeService].filter((s): s is string => !!s),
  };
}

function budgetPath(form: Form, raw: Doc): string {
  if (form !== "argo") return fieldOf(form, "errorBudget");
  return at(raw, "metadata", "annotations", ERROR_BUDGET_ANNOTATION) === undefined
    ? "metadata.annotations"
    : `metadata.annotations["${ERROR_BUDGET_ANNOTATION}"]`;
}
