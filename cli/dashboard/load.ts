import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { executionName } from "../../functions/workflow/item.ts";
import type { OperateDeps } from "../../functions/workflow/operate.ts";
import { RolloutMissingError } from "../commands/operate-actions.ts";
import { type RolloutView, runsOfCurrentExecution, StoredMeasurementValueSchema } from "../render.ts";

/** Measurements a chart draws per metric: the newest, enough to see a trend, bounded per refresh. */
export const CHART_MEASUREMENTS = 200;

/**
 * What the rollout page shows, read as `rollouts get` reads a frame but for charts: the whole item
 * (the buttons depend on the token), the current execution's runs only (their ids start with its
 * name), and of each of their metrics the newest {@link CHART_MEASUREMENTS} measurements. The
 * dashboard repeats this every refresh, so it reads no older execution's runs.
 */
export async function loadPageView(deps: Pick<OperateDeps, "store">, name: string): Promise<RolloutView> {
  const item = await deps.store.get(name);
  if (!item) throw new RolloutMissingError(name);
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
          last: CHART_MEASUREMENTS,
          // `a#` also starts the ids of a metric named `a#b`: only `a#<sequence>` is this metric's.
          match: (id) => /^\d+$/.test(id.slice(metric.length + 1)),
        }),
      ),
    );
    measurements[run.runId] = lists.flat();
  }
  return { item, runs, measurements };
}
