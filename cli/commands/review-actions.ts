import { formatProblem, SpecError } from "../../statemachine/index.ts";
import {
  type Finding,
  loadReview,
  type ReviewSubject,
  review,
  SEVERITIES,
  type Severity,
  severityRank,
  sortFindings,
} from "../../statemachine/review/index.ts";
import { Exit, type Io, UsageError } from "../io.ts";
import { printProblems } from "../problem-lines.ts";
import { printable, printableJson } from "../terminal.ts";

export interface ReviewOptions {
  failOn: Severity;
  json?: boolean;
  rps?: number;
  errorRate?: number;
  exposureBudget?: number;
  scrapeInterval?: number;
  prometheus?: string;
  arg: Record<string, string>;
  latest?: string;
  stable?: string;
  digest?: string;
}

/** `file:2 AnalysisTemplate success-rate spec.metrics[0]... (step 1)`: where a finding is, in one line. */
function location(f: Finding): string {
  const doc = f.document !== undefined ? `:${f.document}` : "";
  const parts = [`${f.file}${doc}`, f.object, f.path, f.step !== undefined ? `(step ${f.step})` : undefined];
  return parts.filter(Boolean).join(" ");
}

/** Continuation lines indented under their first. */
const indented = (label: string, text: string) => `    ${label}: ${text.split("\n").join("\n      ")}`;

/** The findings as a linter prints them, grouped by file, with a summary line. */
function text(findings: readonly Finding[], failOn: Severity, code: number): string {
  const lines: string[] = [];
  let file: string | undefined;
  for (const f of findings) {
    if (file !== undefined && f.file !== file) lines.push("");
    file = f.file;
    lines.push(`${location(f)}  ${f.severity}  ${f.id}  ${f.message}`);
    lines.push(indented("why", f.why));
    lines.push(indented("fix", f.fix));
  }
  const counts = SEVERITIES.slice()
    .reverse()
    .map((s) => [s, findings.filter((f) => f.severity === s).length] as const)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${n} ${s}${n > 1 ? "s" : ""}`);
  if (lines.length > 0) lines.push("");
  lines.push(`${counts.length > 0 ? counts.join(", ") : "no findings"} (exit ${code}: --fail-on ${failOn})`);
  // Messages and fixes quote the files (queries, names): printed without their control characters.
  return printable(lines.join("\n"), { multiline: true });
}

async function live(
  subject: ReviewSubject,
  opts: ReviewOptions,
): Promise<Finding[] | { unavailable: string }> {
  if (!opts.prometheus) return [];
  const { liveReview, PrometheusUnavailableError } = await import("./review-live.ts");
  try {
    return await liveReview(opts.prometheus, subject, {
      args: opts.arg,
      ...(opts.latest !== undefined ? { latest: opts.latest } : {}),
      ...(opts.stable !== undefined ? { stable: opts.stable } : {}),
      ...(opts.digest !== undefined ? { digest: opts.digest } : {}),
    });
  } catch (error) {
    if (error instanceof PrometheusUnavailableError) return { unavailable: error.message };
    throw error;
  }
}

/**
 * The action of `rollouts review`: load as `plan` loads (its problems, exit 2), run every check (and
 * the live ones with `--prometheus`), print, and exit 1 when a finding is at `--fail-on` or above.
 */
export async function reviewAction(io: Io, files: string[], opts: ReviewOptions): Promise<number> {
  if (opts.errorRate !== undefined && opts.rps === undefined) {
    throw new UsageError("--error-rate needs --rps (the exposure is requests)");
  }
  let loaded: Awaited<ReturnType<typeof loadReview>>;
  try {
    loaded = await loadReview(files);
  } catch (error) {
    if (!(error instanceof SpecError)) throw error;
    printProblems(io, error.problems.map(formatProblem));
    return Exit.badInput;
  }
  for (const note of loaded.notes) io.err(printable(`note: ${note}`));
  const { subject } = loaded;
  const found = review(subject, {
    ...(opts.rps !== undefined ? { rps: opts.rps } : {}),
    ...(opts.errorRate !== undefined ? { errorRate: opts.errorRate } : {}),
    ...(opts.exposureBudget !== undefined ? { exposureBudget: opts.exposureBudget } : {}),
    ...(opts.scrapeInterval !== undefined ? { scrapeIntervalSeconds: opts.scrapeInterval } : {}),
  });
  const liveFound = await live(subject, opts);
  if ("unavailable" in liveFound) {
    io.err(printable(`rollouts: ${liveFound.unavailable}`));
    return Exit.unavailable;
  }
  const findings = sortFindings([...found, ...liveFound], subject.files);
  const code = findings.some((f) => severityRank(f.severity) >= severityRank(opts.failOn))
    ? Exit.negative
    : Exit.ok;
  if (opts.json) {
    const summary = Object.fromEntries(
      SEVERITIES.map((s) => [s, findings.filter((f) => f.severity === s).length]),
    );
    io.out(
      printableJson(
        { rollout: subject.spec.name, failOn: opts.failOn, exitCode: code, summary, findings },
        2,
      ),
    );
  } else io.out(text(findings, opts.failOn, code));
  return code;
}
