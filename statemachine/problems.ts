import { RolloutsError } from "./errors.ts";
/**
 * Problems found in a user's input. Every problem names where it is (file, document, field path
 * and, for steps, the step number) so a user can fix all of them in one pass: parsers collect
 * problems instead of stopping at the first one.
 */
export interface Problem {
  file: string;
  /** 1-based document number in a multi-document YAML file. */
  document?: number;
  /** `Rollout demo`, `AnalysisTemplate success-rate`. */
  object?: string;
  /** Field path in the document, `spec.strategy.canary.steps[2].pause.duration`. */
  path?: string;
  /** 1-based step number, when the problem is inside a step. */
  step?: number;
  message: string;
}

/** A zod issue in a user's words: unknown fields are named, the rest is zod's message. */
export function issueMessage(issue: {
  code: string;
  message: string;
  keys?: readonly PropertyKey[];
}): string {
  if (issue.code === "unrecognized_keys" && issue.keys) {
    return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${String(k)}"`).join(", ")}`;
  }
  return issue.message;
}

/**
 * A zod error as one `field.path: message` line per issue (`steps[2].pause`, unknown fields
 * named): the one way every layer says which field of an input is wrong. `prefix` is the path of
 * the parsed value inside its document; `root` names a problem with the value itself.
 */
export function issueLines(
  error: { readonly issues: readonly ZodIssueLike[] },
  root = "(root)",
  prefix: readonly PropertyKey[] = [],
): string[] {
  return error.issues.map(
    (issue) => `${joinPath([...prefix, ...issue.path]) || root}: ${issueMessage(issue)}`,
  );
}

/** {@link issueLines} joined with `; `, for one-line error messages. */
export function formatIssues(
  error: { readonly issues: readonly ZodIssueLike[] },
  root = "(root)",
  prefix: readonly PropertyKey[] = [],
): string {
  return issueLines(error, root, prefix).join("; ");
}

interface ZodIssueLike {
  readonly code: string;
  readonly message: string;
  readonly path: readonly PropertyKey[];
  readonly keys?: readonly PropertyKey[];
}

/** Renders a problem as one line: `file: document 2 (Rollout demo): spec.x (step 3): message`. */
export function formatProblem(p: Problem): string {
  const where: string[] = [p.file];
  if (p.document !== undefined) where.push(`document ${p.document}${p.object ? ` (${p.object})` : ""}`);
  else if (p.object) where.push(p.object);
  if (p.path) where.push(p.step !== undefined ? `${p.path} (step ${p.step})` : p.path);
  else if (p.step !== undefined) where.push(`step ${p.step}`);
  return `${where.join(": ")}: ${p.message}`;
}

/** Thrown when input cannot be used; carries every problem found, not only the first. */
export class SpecError extends RolloutsError {
  override readonly name = "SpecError";
  readonly problems: readonly Problem[];

  constructor(problems: readonly Problem[]) {
    super(problems.map(formatProblem).join("\n"));
    this.problems = problems;
  }
}

/** Joins a field path from segments: `["spec", "steps", 2, "pause"]` → `spec.steps[2].pause`. */
export function joinPath(segments: readonly PropertyKey[]): string {
  let out = "";
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else out += out === "" ? String(s) : `.${String(s)}`;
  }
  return out;
}
