import { logged } from "../observability/logging.ts";
import { TimerFiringSchema } from "../timer/port.ts";
import type { WorkflowDeps } from "../workflow/deps.ts";
import { ResumePayloadSchema } from "../workflow/payloads.ts";
import { resume } from "../workflow/resume.ts";
import { type Handler, parsePayload } from "./parse.ts";
import { rootDeps } from "./root.ts";

/**
 * The Timer firing (EventBridge Scheduler, the ticker, or the in-process timer): a pause ends, an
 * analysis ticks, an old side is scaled down, an abort continues.
 */
export function createHandler(deps: () => WorkflowDeps): Handler<{ result: string }> {
  return logged("resume", async (event) => {
    const firing = parsePayload(TimerFiringSchema, event, "resume");
    const payload = parsePayload(ResumePayloadSchema, firing.payload, "resume");
    return { result: await resume(deps(), payload, firing.key) };
  });
}

export const handler = createHandler(rootDeps);
