import { abort } from "../workflow/abort.ts";
import { AbortPayloadSchema } from "../workflow/payloads.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** Abort: traffic back to stable, the rollout Degraded with Argo's message. */
export const createHandler = workflowHandler("abort", AbortPayloadSchema, abort);
export const handler = createHandler(rootDeps);
