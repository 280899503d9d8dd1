import { checkAlarms } from "../workflow/check-alarms.ts";
import { CheckAlarmsPayloadSchema } from "../workflow/payloads.ts";
import { workflowHandler } from "./parse.ts";
import { rootDeps } from "./root.ts";

/** A step boundary's alarm check: an alarm in ALARM aborts the rollout before the next step. */
export const createHandler = workflowHandler("check-alarms", CheckAlarmsPayloadSchema, checkAlarms);
export const handler = createHandler(rootDeps);
