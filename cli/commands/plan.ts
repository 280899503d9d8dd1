import type { Command } from "commander";
import type { RegisterCommand } from "../io.ts";
import { number, rps } from "../numbers.ts";
import type { PlanOptions } from "./plan-actions.ts";

const positiveNumber = (flag: string) => number(flag, (n) => n >= 0, "a number >= 0");

/**
 * `rollouts plan FILE... [--replicas N] [--rps R] [--error-rate E] [--json]`: the steps, pods and
 * exposure before a rollout runs. Registration only: the spec loader and the planner are imported
 * when the command runs, so `rollouts --version` and the other commands do not load them.
 */
export const registerPlan: RegisterCommand = (program: Command, io, done) => {
  program
    .command("plan")
    .description(
      "show each step: weight, canary and stable pods, the real share, the analysis, requests per second",
    )
    .argument("<file...>", "Rollout and AnalysisTemplate files (YAML or JSON), or a native spec")
    .option("--replicas <n>", "override the replica count", positiveNumber("--replicas"))
    .option("--rps <r>", "requests per second in front of the rollout", rps("--rps"))
    .option(
      "--error-rate <e>",
      "with --rps: the share of a bad version's requests that fail, for the exposure at each analysis",
      positiveNumber("--error-rate"),
    )
    .option("--json", "print the plan as JSON")
    .action(async (files: string[], opts: PlanOptions) => {
      const { planAction } = await import("./plan-actions.ts");
      done(await planAction(io, files, opts));
    });
};
