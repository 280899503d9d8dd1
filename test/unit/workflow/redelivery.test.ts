import type { RolloutFunction } from "@sfn-rollouts/test-support/embedded-rollout";
import { digest, type FakeRollout, startStableRollout } from "@sfn-rollouts/test-support/fake-rollout";
import { describe, expect, it, onTestFinished } from "vitest";
import { TIMER_DELIVERY } from "../../../functions/config.ts";
import type { TimerFiring } from "../../../functions/timer/port.ts";
import type { LambdaHandler } from "../../../local/aws/lambda.ts";

/**
 * A Timer firing reaches resume as on AWS: invoked asynchronously, retried by Lambda 1 and 2
 * minutes later, then handed to resume again from the redelivery queue (its on-failure
 * destination). A tick whose resume fails all three asynchronous attempts is taken late, from the
 * queue, instead of being lost and timing the analysis out.
 */

const v2 = { digest: digest(2), tag: "v2" };

/** Resume failing, as a throttled DynamoDB does, the first `times` direct invocations of the first tick it gets. */
function failingFirstTick(times: number) {
  const seen: { key?: string; failures: number; redelivered: number } = { failures: 0, redelivered: 0 };
  const wrap = (name: RolloutFunction, handler: LambdaHandler): LambdaHandler =>
    name !== "resume"
      ? handler
      : async (event, context) => {
          if ((event as { Records?: unknown }).Records !== undefined) seen.redelivered++;
          const firing = event as Partial<TimerFiring> & { payload?: { kind?: string } };
          if (firing.payload?.kind === "tick") seen.key ??= firing.key;
          if (firing.key !== undefined && firing.key === seen.key && seen.failures < times) {
            seen.failures++;
            const error = new Error("GetItem failed: ProvisionedThroughputExceededException");
            error.name = "StoreUnavailableError";
            throw error;
          }
          return handler(event, context);
        };
  return { seen, wrap };
}

async function stable(wrap: ReturnType<typeof failingFirstTick>["wrap"]): Promise<FakeRollout> {
  const w = await startStableRollout({ delivery: "async", wrap });
  onTestFinished(() => w.close());
  return w;
}

describe("a tick whose resume fails every asynchronous attempt", () => {
  it("is redelivered from the queue: the analysis takes it late and the good rollout is promoted", async () => {
    const { seen, wrap } = failingFirstTick(TIMER_DELIVERY.asyncRetryAttempts + 1);
    const w = await stable(wrap);
    const start = w.clock.now();
    expect(await w.rollOut(v2)).toEqual({ state: "Healthy" });
    expect(seen.failures).toBe(3);
    expect(w.delivery.failures.map((f) => f.stage)).toEqual(["async 0", "async 1", "async 2"]);
    expect(w.delivery.redelivered.map((f) => f.key)).toEqual([seen.key]);
    expect(seen.redelivered).toBe(1);
    expect(w.delivery.lost).toEqual([]);
    // The first measurement waited for the redelivery: Lambda's retries 1 and 2 minutes apart.
    expect(w.provider.calls[0]?.at).toBeGreaterThanOrEqual(start + 3 * 60_000);
    const item = await w.item();
    expect(item).toMatchObject({ phase: "Healthy", stableRevision: { tag: "v2" } });
    expect(item.events.map((e) => e.type)).toContain("AnalysisRunSuccessful");
    expect(w.router.stable).toBe("v2");
  });

  it("is lost to the dead-letter queue only once every receive failed too, and the analysis then times out", async () => {
    const { seen, wrap } = failingFirstTick(Number.POSITIVE_INFINITY);
    // The redelivered records fail as well: resume reports each one back to the queue.
    const failingBatches =
      (name: RolloutFunction, handler: LambdaHandler): LambdaHandler =>
      async (event, context) => {
        const records = (event as { Records?: Array<{ messageId: string }> }).Records;
        if (name === "resume" && records !== undefined) {
          seen.redelivered++;
          return { batchItemFailures: records.map((r) => ({ itemIdentifier: r.messageId })) };
        }
        return wrap(name, handler)(event, context);
      };
    const w = await stable(failingBatches);
    const ending = await w.rollOut(v2);
    expect(ending).toMatchObject({ state: "Aborted", message: expect.stringContaining("States.Timeout") });
    expect(seen.redelivered).toBe(TIMER_DELIVERY.redeliveryReceives);
    expect(w.delivery.lost.map((f) => f.key)).toEqual([seen.key]);
  });
});
