import type { Command } from "commander";
import { compile } from "../../statemachine/index.ts";
import { Exit, type RegisterCommand, UsageError } from "../io.ts";
import { loadSpecOrReport } from "./spec-input.ts";

/** `rollouts compile FILE...`: prints the Step Functions definition (ASL, JSONPath) of the rollout. */
export const registerCompile: RegisterCommand = (program: Command, io, done) => {
  program
    .command("compile")
    .description("print the Step Functions state machine (Amazon States Language) a rollout compiles to")
    .argument("<file...>", "Rollout and AnalysisTemplate files (YAML or JSON), or a native spec")
    .option("--target <json>", "traffic target settings to embed in the Tasks, as JSON")
    .option("--readiness-checks", "poll target readiness after the candidate starts and after each weight")
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
      }
      const definition = compile(spec, {
        ...(target ? { target } : {}),
        ...(opts.readinessChecks ? { readinessChecks: true } : {}),
      });
      io.out(JSON.stringify(definition, null, 2));
      done(Exit.ok);
    });
};
