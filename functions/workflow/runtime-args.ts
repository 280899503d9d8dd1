import { RUNTIME_PLACEHOLDERS } from "../../statemachine/analysis-resolve.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import { type AnalysisSpec, AnalysisSpecSchema } from "../../statemachine/spec.ts";
import type { Revision } from "../store/schema.ts";
import { isImageDigest, isImageTag } from "../trigger/event.ts";

/** The label a metric selects a version by: the pushed image tag, or the digest of an untagged push. */
export function versionLabel(revision: Pick<Revision, "tag" | "digest"> | null | undefined): string {
  return revision ? (revision.tag ?? revision.digest) : "";
}

/** A version label or digest that is not the shape ECR gives it: never put into a query. */
export class InvalidVersionValueError extends RolloutsError {
  override readonly name = "InvalidVersionValueError";
}

/**
 * Why a value cannot fill its placeholder, or undefined: `latest` and `stable` are an image tag
 * or a digest (or empty: no stable version yet), `digest` a digest (or empty).
 */
export function runtimeValueProblem(key: "latest" | "stable" | "digest", value: string): string | undefined {
  if (value === "" || isImageDigest(value) || (key !== "digest" && isImageTag(value))) return undefined;
  const shown =
    value.length > 80 ? `${JSON.stringify(value.slice(0, 80)).slice(0, -1)}…"` : JSON.stringify(value);
  return `${RUNTIME_PLACEHOLDERS[key]} would be ${shown}, which is not ${key === "digest" ? "an image digest (sha256: and 64 lower-case hex digits)" : 'an image tag (letters, digits, "_", "." and "-") or digest'}: it is not put into a query`;
}

/**
 * Fills the values only known when the analysis starts (`{{rollout.latest}}`, `{{rollout.stable}}`,
 * where Argo's `podTemplateHashValue` args point, and `{{rollout.digest}}`, the candidate's image
 * digest) into the analysis, JSON-escaped like any arg. The values come from the ECR event, whose
 * trigger already ignored any other shape; they are checked again here, where they meet the
 * queries, and anything else throws `InvalidVersionValueError`.
 */
export function resolveRuntimeArgs(
  analysis: AnalysisSpec,
  values: { latest: string; stable: string; digest: string },
): AnalysisSpec {
  for (const key of ["latest", "stable", "digest"] as const) {
    const problem = runtimeValueProblem(key, values[key]);
    if (problem) throw new InvalidVersionValueError(problem);
  }
  const escaped = (v: string) => JSON.stringify(v).slice(1, -1);
  let text = JSON.stringify(analysis);
  for (const key of ["latest", "stable", "digest"] as const) {
    text = text.split(RUNTIME_PLACEHOLDERS[key]).join(escaped(values[key]));
  }
  return AnalysisSpecSchema.parse(JSON.parse(text));
}
