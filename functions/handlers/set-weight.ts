import { StepPayloadSchema } from "../workflow/payloads.ts";
import { setWeight } from "../workflow/set-weight.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** A traffic step: weight, header route, mirror route or preview; drift is returned, not overwritten. */
export const createHandler = workflowHandler("set-weight", StepPayloadSchema, setWeight);
export const handler = createHandler(rootDeps);
