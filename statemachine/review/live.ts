import { RUNTIME_PLACEHOLDERS } from "../analysis-resolve.ts";
import { formatDuration } from "../duration.ts";
import { countsReading, readsFirst } from "./empty-numerator.ts";
import { type Finding, finding, unique } from "./finding.ts";
import { fill, type Placeholder, selectors, textOf } from "./promql.ts";
import { type QueryAt, queryName } from "./queries.ts";
import type { ReviewSubject } from "./subject.ts";
import { classify, VERSION_LABELS } from "./versions.ts";

/**
 * Check 7, against a live Prometheus (`--prometheus URL`): the pure half. It says which queries to
 * run, with which values for their placeholders, and what the answers mean; the command runs them
 * (`cli/commands/review-live.ts`). Each query is run once as the analysis would run it, and each of
 * its selectors again, counted by the labels that name a version, to see how many versions it
 * matches now.
 */

/** Values for the placeholders: `--arg`, `--latest`, `--stable`, `--digest`. */
export interface LiveValues {
  args: Readonly<Record<string, string>>;
  latest?: string;
  stable?: string;
  digest?: string;
}

/** One query to run, and its selectors counted by version. */
export interface LiveProbe {
  at: QueryAt;
  query: string;
  groups: Array<{ selector: string; labels: string[]; query: string }>;
}

/** What Prometheus answered: the vector's values and label sets, or why it did not. */
export type LiveAnswer =
  | { ok: true; values: number[]; series: Array<Record<string, string>> }
  | { ok: false; message: string };

const RUNTIME: Record<string, keyof Omit<LiveValues, "args">> = {
  [RUNTIME_PLACEHOLDERS.latest]: "latest",
  [RUNTIME_PLACEHOLDERS.stable]: "stable",
  [RUNTIME_PLACEHOLDERS.digest]: "digest",
};

/** A resolved value with the run-time values filled in, or undefined when one is not given. */
function runtimeFilled(value: string, values: LiveValues): string | undefined {
  let missing = false;
  const out = value.replace(/\{\{\s*[A-Za-z][A-Za-z0-9_.-]*\s*\}\}/g, (whole) => {
    const name = whole.replace(/\s+/g, "");
    const key = Object.hasOwn(RUNTIME, name) ? RUNTIME[name] : undefined;
    const v = key ? values[key] : undefined;
    if (v === undefined) missing = true;
    return v ?? whole;
  });
  return missing ? undefined : out;
}

function placeholderValue(at: QueryAt, values: LiveValues, p: Placeholder): string | undefined {
  const window = Math.max(60, Math.ceil(at.metric.metric.initialDelay));
  if (p.name === "judge.elapsed") return formatDuration(window);
  if (p.name === "judge.elapsedSeconds") return String(window);
  if (p.name.startsWith("args.")) {
    const name = p.name.slice("args.".length);
    const given = values.args[name] ?? at.use.args[name];
    return given === undefined ? undefined : runtimeFilled(given, values);
  }
  return runtimeFilled(`{{${p.name}}}`, values);
}

function flagFor(p: Placeholder, at: QueryAt): string {
  if (p.name.startsWith("args.")) {
    const name = p.name.slice("args.".length);
    const value = at.use.args[name];
    const inner = value ? /\{\{\s*rollout\.(\w+)/.exec(value)?.[1] : undefined;
    return inner ? `--${inner} VALUE` : `--arg ${name}=VALUE`;
  }
  const m = /^rollout\.(latest|stable|digest)$/.exec(p.name);
  return m ? `--${m[1]} VALUE` : "a value the review cannot give";
}

/** The queries to run against Prometheus, and an info for each that cannot be filled in. */
export function liveProbes(
  subject: ReviewSubject,
  queries: readonly QueryAt[],
  values: LiveValues,
): { probes: LiveProbe[]; skipped: Finding[] } {
  const probes: LiveProbe[] = [];
  const skipped: Finding[] = [];
  const seen = new Set<string>();
  for (const at of queries) {
    if (at.parsed.syntaxError) continue;
    const value = (p: Placeholder) => placeholderValue(at, values, p);
    const filled = fill(at.parsed, at.parsed.text, value);
    if (filled.missing.length > 0) {
      skipped.push(
        finding("check-skipped", "info", at.where, {
          message: `${queryName(at)}: not run against Prometheus: ${filled.missing.map((p) => `${p.original} has no value here`).join(", ")}`,
          fix: `give ${[...new Set(filled.missing.map((p) => flagFor(p, at)))].join(" and ")}`,
        }),
      );
      continue;
    }
    const key = JSON.stringify([at.where.file, at.where.path, filled.text]);
    if (seen.has(key)) continue;
    seen.add(key);
    const groups = selectors(at.parsed).map((s) => {
      const selector = fill(at.parsed, textOf(at.parsed, s.node), value).text;
      const decided = s.matchers
        .filter((m) => classify(at.parsed, m, at.use.args, subject.evidence).kind !== "shared")
        .map((m) => m.label);
      const labels = [...new Set([...decided, ...VERSION_LABELS])];
      return { selector, labels, query: `count by (${labels.join(", ")}) (${selector})` };
    });
    probes.push({ at, query: filled.text.trim(), groups });
  }
  return { probes, skipped: unique(skipped) };
}

/** What the answers of one probe mean: an error, an empty vector, NaN, a selector matching two versions. */
export function liveFindings(
  probe: LiveProbe,
  answer: LiveAnswer,
  grouped: ReadonlyArray<LiveAnswer | undefined>,
): Finding[] {
  const { at } = probe;
  const name = queryName(at);
  if (!answer.ok) {
    return [
      finding("live-error", "error", at.where, {
        message: `${name}: Prometheus answered ${answer.message}`,
        fix: `correct the query; it ran as: ${probe.query}`,
      }),
    ];
  }
  const out: Finding[] = [];
  if (answer.values.length === 0 && !(at.query.side && countsReading(at))) {
    const error = !at.query.side && readsFirst(at.metric.metric);
    out.push(
      finding("live-empty", error ? "error" : "warning", at.where, {
        message: `${name}: the query answers an empty vector now (it ran as: ${probe.query})`,
        fix: "check the metric's name and the matchers' values against the series Prometheus has (a selector's grouped count below shows them); for an error ratio, wrap the numerator in (… or vector(0))",
      }),
    );
  }
  const odd = answer.values.filter((v) => !Number.isFinite(v));
  if (odd.length > 0) {
    out.push(
      finding("live-nan", "warning", at.where, {
        message: `${name}: the query answers ${odd.map((v) => (Number.isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf")).join(", ")} now (it ran as: ${probe.query})`,
        fix: "decide what a ratio over no requests means: test isNaN(result[0]) in the condition, or measure once traffic flows (initialDelay)",
      }),
    );
  }
  probe.groups.forEach((g, i) => {
    const a = grouped[i];
    if (!a?.ok) return;
    for (const label of g.labels) {
      const versions = [...new Set(a.series.map((s) => s[label]).filter((v): v is string => !!v))].sort();
      if (versions.length < 2) continue;
      out.push(
        finding("live-both-versions", "warning", at.where, {
          message: `${name}: ${g.selector} matches the series of ${versions.length} versions now (${versions.map((v) => `${label}="${v}"`).join(", ")})`,
          fix: `add a matcher naming the ${at.query.side === "stable" ? "stable version" : "candidate"} alone: ${label}="${at.query.side === "stable" ? RUNTIME_PLACEHOLDERS.stable : RUNTIME_PLACEHOLDERS.latest}"`,
        }),
      );
      break;
    }
  });
  return out;
}
