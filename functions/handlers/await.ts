import { awaitStep } from "../workflow/await.ts";
import { AwaitPayloadSchema } from "../workflow/payloads.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** A wait for time or a person: stores the task token and, for a timed pause, schedules the resume. */
export const createHandler = workflowHandler("await", AwaitPayloadSchema, awaitStep);
export const handler = createHandler(rootDeps);
