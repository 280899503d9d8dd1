import { begin } from "../workflow/begin.ts";
import { BeginPayloadSchema } from "../workflow/payloads.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** Begin: takes over the rollout for this execution and puts the candidate in place. */
export const createHandler = workflowHandler("begin", BeginPayloadSchema, begin);
export const handler = createHandler(rootDeps);
