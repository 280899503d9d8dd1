import { gunzipSync, gzipSync } from "node:zlib";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { z } from "zod";
import { isAwsError } from "../aws-errors.ts";
import { type Clock, systemClock } from "../clock.ts";
import {
  ConcurrentUpdateError,
  ItemTooLargeError,
  StoredItemInvalidError,
  StoreUnavailableError,
  WriteRejectedError,
} from "./errors.ts";
import {
  describeKey,
  measurementSk,
  measurementSkPrefix,
  ROLLOUT_KIND,
  rolloutPk,
  runSk,
  STATE_SK,
  TABLE,
  toJson,
} from "./keys.ts";
import type {
  GetOptions,
  ListMeasurementsOptions,
  ListRunsOptions,
  PutMeasurementInput,
  RolloutStore,
  SaveRunOptions,
  StoredMeasurement,
  StoredRun,
} from "./port.ts";
import { type RolloutItem, type RolloutItemInput, RolloutItemSchema } from "./schema.ts";
import { itemBytes, MAX_ITEM_BYTES } from "./size.ts";
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

  async get(name: string, options: GetOptions = {}): Promise<RolloutItem | undefined> {
    const key = { pk: rolloutPk(name), sk: STATE_SK };
    const raw = await this.#getRaw(key, options.fields);
    return raw === undefined ? undefined : parseRollout(raw, key);
  }

  async save(item: RolloutItemInput, expectedVersion: number | null): Promise<RolloutItem> {
    const key = { pk: rolloutPk(item.name), sk: STATE_SK };
    // The whole item, as the in-memory store does: opaque parts (`targetState`, a pending event)
    // may hold NaN or numbers beyond DynamoDB's range, which would make it refuse the write.
    const next = parseWith(
      RolloutItemSchema,
      toJson({
        ...item,
        version: expectedVersion === null ? 1 : expectedVersion + 1,
        updatedAt: this.#clock.now(),
      }),
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
    options: SaveRunOptions = {},
  ): Promise<StoredRun> {
    const key = { pk: rolloutPk(rollout), sk: runSk(runId) };
    const where = describeKey(key.pk, key.sk);
    const now = this.#clock.now();
    // The run is stored compressed, but held to DynamoDB's item limit as it would be uncompressed,
    // as the in-memory store holds it and the analysis bounds it (`bounds.ts`): the same run is
    // refused by every store.
    const plain = {
      pk: key.pk,
      sk: key.sk,
      run: toJson(run),
      version: expectedVersion === null ? 1 : expectedVersion + 1,
      createdAt: now,
      updatedAt: now,
      rollout,
      runId,
      ...(options.expiresAt === undefined ? {} : { [TABLE.ttlAttribute]: options.expiresAt }),
    };
    const bytes = itemBytes(plain);
    if (bytes > MAX_ITEM_BYTES) throw new ItemTooLargeError(where, bytes);
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
          UpdateExpression: `SET #run = :run, #version = :next, #updatedAt = :now, #createdAt = if_not_exists(#createdAt, :now), #rollout = :rollout, #runId = :runId${options.expiresAt === undefined ? "" : ", #expiresAt = :expiresAt"}`,
          ...condition,
          ExpressionAttributeNames: {
            ...(expectedVersion === null ? { "#pk": TABLE.partitionKey } : {}),
            "#run": "run",
            "#version": "version",
            "#updatedAt": "updatedAt",
            "#createdAt": "createdAt",
            "#rollout": "rollout",
            "#runId": "runId",
            ...(options.expiresAt === undefined ? {} : { "#expiresAt": TABLE.ttlAttribute }),
          },
          ExpressionAttributeValues: {
            ":run": packJson(run),
            ":next": expectedVersion === null ? 1 : expectedVersion + 1,
            ":now": now,
            ":rollout": rollout,
            ":runId": runId,
            ...(options.expiresAt === undefined ? {} : { ":expiresAt": options.expiresAt }),
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
      throw refusedOrUnavailable("UpdateItem", where, error);
    }
  }

  async listRuns<T>(
    rollout: string,
    schema: z.ZodType<T>,
    options: ListRunsOptions = {},
  ): Promise<StoredRun<T>[]> {
    const nowSeconds = Math.floor(this.#clock.now() / 1000);
    const raws = await this.#queryPrefix(rolloutPk(rollout), runSk(options.prefix ?? ""));
    return raws
      .map((raw) => parseRun(raw, { pk: String(raw.pk), sk: String(raw.sk) }, schema))
      .filter((run) => typeof run.expiresAt !== "number" || run.expiresAt > nowSeconds);
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
    // Held to the item limit as it would be uncompressed, as a run is: every store refuses the same one.
    const bytes = itemBytes({ ...stored, ...key });
    if (bytes > MAX_ITEM_BYTES) throw new ItemTooLargeError(describeKey(key.pk, key.sk), bytes);
    try {
      // Gzipped like a run: a judge's look (its reason, figures and both versions' readings) is
      // about 1.4 KB as a map, 2 write units, and about half that compressed, 1.
      await this.#conditionalPut(key, { ...stored, value: packJson(input.value) }, null);
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
    options: ListMeasurementsOptions = {},
  ): Promise<StoredMeasurement<T>[]> {
    const nowSeconds = Math.floor(this.#clock.now() / 1000);
    const prefix = `${measurementSkPrefix(runId)}${options.prefix ?? ""}`;
    const unexpired = (raw: Record<string, unknown>) => {
      const expiresAt = raw[TABLE.ttlAttribute];
      return typeof expiresAt !== "number" || expiresAt > nowSeconds;
    };
    const wanted = (raw: Record<string, unknown>) =>
      unexpired(raw) &&
      (!options.match || (typeof raw.measurementId === "string" && options.match(raw.measurementId)));
    // The newest few: read backwards a page the size of what is wanted, until that many are found.
    const raws =
      options.last === undefined
        ? await this.#queryPrefix(rolloutPk(rollout), prefix)
        : (
            await this.#queryPrefix(rolloutPk(rollout), prefix, { newest: options.last, keep: wanted })
          ).reverse();
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
        value: parseWith(schema, unpackJson(raw.value, where, "measurement"), where, "value"),
        at: raw.at,
        expiresAt,
      });
    }
    return out;
  }

  async #getRaw(key: Key, fields?: readonly string[]): Promise<Record<string, unknown> | undefined> {
    // A projection returns only the attributes named: less to transfer and parse. DynamoDB still
    // bills the read by the whole item's size.
    const projection =
      fields === undefined
        ? {}
        : {
            ProjectionExpression: fields.map((_, i) => `#f${i}`).join(", "),
            ExpressionAttributeNames: Object.fromEntries(fields.map((f, i) => [`#f${i}`, f])),
          };
    const out = await this.#send("GetItem", describeKey(key.pk, key.sk), () =>
      this.#doc.send(
        new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: true, ...projection }),
      ),
    );
    return out.Item;
  }

  /**
   * Every item of the partition whose sort key starts with `prefix`, in key order; with `newest`,
   * only the last `newest` that `keep` accepts, read backwards (newest first) page by page.
   */
  async #queryPrefix(
    pk: string,
    prefix: string,
    backwards?: { newest: number; keep: (raw: Record<string, unknown>) => boolean },
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    if (backwards && backwards.newest <= 0) return items;
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
            ...(backwards ? { ScanIndexForward: false, Limit: backwards.newest } : {}),
          }),
        ),
      );
      for (const raw of page.Items ?? []) {
        if (!backwards) items.push(raw);
        else if (backwards.keep(raw) && items.length < backwards.newest) items.push(raw);
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined && (!backwards || items.length < backwards.newest));
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
      throw refusedOrUnavailable("PutItem", where, error);
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
  return isAwsError(error, "ConditionalCheckFailedException");
}

/**
 * A `ValidationException` refuses the write for what it holds (too large: "Item size has exceeded
 * the maximum allowed size", "Item size to update has exceeded ..."): the same write fails again,
 * so it is not a `StoreUnavailableError`, which the workflow retries.
 */
function refusedOrUnavailable(operation: string, where: string, error: unknown): Error {
  if (error instanceof Error && error.name === "ValidationException") {
    if (/item size/i.test(error.message)) return new ItemTooLargeError(where, undefined, { cause: error });
    return new WriteRejectedError(where, `${operation}: ${error.message}`, { cause: error });
  }
  return new StoreUnavailableError(operation, where, { cause: error });
}

function parseRollout(raw: Record<string, unknown>, key: Key): RolloutItem {
  const { pk: _pk, sk: _sk, kind: _kind, ...rest } = raw;
  return parseWith(RolloutItemSchema, rest, describeKey(key.pk, key.sk), "");
}

/**
 * A run is written as its JSON, gzipped, in one binary attribute: a judged run keeps its last
 * measurements with both versions' readings (tens of kilobytes as a map), and every tick rewrites
 * it, so its size is most of a rollout's DynamoDB bill (write units are per KB of the item).
 * Compressed it is about a ninth. `runItemBytes` still bounds it uncompressed, so a run that fits
 * there fits here. A measurement's value is written the same way.
 */
function packJson(value: unknown): Uint8Array {
  return gzipSync(Buffer.from(JSON.stringify(toJson(value)), "utf8"));
}

/** A value as `packJson` wrote it, or as a map (written before it was compressed). */
function unpackJson(value: unknown, where: string, what: "run" | "measurement"): unknown {
  if (!(value instanceof Uint8Array)) return value;
  try {
    return JSON.parse(gunzipSync(value).toString("utf8")) as unknown;
  } catch (error) {
    throw new StoredItemInvalidError(where, `${what} is not gzipped JSON: ${(error as Error).message}`);
  }
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
  const expiresAt = raw[TABLE.ttlAttribute];
  return {
    rollout: raw.rollout,
    runId: raw.runId,
    run: parseWith(schema, unpackJson(raw.run, where, "run"), where, "run"),
    version: raw.version,
    createdAt: raw.createdAt,
    updatedAt: raw.updatedAt,
    expiresAt: typeof expiresAt === "number" ? expiresAt : null,
  };
}
