import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DescribeTableCommand, DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import type { LocalDynamo } from "../dynamo.ts";
import { itemBytes, readUnits, type WireItem, writeUnits } from "./item-size.ts";

/**
 * A local DynamoDB with a meter in front: every request passes through a forwarder that counts
 * the request units DynamoDB on-demand would bill, from item sizes as DynamoDB computes them
 * (`item-size.ts`) and the developer guide's rules for each operation
 * ("DynamoDB read and write operations", "Condition expressions", "Global secondary indexes"):
 *
 * - `PutItem`, `UpdateItem`: the larger of the item before and after the write, one unit per KB;
 *   `DeleteItem` the item deleted. A conditional write whose condition fails still consumes the
 *   existing item's size (at least one unit).
 * - Each global secondary index the write touches: one write of the index entry (its keys and
 *   projected attributes) when the item enters or stays in the index, one to remove it when it
 *   leaves, two when its index key changes.
 * - `GetItem`: the whole item's size, whatever a projection returns, one unit per 4 KB (at least
 *   one, for a missing item too); `Query`: the sum of the items it read, rounded up once. Halved
 *   when eventually consistent.
 *
 * The meter keeps a copy of every item written through it, so it knows an item before a write
 * and in full behind a projection without asking the store.
 */
export interface MeteredDynamo extends LocalDynamo {
  readonly units: { read: number; write: number };
  /** Requests made while paused are not counted (the simulation's own reads). */
  paused: boolean;
}

const WRITES = new Set(["PutItem", "UpdateItem", "DeleteItem"]);
/** Operations the store never sends, which the meter refuses rather than count wrongly. */
const UNMETERED = new Set([
  "Scan",
  "BatchWriteItem",
  "TransactWriteItems",
  "BatchGetItem",
  "TransactGetItems",
]);

type Projection = "ALL" | "KEYS_ONLY" | "INCLUDE";
interface TableShape {
  keys: string[];
  indexes: { name: string; keys: string[]; projection: Projection; include: string[] }[];
}

interface Request {
  TableName?: string;
  IndexName?: string;
  Key?: WireItem;
  Item?: WireItem;
  ConsistentRead?: boolean;
  ReturnValues?: string;
}

interface Counted {
  answer: Response;
  read?: number;
  write?: number;
}

/** The attributes of `item` named in `names`. */
function pick(item: WireItem, names: readonly string[]): WireItem {
  const out: WireItem = {};
  for (const name of names) if (item[name] !== undefined) out[name] = item[name];
  return out;
}

/**
 * An item's entry in a global secondary index (its index keys, the table's keys and the projected
 * attributes), or undefined when the item lacks an index key (a sparse index leaves it out).
 */
function indexEntry(
  shape: TableShape,
  index: TableShape["indexes"][number],
  item: WireItem | undefined,
): WireItem | undefined {
  if (!item || index.keys.some((k) => item[k] === undefined)) return undefined;
  if (index.projection === "ALL") return item;
  const include = index.projection === "INCLUDE" ? index.include : [];
  return pick(item, [...new Set([...index.keys, ...shape.keys, ...include])]);
}

/** Write units of one write that turned `before` into `after` (either may be absent), indexes included. */
function writeCost(shape: TableShape, before: WireItem | undefined, after: WireItem | undefined): number {
  let total = writeUnits(Math.max(itemBytes(before), itemBytes(after)));
  for (const index of shape.indexes) {
    const was = indexEntry(shape, index, before);
    const is = indexEntry(shape, index, after);
    const sameKey = was && is && index.keys.every((k) => JSON.stringify(was[k]) === JSON.stringify(is[k]));
    if (was && is && sameKey) total += writeUnits(Math.max(itemBytes(was), itemBytes(is)));
    else {
      if (was) total += writeUnits(itemBytes(was));
      if (is) total += writeUnits(itemBytes(is));
    }
  }
  return total;
}

/** The request units of each request, from the items it reads and writes. */
class Meter {
  readonly #peek: DynamoDBClient;
  readonly #tables = new Map<string, TableShape>();
  /** Every item as last written through the meter (undefined: known to be absent). */
  readonly #items = new Map<string, WireItem | undefined>();
  #writes: Promise<unknown> = Promise.resolve();

  constructor(peek: DynamoDBClient) {
    this.#peek = peek;
  }

  async count(op: string, request: Request, forward: () => Promise<Response>): Promise<Counted> {
    if (UNMETERED.has(op)) throw new Error(`the meter does not count ${op} (the store never sends it)`);
    const table = request.TableName;
    if (table === undefined || !(WRITES.has(op) || op === "GetItem" || op === "Query")) {
      return { answer: await forward() };
    }
    const shape = await this.#shape(table);
    if (op === "GetItem") {
      const answer = await forward();
      if (!answer.ok || !request.Key) return { answer };
      return {
        answer,
        read: readUnits(
          itemBytes(await this.#item(table, shape, request.Key)),
          request.ConsistentRead === true,
        ),
      };
    }
    if (op === "Query") return this.#query(table, shape, request, await forward());
    // Writes one at a time, so each one's `before` is the item as the one before it left it.
    const turn = this.#writes.then(() => this.#write(op, table, shape, request, forward));
    this.#writes = turn.catch(() => undefined);
    return turn;
  }

  async #query(table: string, shape: TableShape, request: Request, answer: Response): Promise<Counted> {
    if (!answer.ok) return { answer };
    const page = (await answer.clone().json()) as { Items?: WireItem[] };
    const index = shape.indexes.find((i) => i.name === request.IndexName);
    let bytes = 0;
    for (const returned of page.Items ?? []) {
      // A projection returns part of each item; the read is billed for the whole of it.
      const whole = await this.#item(table, shape, pick(returned, shape.keys));
      bytes += itemBytes(index ? indexEntry(shape, index, whole) : whole);
    }
    return { answer, read: readUnits(bytes, request.ConsistentRead === true) };
  }

  async #write(
    op: string,
    table: string,
    shape: TableShape,
    request: Request,
    forward: () => Promise<Response>,
  ): Promise<Counted> {
    const key = request.Key ?? pick(request.Item ?? {}, shape.keys);
    const before = await this.#item(table, shape, key);
    const answer = await forward();
    if (!answer.ok) {
      const failure = (await answer
        .clone()
        .json()
        .catch(() => ({}))) as { __type?: string };
      // A failed condition still consumes the existing item's size; other refusals consume nothing.
      const conditionFailed = String(failure.__type ?? "").endsWith("ConditionalCheckFailedException");
      return { answer, write: conditionFailed ? writeUnits(itemBytes(before)) : 0 };
    }
    let after: WireItem | undefined;
    if (op === "PutItem") after = request.Item;
    else if (op === "UpdateItem") {
      const out =
        request.ReturnValues === "ALL_NEW"
          ? ((await answer.clone().json()) as { Attributes?: WireItem }).Attributes
          : await this.#fetch(table, key);
      after = out;
    }
    this.#items.set(this.#id(table, shape, key), after);
    return { answer, write: writeCost(shape, before, after) };
  }

  /** The item as stored: the meter's copy, or the store's when the meter has not seen it written. */
  async #item(table: string, shape: TableShape, key: WireItem): Promise<WireItem | undefined> {
    const id = this.#id(table, shape, key);
    if (this.#items.has(id)) return this.#items.get(id);
    const item = await this.#fetch(table, key);
    this.#items.set(id, item);
    return item;
  }

  async #fetch(table: string, key: WireItem): Promise<WireItem | undefined> {
    const { Item } = await this.#peek.send(
      new GetItemCommand({ TableName: table, Key: key as never, ConsistentRead: true }),
    );
    return Item as WireItem | undefined;
  }

  #id(table: string, shape: TableShape, key: WireItem): string {
    return JSON.stringify([table, ...shape.keys.map((k) => key[k])]);
  }

  async #shape(table: string): Promise<TableShape> {
    const known = this.#tables.get(table);
    if (known) return known;
    const { Table } = await this.#peek.send(new DescribeTableCommand({ TableName: table }));
    const names = (schema: { AttributeName?: string }[] | undefined) =>
      (schema ?? []).map((k) => String(k.AttributeName));
    const shape: TableShape = {
      keys: names(Table?.KeySchema),
      indexes: (Table?.GlobalSecondaryIndexes ?? []).map((g) => ({
        name: String(g.IndexName),
        keys: names(g.KeySchema),
        projection: (g.Projection?.ProjectionType ?? "ALL") as Projection,
        include: g.Projection?.NonKeyAttributes ?? [],
      })),
    };
    this.#tables.set(table, shape);
    return shape;
  }
}

export async function meterDynamo(inner: LocalDynamo): Promise<MeteredDynamo> {
  const units = { read: 0, write: 0 };
  const clients: DynamoDBClient[] = [];
  const meter = new Meter(inner.client());
  let paused = false;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string" && k !== "host") headers[k] = v;
      const op = String(req.headers["x-amz-target"] ?? "").split(".")[1] ?? "";
      const counted = !paused;
      const forward = () =>
        fetch(`${inner.endpoint}${req.url ?? "/"}`, { method: req.method ?? "POST", headers, body });
      const { answer, read = 0, write = 0 } = await meter.count(op, parseRequest(body), forward);
      if (counted) {
        units.read += read;
        units.write += write;
      }
      const out = Buffer.from(await answer.arrayBuffer());
      const outHeaders: Record<string, string> = {};
      answer.headers.forEach((v, k) => {
        if (k !== "content-length" && k !== "transfer-encoding" && k !== "connection") outHeaders[k] = v;
      });
      res.writeHead(answer.status, outHeaders).end(out);
    })().catch((error: unknown) => {
      res
        .writeHead(500, { "content-type": "application/x-amz-json-1.0" })
        .end(JSON.stringify({ __type: "InternalServerError", message: String(error) }));
    });
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const metered: MeteredDynamo = {
    engine: inner.engine,
    endpoint,
    units,
    get paused() {
      return paused;
    },
    set paused(value: boolean) {
      paused = value;
    },
    client: () => {
      const client = new DynamoDBClient({
        endpoint,
        region: "us-east-1",
        credentials: { accessKeyId: "local", secretAccessKey: "local" },
      });
      clients.push(client);
      return client;
    },
    close: async () => {
      for (const client of clients) client.destroy();
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
  return metered;
}

function parseRequest(body: Buffer): Request {
  try {
    return JSON.parse(body.toString("utf8")) as Request;
  } catch {
    return {};
  }
}
