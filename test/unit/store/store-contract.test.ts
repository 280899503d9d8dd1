import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { afterAll, beforeAll } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { DynamoRolloutStore, MemoryRolloutStore } from "../../../functions/store/index.ts";
import { storeContract } from "./store-contract.ts";

/**
 * The store's contract (`store-contract.ts`) against the in-memory store and against a real
 * in-process DynamoDB (dynalite), where conditional-write conflicts are real
 * `ConditionalCheckFailedException`s. moto's DynamoDB runs it too, in the full tier
 * (`test/aws/dynamodb-store.test.ts`).
 */
const T0 = Date.UTC(2026, 0, 1);
let harness: DynaliteHarness;

beforeAll(async () => {
  harness = await startDynalite();
});
afterAll(async () => {
  await harness?.close();
});

storeContract("memory", () => {
  const clock = new ManualClock(T0);
  const store = new MemoryRolloutStore({ clock });
  return { clock, a: store, b: store };
});

storeContract("dynalite", () => {
  const clock = new ManualClock(T0);
  const tableName = harness.tableName;
  return {
    clock,
    a: new DynamoRolloutStore({ client: harness.client(), tableName, clock }),
    b: new DynamoRolloutStore({ client: harness.client(), tableName, clock }),
  };
});
