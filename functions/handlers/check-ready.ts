import { checkReady } from "../workflow/check-ready.ts";
import { CheckReadyPayloadSchema } from "../workflow/payloads.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** One readiness poll of a target with pods, for the Wait loop. */
export const createHandler = workflowHandler("check-ready", CheckReadyPayloadSchema, checkReady);
export const handler = createHandler(rootDeps);
