import type { Command } from "commander";
import type { RegisterCommand } from "../io.ts";
import type { ReplayOptions } from "./replay-actions.ts";

/**
 * `rollouts replay ROLLOUT`: a rollout's recorded measurements re-decided by the current
 * conditions or a changed template. Registration only: the action (and the AWS SDK it loads) is
 * imported when it runs, so `rollouts --version` stays fast.
 */
export const registerReplay: RegisterCommand = (program: Command, io, done) => {
  program
    .command("replay")
    .description(
      "re-decide a rollout's recorded analysis measurements with the current conditions or a changed AnalysisTemplate, side by side with the recorded decisions; exit 0 none differ, 1 some differ",
    )
    .argument("<rollout>", "rollout name")
    .option("--table <name>", "DynamoDB table of the rollouts (default: $ROLLOUTS_TABLE)")
    .option("--analysis <name>", "only the runs with this run id (step01, background) or template name")
    .option(
      "--template <file...>",
      "AnalysisTemplate file(s) whose metrics replace the recorded ones of the same name",
    )
    .option("--arg <name=value...>", "a template argument (repeatable)")
    .option(
      "--error-budget <alpha>",
      "decide again as if the rollout's error budget were this: each gate's share scaled to it",
    )
    .option("--json", "print the rows and the summary as JSON")
    .action(async (rollout: string, opts: Omit<ReplayOptions, "env">) => {
      const { replayAction } = await import("./replay-actions.ts");
      done(await replayAction(io, rollout, opts));
    });
};
