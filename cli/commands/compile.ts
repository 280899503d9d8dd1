import type { Command } from "commander";
import {
  readinessChecksFor,
  targetSettingsProblems,
  targetSpecProblems,
} from "../../functions/traffic/settings.ts";
import { compile, formatProblem, SpecError, type StateMachineDefinition } from "../../statemachine/index.ts";
import { Exit, type RegisterCommand, UsageError } from "../io.ts";
import { printable } from "../terminal.ts";
import { loadSpecOrReport } from "./spec-input.ts";

/** `rollouts compile FILE...`: prints the Step Functions definition (ASL, JSONPath) of the rollout. */
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
    .action(async (files: string[], opts: { target?: string; readinessChecks?: boolean }) => {
      const spec = await loadSpecOrReport(files, io);
      if (!spec) return done(Exit.badInput);
      let target: Record<string, unknown> | undefined;
      if (opts.target !== undefined) {
        try {
          target = JSON.parse(opts.target) as Record<string, unknown>;
        } catch (error) {
          throw new UsageError(`--target is not JSON: ${(error as Error).message}`);
        }
        if (target === null || typeof target !== "object" || Array.isArray(target)) {
          throw new UsageError("--target must be a JSON object");
        }
        // The same check the construct makes before it embeds a target in the Tasks.
        const problems = [...targetSettingsProblems(target), ...targetSpecProblems(target.type, spec)];
        if (problems.length > 0) {
          for (const problem of problems) io.err(printable(`rollouts: --target: ${problem}`));
          return done(Exit.badInput);
        }
      }
      let definition: StateMachineDefinition;
      try {
        definition = compile(spec, {
          ...(target ? { target } : {}),
          // By default as the construct compiles it for this target (an ECS deployment, pods, a
          // SageMaker endpoint settle after each weight); the flag decides either way.
          readinessChecks: opts.readinessChecks ?? readinessChecksFor(target?.type),
        });
      } catch (error) {
        if (!(error instanceof SpecError)) throw error;
        // What Step Functions would refuse, said of the files given.
        for (const p of error.problems) {
          io.err(printable(formatProblem({ ...p, file: files.join(", "), object: `Rollout ${spec.name}` })));
        }
        return done(Exit.badInput);
      }
      io.out(JSON.stringify(definition, null, 2));
      done(Exit.ok);
    });
};
