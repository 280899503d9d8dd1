import { TaskTokenError } from "../../functions/abort/task-tokens.ts";
import { isAwsError } from "../../functions/aws-errors.ts";
import {
  ConcurrentUpdateError,
  StoredItemInvalidError,
  StoreUnavailableError,
} from "../../functions/store/errors.ts";
import { type RolloutItem, RolloutItemSchema } from "../../functions/store/schema.ts";
import { ExecutionStartError } from "../../functions/trigger/executions.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { executionName } from "../../functions/workflow/item.ts";
import {
  abortRollout,
  type OperateDeps,
  type OperateOutcome,
  promoteRollout,
  retryRollout,
  undoRollout,
} from "../../functions/workflow/operate.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import { type AwsOptions, operateContext } from "../aws.ts";
import { Exit, STATUS_EXIT } from "../exit-codes.ts";
import { type Io, processIo } from "../io.ts";
import {
  currentGates,
  MEASUREMENTS_SHOWN,
  type RolloutView,
  renderList,
  renderRollout,
  runsOfCurrentExecution,
  StoredMeasurementValueSchema,
  statusLine,
} from "../render.ts";
import { printable, printableJson } from "../terminal.ts";
import type { WavesReading } from "./waves-view.ts";

/**
 * The operating commands' actions, apart from their registration (`operate.ts`) so that the AWS
 * SDK is loaded only when one of them runs, not for `rollouts plan`. Exit codes: the CLI's table
 * (`exit-codes.ts`): 0 done, 1 refused, 2 input it cannot use, 5 AWS failed or did not answer;
 * `status` exits with the phase (`STATUS_EXIT`).
 */

/** The rollout is not in the table: exit 2, a name or table typo rather than a state. */
export class RolloutMissingError extends RolloutsError {
  override readonly name = "RolloutMissingError";
}

export interface CommonOptions {
  table?: string;
}

/** How a watch waits and when it gives up; tests inject all of it, the CLI uses real time. */
export interface PollOptions {
  intervalMs: number;
  /** Stop after this many loads (tests). */
  maxFrames?: number;
  /** Epoch ms after which the watch stops (`status --timeout`). */
  deadline?: number;
  now?: () => number;
  /** Ctrl-C: the watch stops at once. */
  signal?: AbortSignal;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export type PollEnd = "done" | "frames" | "timeout" | "interrupted";

/** Waits `ms`, or less when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
  });
}

/**
 * Loads, draws when the frame changed, and stops when `done` says so, the frames or time run
 * out, or the signal fires. Drawing only on change keeps a log of `--watch` readable and makes
 * the redraw cheap; the loads still happen every interval.
 */
export async function poll<T>(
  load: () => Promise<T>,
  frame: (value: T) => string,
  show: (text: string, value: T, index: number) => void,
  done: (value: T) => boolean,
  options: PollOptions,
): Promise<{ last: T; end: PollEnd }> {
  const now = options.now ?? Date.now;
  const wait = options.sleep ?? sleep;
  let previous: string | undefined;
  let shown = 0;
  for (let frames = 1; ; frames++) {
    const value = await load();
    const text = frame(value);
    if (text !== previous) show(text, value, shown++);
    previous = text;
    if (done(value)) return { last: value, end: "done" };
    if (options.signal?.aborted) return { last: value, end: "interrupted" };
    if (options.maxFrames !== undefined && frames >= options.maxFrames) return { last: value, end: "frames" };
    let ms = options.intervalMs;
    if (options.deadline !== undefined) {
      const left = options.deadline - now();
      if (left <= 0) return { last: value, end: "timeout" };
      ms = Math.min(ms, left);
    }
    await wait(ms, options.signal);
    if (options.signal?.aborted) return { last: value, end: "interrupted" };
  }
}

/** The rollout has finished moving (until the next push). */
export const isSettled = (item: Pick<RolloutItem, "phase">): boolean =>
  item.phase === "Healthy" || item.phase === "Degraded";

/** Ctrl-C ends a watch cleanly; tests pass their own controller. */
export type Interrupt = (controller: AbortController) => () => void;

export const onSigint: Interrupt = (controller) => {
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  return () => process.off("SIGINT", stop);
};

/**
 * The rollout item's fields a frame of `rollouts get` does not show: a frame does not read them
 * (the revision history for `undo`, the rollbacks for the cooldown, the trigger's record, the
 * target's state, the task token). They read as their defaults in the frame's item.
 */
const NOT_SHOWN = new Set<keyof RolloutItem>([
  "history",
  "rollbacks",
  "trigger",
  "targetState",
  "currentTaskToken",
]);
const SHOWN_FIELDS = RolloutItemSchema.keyof().options.filter((field) => !NOT_SHOWN.has(field));

/**
 * One frame's worth of reads, and no more, since `--watch` repeats them every interval: the item
 * without the fields a frame does not show, the current execution's runs only (their ids start
 * with its name; older executions' runs are not shown), and of each shown run's stored
 * measurements only the last `MEASUREMENTS_SHOWN` per metric (read newest first, one query each).
 * `whole` reads everything instead, for `--json`, which prints all of it.
 */
export async function loadView(
  deps: Pick<OperateDeps, "store">,
  name: string,
  options: { whole?: boolean } = {},
): Promise<RolloutView> {
  if (options.whole) return loadWholeView(deps, name);
  const item = await deps.store.get(name, { fields: SHOWN_FIELDS });
  if (!item) throw new RolloutMissingError(name);
  return currentRunsView(deps, item, MEASUREMENTS_SHOWN);
}

/**
 * The view of `item` for its current execution: its runs only (their ids start with the
 * execution's name), and of each metric of each of them the newest `last` measurements (one query
 * per metric, newest first). `rollouts get` draws 3 per metric, the dashboard's charts more.
 */
export async function currentRunsView(
  deps: Pick<OperateDeps, "store">,
  item: RolloutItem,
  last: number,
): Promise<RolloutView> {
  const name = item.name;
  const runs =
    item.executionArn === null
      ? []
      : await deps.store.listRuns(name, StoredAnalysisSchema, {
          prefix: `${executionName(item.executionArn)}.`,
        });
  const measurements: RolloutView["measurements"] = {};
  for (const run of runsOfCurrentExecution({ item, runs })) {
    const metrics = new Set([
      ...run.run.run.metrics.map((m) => m.name),
      ...run.run.run.metricResults.map((r) => r.name),
    ]);
    const lists = await Promise.all(
      [...metrics].map((metric) =>
        deps.store.listMeasurements(name, run.runId, StoredMeasurementValueSchema, {
          prefix: `${metric}#`,
          last,
          // `a#` also starts the ids of a metric named `a#b`: only `a#<sequence>` is this metric's.
          match: (id) => /^\d+$/.test(id.slice(metric.length + 1)),
        }),
      ),
    );
    measurements[run.runId] = lists.flat();
  }
  return { item, runs, measurements };
}

/** The whole item, every run of the rollout and every stored measurement of the shown runs. */
async function loadWholeView(deps: Pick<OperateDeps, "store">, name: string): Promise<RolloutView> {
  const item = await deps.store.get(name);
  if (!item) throw new RolloutMissingError(name);
  const runs = await deps.store.listRuns(name, StoredAnalysisSchema);
  const measurements: RolloutView["measurements"] = {};
  for (const run of runsOfCurrentExecution({ item, runs })) {
    measurements[run.runId] = await deps.store.listMeasurements(
      name,
      run.runId,
      StoredMeasurementValueSchema,
    );
  }
  return { item, runs, measurements };
}

async function requireItem(deps: OperateDeps, name: string): Promise<RolloutItem> {
  const item = await deps.store.get(name);
  if (!item) throw new RolloutMissingError(name);
  return item;
}

/**
 * Runs a command body with the AWS context and turns the expected failures into a message and an
 * exit code (a person at a terminal wants the why, not a stack). Anything else is a bug: rethrown.
 */
export async function withAws(
  io: Io,
  options: CommonOptions & Pick<AwsOptions, "env">,
  body: (deps: OperateDeps) => Promise<number>,
): Promise<number> {
  const context = operateContext({ table: options.table, ...(options.env ? { env: options.env } : {}) });
  try {
    return await body(context.deps);
  } catch (error) {
    return reportFailure(io, context.tableName, error);
  } finally {
    context.close();
  }
}

function reportFailure(io: Io, table: string, error: unknown): number {
  const failure = (text: string) => io.err(printable(text));
  if (error instanceof RolloutMissingError) {
    failure(
      `rollouts: rollout "${error.message}" not found in table "${table}" (rollouts list shows the rollouts it holds)`,
    );
    return Exit.badInput;
  }
  if (error instanceof ConcurrentUpdateError) {
    io.err(
      "rollouts: the rollout changed while this command ran (another writer updated it): nothing was done; " +
        "check it with rollouts get and try again",
    );
    return Exit.negative;
  }
  if (error instanceof StoreUnavailableError) {
    const cause = (error as Error & { cause?: unknown }).cause;
    if (isAwsError(cause, "ResourceNotFoundException")) {
      failure(
        `rollouts: table "${table}" does not exist in this account and region (set --table or ROLLOUTS_TABLE, and AWS_REGION): ${error.message}`,
      );
      return Exit.badInput;
    }
  }
  if (
    error instanceof StoreUnavailableError ||
    error instanceof TaskTokenError ||
    error instanceof ExecutionStartError ||
    error instanceof StoredItemInvalidError
  ) {
    failure(`rollouts: ${error.message}`);
    return Exit.unavailable;
  }
  throw error;
}

function report(io: Io, outcome: OperateOutcome): number {
  if (outcome.ok) {
    io.out(printable(outcome.message));
    return Exit.ok;
  }
  io.err(`rollouts: ${printable(outcome.message)}`);
  return Exit.negative;
}

/** Clears the terminal between frames only when a person watches a terminal. */
function frameWriter(io: Io): (text: string, index: number) => void {
  const tty = io === processIo && process.stdout.isTTY === true;
  return (text, index) => {
    if (tty) io.out(`\x1b[H\x1b[2J${text}`);
    else io.out(index === 0 ? text : `\n${text}`);
  };
}

export interface WatchCommandOptions extends CommonOptions {
  watch?: boolean;
  json?: boolean;
  intervalMs: number;
  timeoutMs?: number;
  env?: AwsOptions["env"];
  interrupt?: Interrupt;
}

/** A frame of `rollouts get`: this region's view and, for a pass, the release's reading. */
interface WavesFrame {
  view: RolloutView;
  reading: WavesReading | undefined;
}

export interface GetCommandOptions extends WatchCommandOptions {
  /** A pass's release: where its coordinator runs, when neither its execution nor its tag say. */
  homeRegion?: string;
  /** How often `--watch` reads every wave again, and the clock it counts with (tests). */
  waves?: { everyMs?: number; now?: () => number };
  /** How the watch waits and how many frames it reads (tests drive it in virtual time). */
  poll?: Pick<PollOptions, "maxFrames" | "sleep">;
}

/** `rollouts list`. */
export function listAction(io: Io, options: CommonOptions & { json?: boolean; env?: AwsOptions["env"] }) {
  return withAws(io, options, async (deps) => {
    const items = await deps.store.list();
    io.out(options.json ? printableJson(items, 2) : renderList(items));
    return Exit.ok;
  });
}

/** `rollouts get NAME [--watch] [--json]`. */
export async function getAction(io: Io, name: string, options: GetCommandOptions) {
  // A pass of a release in waves: every wave beside this region's view (`waves-view.ts`).
  const waves = await import("./waves-view.ts");
  (await import("./waves-actions.ts")).checkHomeRegion(options.homeRegion);
  return withAws(io, options, async (deps) => {
    const local = (view: RolloutView) =>
      options.json
        ? printableJson({ ...view, gates: currentGates(view) }, options.watch ? undefined : 2)
        : renderRollout(view);
    const draw = ({ view, reading }: WavesFrame) =>
      options.json
        ? printableJson(
            { ...view, gates: currentGates(view), waves: waves.wavesJson(reading) },
            options.watch ? undefined : 2,
          )
        : renderRollout(view) + waves.wavesText(reading);
    const loadOne = () => loadView(deps, name, { whole: options.json === true });
    if (!options.watch) {
      const view = await loadOne();
      io.out(draw({ view, reading: await waves.readWaves(view.item, options.env, options.homeRegion) }));
      return Exit.ok;
    }
    // Every region is read on the first frame, when this region's frame changes, and every few
    // seconds; the frames in between reuse that reading.
    const refresh = new waves.WavesRefresh(
      (item) => waves.readWaves(item, options.env, options.homeRegion),
      options.waves,
    );
    const load = async (): Promise<WavesFrame> => {
      const view = await loadOne();
      return { view, reading: await refresh.get(view.item, local(view)) };
    };
    const controller = new AbortController();
    const release = (options.interrupt ?? onSigint)(controller);
    const write = options.json ? (text: string) => io.out(text) : frameWriter(io);
    try {
      await poll(
        load,
        draw,
        (text, _frame, index) => write(text, index),
        (frame) => isSettled(frame.view.item),
        { intervalMs: options.intervalMs, signal: controller.signal, ...options.poll },
      );
    } finally {
      release();
    }
    return Exit.ok;
  });
}

/** `rollouts status NAME [--watch] [--timeout DURATION]`: the phase as the exit code. */
export function statusAction(io: Io, name: string, options: WatchCommandOptions) {
  return withAws(io, options, async (deps) => {
    const watching = options.watch === true || options.timeoutMs !== undefined;
    const controller = new AbortController();
    const release = watching ? (options.interrupt ?? onSigint)(controller) : () => {};
    try {
      const { last, end } = await poll(
        () => requireItem(deps, name),
        (item) => statusLine(item),
        (text) => io.out(text),
        (item) => !watching || isSettled(item),
        {
          intervalMs: options.intervalMs,
          signal: controller.signal,
          ...(options.timeoutMs === undefined ? {} : { deadline: Date.now() + options.timeoutMs }),
        },
      );
      if (end === "timeout") {
        io.err(
          printable(
            `rollouts: timed out waiting for rollout "${name}" to become Healthy or Degraded: it is ${last.phase}`,
          ),
        );
      }
      return STATUS_EXIT[last.phase];
    } finally {
      release();
    }
  });
}

/** `rollouts promote NAME [--full]`. */
export function promoteAction(
  io: Io,
  name: string,
  options: CommonOptions & { full?: boolean; env?: AwsOptions["env"] },
) {
  return withAws(io, options, async (deps) => {
    await requireItem(deps, name);
    return report(io, await promoteRollout(deps, name, options.full === true));
  });
}

/** `rollouts abort NAME [--reason TEXT]`. */
export function abortAction(
  io: Io,
  name: string,
  options: CommonOptions & { reason?: string; env?: AwsOptions["env"] },
) {
  return withAws(io, options, async (deps) => {
    await requireItem(deps, name);
    return report(io, await abortRollout(deps, name, options.reason));
  });
}

/** `rollouts retry NAME`. */
export function retryAction(io: Io, name: string, options: CommonOptions & { env?: AwsOptions["env"] }) {
  return withAws(io, options, async (deps) => {
    await requireItem(deps, name);
    return report(io, await retryRollout(deps, name));
  });
}

/** `rollouts undo NAME`. */
export function undoAction(io: Io, name: string, options: CommonOptions & { env?: AwsOptions["env"] }) {
  return withAws(io, options, async (deps) => {
    await requireItem(deps, name);
    return report(io, await undoRollout(deps, name));
  });
}
