import type { Command } from "commander";
import type { RegisterCommand } from "../io.ts";
import { number } from "../numbers.ts";
import type { AssignOptions } from "./assign-actions.ts";

/** The most generated users `assign` counts: a count, not a load test. */
const MAX_USERS = 10_000_000;

/**
 * `rollouts assign --weight W --salt SALT (--users N | --user NAME...)`: who the model router's
 * sticky cohort sends to the candidate. With `--users N` it counts the users `u0`…`u{N-1}` whose
 * bucket is below the weight (the reference's `assign` prints 277 of 1000 at weight 30 with salt
 * v2); with `--user` it prints each user's bucket and side. Registration only: the cohort's
 * hashing is imported when the command runs.
 */
export const registerAssign: RegisterCommand = (program: Command, io, done) => {
  program
    .command("assign")
    .description(
      "sticky cohorts: how many users (u0, u1, …) or which named users the model router sends to the candidate",
    )
    .requiredOption(
      "--weight <w>",
      "the candidate's weight, percent 0–100",
      number("--weight", (n) => n >= 0 && n <= 100, "a percent from 0 to 100"),
    )
    .option("--salt <salt>", "the rollout's salt (the router's default: the candidate's name)", "candidate")
    .option(
      "--users <n>",
      "count the cohort among the users u0 … u{n-1}",
      number(
        "--users",
        (n) => Number.isInteger(n) && n >= 1 && n <= MAX_USERS,
        `a whole number from 1 to ${MAX_USERS}`,
      ),
    )
    .option("--user <name...>", "print the bucket and side of these users")
    .action(async (opts: AssignOptions) => {
      const { assignAction } = await import("./assign-actions.ts");
      done(assignAction(io, opts));
    });
};
