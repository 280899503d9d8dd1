import { closeSync, openSync, readSync } from "node:fs";
import { open } from "node:fs/promises";
import {
  Composer,
  isAlias,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  visit,
  type Document as YamlDocument,
} from "yaml";
import { type LoadedTemplate, loadTemplate, type Origin, resolveAnalysis } from "./analysis-resolve.ts";
import { normalizeArgoRollout } from "./argo.ts";
import { KubeObjectSchema } from "./argo-schema.ts";
import { finishJudges } from "./gates.ts";
import {
  MAX_ALIAS_COUNT,
  MAX_DEPTH,
  MAX_DOCUMENTS,
  MAX_FILE_BYTES,
  MAX_TOKENS,
  MAX_VALUES,
} from "./limits.ts";
import { isNativeDocument, normalizeNative } from "./native.ts";
import { isDescriptor, normalizeDescriptor } from "./native-descriptor.ts";
import {
  isNotificationConfigMap,
  mergeCatalogs,
  type NotificationCatalog,
  readNotificationCatalog,
  resolveTrigger,
} from "./notification-catalog.ts";
import { type Problem, SpecError } from "./problems.ts";
import type { AnalysisSpec, RolloutSpec } from "./spec.ts";
import { stepsProblem, writtenStepsProblem } from "./steps-limit.ts";
import { parseBounded, type ReadStop, type TokenBudget } from "./yaml-read.ts";

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
  /** The argo-rollouts-notification-configmap(s) among the files, merged. */
  catalog?: NotificationCatalog;
}

const ARGO_API = "argoproj.io/v1alpha1";

/** Reads files; an unreadable file is a problem like any other, reported with the rest. */
export async function readSources(paths: readonly string[], problems: Problem[]): Promise<Source[]> {
  const sources: Source[] = [];
  for (const file of paths) {
    try {
      const text = await readBounded(file);
      if (text === undefined) problems.push({ file, message: tooLarge() });
      else sources.push({ file, text });
    } catch (error) {
      problems.push({ file, message: `cannot read the file: ${whyUnreadable(error)}` });
    }
  }
  return sources;
}

/** The same as readSources, synchronously: what the CDK construct reads its files with. */
export function readSourcesSync(paths: readonly string[], problems: Problem[]): Source[] {
  const sources: Source[] = [];
  for (const file of paths) {
    try {
      const text = readBoundedSync(file);
      if (text === undefined) problems.push({ file, message: tooLarge() });
      else sources.push({ file, text });
    } catch (error) {
      problems.push({ file, message: `cannot read the file: ${whyUnreadable(error)}` });
    }
  }
  return sources;
}

function whyUnreadable(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : (error as Error).message;
}

function readBoundedSync(file: string): string | undefined {
  const fd = openSync(file, "r");
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > MAX_FILE_BYTES) return undefined;
      chunks.push(chunk.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** How many of a document's YAML syntax errors are reported; the rest are counted. */
const SYNTAX_ERRORS_SHOWN = 5;

/** What one load may still read: documents and List items share {@link MAX_DOCUMENTS}. */
interface Budget extends TokenBudget {
  documents: number;
  exhausted: boolean;
}

/**
 * A file's text, or undefined past {@link MAX_FILE_BYTES}: read in chunks and abandoned at the
 * limit, so a huge file, a pipe or a device that never ends costs no more than the limit.
 */
async function readBounded(file: string): Promise<string | undefined> {
  const handle = await open(file, "r");
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > MAX_FILE_BYTES) return undefined;
      chunks.push(chunk.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks).toString("utf8");
  } finally {
    await handle.close();
  }
}

/** A document nested past {@link MAX_DEPTH}, found by the parser or by the measure of its values. */
const TOO_DEEP = `nested more than ${MAX_DEPTH} levels deep (maps and lists inside each other, aliases expanded): a rollout object needs far fewer; flatten the document`;

function documentsOf(source: Source, problems: Problem[], budget: Budget): Document[] {
  const out: Document[] = [];
  const bytes = Buffer.byteLength(source.text, "utf8");
  if (bytes > MAX_FILE_BYTES) {
    problems.push({ file: source.file, message: tooLarge(bytes) });
    return out;
  }
  const lineCounter = new LineCounter();
  const at = (offset: number) => {
    const pos = lineCounter.linePos(offset);
    return `line ${pos.line}, column ${pos.col}`;
  };
  // The composer's own check of unique keys compares each key with every key before it (quadratic:
  // seconds for a map of 30,000 keys); `duplicateKey` makes it once, with a set, after the shape.
  // Warnings (a map key that is a list) are not printed: such a key is an unknown field.
  const composer = new Composer({ prettyErrors: false, uniqueKeys: false, logLevel: "error" });
  const stop: { at?: ReadStop } = {};
  let index = 0;
  try {
    // Documents are composed one at a time, so a file of a million documents stops at the budget.
    for (const doc of composer.compose(parseBounded(source.text, lineCounter.addNewLine, budget, stop))) {
      index++;
      if (budget.exhausted) break;
      const origin: Origin = { file: source.file, document: index };
      const value = documentValue(doc, origin, at, problems);
      if (value === undefined) continue;
      const kubeList = value as { kind?: unknown; items?: unknown };
      const items = kubeList.kind === "List" && Array.isArray(kubeList.items) ? kubeList.items : undefined;
      const objects = items ?? [value];
      if (budget.documents + objects.length > MAX_DOCUMENTS) {
        problems.push({
          ...origin,
          message: `${items ? `a List of ${items.length} items` : "this document"} is past the ${MAX_DOCUMENTS} documents and List items one load reads: give only the rollout and its templates`,
        });
        budget.exhausted = true;
        break;
      }
      budget.documents += objects.length;
      if (items) {
        items.forEach((item, j) => {
          out.push({ origin: { ...origin, object: `List item ${j}` }, value: item });
        });
      } else {
        out.push({ origin, value });
      }
    }
  } catch (error) {
    // What the parser's own bound did not foresee: any RangeError of the YAML reader (its stack,
    // a string too long) is a problem with the file, not a crash.
    if (!(error instanceof RangeError)) throw error;
    stop.at = { reason: "range", offset: 0, message: error.message };
  }
  if (stop.at) {
    problems.push(stopProblem(stop.at, { file: source.file, document: index + 1 }, at));
    if (stop.at.reason === "tokens") budget.exhausted = true;
  }
  return out;
}

/** The problem of a reading stopped before the end of its file. */
function stopProblem(stop: ReadStop, origin: Origin, at: (offset: number) => string): Problem {
  if (stop.reason === "depth") return { ...origin, message: TOO_DEEP };
  if (stop.reason === "range") {
    return {
      ...origin,
      message: `cannot be read: the YAML parser gave up near ${at(stop.offset)} (${stop.message}): nest maps and lists less deeply, or give only the rollout and its templates`,
    };
  }
  return {
    file: origin.file,
    message: `${at(stop.offset).replace(/, column \d+$/, "")}: the files hold more than ${MAX_TOKENS.toLocaleString("en-US")} YAML tokens (values, keys and punctuation) in one load, where a rollout with its templates needs a few hundred: give only the rollout and its templates`,
  };
}

/**
 * One composed document as a JavaScript value, or undefined when it has none (an empty document)
 * or cannot be read (its problems are added): syntax errors, a shape past the limits, aliases.
 */
function documentValue(
  doc: YamlDocument.Parsed,
  origin: Origin,
  at: (offset: number) => string,
  problems: Problem[],
): unknown {
  // The parser's own stack ran out: one problem says so (how many errors it leaves behind
  // depends on how much stack there was), the syntax errors after it are its echoes. Whether
  // the parser runs out first or the measure below finds the depth depends on the stack left
  // (a warm process reads deeper), so both say the same words.
  if (doc.errors.some((e) => e.code === "RESOURCE_EXHAUSTION")) {
    problems.push({ ...origin, message: TOO_DEEP });
    return undefined;
  }
  if (doc.errors.length > 0) {
    for (const e of doc.errors.slice(0, SYNTAX_ERRORS_SHOWN)) {
      problems.push({
        ...origin,
        message: `not valid YAML or JSON at ${at(e.pos[0])}: ${e.message.split("\n")[0]}`,
      });
    }
    const more = doc.errors.length - SYNTAX_ERRORS_SHOWN;
    if (more > 0)
      problems.push({ ...origin, message: `and ${more} more YAML syntax error${more > 1 ? "s" : ""}` });
    return undefined;
  }
  const shape = shapeProblem(doc);
  if (shape) {
    problems.push({ ...origin, message: shape });
    return undefined;
  }
  const duplicate = duplicateKey(doc);
  if (duplicate !== undefined) {
    problems.push({
      ...origin,
      message: `not valid YAML or JSON at ${at(duplicate)}: Map keys must be unique`,
    });
    return undefined;
  }
  try {
    const value: unknown = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    return value ?? undefined; // null: an empty document between separators
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    problems.push({
      ...origin,
      message: /excessive alias count/i.test(message)
        ? `aliases expand too much (more than ${MAX_ALIAS_COUNT} expansions of one anchor, the YAML reader's maxAliasCount): write the values out instead of repeating them through aliases`
        : `cannot be read: ${message}`,
    });
    return undefined;
  }
}

/**
 * The documents of `sources` as JavaScript values, each with where it came from, read with the
 * loader's limits (size, documents, nesting, aliases); what cannot be read is added to `problems`.
 * What a tool that rewrites the user's documents (`rollouts simulate`) reads them with.
 */
export function readDocuments(
  sources: readonly Source[],
  problems: Problem[],
): Array<{ origin: Origin; value: unknown }> {
  const budget: Budget = { documents: 0, tokens: 0, exhausted: false };
  const out: Document[] = [];
  for (const source of sources) {
    if (budget.exhausted) break;
    out.push(...documentsOf(source, problems, budget));
  }
  return out;
}

const tooLarge = (bytes?: number) =>
  `the file is ${bytes === undefined ? "more than" : `${bytes.toLocaleString("en-US")} bytes, more than`} the ${MAX_FILE_BYTES.toLocaleString("en-US")} bytes a rollout spec may have: give only the rollout and its templates`;

/**
 * Where the first key equal to an earlier key of its map is (the `yaml` package's rule: the same
 * node, or scalars of the same value), or undefined. Runs after {@link shapeProblem}, so the
 * document is known to be shallow and the visit's recursion stays short.
 */
function duplicateKey(doc: YamlDocument.Parsed): number | undefined {
  let found: number | undefined;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        const id = isScalar(key) ? key.value : key;
        if (seen.has(id)) {
          found = (key as { range?: [number] } | null)?.range?.[0] ?? map.range?.[0] ?? 0;
          return visit.BREAK;
        }
        seen.add(id);
      }
      return undefined;
    },
  });
  return found;
}

/** What the walk knows of a node once all of it has been seen. */
interface Measured {
  /** Levels of maps and lists, the node's own included. */
  depth: number;
  /** Values, aliases expanded. */
  values: number;
}

/**
 * Why a document must not be converted to JavaScript, or undefined: nesting deeper than
 * {@link MAX_DEPTH}, more than {@link MAX_VALUES} values once aliases are expanded, or an alias
 * inside the node it names (a cycle that no JSON value can hold). The walk keeps its own stack,
 * so no input can overflow the real one, and measures each node once, so aliases cost nothing.
 */
function shapeProblem(doc: { contents: unknown }): string | undefined {
  const root = doc.contents;
  if (!isNode(root)) return undefined;
  const anchors = new Map<string, unknown>();
  const measured = new Map<unknown, Measured>();
  const open = new Set<unknown>();
  let values = 0;
  interface Frame {
    node: unknown;
    children: unknown[];
    next: number;
    depth: number;
    values: number;
    level: number;
  }
  const stack: Frame[] = [];
  // Worded only when needed: toLocaleString starts Node's locale support, which every `rollouts
  // plan` would otherwise pay for on every document.
  const tooMany = () =>
    `holds more than ${MAX_VALUES.toLocaleString("en-US")} values once its aliases are expanded: a rollout object needs far fewer; give only the rollout and its templates`;
  /** Enters a node; returns a problem, or undefined once it is measured or on the stack. */
  const enter = (node: unknown, level: number): string | undefined => {
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (target === undefined) {
        values++; // an alias to no anchor: the conversion reports it
        return values > MAX_VALUES ? tooMany() : undefined;
      }
      if (open.has(target)) {
        return `the alias *${node.source} is inside the node its anchor &${node.source} names: a document cannot contain itself`;
      }
      const m = measured.get(target) ?? { depth: 0, values: 1 };
      values += m.values;
      if (values > MAX_VALUES) return tooMany();
      if (level + m.depth > MAX_DEPTH) return TOO_DEEP;
      const parent = stack.at(-1);
      if (parent) {
        parent.depth = Math.max(parent.depth, m.depth);
        parent.values += m.values;
      }
      return undefined;
    }
    const anchor = (node as { anchor?: unknown }).anchor;
    if (typeof anchor === "string" && anchor !== "") anchors.set(anchor, node);
    if (isPair(node)) {
      open.add(node);
      stack.push({ node, children: [node.key, node.value], next: 0, depth: 0, values: 0, level });
      return undefined;
    }
    values++;
    if (values > MAX_VALUES) return tooMany();
    if (isMap(node) || isSeq(node)) {
      if (level + 1 > MAX_DEPTH) return TOO_DEEP;
      open.add(node);
      stack.push({ node, children: [...node.items], next: 0, depth: 0, values: 0, level: level + 1 });
      return undefined;
    }
    const m = { depth: 0, values: 1 };
    measured.set(node, m);
    const parent = stack.at(-1);
    if (parent) parent.values += 1;
    return undefined;
  };
  const first = enter(root, 0);
  if (first) return first;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.next < frame.children.length) {
      const child = frame.children[frame.next++];
      if (child === null || child === undefined) continue;
      const problem = enter(child, frame.level);
      if (problem) return problem;
      continue;
    }
    stack.pop();
    open.delete(frame.node);
    const own = isPair(frame.node) ? 0 : 1;
    const m = { depth: frame.depth + own, values: frame.values + own };
    measured.set(frame.node, m);
    const parent = stack.at(-1);
    if (parent) {
      parent.depth = Math.max(parent.depth, m.depth);
      parent.values += m.values;
    }
  }
  return undefined;
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
  let catalog: NotificationCatalog | undefined;
  const budget: Budget = { documents: 0, tokens: 0, exhausted: false };
  for (const source of sources) {
    if (budget.exhausted) break;
    for (const doc of documentsOf(source, problems, budget)) {
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
      } else if (isNotificationConfigMap(object)) {
        const read = readNotificationCatalog(
          (object as { data?: Record<string, unknown> }).data,
          origin,
          problems,
          notes,
        );
        catalog = mergeCatalogs(catalog, read);
      } else if (argo && ["Experiment", "AnalysisRun"].includes(object.kind as string)) {
        problems.push({
          ...origin,
          path: "kind",
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
  const finish = (spec: RolloutSpec | undefined, doc: Document) => {
    if (!spec) return;
    const tooMany = stepsProblem(spec.steps.length, doc.origin, "steps");
    if (tooMany) problems.push(tooMany);
    else rollouts.push(finishJudges(spec, doc.origin, problems));
  };
  const written = (doc: Document) => {
    const tooMany = writtenStepsProblem(doc.value, doc.origin);
    if (tooMany) problems.push(tooMany);
    return tooMany === undefined;
  };
  for (const doc of rolloutDocs.filter(written)) {
    finish(normalizeArgoRollout(KubeObjectSchema.parse(doc.value), doc.origin, templates, problems), doc);
  }
  for (const doc of nativeDocs.filter(written)) finish(normalizeNative(doc.value, doc.origin, problems), doc);
  for (const doc of descriptorDocs) {
    finish(normalizeDescriptor(doc.value as Record<string, unknown>, doc.origin, problems, notes), doc);
  }
  if (problems.length > 0) throw new SpecError(problems);
  const withCatalog = catalog ? rollouts.map((r) => ({ ...r, notificationCatalog: catalog })) : rollouts;
  for (const r of withCatalog) notes.push(...subscriptionNotes(r));
  rollouts.splice(0, rollouts.length, ...withCatalog);
  if (documents === 0 && sources.length > 0) {
    throw new SpecError(sources.map((s) => ({ file: s.file, message: "the file holds no document" })));
  }
  return { rollouts, templates, notes, ...(catalog ? { catalog } : {}) };
}

/**
 * Warnings about a rollout's subscriptions (notes that begin with `warning: `): a trigger neither built in nor in the notification
 * ConfigMap is ignored (as Argo's controller ignores it), and a built-in trigger's `when` is not
 * evaluated (it fires on its lifecycle event).
 */
export function subscriptionNotes(spec: RolloutSpec): string[] {
  const out: string[] = [];
  for (const s of spec.notifications ?? []) {
    const resolved = resolveTrigger(s.trigger, spec.notificationCatalog);
    if (resolved.kind === "unknown") {
      out.push(
        `warning: rollout ${spec.name}: subscription ${s.trigger}.${s.service} is ignored: trigger "${s.trigger}" is neither built in nor defined in the argo-rollouts-notification-configmap`,
      );
    } else if (resolved.kind === "built-in" && resolved.unevaluated) {
      out.push(
        `warning: rollout ${spec.name}: trigger ${s.trigger}: its when (${resolved.unevaluated.join("; ")}) is not evaluated: a built-in trigger fires on each of its lifecycle events`,
      );
    }
  }
  return out;
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
