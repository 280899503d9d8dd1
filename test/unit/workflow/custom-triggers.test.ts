import { digest, startFakeRollout } from "@sfn-rollouts/test-support/fake-rollout";
import { describe, expect, it, onTestFinished } from "vitest";

/**
 * Custom notification triggers on the compiled workflow in the embedded runtime: Begin evaluates
 * each condition of the ConfigMap's custom triggers for the new revision and publishes
 * `NotificationTriggered` for those that hold; a `when` that fails to run is recorded on the item.
 */
describe("custom notification triggers", () => {
  it("fire at Begin when their when holds for the revision; a when that fails is an item event", async () => {
    const w = await startFakeRollout({
      steps: [{ kind: "setWeight", weight: 50 }],
      spec: {
        notificationCatalog: {
          triggers: {
            "on-v2": [
              { send: ["t"], when: `rollout.status.currentPodHash == '${digest(2)}'` },
              { send: ["t"] },
            ],
            "on-broken": [{ send: ["t"], when: "len(rollout.metadata.nope) > 0" }],
            // A built-in trigger fires on its own event, never at Begin.
            "on-rollout-completed": [{ send: ["t"] }],
          },
          templates: { t: { message: "m" } },
        },
      },
    });
    onTestFinished(() => w.close());
    await w.rollOut({ digest: digest(1), tag: "v1" });
    await w.rollOut({ digest: digest(2), tag: "v2" });
    const fired = w.events
      .ofType("NotificationTriggered")
      .map((e) => `${e.detail.revision} ${e.detail.trigger}[${e.detail.condition}] ${e.detail.message}`);
    expect(fired).toEqual([
      "1 on-v2[1] Trigger on-v2[1] fired for revision 1 (v1)",
      "2 on-v2[0] Trigger on-v2 fired for revision 2 (v2)",
      "2 on-v2[1] Trigger on-v2[1] fired for revision 2 (v2)",
    ]);
    const item = await w.item();
    // Once per revision: v1's Begin and v2's.
    expect(item.events.filter((e) => e.type === "NotificationTriggerError").map((e) => e.message)).toEqual([
      "trigger on-broken[0].when: invalid argument for len (type <nil>)",
      "trigger on-broken[0].when: invalid argument for len (type <nil>)",
    ]);
  });
});
