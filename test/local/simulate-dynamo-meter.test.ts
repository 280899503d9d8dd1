import {
  CreateTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type MeteredDynamo, meterDynamo } from "../../local/simulate/dynamo-meter.ts";
import { itemBytes, numberBytes, readUnits, valueBytes, writeUnits } from "../../local/simulate/item-size.ts";

describe("DynamoDB item sizes (the developer guide's 'DynamoDB item sizes and formats')", () => {
  it("counts a string as its UTF-8 bytes and an attribute name like one", () => {
    expect(valueBytes({ S: "abc" })).toBe(3);
    expect(valueBytes({ S: "é€😀" })).toBe(2 + 3 + 4);
    expect(itemBytes({ name: { S: "abc" } })).toBe(4 + 3);
  });

  it("counts a binary value by its raw bytes, not the base64 that carries it", () => {
    const raw = Buffer.alloc(1500, 7);
    expect(valueBytes({ B: raw.toString("base64") })).toBe(1500);
    expect(valueBytes({ B: new Uint8Array(1500) })).toBe(1500);
  });

  it("counts a number by its significant digits, leading and trailing zeros trimmed", () => {
    // About one byte per two significant digits, plus one.
    expect(numberBytes("0")).toBe(1);
    expect(numberBytes("12")).toBe(2);
    expect(numberBytes("123")).toBe(3);
    expect(numberBytes("0012300")).toBe(numberBytes("123"));
    expect(numberBytes("15.000")).toBe(numberBytes("15"));
    expect(numberBytes("1875.0000000000002")).toBe(1 + 9);
    expect(numberBytes("-12")).toBe(numberBytes("12") + 1);
    expect(numberBytes("1e5")).toBe(numberBytes("100000"));
    expect(() => numberBytes("twelve")).toThrow(/not a DynamoDB number/);
  });

  it("counts a null or a Boolean as one byte, a list or map as 3 bytes plus 1 per element", () => {
    expect(valueBytes({ NULL: true })).toBe(1);
    expect(valueBytes({ BOOL: false })).toBe(1);
    expect(valueBytes({ L: [] })).toBe(3);
    expect(valueBytes({ M: {} })).toBe(3);
    expect(valueBytes({ L: [{ S: "ab" }, { NULL: true }] })).toBe(3 + (1 + 2) + (1 + 1));
    // A map's keys count like attribute names.
    expect(valueBytes({ M: { key: { S: "ab" } } })).toBe(3 + 1 + 3 + 2);
    expect(valueBytes({ SS: ["ab", "c"] })).toBe(3);
  });

  it("turns sizes into units: a write per 1 KB, a read per 4 KB (half when eventually consistent)", () => {
    expect(writeUnits(0)).toBe(1);
    expect(writeUnits(500)).toBe(1);
    expect(writeUnits(1024)).toBe(1);
    expect(writeUnits(1025)).toBe(2);
    expect(writeUnits(3.5 * 1024)).toBe(4);
    // The guide's examples: 3.5 KB reads as 4 KB, 10 KB as 12 KB; 8 KB eventually consistent is 1.
    expect(readUnits(3.5 * 1024, true)).toBe(1);
    expect(readUnits(10 * 1024, true)).toBe(3);
    expect(readUnits(8 * 1024, false)).toBe(1);
    expect(readUnits(0, false)).toBe(0.5);
  });
});

describe("the simulation's DynamoDB meter", () => {
  let inner: LocalDynamo;
  let metered: MeteredDynamo;
  let client: DynamoDBClient;
  const table = "meter";
  const key = (sk: string) => ({ pk: { S: "p" }, sk: { S: sk } });
  /** The units one call adds. */
  const cost = async (call: () => Promise<unknown>) => {
    const before = { ...metered.units };
    await call().catch(() => undefined);
    return { read: metered.units.read - before.read, write: metered.units.write - before.write };
  };

  beforeAll(async () => {
    inner = await startDynamo("dynalite");
    metered = await meterDynamo(inner);
    client = metered.client();
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [
          { AttributeName: "pk", AttributeType: "S" },
          { AttributeName: "sk", AttributeType: "S" },
          { AttributeName: "kind", AttributeType: "S" },
        ],
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: "byKind",
            KeySchema: [
              { AttributeName: "kind", KeyType: "HASH" },
              { AttributeName: "pk", KeyType: "RANGE" },
            ],
            Projection: { ProjectionType: "ALL" },
          },
        ],
      }),
    );
  });

  afterAll(async () => {
    await metered.close();
    await inner.close();
  });

  // pk + p, sk + one letter: 2 + 1 + 2 + 1 = 6 bytes; `data` + its value.
  const sized = (sk: string, bytes: number) => ({ ...key(sk), data: { B: new Uint8Array(bytes - 6 - 4) } });

  it("bills a put by the item's size, a binary by its raw bytes", async () => {
    // 2,000 bytes of item travel as more than 2,700 bytes of base64 JSON: 2 units, not 3.
    const put = await cost(() =>
      client.send(new PutItemCommand({ TableName: table, Item: sized("a", 2000) })),
    );
    expect(put).toEqual({ read: 0, write: 2 });
  });

  it("bills a rewrite by the larger of the item before and after it", async () => {
    await client.send(new PutItemCommand({ TableName: table, Item: sized("b", 3000) }));
    const smaller = await cost(() =>
      client.send(new PutItemCommand({ TableName: table, Item: sized("b", 900) })),
    );
    expect(smaller.write).toBe(3);
    const update = await cost(() =>
      client.send(
        new UpdateItemCommand({
          TableName: table,
          Key: key("b"),
          UpdateExpression: "SET #d = :d",
          ExpressionAttributeNames: { "#d": "data" },
          ExpressionAttributeValues: { ":d": { B: new Uint8Array(4990) } },
        }),
      ),
    );
    expect(update.write).toBe(5);
  });

  it("bills a write whose condition fails by the existing item's size", async () => {
    await client.send(new PutItemCommand({ TableName: table, Item: sized("c", 2500) }));
    const refused = await cost(() =>
      client.send(
        new PutItemCommand({
          TableName: table,
          Item: sized("c", 100),
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      ),
    );
    expect(refused.write).toBe(3);
  });

  it("bills a write to an item in a global secondary index once more, for the index entry", async () => {
    const item = { ...sized("d", 1500), kind: { S: "K" } };
    const put = await cost(() => client.send(new PutItemCommand({ TableName: table, Item: item })));
    // The item (1,505 bytes: 2 units) and its entry in the ALL-projected index (2 units).
    expect(put.write).toBe(4);
    const left = await cost(() =>
      client.send(new PutItemCommand({ TableName: table, Item: sized("d", 500) })),
    );
    // Rewritten without `kind`, it leaves the sparse index: one write to remove the entry.
    expect(left.write).toBe(2 + 2);
  });

  it("bills a read by the whole item, whatever a projection returns; a query by the sum, rounded once", async () => {
    await client.send(new PutItemCommand({ TableName: table, Item: sized("e", 5000) }));
    const projected = await cost(() =>
      client.send(
        new GetItemCommand({
          TableName: table,
          Key: key("e"),
          ConsistentRead: true,
          ProjectionExpression: "pk",
        }),
      ),
    );
    expect(projected.read).toBe(2);
    const eventual = await cost(() => client.send(new GetItemCommand({ TableName: table, Key: key("e") })));
    expect(eventual.read).toBe(1);
    const missing = await cost(() =>
      client.send(new GetItemCommand({ TableName: table, Key: key("none"), ConsistentRead: true })),
    );
    expect(missing.read).toBe(1);
    for (const sk of ["q1", "q2", "q3"]) {
      await client.send(
        new PutItemCommand({
          TableName: table,
          Item: { pk: { S: "q" }, sk: { S: sk }, data: { B: new Uint8Array(1500) } },
        }),
      );
    }
    // Three items of about 1.5 KB: 4.5 KB in all, 2 units (each rounded up alone would be 3).
    const query = await cost(() =>
      client.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: "pk = :q",
          ExpressionAttributeValues: { ":q": { S: "q" } },
          ConsistentRead: true,
        }),
      ),
    );
    expect(query.read).toBe(2);
  });

  it("counts nothing while paused", async () => {
    metered.paused = true;
    try {
      const paused = await cost(() =>
        client.send(new PutItemCommand({ TableName: table, Item: sized("f", 2000) })),
      );
      expect(paused).toEqual({ read: 0, write: 0 });
    } finally {
      metered.paused = false;
    }
  });
});
