import { logged } from "../observability/logging.ts";
import { TimerFiringSchema } from "../timer/port.ts";
import { type BatchResponse, isSqsBatch, redeliver, SqsBatchSchema } from "../timer/redelivery.ts";
import type { WorkflowDeps } from "../workflow/deps.ts";
import { ResumePayloadSchema } from "../workflow/payloads.ts";
import { resume } from "../workflow/resume.ts";
import { type Handler, parsePayload } from "./parse.ts";
import { rootDeps } from "./root.ts";

/**
 * The Timer firing (EventBridge Scheduler, the ticker, or the in-process timer): a pause ends, an
 * analysis ticks, an old side is scaled down, an abort continues. A batch from the redelivery
 * queue (`functions/timer/redelivery.ts`) carries firings Lambda's asynchronous retries gave up
 * on: each is resumed again, and the ones that fail once more are reported back to the queue.
 */
export function createHandler(deps: () => WorkflowDeps): Handler<{ result: string } | BatchResponse> {
  return logged("resume", async (event, log) => {
    if (isSqsBatch(event)) {
      return redeliver(parsePayload(SqsBatchSchema, event, "resume"), (firing) => fire(deps(), firing), log);
    }
    return { result: await fire(deps(), event) };
  });
}

/** One firing: its payload checked, then `resume`. */
function fire(deps: WorkflowDeps, event: unknown): Promise<string> {
  const firing = parsePayload(TimerFiringSchema, event, "resume");
  const payload = parsePayload(ResumePayloadSchema, firing.payload, "resume");
  return resume(deps, payload, firing.key);
}

export const handler = createHandler(rootDeps);
