import type { Command } from "commander";
import type { Measurement } from "../../functions/analysis/index.ts";
import type { MetricProvider } from "../../functions/metrics/index.ts";
import { type Io, type RegisterCommand, UsageError } from "../io.ts";
import { printable } from "../terminal.ts";
import type { AnalyzeOptions } from "./analyze-actions.ts";

/** What `rollouts analyze` needs from the outside world; tests pass a virtual clock. */
export interface AnalyzeDeps {
  now: () => Date;
  /** Waits `ms` or until `signal` aborts (then resolves early). */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  providers: () => MetricProvider;
  /** Fires when the user interrupts (Ctrl-C): the run is terminated, as a rollout would. */
  interrupt: (signal: AbortController) => () => void;
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
 * Builds the command with its dependencies; without them it uses the real clock and providers.
 * Registration only: the analysis, the providers (and the AWS SDK clients they hold) are imported
 * when the command runs.
 */
export function analyzeCommand(deps?: AnalyzeDeps): RegisterCommand {
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
      .action(async (files: string[], opts: AnalyzeOptions) => {
        const { analyzeAction, realDeps } = await import("./analyze-actions.ts");
        done(await analyzeAction(io, files, opts, deps ?? realDeps));
      });
  };
}

/** `rollouts analyze TEMPLATE_FILE... [--arg NAME=VALUE]... [--duration S] [--json]`. */
export const registerAnalyze: RegisterCommand = analyzeCommand();
