import { ManualClock } from "../../functions/clock.ts";
import { MemoryRolloutStore } from "../../functions/store/memory.ts";
import { newRolloutItem, type RolloutItem, type RolloutItemInput } from "../../functions/store/schema.ts";

export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
export const EXEC = "arn:aws:states:us-east-1:123456789012:execution:web:web-abc-g1";

/** A store holding one rollout that is Progressing at step 2, waiting on a pause token. */
export async function runningRollout(overrides: Partial<RolloutItemInput> = {}): Promise<{
  store: MemoryRolloutStore;
  clock: ManualClock;
  item: RolloutItem;
}> {
  const clock = new ManualClock(T0);
  const store = new MemoryRolloutStore({ clock });
  const item = await store.save(
    {
      ...newRolloutItem("web", T0),
      phase: "Paused",
      stepIndex: 2,
      stepCount: 5,
      weight: 25,
      executionArn: EXEC,
      currentRevision: { revision: 2, image: "repo@sha256:abc", digest: "sha256:abc", tag: "v2" },
      currentTaskToken: "token-pause",
      waitingFor: "pause",
      waitingSince: T0,
      ...overrides,
    },
    null,
  );
  return { store, clock, item };
}
