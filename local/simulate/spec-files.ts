import { argoSteps, type ShortStep } from "../../cli/simulate/plan.ts";
import { SimulationInputError } from "../../cli/simulate/runtime.ts";
import {
  formatProblem,
  loadRollout,
  type Problem,
  providersRead,
  type RolloutSpec,
  readDocuments,
  readSourcesSync,
  SpecError,
} from "../../statemachine/index.ts";
import { isNativeDocument } from "../../statemachine/native.ts";

/**
 * The files a simulation runs: the user's Rollout and AnalysisTemplates, with the steps replaced
 * by a `--plan`, every Prometheus address pointed at the simulation's Prometheus (it stands for
 * the user's) and every samples address at the local proxy's admin listener (it stands for the
 * router). Queries, conditions, limits and args stay as written.
 */

interface Doc {
  file: string;
  index: number;
  value: Record<string, unknown>;
}

/** The user's documents, read by the project's loader with its limits; any problem is an input error. */
function readDocs(files: readonly string[]): Doc[] {
  const problems: Problem[] = [];
  const documents = readDocuments(readSourcesSync(files, problems), problems);
  if (problems.length > 0) throw new SimulationInputError(problems.map(formatProblem).join("\n"));
  const docs: Doc[] = [];
  for (const { origin, value } of documents) {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      docs.push({
        file: origin.file,
        index: (origin.document ?? 1) - 1,
        value: value as Record<string, unknown>,
      });
    }
  }
  return docs;
}

/**
 * Loads the user's own files as `rollouts plan` does, before anything rewrites them: their
 * problems name the user's files and documents.
 */
export async function checkUserFiles(files: readonly string[]): Promise<RolloutSpec> {
  try {
    return (await loadRollout(files)).spec;
  } catch (error) {
    if (error instanceof SpecError) throw new SimulationInputError(error.message);
    throw error;
  }
}

/**
 * Points every `prometheus: {query}` of a template at `prometheusUrl`, and every
 * `samples: {primary, candidate}` at `samplesUrl` (the local proxy's admin listener, whose
 * `GET /compare` answers from the simulated requests).
 */
function pointProviders(node: unknown, urls: { prometheusUrl: string; samplesUrl: string }): void {
  if (Array.isArray(node)) {
    for (const item of node) pointProviders(item, urls);
    return;
  }
  if (!node || typeof node !== "object") return;
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === "prometheus" && value && typeof value === "object" && "query" in value) {
      (value as Record<string, unknown>).address = urls.prometheusUrl;
    } else if (key === "samples" && value && typeof value === "object" && "candidate" in value) {
      (value as Record<string, unknown>).address = urls.samplesUrl;
    } else pointProviders(value, urls);
  }
}

const TEMPLATE_KINDS = new Set(["AnalysisTemplate", "ClusterAnalysisTemplate"]);

/**
 * The YAML text of the simulated rollout: the documents of `files` (an Argo Rollout and its
 * AnalysisTemplates, or a native spec with its inline templates), the steps replaced by `plan` when
 * given, Prometheus addresses set to `prometheusUrl`, samples addresses to `samplesUrl`.
 */
export function simulatedSpecText(
  files: readonly string[],
  options: { plan?: readonly ShortStep[]; prometheusUrl: string; samplesUrl: string },
): string {
  const docs = readDocs(files);
  const isRollout = (d: Doc) => d.value.kind === "Rollout" || isNativeDocument(d.value);
  const rollouts = docs.filter(isRollout);
  const templates = docs.filter((d) => TEMPLATE_KINDS.has(String(d.value.kind)));
  if (rollouts.length !== 1) {
    throw new SimulationInputError(
      `simulate reads one Argo Rollout and its AnalysisTemplates, or one native spec; the files hold ${rollouts.length} rollout(s)`,
    );
  }
  const rollout = rollouts[0] as Doc;
  const native = isNativeDocument(rollout.value);
  if (options.plan && native) replaceNativeSteps(rollout, options.plan);
  else if (options.plan) replaceArgoSteps(rollout, templates, options.plan);
  for (const t of templates) pointProviders(t.value.spec, options);
  if (native) pointNative(rollout.value, options);
  return docs
    .filter((d) => isRollout(d) || TEMPLATE_KINDS.has(String(d.value.kind)))
    .map((d) => JSON.stringify(d.value))
    .join("\n---\n");
}

function replaceArgoSteps(rollout: Doc, templates: readonly Doc[], plan: readonly ShortStep[]): void {
  const strategy = (rollout.value.spec as Record<string, unknown> | undefined)?.strategy as
    | Record<string, unknown>
    | undefined;
  const canary = strategy?.canary as Record<string, unknown> | undefined;
  if (!canary) {
    throw new SimulationInputError(
      `${rollout.file}: document ${rollout.index + 1}: --plan replaces canary steps, and spec.strategy has no canary`,
    );
  }
  const own = Array.isArray(canary.steps)
    ? (canary.steps as Array<Record<string, unknown>>).find(
        (s) => s && typeof s === "object" && "analysis" in s,
      )
    : undefined;
  const analysis =
    own?.analysis ??
    (templates.length > 0
      ? {
          templates: templates.map((t) => ({
            templateName: (t.value.metadata as { name?: string } | undefined)?.name,
            ...(t.value.kind === "ClusterAnalysisTemplate" ? { clusterScope: true } : {}),
          })),
        }
      : undefined);
  if (plan.some((s) => "analysis" in s) && analysis === undefined) {
    throw new SimulationInputError(
      "--plan has an analysis step, but the rollout has no analysis step and no AnalysisTemplate was given",
    );
  }
  canary.steps = argoSteps(plan, analysis);
}

/**
 * A native spec's `steps` become the plan as an explicit step list (Argo's step shapes, which the
 * native spec reads as written). `bake`, `health` and `approvalsBetween` describe what each
 * percentage step expands to, so they go with the percentages; a plan's `analysis` is the
 * `analysis` block: every inline template, with the block's args.
 */
function replaceNativeSteps(rollout: Doc, plan: readonly ShortStep[]): void {
  const n = rollout.value;
  const where = `${rollout.file}: document ${rollout.index + 1}`;
  if (n.strategy === "blueGreen") {
    throw new SimulationInputError(
      `${where}: --plan replaces canary steps, and the native spec's strategy is blueGreen`,
    );
  }
  const block = n.analysis as { templates?: unknown; args?: unknown } | undefined;
  const analysis =
    block && Array.isArray(block.templates)
      ? {
          templates: (block.templates as Array<{ name?: unknown }>).map((t) => ({ templateName: t?.name })),
          args: Object.entries((block.args as Record<string, unknown> | undefined) ?? {}).map(
            ([name, value]) => ({
              name,
              value: String(value),
            }),
          ),
        }
      : undefined;
  if (plan.some((s) => "analysis" in s) && analysis === undefined) {
    throw new SimulationInputError(
      `${where}: --plan has an analysis step, but the native spec has no analysis block (its templates are the plan's analysis)`,
    );
  }
  delete n.bake;
  delete n.health;
  delete n.approvalsBetween;
  n.steps = argoSteps(plan, analysis);
}

/** The native spec's inline templates and its health gates' Prometheus, pointed like a template's. */
function pointNative(n: Record<string, unknown>, urls: { prometheusUrl: string; samplesUrl: string }): void {
  pointProviders(n.analysis, urls);
  const health = n.health;
  if (health && typeof health === "object" && !Array.isArray(health)) {
    const h = health as Record<string, unknown>;
    pointProviders(h, urls);
    const settings = h.prometheus && typeof h.prometheus === "object" ? h.prometheus : {};
    h.prometheus = { ...settings, address: urls.prometheusUrl };
  }
}

/** The providers a simulation feeds: Prometheus by remote write, samples through the proxy's recorder. */
const SIMULATED_PROVIDERS = new Set(["prometheus", "samples"]);

/** Each metric whose provider the simulation cannot feed, named. */
export function unsupportedProviders(spec: RolloutSpec): string[] {
  const problems: string[] = [];
  const analyses = [
    ...spec.steps.flatMap((s, i) =>
      s.kind === "analysis" ? [{ where: `step ${i + 1}`, analysis: s.analysis }] : [],
    ),
    ...(spec.backgroundAnalysis
      ? [{ where: "background analysis", analysis: spec.backgroundAnalysis.analysis }]
      : []),
  ];
  const seen = new Set<string>();
  for (const { where, analysis } of analyses) {
    for (const template of analysis.templates) {
      for (const metric of template.metrics) {
        const kinds = providersRead(metric.provider as never)
          .map(
            (p) =>
              Object.keys(p as object).find((k) => (p as Record<string, unknown>)[k] !== undefined) ?? "?",
          )
          .filter((k) => !SIMULATED_PROVIDERS.has(k));
        if (kinds.length === 0) continue;
        const line = `${where}: template ${template.name}, metric ${metric.name}: provider ${[...new Set(kinds)].join(", ")} cannot be simulated (the simulation feeds a Prometheus and the local proxy's samples; use a prometheus query or the samples provider)`;
        if (!seen.has(line)) problems.push(line);
        seen.add(line);
      }
    }
  }
  return problems;
}

/**
 * Loads the rewritten spec with the project's loader; its problems become one input error, each
 * naming `label` (the user's files and the plan) instead of the rewritten copy.
 */
export async function loadSimulatedSpec(file: string, label: string): Promise<RolloutSpec> {
  try {
    return (await loadRollout([file])).spec;
  } catch (error) {
    if (error instanceof SpecError) {
      throw new SimulationInputError(
        error.problems.map((p) => formatProblem({ ...p, file: p.file === file ? label : p.file })).join("\n"),
      );
    }
    throw error;
  }
}
