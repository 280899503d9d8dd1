import { logged } from "../observability/logging.ts";
import { TimerFiringSchema } from "../timer/port.ts";
import { type BatchResponse, isSqsBatch, redeliveredFirings, SqsBatchSchema } from "../timer/redelivery.ts";
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
      const failures: BatchResponse["batchItemFailures"] = [];
      for (const message of redeliveredFirings(parsePayload(SqsBatchSchema, event, "resume"))) {
        try {
          if ("problem" in message) throw new Error(message.problem);
          const result = await fire(deps(), message.firing);
          log.info("redelivered", { key: message.firing.key, result });
        } catch (error) {
          log.error("redelivery failed", { messageId: message.messageId, error: error as Error });
          failures.push({ itemIdentifier: message.messageId });
        }
      }
      return { batchItemFailures: failures };
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
