import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assess } from "../../statemachine/design/arithmetic.ts";
import { candidatesOf } from "../../statemachine/design/candidates.ts";
import { choose } from "../../statemachine/design/choose.ts";
import { DesignInputError } from "../../statemachine/design/input.ts";
import { thresholdsOf } from "../../statemachine/design/thresholds.ts";
import { renderDesignPage } from "../design/html.ts";
import { designInputOf } from "../design/options.ts";
import { renderText } from "../design/render.ts";
import { designReport } from "../design/report.ts";
import { type SearchResult, search, simulateSubtle, type TriedWithSeries } from "../design/search.ts";
import { Exit, type Io, processIo, UsageError } from "../io.ts";
import { loadSimulationRuntime, SimulationInputError, type SimulationRuntime } from "../simulate/runtime.ts";
import { printable, printableJson } from "../terminal.ts";

export interface DesignOptions {
  rps?: number;
  sloErrorRate?: number;
  sloP95?: number;
  baselineErrorRate?: number;
  replicas: number;
  router: string;
  metrics?: string;
  exposureBudget?: number;
  maxDuration: string;
  scrapeInterval: string;
  name: string;
  seed: number;
  json?: boolean;
  html?: string;
  model?: boolean;
  signal: string[];
  baseline: string[];
  minEffect: string[];
}

/** Where the search's progress line goes: a terminal's stderr, or nowhere. */
export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

/** What the action reaches outside: the runtime, the progress stream and the clock (tests replace them). */
export interface DesignDeps {
  loadRuntime?: () => Promise<SimulationRuntime | Error>;
  progress?: ProgressStream;
  /** Milliseconds, for the search's wall time in the report. */
  now?: () => number;
}

/**
 * The action of `rollouts design`, apart from its registration so that the design and the
 * runtime load only when it runs. Resolves to the exit code: 0 a design was chosen, 1 no
 * candidate was accepted, 2 input it cannot use.
 */
export async function designAction(io: Io, opts: DesignOptions, deps: DesignDeps = {}): Promise<number> {
  try {
    if (opts.model) {
      const { modelAction } = await import("../design/model.ts");
      return modelAction(io, opts);
    }
    return await canaryAction(io, opts, deps);
  } catch (error) {
    if (error instanceof DesignInputError || error instanceof SimulationInputError) {
      throw new UsageError(error.message);
    }
    throw error;
  }
}

/** A progress line on a terminal's stderr, rewritten in place; nothing when piped or with --json. */
function progressLine(io: Io, opts: DesignOptions, deps: DesignDeps, now: () => number) {
  const stream = deps.progress ?? (io === processIo ? process.stderr : undefined);
  if (!stream?.isTTY || opts.json) return { update: () => {}, clear: () => {} };
  const started = now();
  return {
    update: (done: number, of: number) => {
      const wall = Math.round((now() - started) / 1000);
      stream.write(`\r\x1b[Krollouts design: simulated ${done} of at most ${of} candidates, ${wall} s`);
    },
    clear: () => stream.write("\r\x1b[K"),
  };
}

async function canaryAction(io: Io, opts: DesignOptions, deps: DesignDeps): Promise<number> {
  const { input, budgetGiven } = await designInputOf(opts);
  const thresholds = thresholdsOf(input);
  const assessed = assess(input, thresholds, candidatesOf(input));
  const runtime = await (deps.loadRuntime ?? loadSimulationRuntime)();
  if (runtime instanceof Error) {
    io.err(printable(`rollouts: ${runtime.message}`));
    return Exit.badInput;
  }
  const now = deps.now ?? (() => performance.now());
  const started = now();
  const progress = progressLine(io, opts, deps, now);
  const dir = mkdtempSync(join(tmpdir(), "sfn-rollouts-design-"));
  let found: SearchResult;
  let chosen: TriedWithSeries | undefined;
  let subtle: Awaited<ReturnType<typeof simulateSubtle>> | undefined;
  try {
    const o = { input, thresholds, assessed, runtime, dir, seed: opts.seed, progress: progress.update };
    found = await search(o);
    chosen = choose(found.tried) as TriedWithSeries | undefined;
    if (chosen) subtle = await simulateSubtle(o, chosen);
  } finally {
    progress.clear();
    rmSync(dir, { recursive: true, force: true });
  }
  const report = designReport({
    input,
    budgetGiven,
    seed: opts.seed,
    thresholds,
    assessed,
    tried: found.tried,
    chosen,
    subtle,
    simulations: found.simulations + (chosen ? 1 : 0),
    wallSeconds: (now() - started) / 1000,
  });
  if (opts.html) writeHtml(io, opts.html, renderDesignPage(report, { byId: seriesById(found.tried) }));
  io.out(opts.json ? printableJson(report, 2) : printable(renderText(report), { multiline: true }));
  return chosen ? Exit.ok : Exit.negative;
}

function seriesById(tried: readonly TriedWithSeries[]) {
  return new Map(tried.map((t) => [t.assessed.candidate.id, t.series]));
}

function writeHtml(io: Io, file: string, page: string): void {
  try {
    writeFileSync(file, page);
  } catch (error) {
    throw new UsageError(`--html: cannot write ${file}: ${(error as Error).message}`);
  }
  io.err(printable(`wrote ${file} (${Buffer.byteLength(page)} bytes)`));
}
