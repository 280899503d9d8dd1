import type { Command } from "commander";
import type { RegisterCommand } from "../io.ts";
import type { CompileOptions } from "./compile-actions.ts";

/**
 * `rollouts compile FILE...`: prints the Step Functions definition (ASL, JSONPath) of the rollout.
 * Registration only: the spec loader, the compiler and the target settings' checks are imported
 * when the command runs.
 */
export const registerCompile: RegisterCommand = (program: Command, io, done) => {
  program
    .command("compile")
    .description("print the Step Functions state machine (Amazon States Language) a rollout compiles to")
    .argument("<file...>", "Rollout and AnalysisTemplate files (YAML or JSON), or a native spec")
    .option("--target <json>", "traffic target settings to embed in the Tasks, as JSON")
    .option(
      "--readiness-checks",
      "poll target readiness after each weight (the default for alb-ecs, kubernetes and sagemaker targets)",
    )
    .option("--no-readiness-checks", "do not poll readiness after each weight, whatever the target")
    .action(async (files: string[], opts: CompileOptions) => {
      const { compileAction } = await import("./compile-actions.ts");
      done(await compileAction(io, files, opts));
    });
};
