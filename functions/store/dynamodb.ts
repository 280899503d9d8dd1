import { ConditionalCheckFailedException, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { z } from "zod";
import { type Clock, systemClock } from "../clock.ts";
import { ConcurrentUpdateError, StoredItemInvalidError, StoreUnavailableError } from "./errors.ts";
import {
  describeKey,
  measurementSk,
  measurementSkPrefix,
  ROLLOUT_KIND,
  RUN_SK_PREFIX,
  rolloutPk,
  runSk,
  STATE_SK,
  TABLE,
  toJson,
} from "./keys.ts";
import type { PutMeasurementInput, RolloutStore, StoredMeasurement, StoredRun } from "./port.ts";
import { type RolloutItem, type RolloutItemInput, RolloutItemSchema } from "./schema.ts";
import { parseWith } from "./validate.ts";

export interface DynamoRolloutStoreOptions {
  /** A plain DynamoDB client; the adapter wraps it in a document client. */
  client: DynamoDBClient;
  tableName: string;
  /** Stamps `updatedAt`; and measurements past `expiresAt` are hidden (TTL deletion lags by hours). */
  clock?: Clock;
}

type Key = { pk: string; sk: string };

/**
 * The rollout store on DynamoDB (and dynalite / DynamoDB Local, which is why nothing here uses
 * transactions: every write is one `PutItem` with a `ConditionExpression`).
 *
 * `list()` queries the sparse `byKind` GSI rather than scanning: the table also holds every
 * analysis run and (until TTL removes them) every measurement, so a scan with a filter would read
 * and bill all of those to return a few dozen rollout items. The GSI partition `kind = ROLLOUT`
 * holds one small item per rollout — dozens, not a hot partition — and is eventually consistent,
 * which is fine for a listing (`get` is strongly consistent).
 */
export class DynamoRolloutStore implements RolloutStore {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #clock: Clock;

  constructor(options: DynamoRolloutStoreOptions) {
    this.#doc = DynamoDBDocumentClient.from(options.client, {
      // Numbers above 2^53 (a Bayes factor) are doubles already; toJson keeps them in DynamoDB's range.
      marshallOptions: { removeUndefinedValues: true, allowImpreciseNumbers: true },
      // Every number the store holds came from a JS number: read it back as one, never a BigInt.
      unmarshallOptions: { wrapNumbers: (value: string) => Number(value) },
    });
    this.#table = options.tableName;
    this.#clock = options.clock ?? systemClock;
  }

  async get(name: string): Promise<RolloutItem | undefined> {
    const key = { pk: rolloutPk(name), sk: STATE_SK };
    const raw = await this.#getRaw(key);
    return raw === undefined ? undefined : parseRollout(raw, key);
  }

  async save(item: RolloutItemInput, expectedVersion: number | null): Promise<RolloutItem> {
    const key = { pk: rolloutPk(item.name), sk: STATE_SK };
    const next = parseWith(
      RolloutItemSchema,
      {
        ...item,
        targetState: toJson(item.targetState),
        version: expectedVersion === null ? 1 : expectedVersion + 1,
        updatedAt: this.#clock.now(),
      },
      describeKey(key.pk, key.sk),
      "",
    );
    await this.#conditionalPut(key, { ...next, kind: ROLLOUT_KIND }, expectedVersion);
    return next;
  }

  async list(): Promise<RolloutItem[]> {
    const items: RolloutItem[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.#send("Query", TABLE.listIndex.name, () =>
        this.#doc.send(
          new QueryCommand({
            TableName: this.#table,
            IndexName: TABLE.listIndex.name,
            KeyConditionExpression: "#kind = :kind",
            ExpressionAttributeNames: { "#kind": TABLE.listIndex.partitionKey },
            ExpressionAttributeValues: { ":kind": ROLLOUT_KIND },
            ExclusiveStartKey: startKey,
          }),
        ),
      );
      for (const raw of page.Items ?? []) {
        items.push(parseRollout(raw, { pk: String(raw.pk), sk: String(raw.sk) }));
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return items.sort((a, b) => a.name.localeCompare(b.name));
  }

  async getRun<T>(rollout: string, runId: string, schema: z.ZodType<T>): Promise<StoredRun<T> | undefined> {
    const key = { pk: rolloutPk(rollout), sk: runSk(runId) };
    const raw = await this.#getRaw(key);
    return raw === undefined ? undefined : parseRun(raw, key, schema);
  }

  async saveRun(
    rollout: string,
    runId: string,
    run: unknown,
    expectedVersion: number | null,
  ): Promise<StoredRun> {
    const key = { pk: rolloutPk(rollout), sk: runSk(runId) };
    const where = describeKey(key.pk, key.sk);
    const now = this.#clock.now();
    // UpdateItem rather than PutItem so `createdAt` survives updates without a read first; still
    // one conditional single-item write.
    const condition =
      expectedVersion === null
        ? { ConditionExpression: "attribute_not_exists(#pk)" }
        : { ConditionExpression: "#version = :expected" };
    try {
      const out = await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: key,
          UpdateExpression:
            "SET #run = :run, #version = :next, #updatedAt = :now, #createdAt = if_not_exists(#createdAt, :now), #rollout = :rollout, #runId = :runId",
          ...condition,
          ExpressionAttributeNames: {
            ...(expectedVersion === null ? { "#pk": TABLE.partitionKey } : {}),
            "#run": "run",
            "#version": "version",
            "#updatedAt": "updatedAt",
            "#createdAt": "createdAt",
            "#rollout": "rollout",
            "#runId": "runId",
          },
          ExpressionAttributeValues: {
            ":run": toJson(run),
            ":next": expectedVersion === null ? 1 : expectedVersion + 1,
            ":now": now,
            ":rollout": rollout,
            ":runId": runId,
            ...(expectedVersion === null ? {} : { ":expected": expectedVersion }),
          },
          ReturnValues: "ALL_NEW",
        }),
      );
      return parseRun(out.Attributes ?? {}, key, z.unknown());
    } catch (error) {
      if (isConditionalCheckFailed(error))
        throw new ConcurrentUpdateError(where, expectedVersion, { cause: error });
      if (error instanceof StoredItemInvalidError) throw error;
      throw new StoreUnavailableError("UpdateItem", where, { cause: error });
    }
  }

  async listRuns<T>(rollout: string, schema: z.ZodType<T>): Promise<StoredRun<T>[]> {
    const raws = await this.#queryPrefix(rolloutPk(rollout), RUN_SK_PREFIX);
    return raws.map((raw) => parseRun(raw, { pk: String(raw.pk), sk: String(raw.sk) }, schema));
  }

  async putMeasurement(input: PutMeasurementInput): Promise<boolean> {
    const key = { pk: rolloutPk(input.rollout), sk: measurementSk(input.runId, input.measurementId) };
    const stored: StoredMeasurement = {
      rollout: input.rollout,
      runId: input.runId,
      measurementId: input.measurementId,
      value: toJson(input.value),
      at: input.at,
      expiresAt: Math.floor(input.at / 1000) + Math.max(0, Math.ceil(input.ttlSeconds)),
    };
    try {
      await this.#conditionalPut(key, { ...stored }, null);
      return true;
    } catch (error) {
      if (error instanceof ConcurrentUpdateError) return false;
      throw error;
    }
  }

  async listMeasurements<T>(
    rollout: string,
    runId: string,
    schema: z.ZodType<T>,
  ): Promise<StoredMeasurement<T>[]> {
    const nowSeconds = Math.floor(this.#clock.now() / 1000);
    const raws = await this.#queryPrefix(rolloutPk(rollout), measurementSkPrefix(runId));
    const out: StoredMeasurement<T>[] = [];
    for (const raw of raws) {
      const where = describeKey(String(raw.pk), String(raw.sk));
      const expiresAt = raw[TABLE.ttlAttribute];
      if (
        typeof expiresAt !== "number" ||
        typeof raw.at !== "number" ||
        typeof raw.measurementId !== "string"
      ) {
        throw new StoredItemInvalidError(where, "measurement lacks expiresAt, at or measurementId");
      }
      if (expiresAt <= nowSeconds) continue;
      out.push({
        rollout,
        runId,
        measurementId: raw.measurementId,
        value: parseWith(schema, raw.value, where, "value"),
        at: raw.at,
        expiresAt,
      });
    }
    return out;
  }

  async #getRaw(key: Key): Promise<Record<string, unknown> | undefined> {
    const out = await this.#send("GetItem", describeKey(key.pk, key.sk), () =>
      this.#doc.send(new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: true })),
    );
    return out.Item;
  }

  async #queryPrefix(pk: string, prefix: string): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.#send("Query", describeKey(pk, `${prefix}*`), () =>
        this.#doc.send(
          new QueryCommand({
            TableName: this.#table,
            KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
            ExpressionAttributeNames: { "#pk": TABLE.partitionKey, "#sk": TABLE.sortKey },
            ExpressionAttributeValues: { ":pk": pk, ":prefix": prefix },
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        ),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return items;
  }

  /** One `PutItem`, conditional on the version (or on absence): the store's only kind of write. */
  async #conditionalPut(
    key: Key,
    attributes: Record<string, unknown>,
    expectedVersion: number | null,
  ): Promise<void> {
    const where = describeKey(key.pk, key.sk);
    const condition: Pick<
      PutCommandInput,
      "ConditionExpression" | "ExpressionAttributeNames" | "ExpressionAttributeValues"
    > =
      expectedVersion === null
        ? {
            ConditionExpression: "attribute_not_exists(#pk)",
            ExpressionAttributeNames: { "#pk": TABLE.partitionKey },
          }
        : {
            ConditionExpression: "#version = :expected",
            ExpressionAttributeNames: { "#version": "version" },
            ExpressionAttributeValues: { ":expected": expectedVersion },
          };
    try {
      await this.#doc.send(
        new PutCommand({ TableName: this.#table, Item: { ...attributes, ...key }, ...condition }),
      );
    } catch (error) {
      if (isConditionalCheckFailed(error)) {
        throw new ConcurrentUpdateError(where, expectedVersion, { cause: error });
      }
      throw new StoreUnavailableError("PutItem", where, { cause: error });
    }
  }

  async #send<T>(operation: string, where: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw new StoreUnavailableError(operation, where, { cause: error });
    }
  }
}

function isConditionalCheckFailed(error: unknown): boolean {
  return (
    error instanceof ConditionalCheckFailedException ||
    (error instanceof Error && error.name === "ConditionalCheckFailedException")
  );
}

function parseRollout(raw: Record<string, unknown>, key: Key): RolloutItem {
  const { pk: _pk, sk: _sk, kind: _kind, ...rest } = raw;
  return parseWith(RolloutItemSchema, rest, describeKey(key.pk, key.sk), "");
}

function parseRun<T>(raw: Record<string, unknown>, key: Key, schema: z.ZodType<T>): StoredRun<T> {
  const where = describeKey(key.pk, key.sk);
  if (
    typeof raw.rollout !== "string" ||
    typeof raw.runId !== "string" ||
    typeof raw.version !== "number" ||
    typeof raw.createdAt !== "number" ||
    typeof raw.updatedAt !== "number"
  ) {
    throw new StoredItemInvalidError(where, "run lacks rollout, runId, version, createdAt or updatedAt");
  }
  return {
    rollout: raw.rollout,
    runId: raw.runId,
    run: parseWith(schema, raw.run, where, "run"),
    version: raw.version,
    createdAt: raw.createdAt,
    updatedAt: raw.updatedAt,
  };
}
