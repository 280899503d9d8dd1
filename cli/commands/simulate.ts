import type { Command } from "commander";
import type { RegisterCommand } from "../io.ts";
import { number, rate, rps } from "../numbers.ts";
import type { SimulateOptions } from "./simulate-actions.ts";

/**
 * `rollouts simulate ROLLOUT_FILE TEMPLATE_FILE... [--plan STEPS]...`: how many requests a bad
 * version would reach, one row per plan, measured on the real workflow in virtual time.
 * Registration only: the plan parser, the spec loader and the embedded runtime are imported when
 * the command runs.
 */
export const registerSimulate: RegisterCommand = (program: Command, io, done) => {
  program
    .command("simulate")
    .description(
      "run the rollout in virtual time against a bad version and count the requests it reaches (one row per --plan)",
    )
    .argument("<file...>", "the Rollout file and its AnalysisTemplate files, or a native spec")
    .option("--rps <r>", "requests per second in front of the rollout", rps("--rps"), 100)
    .option("--error-rate <e>", "share of the new version's requests that fail", rate("--error-rate"), 0.3)
    .option(
      "--baseline-error-rate <e>",
      "share of the old version's requests that fail",
      rate("--baseline-error-rate"),
      0,
    )
    .option(
      "--latency-factor <f>",
      "the new version's latency over the old one's",
      number("--latency-factor", (n) => n > 0 && n <= 1000, "a number in (0, 1000]"),
      1,
    )
    .option(
      "--plan <steps>",
      "steps replacing the rollout's own (canary, Argo or native), e.g. 25%,analysis,50%,pause=2s,analysis (repeatable)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      "--replicas <n>",
      "whole pods behind one Service (Argo's rounding) instead of an exact traffic router",
      number(
        "--replicas",
        (n) => Number.isInteger(n) && n >= 1 && n <= 1000,
        "a whole number from 1 to 1000",
      ),
    )
    .option(
      "--ready-delay <s>",
      "seconds a new pod takes to serve (with --replicas)",
      number("--ready-delay", (n) => n >= 0 && n <= 3600, "seconds from 0 to 3600"),
      0,
    )
    .option("--duration <d>", "virtual time from the push until a person notices", "5m")
    .option(
      "--seed <n>",
      "seed of the simulated errors and latencies",
      number(
        "--seed",
        (n) => Number.isInteger(n) && n >= 0 && n <= 2 ** 32 - 1,
        "a whole number from 0 to 4294967295",
      ),
      0,
    )
    .option("--json", "print the rows as JSON, with the per-second series")
    .action(async (files: string[], opts: SimulateOptions) => {
      const { simulateAction } = await import("./simulate-actions.ts");
      done(await simulateAction(io, files, opts));
    });
};
