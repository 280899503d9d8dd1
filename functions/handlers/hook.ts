import { runHook } from "../workflow/hook.ts";
import { HookPayloadSchema } from "../workflow/payloads.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** A lifecycle hook's wait: stores the token, then starts the hook function with it. */
export const createHandler = workflowHandler("hook", HookPayloadSchema, runHook);
export const handler = createHandler(rootDeps);
