import { assign, bucket, cohortSize } from "../../functions/router/cohort.ts";
import { Exit, type Io, UsageError } from "../io.ts";
import { printable } from "../terminal.ts";

export interface AssignOptions {
  weight: number;
  salt: string;
  users?: number;
  user?: string[];
}

/** The action of `rollouts assign`, apart from its registration. Returns the exit code. */
export function assignAction(io: Io, opts: AssignOptions): number {
  if (opts.users === undefined && (opts.user === undefined || opts.user.length === 0)) {
    throw new UsageError("give --users N (count u0 … u{N-1}) or --user NAME...");
  }
  if (opts.salt.length === 0) throw new UsageError("--salt must not be empty");
  if (opts.users !== undefined) {
    const n = cohortSize(opts.users, opts.salt, opts.weight);
    const share = ((100 * n) / opts.users).toFixed(1);
    io.out(
      printable(
        `cohort: ${n} of ${opts.users} users (${share}%) at weight ${opts.weight} with salt ${opts.salt} (users u0 … u${opts.users - 1})`,
      ),
    );
  }
  for (const user of opts.user ?? []) {
    io.out(
      printable(
        `${user}: bucket ${bucket(user, opts.salt).toFixed(4)} → ${assign(user, opts.salt, opts.weight)}`,
      ),
    );
  }
  return Exit.ok;
}
