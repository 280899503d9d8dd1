import { readFile } from "node:fs/promises";
import { LineCounter, parseAllDocuments } from "yaml";
import { type LoadedTemplate, loadTemplate, type Origin, resolveAnalysis } from "./analysis-resolve.ts";
import { normalizeArgoRollout } from "./argo.ts";
import { KubeObjectSchema } from "./argo-schema.ts";
import { finishJudges } from "./gates.ts";
import { isNativeDocument, normalizeNative } from "./native.ts";
import { isDescriptor, normalizeDescriptor } from "./native-descriptor.ts";
import { type Problem, SpecError } from "./problems.ts";
import type { AnalysisSpec, RolloutSpec } from "./spec.ts";

/** A file's text, with the name problems should use for it. */
export interface Source {
  file: string;
  text: string;
}

interface Document {
  origin: Origin;
  value: unknown;
}

/** What loading found: the rollouts, every template, and notes about documents it skipped. */
export interface Loaded {
  rollouts: RolloutSpec[];
  templates: Map<string, LoadedTemplate>;
  notes: string[];
}

const ARGO_API = "argoproj.io/v1alpha1";

/** Reads files; an unreadable file is a problem like any other, reported with the rest. */
export async function readSources(paths: readonly string[], problems: Problem[]): Promise<Source[]> {
  const sources: Source[] = [];
  for (const file of paths) {
    try {
      sources.push({ file, text: await readFile(file, "utf8") });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why =
        code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : (error as Error).message;
      problems.push({ file, message: `cannot read the file: ${why}` });
    }
  }
  return sources;
}

function documentsOf(source: Source, problems: Problem[]): Document[] {
  const out: Document[] = [];
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(source.text, { prettyErrors: false, lineCounter });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    const origin: Origin = { file: source.file, document: i + 1 };
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const pos = lineCounter.linePos(e.pos[0]);
        problems.push({
          ...origin,
          message: `not valid YAML or JSON at line ${pos.line}, column ${pos.col}: ${e.message.split("\n")[0]}`,
        });
      }
      return;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return; // an empty document between separators
    const kubeList = value as { kind?: unknown; items?: unknown };
    if (kubeList.kind === "List" && Array.isArray(kubeList.items)) {
      kubeList.items.forEach((item, j) => {
        out.push({ origin: { ...origin, object: `List item ${j}` }, value: item });
      });
      return;
    }
    out.push({ origin, value });
  });
  return out;
}

/**
 * Parses rollout documents from several sources: Argo `Rollout`, `AnalysisTemplate`,
 * `ClusterAnalysisTemplate` objects and native specs, with templates found in any of the files.
 * Other Kubernetes kinds (Services, ConfigMaps) are skipped with a note. Every problem in every
 * file is collected and thrown together as a SpecError.
 */
export function parseSources(sources: readonly Source[], initialProblems: Problem[] = []): Loaded {
  const problems = [...initialProblems];
  const notes: string[] = [];
  const templates = new Map<string, LoadedTemplate>();
  const rolloutDocs: Document[] = [];
  const nativeDocs: Document[] = [];
  const descriptorDocs: Document[] = [];
  let documents = 0;
  for (const source of sources) {
    for (const doc of documentsOf(source, problems)) {
      documents++;
      if (isDescriptor(doc.value)) {
        descriptorDocs.push(doc);
        continue;
      }
      if (isNativeDocument(doc.value)) {
        nativeDocs.push(doc);
        continue;
      }
      const kube = KubeObjectSchema.safeParse(doc.value);
      if (!kube.success || typeof kube.data.kind !== "string") {
        problems.push({
          ...doc.origin,
          message: "not a Kubernetes object (no kind) nor a native rollout spec (no name)",
        });
        continue;
      }
      const object = kube.data;
      const name = object.metadata?.name ?? "";
      const origin = { ...doc.origin, object: `${object.kind} ${name}`.trim() };
      const argo = object.apiVersion === ARGO_API;
      if (argo && (object.kind === "AnalysisTemplate" || object.kind === "ClusterAnalysisTemplate")) {
        if (!name) {
          problems.push({ ...origin, path: "metadata.name", message: `an ${object.kind} needs a name` });
          continue;
        }
        const key = `${object.kind}/${name}`;
        if (templates.has(key)) {
          problems.push({
            ...origin,
            path: "metadata.name",
            message: `${object.kind} "${name}" is defined twice`,
          });
          continue;
        }
        const loaded = loadTemplate(name, object.kind, object.spec, origin, "spec", problems);
        if (loaded) templates.set(key, loaded);
      } else if (argo && object.kind === "Rollout") {
        rolloutDocs.push({ origin, value: object });
      } else if (argo && ["Experiment", "AnalysisRun"].includes(object.kind as string)) {
        problems.push({
          ...origin,
          message: `${object.kind} objects are not supported: give a Rollout and its templates`,
        });
      } else {
        notes.push(
          `${origin.file}: document ${origin.document}: skipped ${origin.object} (not a rollout object)`,
        );
      }
    }
  }
  const rollouts: RolloutSpec[] = [];
  for (const doc of rolloutDocs) {
    const spec = normalizeArgoRollout(KubeObjectSchema.parse(doc.value), doc.origin, templates, problems);
    if (spec) rollouts.push(finishJudges(spec, doc.origin, problems));
  }
  for (const doc of nativeDocs) {
    const spec = normalizeNative(doc.value, doc.origin, problems);
    if (spec) rollouts.push(finishJudges(spec, doc.origin, problems));
  }
  for (const doc of descriptorDocs) {
    const spec = normalizeDescriptor(doc.value as Record<string, unknown>, doc.origin, problems, notes);
    if (spec) rollouts.push(finishJudges(spec, doc.origin, problems));
  }
  if (problems.length > 0) throw new SpecError(problems);
  if (documents === 0 && sources.length > 0) {
    throw new SpecError(sources.map((s) => ({ file: s.file, message: "the file holds no document" })));
  }
  return { rollouts, templates, notes };
}

/** Loads exactly one rollout (with its templates) from files: what `plan`, `compile` and the construct take. */
export async function loadRollout(paths: readonly string[]): Promise<{ spec: RolloutSpec; notes: string[] }> {
  const problems: Problem[] = [];
  const sources = await readSources(paths, problems);
  return oneRollout(parseSources(sources, problems), paths);
}

/** The same as loadRollout for sources already in memory (tests, the CDK construct). */
export function parseRollout(sources: readonly Source[]): { spec: RolloutSpec; notes: string[] } {
  return oneRollout(
    parseSources(sources),
    sources.map((s) => s.file),
  );
}

function oneRollout(loaded: Loaded, paths: readonly string[]): { spec: RolloutSpec; notes: string[] } {
  const [first, ...rest] = loaded.rollouts;
  if (!first) {
    throw new SpecError([
      {
        file: paths.join(", "),
        message:
          "no rollout found: give an argoproj.io/v1alpha1 Rollout or a native spec (a document with a name and steps)",
      },
    ]);
  }
  if (rest.length > 0) {
    throw new SpecError([
      {
        file: paths.join(", "),
        message: `several rollouts found (${loaded.rollouts.map((r) => r.name).join(", ")}): give one per command`,
      },
    ]);
  }
  return { spec: first, notes: loaded.notes };
}

/**
 * Loads every AnalysisTemplate in the files and resolves them with the given arguments, as one
 * analysis: what `rollouts analyze` runs.
 */
export async function loadAnalysisTemplates(
  paths: readonly string[],
  args: Readonly<Record<string, string>>,
): Promise<AnalysisSpec> {
  const problems: Problem[] = [];
  const sources = await readSources(paths, problems);
  const loaded = parseSources(sources, problems);
  const templates = [...loaded.templates.values()];
  if (templates.length === 0) {
    throw new SpecError([
      { file: paths.join(", "), message: "no AnalysisTemplate or ClusterAnalysisTemplate found" },
    ]);
  }
  const resolved = resolveAnalysis(
    {
      templates: templates.map((t) => ({
        templateName: t.name,
        clusterScope: t.kind === "ClusterAnalysisTemplate",
      })),
      args: Object.entries(args).map(([name, value]) => ({ name, value })),
      dryRun: [],
      measurementRetention: [],
    },
    loaded.templates,
    { file: paths.join(", "), path: "--arg" },
    {},
    problems,
  );
  if (!resolved || problems.length > 0) throw new SpecError(problems);
  return resolved;
}
