import { RUNTIME_PLACEHOLDERS } from "../analysis-resolve.ts";
import { type Matcher, type ParsedQuery, placeholdersIn } from "./promql.ts";
import type { VersionEvidence } from "./subject.ts";

/**
 * Which version a matcher's value names. Values known only when an analysis starts are the surest:
 * `{{rollout.latest}}` (what `valueFrom.podTemplateHashValue: Latest` becomes) names the candidate,
 * `{{rollout.stable}}` the stable version. A literal (in the template, or an argument the rollout
 * passes) is tied to the candidate when the rollout's pod template carries it (the image tag, an
 * env value, a label outside the selector: what changes with the version), when it is the canary
 * or preview service, or by convention (`canary`, `candidate`); to every version when the selector
 * carries it; otherwise the review cannot tell.
 */

export type VersionKind = "candidate" | "stable" | "shared" | "unknown";

export interface Classified {
  kind: VersionKind;
  /** Why, in words: `args.version is "v2", the pod template's env APP_VERSION`. */
  because: string;
}

const CANDIDATE_WORDS = /^(canary|candidate|preview|new|next|latest)$/i;
const STABLE_WORDS = /^(stable|primary|baseline|active|current|old)$/i;

function runtime(value: string): Classified | undefined {
  if (value.includes(RUNTIME_PLACEHOLDERS.latest) || value.includes(RUNTIME_PLACEHOLDERS.digest)) {
    return { kind: "candidate", because: "the candidate's version" };
  }
  if (value.includes(RUNTIME_PLACEHOLDERS.stable)) {
    return { kind: "stable", because: "the stable version's" };
  }
  return undefined;
}

function literal(value: string, evidence: VersionEvidence, fromArg: boolean): Classified {
  const service = (names: string[]) => names.find((s) => value === s || value.startsWith(`${s}.`));
  const canary = service(evidence.candidateServices);
  if (canary)
    return { kind: "candidate", because: `the service ${canary}, which selects the candidate alone` };
  const stable = service(evidence.stableServices);
  if (stable) return { kind: "stable", because: `the service ${stable}, which selects the stable version` };
  if (CANDIDATE_WORDS.test(value)) return { kind: "candidate", because: "by convention the candidate's" };
  if (STABLE_WORDS.test(value))
    return { kind: "stable", because: "by convention the stable version's label" };
  const inTemplate = evidence.candidate.get(value);
  if (fromArg && inTemplate)
    return { kind: "candidate", because: `the new version's, as ${inTemplate} has it` };
  const shared = evidence.shared.get(value);
  if (shared) return { kind: "shared", because: `${shared}, which every version carries` };
  if (fromArg) return { kind: "unknown", because: "a literal the review cannot tie to the new version" };
  return { kind: "shared", because: "a literal in the template, the same for every release" };
}

/** Which version a matcher's value names (see the module's comment). */
export function classify(
  q: ParsedQuery,
  m: Matcher,
  args: Readonly<Record<string, string>>,
  evidence: VersionEvidence,
): Classified {
  const placeholders = placeholdersIn(q, m.value);
  if (placeholders.length === 0) {
    const known = runtime(m.value);
    if (known) return known;
    const c = literal(m.value, evidence, false);
    return { ...c, because: `"${m.value}", ${c.because}` };
  }
  for (const p of placeholders) {
    const known = runtime(p.original.replace(/\s+/g, ""));
    if (known) return { ...known, because: `${p.original}, ${known.because}` };
    if (!p.name.startsWith("args.")) continue;
    const name = p.name.slice("args.".length);
    const value = args[name];
    if (value === undefined || value === `{{args.${name}}}`) {
      return { kind: "unknown", because: `args.${name} is given no value here` };
    }
    const fromRuntime = runtime(value);
    if (fromRuntime) return { ...fromRuntime, because: `args.${name} = "${value}", ${fromRuntime.because}` };
    const c = literal(value, evidence, true);
    return { ...c, because: `args.${name} = "${value}", ${c.because}` };
  }
  return { kind: "unknown", because: `${placeholders[0]?.original} is only known at run time` };
}

/** Labels that name a version in the usual instrumentation. */
export const VERSION_LABELS = new Set([
  "version",
  "track",
  "revision",
  "release",
  "rollouts_pod_template_hash",
  "pod_template_hash",
  "image_tag",
  "tag",
  "variant",
  "slot",
]);
