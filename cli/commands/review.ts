import type { Command } from "commander";
import { parseDuration } from "../../statemachine/duration.ts";
import { type RegisterCommand, UsageError } from "../io.ts";
import { number, rate, rps } from "../numbers.ts";
import type { ReviewOptions } from "./review-actions.ts";

const FAIL_ON = ["error", "warning", "info"];

function failOn(value: string): string {
  if (!FAIL_ON.includes(value))
    throw new UsageError(`--fail-on must be one of ${FAIL_ON.join(", ")}, got "${value}"`);
  return value;
}

function scrapeInterval(value: string): number {
  const d = parseDuration(value);
  if ("error" in d || d.seconds <= 0) {
    throw new UsageError(`--scrape-interval must be a duration like 15s or 1m, got "${value}"`);
  }
  return d.seconds;
}

function prometheusUrl(value: string): string {
  if (!/^https?:\/\/[^\s/?#]+/i.test(value)) {
    throw new UsageError(`--prometheus must be an http:// or https:// URL, got "${value}"`);
  }
  return value;
}

function arg(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new UsageError(`--arg must be NAME=VALUE, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

/**
 * `rollouts review ROLLOUT TEMPLATE... [options]`: static checks of a rollout and its analysis
 * templates, as a linter reports them. Registration only: the loader, the checks and the Prometheus
 * client load when the command runs.
 */
export const registerReview: RegisterCommand = (program: Command, io, done) => {
  program
    .command("review")
    .description(
      "check a rollout and its templates before they run: pod rounding, queries, windows, exposure, judges; exit 0 clean, 1 findings at --fail-on or above, 2 bad input",
    )
    .argument("<file...>", "the Rollout and its AnalysisTemplate files (YAML or JSON), or a native spec")
    .option(
      "--fail-on <severity>",
      "the least severity that exits 1: error, warning or info",
      failOn,
      "warning",
    )
    .option("--json", "print the findings as JSON")
    .option(
      "--rps <r>",
      "requests per second in front of the rollout: exposure and gate sample sizes",
      rps("--rps"),
    )
    .option(
      "--error-rate <e>",
      "the share of a bad version's requests that fail (default 1)",
      rate("--error-rate"),
    )
    .option(
      "--exposure-budget <n>",
      "bad requests a bad version may serve before an analysis can stop it",
      number("--exposure-budget", (n) => n >= 0, "a number >= 0"),
    )
    .option("--scrape-interval <d>", "Prometheus' scrape interval (default 15s)", scrapeInterval)
    .option("--prometheus <url>", "run each query once against this Prometheus", prometheusUrl)
    .option("--arg <name=value>", "a template argument's value for --prometheus (repeatable)", arg, {})
    .option("--latest <version>", "the candidate's version, for {{rollout.latest}} with --prometheus")
    .option("--stable <version>", "the stable version's, for {{rollout.stable}} with --prometheus")
    .option("--digest <digest>", "the candidate's image digest, for {{rollout.digest}} with --prometheus")
    .action(async (files: string[], opts: ReviewOptions) => {
      const { reviewAction } = await import("./review-actions.ts");
      done(await reviewAction(io, files, opts));
    });
};
