import { createRequire } from "node:module";
import { Command, CommanderError } from "commander";
import { registerAnalyze } from "./commands/analyze.ts";
import { registerAssign } from "./commands/assign.ts";
import { registerCompile } from "./commands/compile.ts";
import { registerDashboard } from "./commands/dashboard.ts";
import { registerDesign } from "./commands/design.ts";
import { registerJudge } from "./commands/judge.ts";
import { registerOperate } from "./commands/operate.ts";
import { registerPlan } from "./commands/plan.ts";
import { registerReplay } from "./commands/replay.ts";
import { registerReview } from "./commands/review.ts";
import { registerSimulate } from "./commands/simulate.ts";
import { registerTriage } from "./commands/triage.ts";
import { Exit, type Io, processIo, type RegisterCommand, UsageError } from "./io.ts";
import { printable } from "./terminal.ts";

const commands: RegisterCommand[] = [
  registerPlan,
  registerReview,
  registerCompile,
  registerJudge,
  registerAnalyze,
  registerOperate,
  registerSimulate,
  registerDesign,
  registerDashboard,
  registerAssign,
  registerReplay,
  registerTriage,
];

/** The package's version, from its own `package.json` (the same file in the sources and in `dist/`). */
export const VERSION: string = (
  createRequire(import.meta.url)("sfn-rollouts/package.json") as { version: string }
).version;

/** Runs the `rollouts` command line and resolves to the process exit code. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  let code: number = Exit.ok;
  const program = new Command("rollouts")
    .description(
      "Serverless progressive delivery for AWS: plan, review, compile, analyze, judge and operate rollouts.",
    )
    .version(VERSION, "-V, --version", "print the version of sfn-rollouts")
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });
  for (const register of commands) {
    register(program, io, (c) => {
      code = c;
    });
  }
  for (const sub of program.commands) sub.exitOverride();
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? Exit.ok : Exit.badInput;
    }
    if (error instanceof UsageError) {
      io.err(printable(`rollouts: ${error.message}`));
      return Exit.badInput;
    }
    throw error;
  }
  return code;
}
