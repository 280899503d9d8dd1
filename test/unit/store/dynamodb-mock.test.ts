import { gunzipSync, gzipSync } from "node:zlib";
import { ConditionalCheckFailedException, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ManualClock } from "../../../functions/clock.ts";
import {
  ConcurrentUpdateError,
  DynamoRolloutStore,
  ItemTooLargeError,
  newRolloutItem,
  StoredItemInvalidError,
  StoreUnavailableError,
  update,
  WriteRejectedError,
} from "../../../functions/store/index.ts";

const doc = mockClient(DynamoDBDocumentClient);
const T0 = Date.UTC(2026, 0, 1);
const clock = new ManualClock(T0);
const store = () =>
  new DynamoRolloutStore({
    client: new DynamoDBClient({ region: "us-east-1" }),
    tableName: "rollouts",
    clock,
  });

const stored = (overrides: Record<string, unknown> = {}) => ({
  pk: "ROLLOUT#web",
  sk: "STATE",
  kind: "ROLLOUT",
  ...newRolloutItem("web", T0),
  version: 3,
  updatedAt: T0,
  ...overrides,
});

beforeEach(() => doc.reset());

describe("DynamoRolloutStore calls", () => {
  it("reads the rollout item with a strongly consistent GetItem on ROLLOUT#<name>/STATE", async () => {
    doc.on(GetCommand).resolves({ Item: stored() });
    const item = await store().get("web");
    expect(item).toMatchObject({ name: "web", version: 3 });
    expect(item).not.toHaveProperty("pk");
    expect(doc.commandCalls(GetCommand)[0]?.args[0].input).toEqual({
      TableName: "rollouts",
      Key: { pk: "ROLLOUT#web", sk: "STATE" },
      ConsistentRead: true,
    });
  });

  it("writes with a version condition and increments the version", async () => {
    doc.on(PutCommand).resolves({});
    const written = await store().save({ ...newRolloutItem("web", T0), weight: 10 }, 3);
    expect(written.version).toBe(4);
    const input = doc.commandCalls(PutCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      TableName: "rollouts",
      ConditionExpression: "#version = :expected",
      ExpressionAttributeNames: { "#version": "version" },
      ExpressionAttributeValues: { ":expected": 3 },
      Item: { pk: "ROLLOUT#web", sk: "STATE", kind: "ROLLOUT", version: 4, weight: 10, updatedAt: T0 },
    });
  });

  it("creates with attribute_not_exists", async () => {
    doc.on(PutCommand).resolves({});
    await store().save(newRolloutItem("web", T0), null);
    expect(doc.commandCalls(PutCommand)[0]?.args[0].input).toMatchObject({
      ConditionExpression: "attribute_not_exists(#pk)",
      Item: { version: 1 },
    });
  });

  it("turns ConditionalCheckFailedException into ConcurrentUpdateError with the cause", async () => {
    const cause = new ConditionalCheckFailedException({
      message: "The conditional request failed",
      $metadata: {},
    });
    doc.on(PutCommand).rejects(cause);
    const error = await store()
      .save(newRolloutItem("web", T0), 3)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConcurrentUpdateError);
    expect(error).toMatchObject({ name: "ConcurrentUpdateError", expectedVersion: 3, cause });
  });

  it("wraps other SDK failures in StoreUnavailableError", async () => {
    doc.on(GetCommand).rejects(Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }));
    await expect(store().get("web")).rejects.toMatchObject({
      name: "StoreUnavailableError",
      message: expect.stringContaining("ThrottlingException"),
    });
    await expect(store().get("web")).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("names the item and the field path when a stored item is invalid", async () => {
    doc.on(GetCommand).resolves({ Item: stored({ phase: "Exploded", weight: 120 }) });
    const error = await store()
      .get("web")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoredItemInvalidError);
    expect((error as Error).message).toContain("ROLLOUT#web/STATE");
    expect((error as Error).message).toContain("phase");
    expect((error as Error).message).toContain("weight");
  });

  it("lists through the sparse GSI and follows pagination", async () => {
    doc
      .on(QueryCommand)
      .resolvesOnce({ Items: [stored({ pk: "ROLLOUT#zeta", name: "zeta" })], LastEvaluatedKey: { pk: "x" } })
      .resolvesOnce({ Items: [stored({ pk: "ROLLOUT#alpha", name: "alpha" })] });
    const names = (await store().list()).map((item) => item.name);
    expect(names).toEqual(["alpha", "zeta"]);
    const calls = doc.commandCalls(QueryCommand);
    expect(calls).toHaveLength(2);
    expect(calls[0]?.args[0].input).toMatchObject({
      IndexName: "byKind",
      KeyConditionExpression: "#kind = :kind",
      ExpressionAttributeValues: { ":kind": "ROLLOUT" },
    });
    expect(calls[1]?.args[0].input.ExclusiveStartKey).toEqual({ pk: "x" });
  });

  it("updates a run with one conditional UpdateItem that keeps createdAt", async () => {
    doc.on(UpdateCommand).resolves({
      Attributes: { rollout: "web", runId: "r1", run: { a: 1 }, version: 2, createdAt: 5, updatedAt: T0 },
    });
    const run = await store().saveRun("web", "r1", { a: 1 }, 1);
    expect(run).toMatchObject({ version: 2, createdAt: 5 });
    const input = doc.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      Key: { pk: "ROLLOUT#web", sk: "RUN#r1" },
      ConditionExpression: "#version = :expected",
      ExpressionAttributeValues: { ":expected": 1, ":next": 2 },
    });
    expect(input?.UpdateExpression).toContain("if_not_exists(#createdAt, :now)");
  });

  it("writes a run as gzipped JSON in one binary attribute, and reads that or a run stored as a map", async () => {
    const big = { phase: "Running", readings: Array.from({ length: 500 }, (_, i) => ({ i, v: i / 7 })) };
    doc.on(UpdateCommand).callsFake((input: { ExpressionAttributeValues: Record<string, unknown> }) => ({
      Attributes: {
        rollout: "web",
        runId: "r1",
        run: input.ExpressionAttributeValues[":run"],
        version: 1,
        createdAt: T0,
        updatedAt: T0,
      },
    }));
    const saved = await store().saveRun("web", "r1", big, null);
    expect(saved.run).toEqual(big);
    const packed = doc.commandCalls(UpdateCommand)[0]?.args[0].input.ExpressionAttributeValues?.[":run"];
    expect(packed).toBeInstanceOf(Uint8Array);
    expect((packed as Uint8Array).length).toBeLessThan(JSON.stringify(big).length / 3);
    // A run written before runs were compressed is a map, read as it is.
    doc.on(GetCommand).resolves({
      Item: {
        rollout: "web",
        runId: "r0",
        run: { phase: "Successful" },
        version: 4,
        createdAt: 1,
        updatedAt: 2,
      },
    });
    expect((await store().getRun("web", "r0", z.unknown()))?.run).toEqual({ phase: "Successful" });
    // Bytes that are not gzipped JSON are an invalid item, named.
    doc.on(GetCommand).resolves({
      Item: {
        rollout: "web",
        runId: "r0",
        run: new Uint8Array([1, 2, 3]),
        version: 4,
        createdAt: 1,
        updatedAt: 2,
      },
    });
    await expect(store().getRun("web", "r0", z.unknown())).rejects.toBeInstanceOf(StoredItemInvalidError);
  });

  it("writes measurements with the TTL attribute in epoch seconds and attribute_not_exists", async () => {
    doc.on(PutCommand).resolves({});
    await store().putMeasurement({
      rollout: "web",
      runId: "r1",
      measurementId: "m#000001",
      value: 0.99,
      at: T0 + 1500,
      ttlSeconds: 60,
    });
    const input = doc.commandCalls(PutCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      ConditionExpression: "attribute_not_exists(#pk)",
      Item: { pk: "ROLLOUT#web", sk: "MEAS#r1#m#000001", expiresAt: T0 / 1000 + 1 + 60 },
    });
    // The value is gzipped JSON in one binary attribute, as a run is.
    const packed = input?.Item?.value;
    expect(packed).toBeInstanceOf(Uint8Array);
    expect(JSON.parse(gunzipSync(packed as Uint8Array).toString("utf8"))).toBe(0.99);
  });

  it("reads a measurement's value gzipped or, written before values were compressed, as a map", async () => {
    const item = (value: unknown, n: number) => ({
      pk: "ROLLOUT#web",
      sk: `MEAS#r1#m#00000${n}`,
      measurementId: `m#00000${n}`,
      at: T0,
      expiresAt: T0 / 1000 + 60,
      value,
    });
    const look = { metric: "m", phase: "Successful", value: "0.99" };
    doc.on(QueryCommand).resolves({
      Items: [item(look, 1), item(new Uint8Array(gzipSync(JSON.stringify(look))), 2)],
    });
    const read = await store().listMeasurements("web", "r1", z.unknown());
    expect(read.map((m) => m.value)).toEqual([look, look]);
    doc.on(QueryCommand).resolves({ Items: [item(new Uint8Array([1, 2, 3]), 3)] });
    await expect(store().listMeasurements("web", "r1", z.unknown())).rejects.toThrow(
      /measurement is not gzipped JSON/,
    );
  });

  it("update() re-reads and re-applies the mutation after a conflict, then gives up after maxAttempts", async () => {
    const conflict = new ConditionalCheckFailedException({ message: "conflict", $metadata: {} });
    doc
      .on(GetCommand)
      .resolvesOnce({ Item: stored({ version: 3 }) })
      .resolves({ Item: stored({ version: 4, weight: 5 }) });
    doc.on(PutCommand).rejectsOnce(conflict).resolves({});
    const seen: number[] = [];
    const written = await update(store(), "web", "latest", (current) => {
      seen.push(current.version);
      return { ...current, weight: current.weight + 10 };
    });
    expect(seen).toEqual([3, 4]);
    expect(written).toMatchObject({ version: 5, weight: 15 });

    doc.reset();
    doc.on(GetCommand).resolves({ Item: stored() });
    doc.on(PutCommand).rejects(conflict);
    await expect(
      update(store(), "web", "latest", (current) => ({ ...current, weight: 1 }), { maxAttempts: 3 }),
    ).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(doc.commandCalls(PutCommand)).toHaveLength(3);
  });

  it("validates runs with the caller's schema", async () => {
    doc.on(GetCommand).resolves({
      Item: {
        pk: "ROLLOUT#web",
        sk: "RUN#r1",
        rollout: "web",
        runId: "r1",
        run: { phase: 7 },
        version: 1,
        createdAt: 1,
        updatedAt: 1,
      },
    });
    await expect(store().getRun("web", "r1", z.object({ phase: z.string() }))).rejects.toThrow(/run\.phase/);
  });

  it("names a ValidationException a refused write, ItemTooLarge for size: never a retryable outage", async () => {
    const validation = (message: string) =>
      Object.assign(new Error(message), { name: "ValidationException" });
    doc.on(UpdateCommand).rejects(validation("Item size to update has exceeded the maximum allowed size"));
    const refused = store().saveRun("web", "r1", { phase: "Running" }, 1);
    await expect(refused).rejects.toBeInstanceOf(ItemTooLargeError);
    await expect(refused).rejects.toThrow(
      "ROLLOUT#web/RUN#r1: write refused: the item is larger than DynamoDB's 400 KB item limit (409,600 bytes)",
    );
    doc.on(PutCommand).rejects(validation("Item size has exceeded the maximum allowed size"));
    await expect(store().save(newRolloutItem("web", T0), 3)).rejects.toBeInstanceOf(ItemTooLargeError);
    doc.on(UpdateCommand).rejects(validation("One or more parameter values were invalid: an empty string"));
    const other = store().saveRun("web", "r1", { phase: "Running" }, 1);
    await expect(other).rejects.toBeInstanceOf(WriteRejectedError);
    await expect(other).rejects.not.toBeInstanceOf(StoreUnavailableError);
  });

  it("reads one execution's runs with begins_with, and a metric's newest measurements backwards", async () => {
    doc.on(QueryCommand).resolves({ Items: [] });
    await store().listRuns("web", z.unknown(), { prefix: "web-1111-g1." });
    await store().listMeasurements("web", "web-1111-g1.step01", z.unknown(), { prefix: "rate#", last: 3 });
    const [runs, measurements] = doc.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(runs?.ExpressionAttributeValues).toEqual({ ":pk": "ROLLOUT#web", ":prefix": "RUN#web-1111-g1." });
    expect(measurements).toMatchObject({
      ExpressionAttributeValues: { ":pk": "ROLLOUT#web", ":prefix": "MEAS#web-1111-g1.step01#rate#" },
      ScanIndexForward: false,
      Limit: 3,
    });
  });
});
