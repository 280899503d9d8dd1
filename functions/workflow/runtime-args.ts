import { RUNTIME_PLACEHOLDERS } from "../../statemachine/analysis-resolve.ts";
import { type AnalysisSpec, AnalysisSpecSchema } from "../../statemachine/spec.ts";
import type { Revision } from "../store/schema.ts";

/** The label a metric selects a version by: the pushed image tag, or the digest of an untagged push. */
export function versionLabel(revision: Pick<Revision, "tag" | "digest"> | null | undefined): string {
  return revision ? (revision.tag ?? revision.digest) : "";
}

/**
 * Fills the values only known when the analysis starts (`{{rollout.latest}}`, `{{rollout.stable}}`,
 * where Argo's `podTemplateHashValue` args point, and `{{rollout.digest}}`, the candidate's image
 * digest) into the analysis, JSON-escaped like any arg.
 */
export function resolveRuntimeArgs(
  analysis: AnalysisSpec,
  values: { latest: string; stable: string; digest: string },
): AnalysisSpec {
  const escaped = (v: string) => JSON.stringify(v).slice(1, -1);
  let text = JSON.stringify(analysis);
  for (const key of ["latest", "stable", "digest"] as const) {
    text = text.split(RUNTIME_PLACEHOLDERS[key]).join(escaped(values[key]));
  }
  return AnalysisSpecSchema.parse(JSON.parse(text));
}
