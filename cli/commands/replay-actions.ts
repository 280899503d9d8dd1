import {
  type RecordedMeasurement,
  ReplayInputError,
  type ReplayRow,
  type ReplaySummary,
  replayMeasurements,
  replayMetrics,
  summarize,
  summaryLine,
} from "../../functions/analysis/index.ts";
import { formatNumber } from "../../functions/judges/index.ts";
import type { StoredRun } from "../../functions/store/port.ts";
import type { StoredAnalysis } from "../../functions/workflow/analysis.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { rebudget } from "../../statemachine/error-budget.ts";
import { formatProblem, loadAnalysisTemplates, type Metric, SpecError } from "../../statemachine/index.ts";
import type { AwsOptions } from "../aws.ts";
import { Exit } from "../exit-codes.ts";
import { type Io, UsageError } from "../io.ts";
import { printProblems } from "../problem-lines.ts";
import { StoredMeasurementValueSchema } from "../render.ts";
import { printable, printableJson } from "../terminal.ts";
import { RolloutMissingError, withAws } from "./operate-actions.ts";

export interface ReplayOptions {
  table?: string;
  analysis?: string;
  template?: string[];
  arg?: string[];
  /** Decide again as if the rollout's error budget were this (the gates' shares scaled to it). */
  errorBudget?: string;
  json?: boolean;
  env?: AwsOptions["env"];
}

export interface ReplayedRun {
  runId: string;
  templates: string[];
  rows: ReplayRow[];
  summary: ReplaySummary;
}

function args(list: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of list) {
    const eq = value.indexOf("=");
    if (eq <= 0) throw new UsageError(`--arg must be NAME=VALUE, got "${value}"`);
    out[value.slice(0, eq)] = value.slice(eq + 1);
  }
  return out;
}

/** `step01` or `background` names a run by the end of its id; a template name by its templates. */
function selected(run: StoredRun<StoredAnalysis>, analysis: string | undefined): boolean {
  if (analysis === undefined) return true;
  return run.runId === analysis || run.runId.endsWith(`.${analysis}`) || run.run.templates.includes(analysis);
}

/** A judge's decision in a row: `FAIL p=7.2e-04`, `hold p=0.32 BF=3.1`. */
function decision(f: { verdict: string; pValue: number | null; bayesFactor: number | null }): string {
  const p = f.pValue !== null ? ` p=${formatNumber(f.pValue)}` : "";
  const bf = f.bayesFactor !== null ? ` BF=${formatNumber(f.bayesFactor)}` : "";
  return `${f.verdict}${p}${bf}`;
}

function renderRun(r: ReplayedRun): string {
  const lines = [printable(`run ${r.runId} (${r.templates.join(", ")})`)];
  for (const row of r.rows) {
    const replayed = row.replayed ?? "-";
    const mark = row.differs ? "  *" : "";
    const value = row.value !== undefined ? ` = ${row.value}` : "";
    const note = row.note ? `  (${row.note})` : "";
    const judge = row.judge
      ? `  [${decision(row.judge.recorded)} → ${row.judge.replayed ? decision(row.judge.replayed) : "-"}]`
      : "";
    lines.push(
      printable(
        `  ${row.metric} #${row.index} ${row.at}${value}: ${row.recorded} → ${replayed}${mark}${judge}${note}`,
      ),
    );
  }
  lines.push(printable(`  ${summaryLine(r.summary)}`));
  return lines.join("\n");
}

/** `rollouts replay ROLLOUT [--analysis NAME] [--template FILE...] [--json]`. */
export async function replayAction(io: Io, rollout: string, options: ReplayOptions): Promise<number> {
  let changed: Metric[] | undefined;
  let budget: number | undefined;
  if (options.errorBudget !== undefined) {
    budget = Number(options.errorBudget);
    if (!(options.errorBudget.trim() !== "" && budget > 0 && budget < 1)) {
      io.err(
        printable(
          `rollouts: --error-budget is a probability strictly between 0 and 1 (0.05), not "${options.errorBudget}"`,
        ),
      );
      return Exit.badInput;
    }
  }
  if (options.template && options.template.length > 0) {
    try {
      const spec = await loadAnalysisTemplates(options.template, args(options.arg));
      changed = spec.templates.flatMap((t) => t.metrics);
    } catch (error) {
      if (error instanceof SpecError) {
        printProblems(io, error.problems.map(formatProblem));
        return Exit.badInput;
      }
      if (error instanceof UsageError) {
        io.err(printable(`rollouts: ${error.message}`));
        return Exit.badInput;
      }
      throw error;
    }
  }
  return withAws(io, options, async (deps) => {
    const item = await deps.store.get(rollout);
    if (!item) throw new RolloutMissingError(rollout);
    const runs = (await deps.store.listRuns(rollout, StoredAnalysisSchema))
      .filter((r) => selected(r, options.analysis))
      .sort(
        (a, b) => a.run.run.startedAt.localeCompare(b.run.run.startedAt) || a.runId.localeCompare(b.runId),
      );
    if (runs.length === 0) {
      io.err(
        printable(
          options.analysis === undefined
            ? `rollouts: rollout "${rollout}" has no recorded analysis runs`
            : `rollouts: rollout "${rollout}" has no analysis run named "${options.analysis}" (by run id or template)`,
        ),
      );
      return Exit.badInput;
    }
    const replayed: ReplayedRun[] = [];
    for (const run of runs) {
      let metrics: Metric[];
      try {
        // Each judge decides again in its gate's place in the rollout's budget (or the one asked for).
        metrics = replayMetrics(run.run.run.metrics, changed).map((m) => {
          const recorded = run.run.run.metrics.find((r) => r.name === m.name)?.provider.judge;
          const judge = m.provider.judge;
          return judge ? { ...m, provider: { ...m.provider, judge: rebudget(judge, recorded, budget) } } : m;
        });
      } catch (error) {
        // With several runs, a template fits those that measured its metrics.
        if (error instanceof ReplayInputError && runs.length > 1) continue;
        if (error instanceof ReplayInputError) {
          io.err(printable(`rollouts: run ${run.runId}: ${error.message}`));
          return Exit.badInput;
        }
        throw error;
      }
      const stored = await deps.store.listMeasurements(rollout, run.runId, StoredMeasurementValueSchema);
      const recorded: RecordedMeasurement[] = stored.map(({ value: { metric, ...measurement } }) => ({
        metric,
        measurement,
      }));
      const rows = replayMeasurements(metrics, recorded, run.run.run.metrics);
      replayed.push({ runId: run.runId, templates: run.run.templates, rows, summary: summarize(rows) });
    }
    if (replayed.length === 0) {
      io.err(printable("rollouts: no recorded run measured the template's metrics"));
      return Exit.badInput;
    }
    const total = summarize(replayed.flatMap((r) => r.rows));
    if (options.json) io.out(printableJson({ rollout, runs: replayed, summary: total }, 2));
    else {
      io.out(replayed.map(renderRun).join("\n"));
      io.out(printable(summaryLine(total)));
    }
    return total.differ > 0 ? Exit.negative : Exit.ok;
  });
}
