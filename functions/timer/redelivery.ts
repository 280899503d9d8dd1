import { z } from "zod";
import { type TimerFiring, TimerFiringSchema } from "./port.ts";

/**
 * The redelivery of a Timer firing that resume failed three times. Lambda invokes resume
 * asynchronously (Scheduler and the ticker both use `InvocationType: Event`); a function error is
 * retried twice, 1 and 2 minutes apart, and then the event goes to the function's on-failure
 * destination as an invocation record (`requestPayload` is the firing). That destination is the
 * redelivery queue (`TIMER_DELIVERY`, functions/config.ts), whose SQS event source hands the
 * record back to resume: a tick lost to a few minutes of throttling is taken late instead of
 * never, and the analysis that waits on it does not time out. Every firing is idempotent
 * (docs/state.md, "The Timer"), so a redelivered one that an earlier attempt did take does nothing.
 */

/** One SQS message as the event source hands it over (the fields read here). */
const SqsRecordSchema = z.object({
  messageId: z.string().min(1),
  body: z.string(),
  eventSource: z.literal("aws:sqs"),
});

/** An SQS event source's batch. */
export const SqsBatchSchema = z.object({ Records: z.array(SqsRecordSchema).min(1) });
export type SqsBatch = z.infer<typeof SqsBatchSchema>;

/** Lambda's asynchronous invocation record, as its on-failure destination receives it. */
const InvocationRecordSchema = z.object({
  requestContext: z
    .object({ condition: z.string().optional(), approximateInvokeCount: z.number().optional() })
    .optional(),
  requestPayload: TimerFiringSchema,
});

/** Whether a resume event is an SQS batch (the redelivery queue) rather than one firing. */
export function isSqsBatch(event: unknown): boolean {
  return (
    typeof event === "object" &&
    event !== null &&
    Array.isArray((event as { Records?: unknown }).Records) &&
    (event as { Records: Array<{ eventSource?: unknown }> }).Records.some((r) => r?.eventSource === "aws:sqs")
  );
}

/** One redelivered message: the firing it carries, or why it carries none. */
export type Redelivered = { messageId: string; firing: TimerFiring } | { messageId: string; problem: string };

/** The firings of a batch, in order; a message that is not an invocation record says why. */
export function redeliveredFirings(batch: SqsBatch): Redelivered[] {
  return batch.Records.map(({ messageId, body }) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return { messageId, problem: "the message is not JSON" };
    }
    const record = InvocationRecordSchema.safeParse(parsed);
    if (!record.success) return { messageId, problem: "the message is not an invocation record of a firing" };
    return { messageId, firing: record.data.requestPayload };
  });
}

/**
 * What an SQS event source with `ReportBatchItemFailures` reads back: the messages to receive
 * again (after the queue's visibility timeout; past `maxReceiveCount` they move to the
 * dead-letter queue). The others are deleted.
 */
export interface BatchResponse {
  batchItemFailures: Array<{ itemIdentifier: string }>;
}

/** Where `redeliver` says what became of each message (the handler's logger). */
export interface RedeliveryLog {
  info(message: string, extra: Record<string, unknown>): void;
  error(message: string, extra: Record<string, unknown>): void;
}

/**
 * Fires each firing of a redelivery batch in order; a message that carries none, or whose firing
 * fails again, is reported back to the queue.
 */
export async function redeliver(
  batch: SqsBatch,
  fire: (firing: TimerFiring) => Promise<string>,
  log: RedeliveryLog,
): Promise<BatchResponse> {
  const failures: BatchResponse["batchItemFailures"] = [];
  for (const message of redeliveredFirings(batch)) {
    try {
      if ("problem" in message) throw new Error(message.problem);
      const result = await fire(message.firing);
      log.info("redelivered", { key: message.firing.key, result });
    } catch (error) {
      log.error("redelivery failed", { messageId: message.messageId, error: error as Error });
      failures.push({ itemIdentifier: message.messageId });
    }
  }
  return { batchItemFailures: failures };
}
