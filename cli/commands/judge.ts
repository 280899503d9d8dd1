import type { Command } from "commander";
import type { RegisterCommand } from "../io.ts";

/**
 * `rollouts judge FILE [--json]`: runs the statistical checks of a file (candidate against
 * primary) and prints the decision. The exit code is the decision, so a pipeline step or a
 * Kubernetes Job can gate on it: 0 promote, 1 rollback, 3 hold, 2 input it cannot use.
 * Registration only: the judges and the input schema are imported when the command runs.
 */
export const registerJudge: RegisterCommand = (program: Command, io, done) => {
  program
    .command("judge")
    .description(
      "compare a candidate with the primary: Mann-Whitney, proportion and sequential tests, absolute p95 and bad-rate guards; exit 0 promote, 1 rollback, 3 hold, 2 bad input",
    )
    .argument("<file>", 'JSON file: {"checks": [{"name", "test", "candidate", "primary", ...}]}')
    .option("--json", "print the report as JSON")
    .action(async (file: string, opts: { json?: boolean }) => {
      const { judgeAction } = await import("./judge-actions.ts");
      done(await judgeAction(io, file, opts));
    });
};
