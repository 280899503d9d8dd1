import { direct, execArn, itemOf, NAME, startRevision, T0 } from "@sfn-rollouts/test-support/direct-workflow";
import { describe, expect, it } from "vitest";
import { lifecycleEvent } from "../../../functions/events/port.ts";
import { commit, flush, publishEffect, startEffects } from "../../../functions/workflow/effects.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";

/**
 * `flush` performs an execution's pending side effects one by one. Once a newer execution took the
 * rollout over (Begin's takeover starts a fresh record), what the older one still had pending is
 * no longer its to do.
 */
describe("flush", () => {
  const event = (message: string) =>
    lifecycleEvent("RolloutStepCompleted", { rollout: NAME, message, atMs: T0 });

  it("stops performing an execution's effects as soon as a newer execution takes over", async () => {
    const d = direct();
    const r2: WorkflowContext = await startRevision(d, 2);
    const item = await itemOf(d);
    await d.store.save(
      commit(item, r2, "step-00", [
        publishEffect(r2, "step-00", event("first")),
        publishEffect(r2, "step-00", { ...event("second"), type: "RolloutPaused" }),
        publishEffect(r2, "step-00", { ...event("third"), type: "RolloutCompleted" }),
      ]),
      item.version,
    );
    const newer = execArn("checkout-333333333333-g3");
    const publish = d.deps.events.publish;
    d.deps.events = {
      publish: async (list) => {
        await publish(list);
        // While the first event goes out, a newer execution takes the rollout over.
        if (d.events.published.length === 1) {
          const latest = await itemOf(d);
          await d.store.save({ ...startEffects(latest, newer), executionArn: newer }, latest.version);
        }
      },
    };
    d.events.published.length = 0;
    await flush(d.deps, r2);
    expect(d.events.published.map((e) => e.detail.message)).toEqual(["first"]);
    expect((await itemOf(d)).effects).toEqual({ executionArn: newer, done: [], pending: [] });
  });

  it("performs every pending effect of the execution that still drives the rollout", async () => {
    const d = direct();
    const r2 = await startRevision(d, 2);
    const item = await itemOf(d);
    await d.store.save(
      commit(item, r2, "step-00", [
        publishEffect(r2, "step-00", event("first")),
        publishEffect(r2, "step-00", { ...event("second"), type: "RolloutPaused" }),
      ]),
      item.version,
    );
    d.events.published.length = 0;
    await flush(d.deps, r2);
    expect(d.events.published.map((e) => e.detail.message)).toEqual(["first", "second"]);
    expect((await itemOf(d)).effects.pending).toEqual([]);
  });
});
