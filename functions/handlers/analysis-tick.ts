import { z } from "zod";
import { logged } from "../observability/logging.ts";
import { analysisTick } from "../workflow/analysis.ts";
import type { WorkflowDeps } from "../workflow/deps.ts";
import { type Handler, parsePayload } from "./parse.ts";
import { rootDeps } from "./root.ts";

const TickSchema = z.object({ rollout: z.string().min(1), runId: z.string().min(1) });

/**
 * Takes the due measurements of one analysis run. The Timer normally reaches ticks through
 * `resume`; this entry point lets an operator or a test tick a run directly.
 */
export function createHandler(deps: () => WorkflowDeps): Handler<{ phase: string | null }> {
  return logged("analysis-tick", async (event) => {
    const { rollout, runId } = parsePayload(TickSchema, event, "analysis-tick");
    const run = await analysisTick(deps(), rollout, runId);
    return { phase: run?.phase ?? null };
  });
}

export const handler = createHandler(rootDeps);
