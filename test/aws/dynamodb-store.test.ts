/**
 * The DynamoDB store against moto's DynamoDB: the whole store contract (`store-contract.ts`, the
 * one the in-memory store and dynalite pass), and the item as DynamoDB holds it, read back with a
 * plain `GetItem`. The SDK-mock twin is `test/unit/store/dynamodb-mock.test.ts`.
 */
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { createRolloutsTable } from "@sfn-rollouts/test-support/dynalite";
import { type Moto, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { ConcurrentUpdateError, DynamoRolloutStore, newRolloutItem } from "../../functions/store/index.ts";
import { storeContract } from "../unit/store/store-contract.ts";

const T0 = Date.UTC(2026, 0, 1);
const TABLE = "rollouts";
let moto: Moto;
const clients: DynamoDBClient[] = [];
/** A new client each call: separate clients behave like separate Lambdas. */
function client(): DynamoDBClient {
  const c = new DynamoDBClient(moto.config);
  clients.push(c);
  return c;
}

beforeAll(async () => {
  moto = await startMoto();
  await createRolloutsTable(client(), TABLE);
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  await moto?.close();
});

storeContract("moto", () => {
  const clock = new ManualClock(T0);
  return {
    clock,
    a: new DynamoRolloutStore({ client: client(), tableName: TABLE, clock }),
    b: new DynamoRolloutStore({ client: client(), tableName: TABLE, clock }),
  };
});

describe("DynamoRolloutStore's item in moto", () => {
  it("is the rollout under ROLLOUT#<name>/STATE with its version, kind and time", async () => {
    const clock = new ManualClock(T0);
    const store = new DynamoRolloutStore({ client: client(), tableName: TABLE, clock });
    const first = await store.save(newRolloutItem("checkout-raw", T0), null);
    clock.advance(5_000);
    await store.save({ ...first, weight: 30 }, first.version);
    const { Item } = await client().send(
      new GetItemCommand({
        TableName: TABLE,
        Key: { pk: { S: "ROLLOUT#checkout-raw" }, sk: { S: "STATE" } },
        ConsistentRead: true,
      }),
    );
    expect(Item?.kind).toEqual({ S: "ROLLOUT" });
    expect(Item?.name).toEqual({ S: "checkout-raw" });
    expect(Item?.version).toEqual({ N: "2" });
    expect(Item?.weight).toEqual({ N: "30" });
    expect(Item?.updatedAt).toEqual({ N: String(T0 + 5_000) });
    // The version 1 the first write was conditioned on is gone: moto refuses a write at it.
    await expect(store.save({ ...first, weight: 50 }, first.version)).rejects.toBeInstanceOf(
      ConcurrentUpdateError,
    );
  });
});
