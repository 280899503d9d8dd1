import type { Command } from "commander";
import { type RegisterCommand, UsageError } from "../io.ts";
import { rate, rps } from "../numbers.ts";

/**
 * `rollouts triage NAME`: a rollout that aborted, hangs or was promoted with a bad version, in a
 * fixed report (verdict, timeline, what decided, exposure, next commands). Registration only: the
 * action (and the AWS SDK it loads) is imported when it runs.
 */
export const registerTriage: RegisterCommand = (program: Command, io, done) => {
  program
    .command("triage")
    .description(
      "a fixed report on a rollout's execution: the verdict, what happened when, what decided (or why nothing did), the candidate's exposure, and the commands to run next",
    )
    .argument("<name>", "rollout name")
    .option("--table <name>", "DynamoDB table of the rollouts (default: $ROLLOUTS_TABLE)")
    .option(
      "--revision <n>",
      "an earlier execution, by the revision it rolled out (default: the current one)",
      revision,
    )
    .option(
      "--rps <r>",
      "requests per second in front of the rollout: the exposure in requests",
      rps("--rps"),
    )
    .option(
      "--error-rate <e>",
      "with --rps: the share of the candidate's requests that fail",
      rate("--error-rate"),
    )
    .option("--json", "print the report as one JSON object")
    .action(
      async (
        name: string,
        opts: { table?: string; revision?: number; rps?: number; errorRate?: number; json?: boolean },
      ) => {
        const { triageAction } = await import("./triage-actions.ts");
        done(await triageAction(io, name, opts));
      },
    );
};

function revision(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`--revision must be a revision number (1, 2, …), got "${text}"`);
  }
  return n;
}
