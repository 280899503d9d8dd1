import type { Command } from "commander";
import {
  type AnalysisRun,
  createRun,
  isCompleted,
  type Measurement,
  measurementsTaken,
  nextTickAt,
  terminate,
  tick,
  toArgoJson,
} from "../../functions/analysis/index.ts";
import { ENV } from "../../functions/config.ts";
import { defaultProviders, type MetricProvider, maxBodyBytesFrom } from "../../functions/metrics/index.ts";
import { resolveRuntimeArgs, runtimeValueProblem } from "../../functions/workflow/runtime-args.ts";
import { loadAnalysisTemplates, RUNTIME_PLACEHOLDERS, SpecError } from "../../statemachine/index.ts";
import { Exit, type Io, type RegisterCommand, UsageError } from "../io.ts";
import { printable, printableJson } from "../terminal.ts";

/** What `rollouts analyze` needs from the outside world; tests pass a virtual clock. */
export interface AnalyzeDeps {
  now: () => Date;
  /** Waits `ms` or until `signal` aborts (then resolves early). */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  providers: () => MetricProvider;
  /** Fires when the user interrupts (Ctrl-C): the run is terminated, as a rollout would. */
  interrupt: (signal: AbortController) => () => void;
}

const realDeps: AnalyzeDeps = {
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
    try {
      maxBodyBytes = maxBodyBytesFrom(process.env[ENV.metricMaxBodyBytes], ENV.metricMaxBodyBytes);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    return defaultProviders({ maxBodyBytes });
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

/** `measurement success-rate = [0.5] Failed`, plus the message of an Error. */
export function formatMeasurement(metric: string, m: Measurement): string {
  const value = m.value !== undefined ? ` = ${m.value}` : "";
  const message = m.message ? `: ${m.message}` : "";
  // The value and the message are the provider's: printed without its control characters.
  return printable(`measurement ${metric}${value} ${m.phase}${message}`);
}

function parseArg(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new UsageError(`--arg must be NAME=VALUE, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

function parseSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new UsageError(`--duration must be a number of seconds > 0, got "${value}"`);
  return n;
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

/** Builds the command with its dependencies (the binary uses the real clock and providers). */
export function analyzeCommand(deps: AnalyzeDeps = realDeps): RegisterCommand {
  return (program: Command, io: Io, done) => {
    program
      .command("analyze")
      .description(
        "run AnalysisTemplates against their providers in real time; exit 0 Successful, 1 Failed or Error, 3 Inconclusive, 2 bad input",
      )
      .argument(
        "<template-file...>",
        "AnalysisTemplate files (YAML or JSON); all their templates run as one analysis",
      )
      .option("--arg <name=value>", "an argument of the templates (repeatable)", parseArg, {})
      .option(
        "--duration <seconds>",
        "terminate the run after this long (a metric with an interval and no count runs until then)",
        parseSeconds,
      )
      .option("--latest <version>", "the candidate's image tag, for {{rollout.latest}} (a judge's candidate)")
      .option("--stable <version>", "the stable version's image tag, for {{rollout.stable}}")
      .option("--digest <digest>", "the candidate's image digest, for {{rollout.digest}}")
      .option("--json", "print the final run as JSON (measurements go to stderr)")
      .action(
        async (
          files: string[],
          opts: {
            arg: Record<string, string>;
            duration?: number;
            json?: boolean;
            latest?: string;
            stable?: string;
            digest?: string;
          },
        ) => {
          let spec: Awaited<ReturnType<typeof loadAnalysisTemplates>>;
          try {
            spec = await loadAnalysisTemplates(files, opts.arg);
          } catch (error) {
            if (error instanceof SpecError) {
              for (const line of error.message.split("\n")) io.err(printable(line));
              return done(Exit.badInput);
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
            return done(Exit.badInput);
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
          done(exitCodeForPhase(final.phase));
        },
      );
  };
}

/** `rollouts analyze TEMPLATE_FILE... [--arg NAME=VALUE]... [--duration S] [--json]`. */
export const registerAnalyze: RegisterCommand = analyzeCommand();
