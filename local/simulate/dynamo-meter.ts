import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { LocalDynamo } from "../dynamo.ts";

/**
 * A local DynamoDB with a meter in front: every request passes through a forwarder that counts
 * the request units DynamoDB on-demand would bill, estimated from the wire sizes (a write is
 * ⌈bytes / 1 KB⌉ units of its request, a read ⌈bytes / 4 KB⌉ of its answer, halved when eventually
 * consistent). The JSON on the wire is larger than DynamoDB's item size, so this is an upper bound.
 */
export interface MeteredDynamo extends LocalDynamo {
  readonly units: { read: number; write: number };
  /** Requests made while paused are not counted (the simulation's own reads). */
  paused: boolean;
}

const WRITES = new Set(["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"]);
const READS = new Set(["GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"]);

export async function meterDynamo(inner: LocalDynamo): Promise<MeteredDynamo> {
  const units = { read: 0, write: 0 };
  const clients: DynamoDBClient[] = [];
  let paused = false;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string" && k !== "host") headers[k] = v;
      const answer = await fetch(`${inner.endpoint}${req.url ?? "/"}`, {
        method: req.method ?? "POST",
        headers,
        body,
      });
      const out = Buffer.from(await answer.arrayBuffer());
      const op = String(req.headers["x-amz-target"] ?? "").split(".")[1] ?? "";
      if (!paused && answer.ok) {
        if (WRITES.has(op)) units.write += Math.max(1, Math.ceil(body.length / 1024));
        if (READS.has(op)) {
          const consistent = /"ConsistentRead"\s*:\s*true/.test(body.toString("utf8")) || op === "GetItem";
          units.read += Math.max(1, Math.ceil(out.length / 4096)) * (consistent ? 1 : 0.5);
        }
      }
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
