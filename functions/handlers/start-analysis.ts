import { startAnalysis } from "../workflow/analysis.ts";
import { StartAnalysisPayloadSchema } from "../workflow/payloads.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** Starts an analysis run (a step's, with a token; or the background one) and schedules its first tick. */
export const createHandler = workflowHandler("start-analysis", StartAnalysisPayloadSchema, startAnalysis);
export const handler = createHandler(rootDeps);
