import type { Command } from "commander";
import { type RegisterCommand, UsageError } from "../io.ts";

/**
 * The operating commands (`list`, `get`, `status`, `promote`, `abort`, `retry`, `undo`), as the
 * on-call engineer uses them with `kubectl argo rollouts`. Registration only: the actions (and
 * the AWS SDK they load) are imported when one of them runs, so `rollouts plan` stays fast.
 */
export const registerOperate: RegisterCommand = (program: Command, io, done) => {
  registerList(program, io, done);
  registerGet(program, io, done);
  registerWaves(program, io, done);
  registerStatus(program, io, done);
  registerPromote(program, io, done);
  registerAbort(program, io, done);
  registerRetry(program, io, done);
  registerUndo(program, io, done);
};

/** The actions' module, imported when a command runs rather than when the CLI starts. */
const actions = () => import("./operate-actions.ts");

/** The `--table` option's help, the same on every command that reads the rollouts' table. */
const TABLE = "DynamoDB table of the rollouts (default: $ROLLOUTS_TABLE)";

/** `rollouts list`: every rollout in the table, one line each (or the items as JSON). */
const registerList: RegisterCommand = (program, io, done) => {
  program
    .command("list")
    .description("list the rollouts in the table with their phase, step, weight and revisions")
    .option("--table <name>", TABLE)
    .option("--json", "print the rollout items as JSON")
    .action(async (opts: { table?: string; json?: boolean }) => {
      done(await (await actions()).listAction(io, opts));
    });
};

/** `rollouts get`: one rollout in full, once or redrawn on every change with `--watch`. */
const registerGet: RegisterCommand = (program, io, done) => {
  program
    .command("get")
    .description(
      "show a rollout: status, steps with the current one marked, weight, images, analysis runs and their last measurements, events",
    )
    .argument("<name>", "rollout name")
    .option("--table <name>", TABLE)
    .option("-w, --watch", "redraw on every change until the rollout is Healthy or Degraded (or Ctrl-C)")
    .option("--interval <seconds>", "seconds between reads when watching", "1")
    .option("--json", "print the item, its runs and measurements as JSON (one line per change with --watch)")
    .option(
      "--home-region <region>",
      "a pass of a release in waves: where its coordinator <name>-waves runs, if neither its execution nor its state machine's tag says",
    )
    .action(
      async (
        name: string,
        opts: { table?: string; watch?: boolean; interval: string; json?: boolean; homeRegion?: string },
      ) => {
        const { getAction } = await actions();
        done(await getAction(io, name, { ...opts, intervalMs: intervalMs(opts.interval) }));
      },
    );
};

/**
 * `rollouts waves`: every wave of a release in waves. Its action lives in its own module, since it
 * reads the coordinator rather than one table.
 */
const registerWaves: RegisterCommand = (program, io, done) => {
  program
    .command("waves")
    .description(
      "show every wave of a release, found from its coordinator (<name>-waves in this region, the one a pass's state machine here names, the one that started the rollout in --table, or <name>-waves in --home-region): each region's status, step (eu/25%) and weight",
    )
    .argument("<name>", "rollout name")
    .option(
      "--table <name>",
      "a region's table holding the rollout, to find its coordinator from (default: $ROLLOUTS_TABLE)",
    )
    .option(
      "--home-region <region>",
      "the release's home region, where its coordinator <name>-waves runs (needed only when this region holds neither it nor a pass)",
    )
    .option(
      "--at <region=table>",
      "instead of the coordinator: a wave's region and its controller table, in wave order (repeat for each wave)",
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .action(async (name: string, opts: { at: string[]; table?: string; homeRegion?: string }) => {
      const { wavesAction } = await import("./waves-actions.ts");
      done(await wavesAction(io, name, opts));
    });
};

/** `rollouts status`: the phase as an exit code, so a script can wait on a rollout. */
const registerStatus: RegisterCommand = (program, io, done) => {
  program
    .command("status")
    .description(
      "print the phase and message; exit 0 Healthy, 1 Degraded, 3 Paused, 4 Progressing (2 unknown rollout, 5 AWS error)",
    )
    .argument("<name>", "rollout name")
    .option("--table <name>", TABLE)
    .option("-w, --watch", "wait until the rollout is Healthy or Degraded, printing each change")
    .option(
      "-t, --timeout <duration>",
      "with --watch, give up after this long (30s, 5m, 1h); implies --watch",
    )
    .option("--interval <seconds>", "seconds between reads when watching", "1")
    .action(
      async (name: string, opts: { table?: string; watch?: boolean; timeout?: string; interval: string }) => {
        const { statusAction } = await actions();
        done(
          await statusAction(io, name, {
            ...opts,
            intervalMs: intervalMs(opts.interval),
            ...(opts.timeout === undefined ? {} : { timeoutMs: await timeoutMs(opts.timeout) }),
          }),
        );
      },
    );
};

/** `rollouts promote`: ends the current hold, or with `--full` every remaining step. */
const registerPromote: RegisterCommand = (program, io, done) => {
  program
    .command("promote")
    .description(
      "end the current pause, approval or weight-drift hold (--full: skip every remaining step, an analysis included)",
    )
    .argument("<name>", "rollout name")
    .option("--table <name>", TABLE)
    .option("--full", "skip the remaining steps and promote the candidate now")
    .action(async (name: string, opts: { table?: string; full?: boolean }) => {
      done(await (await actions()).promoteAction(io, name, opts));
    });
};

/** `rollouts abort`: sends the traffic back to the stable revision, with the reason given. */
const registerAbort: RegisterCommand = (program, io, done) => {
  program
    .command("abort")
    .description("abort a running rollout: traffic back to the stable revision, status Degraded")
    .argument("<name>", "rollout name")
    .option("--table <name>", TABLE)
    .option("--reason <text>", "why, kept in the status message and the events")
    .action(async (name: string, opts: { table?: string; reason?: string }) => {
      done(await (await actions()).abortAction(io, name, opts));
    });
};

/** `rollouts retry`: runs an aborted revision's steps again. */
const registerRetry: RegisterCommand = (program, io, done) => {
  program
    .command("retry")
    .description("run the steps of an aborted (Degraded) rollout's revision again")
    .argument("<name>", "rollout name")
    .option("--table <name>", TABLE)
    .action(async (name: string, opts: { table?: string }) => {
      done(await (await actions()).retryAction(io, name, opts));
    });
};

/** `rollouts undo`: rolls back to the revision that was stable before, through the steps. */
const registerUndo: RegisterCommand = (program, io, done) => {
  program
    .command("undo")
    .description("roll back to the revision that was stable before the current one, through the steps")
    .argument("<name>", "rollout name")
    .option("--table <name>", TABLE)
    .action(async (name: string, opts: { table?: string }) => {
      done(await (await actions()).undoAction(io, name, opts));
    });
};

function intervalMs(text: string): number {
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`--interval must be a number of seconds > 0, got "${text}"`);
  }
  return seconds * 1000;
}

/** The duration parser is imported here, when `status --timeout` runs, not when the CLI starts. */
async function timeoutMs(text: string): Promise<number> {
  const { parseDuration } = await import("../../statemachine/duration.ts");
  const parsed = parseDuration(text);
  if ("error" in parsed) throw new UsageError(`--timeout: ${parsed.error}`);
  return parsed.seconds * 1000;
}
