import type { OperateDeps } from "../../functions/workflow/operate.ts";
import { currentRunsView, RolloutMissingError } from "../commands/operate-actions.ts";
import type { RolloutView } from "../render.ts";

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
  return currentRunsView(deps, item, CHART_MEASUREMENTS);
}
