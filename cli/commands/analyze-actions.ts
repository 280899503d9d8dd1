import {
  type AnalysisRun,
  createRun,
  isCompleted,
  measurementsTaken,
  nextTickAt,
  terminate,
  tick,
  toArgoJson,
} from "../../functions/analysis/index.ts";
import { ENV } from "../../functions/config.ts";
import {
  defaultProviders,
  type MetricProvider,
  maxBodyBytesFrom,
  metricSecretsFrom,
} from "../../functions/metrics/index.ts";
import { resolveRuntimeArgs, runtimeValueProblem } from "../../functions/workflow/runtime-args.ts";
import { RUNTIME_PLACEHOLDERS } from "../../statemachine/analysis-resolve.ts";
import { formatProblem, loadAnalysisTemplates, SpecError } from "../../statemachine/index.ts";
import { Exit, type Io, UsageError } from "../io.ts";
import { printProblems } from "../problem-lines.ts";
import { printable, printableJson } from "../terminal.ts";
import { type AnalyzeDeps, formatMeasurement } from "./analyze.ts";

export interface AnalyzeOptions {
  arg: Record<string, string>;
  duration?: number;
  json?: boolean;
  latest?: string;
  stable?: string;
  digest?: string;
}

/** The real clock, the real providers and Ctrl-C. */
export const realDeps: AnalyzeDeps = {
  now: () => new Date(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done);
    }),
  providers: () => {
    let maxBodyBytes: number;
    let metricSecrets: ReturnType<typeof metricSecretsFrom>;
    try {
      maxBodyBytes = maxBodyBytesFrom(process.env[ENV.metricMaxBodyBytes], ENV.metricMaxBodyBytes);
      metricSecrets = metricSecretsFrom(process.env);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    return defaultProviders({ maxBodyBytes, metricSecrets });
  },
  interrupt: (controller) => {
    const onSigint = () => controller.abort();
    process.once("SIGINT", onSigint);
    return () => process.off("SIGINT", onSigint);
  },
};

/** Exit code of a finished run: 0 Successful, 1 Failed or Error, 3 Inconclusive. */
export function exitCodeForPhase(phase: AnalysisRun["phase"]): number {
  if (phase === "Successful") return Exit.ok;
  if (phase === "Inconclusive") return Exit.hold;
  return Exit.negative;
}

/**
 * Runs an analysis in real time, the way an analysis step would, so a template can be tried
 * against the real providers before a rollout depends on it.
 */
export async function runAnalysis(
  run: AnalysisRun,
  deps: Pick<AnalyzeDeps, "now" | "sleep">,
  provider: MetricProvider,
  print: (line: string) => void,
  stop: AbortSignal,
  durationSeconds?: number,
): Promise<AnalysisRun> {
  let current = run;
  const endAt = durationSeconds !== undefined ? deps.now().getTime() + durationSeconds * 1000 : undefined;
  while (!isCompleted(current.phase)) {
    const due = nextTickAt(current);
    const now = deps.now().getTime();
    if (stop.aborted || (endAt !== undefined && now >= endAt) || !due) {
      current = terminate(current, deps.now());
      break;
    }
    const wakeAt = endAt !== undefined ? Math.min(due.getTime(), endAt) : due.getTime();
    if (wakeAt > now) {
      await deps.sleep(wakeAt - now, stop);
      continue;
    }
    const before = current;
    current = await tick(current, deps.now(), provider);
    for (const { metric, measurement } of measurementsTaken(before, current)) {
      print(formatMeasurement(metric, measurement));
    }
  }
  return current;
}

/**
 * The action of `rollouts analyze`, apart from its registration so that the analysis and the
 * providers (with the AWS SDK clients they hold) load only when it runs. Resolves to the exit code
 * of the finished run.
 */
export async function analyzeAction(
  io: Io,
  files: string[],
  opts: AnalyzeOptions,
  deps: AnalyzeDeps,
): Promise<number> {
  let spec: Awaited<ReturnType<typeof loadAnalysisTemplates>>;
  try {
    spec = await loadAnalysisTemplates(files, opts.arg);
  } catch (error) {
    if (error instanceof SpecError) {
      printProblems(io, error.problems.map(formatProblem));
      return Exit.badInput;
    }
    throw error;
  }
  // Values a rollout knows when its analysis starts: here the user gives them.
  const text = JSON.stringify(spec);
  const missing = (["latest", "stable", "digest"] as const).filter(
    (k) => text.includes(RUNTIME_PLACEHOLDERS[k]) && opts[k] === undefined,
  );
  if (missing.length > 0) {
    throw new UsageError(
      `the templates read ${missing.map((k) => RUNTIME_PLACEHOLDERS[k]).join(", ")}: give ${missing.map((k) => `--${k}`).join(", ")}`,
    );
  }
  // The same shapes a rollout's values have (an ECR tag or digest), so a query sees the same.
  for (const key of ["latest", "stable", "digest"] as const) {
    const problem = opts[key] === undefined ? undefined : runtimeValueProblem(key, opts[key]);
    if (problem) throw new UsageError(`--${key}: ${problem}`);
  }
  spec = resolveRuntimeArgs(spec, {
    latest: opts.latest ?? "",
    stable: opts.stable ?? "",
    digest: opts.digest ?? "",
  });
  const run = createRun(spec, deps.now());
  if (isCompleted(run.phase)) {
    io.err(printable(`rollouts: ${run.message ?? run.phase}`));
    return Exit.badInput;
  }
  const live = opts.json ? (line: string) => io.err(line) : (line: string) => io.out(line);
  const names = run.metrics.map((m) => m.name).join(", ");
  live(printable(`analysis: ${run.metrics.length} metric(s): ${names}`));
  const controller = new AbortController();
  const release = deps.interrupt(controller);
  let final: AnalysisRun;
  try {
    final = await runAnalysis(run, deps, deps.providers(), live, controller.signal, opts.duration);
  } finally {
    release();
  }
  if (opts.json) {
    io.out(printableJson(toArgoJson(final), 2));
  } else {
    io.out(`phase: ${final.phase}`);
    if (final.message) io.out(printable(`message: ${final.message}`));
  }
  return exitCodeForPhase(final.phase);
}
