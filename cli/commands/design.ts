import type { Command } from "commander";
import type { RegisterCommand } from "../io.ts";
import { number, rps } from "../numbers.ts";
import type { DesignOptions } from "./design-actions.ts";

const share = (flag: string) => number(flag, (n) => n > 0 && n < 1, "a share above 0 and under 1");
const repeat = (value: string, previous: string[]) => [...previous, value];

/**
 * `rollouts design --rps R --slo-error-rate E --slo-p95 MS ...`: canary steps and an
 * AnalysisTemplate chosen by simulating candidates on the real workflow; `--model` plans a model
 * rollout instead. Registration only: the design, the loader and the runtime load when it runs.
 */
export const registerDesign: RegisterCommand = (program: Command, io, done) => {
  const command = program
    .command("design")
    .description(
      "design a canary for a traffic and an SLO: candidate steps pruned by the exposure arithmetic, simulated against a bad and a good version, the fastest within the exposure budget written as a Rollout and an AnalysisTemplate (--model: a model rollout's plan)",
    )
    .option("--rps <r>", "requests per second in front of the rollout", rps("--rps"))
    .option(
      "--slo-error-rate <e>",
      "the SLO's error rate: the share of requests that may fail",
      share("--slo-error-rate"),
    )
    .option(
      "--slo-p95 <ms>",
      "the SLO's 95th percentile latency, milliseconds",
      number("--slo-p95", (n) => n > 0 && n <= 600_000, "milliseconds in (0, 600000]"),
    )
    .option(
      "--baseline-error-rate <e>",
      "a good version's error rate (default: a tenth of the SLO's)",
      share("--baseline-error-rate"),
    )
    .option(
      "--replicas <n>",
      "the rollout's replicas (without a router, weights are whole pods of them)",
      number(
        "--replicas",
        (n) => Number.isInteger(n) && n >= 1 && n <= 5000,
        "a whole number from 1 to 5000",
      ),
      4,
    )
    .option("--router <router>", "alb, lambda, gateway, istio, nginx (exact weights) or none (pods)", "alb")
    .option(
      "--metrics <file>",
      "a YAML or JSON file naming the metrics: requests, errors, latency, version, prometheus",
    )
    .option(
      "--exposure-budget <n>",
      "requests a bad version may serve before it is stopped (default: 0.1% of the SLO's 30-day error budget)",
      number("--exposure-budget", (n) => Number.isInteger(n) && n >= 1, "a whole number of requests >= 1"),
    )
    .option("--max-duration <d>", "the longest a good version may take to be promoted", "1h")
    .option("--scrape-interval <d>", "how often Prometheus scrapes the service", "15s")
    .option("--name <name>", "the rollout's name", "app")
    .option(
      "--seed <n>",
      "seed of the simulated failures and latencies",
      number(
        "--seed",
        (n) => Number.isInteger(n) && n >= 0 && n <= 2 ** 32 - 1,
        "a whole number from 0 to 4294967295",
      ),
      0,
    )
    .option("--json", "print the design as JSON")
    .option(
      "--html <file>",
      "write a page charting each simulated candidate's exposure beside the chosen one's",
    );
  modelOptions(command).action(async (opts: DesignOptions) => {
    const { designAction } = await import("./design-actions.ts");
    done(await designAction(io, opts));
  });
};

/** `--model`'s own options. */
function modelOptions(command: Command): Command {
  return command
    .option("--model", "plan a model rollout: shadow or not, samples per step, the judges and the router")
    .option(
      "--signal <name:delay>",
      "--model: a quality signal and how late it arrives (feedback:10m), repeatable",
      repeat,
      [],
    )
    .option(
      "--baseline <name=rate>",
      "--model: a signal's rate today (feedback=0.05), repeatable",
      repeat,
      [],
    )
    .option(
      "--min-effect <[name=]x>",
      "--model: the smallest degradation that matters, for every signal or one (feedback=0.05), repeatable",
      repeat,
      [],
    );
}
