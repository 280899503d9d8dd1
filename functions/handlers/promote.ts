import { PromotePayloadSchema } from "../workflow/payloads.ts";
import { promote } from "../workflow/promote.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** Promote: the candidate becomes stable with all the traffic; the old side is scaled down later. */
export const createHandler = workflowHandler("promote", PromotePayloadSchema, promote);
export const handler = createHandler(rootDeps);
