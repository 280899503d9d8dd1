import type { AddressInfo } from "node:net";
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { TABLE } from "../../functions/store/keys.ts";

/** A real in-process DynamoDB (dynalite) with the rollouts table, for the store's tests. */
export interface DynaliteHarness {
  endpoint: string;
  tableName: string;
  /** A new client each call: separate clients behave like separate Lambdas. */
  client(): DynamoDBClient;
  close(): Promise<void>;
}

export async function startDynalite(tableName = "rollouts-test"): Promise<DynaliteHarness> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const clients: DynamoDBClient[] = [];
  const client = () => {
    const c = new DynamoDBClient({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    });
    clients.push(c);
    return c;
  };
  const admin = client();
  await createRolloutsTable(admin, tableName);
  return {
    endpoint,
    tableName,
    client,
    close: async () => {
      for (const c of clients) c.destroy();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}

/**
 * Creates the rollouts table (keys and the sparse `byKind` index of `functions/store/keys.ts`) and
 * waits until it and its index are ACTIVE.
 */
export async function createRolloutsTable(client: DynamoDBClient, name: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: TABLE.partitionKey, AttributeType: "S" },
        { AttributeName: TABLE.sortKey, AttributeType: "S" },
        { AttributeName: TABLE.listIndex.partitionKey, AttributeType: "S" },
      ],
      KeySchema: [
        { AttributeName: TABLE.partitionKey, KeyType: "HASH" },
        { AttributeName: TABLE.sortKey, KeyType: "RANGE" },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: TABLE.listIndex.name,
          KeySchema: [
            { AttributeName: TABLE.listIndex.partitionKey, KeyType: "HASH" },
            { AttributeName: TABLE.listIndex.sortKey, KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "ALL" },
        },
      ],
    }),
  );
  // dynalite reports CREATING first; poll until ACTIVE (a readiness wait, not a timed assertion).
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    if (
      Table?.TableStatus === "ACTIVE" &&
      Table.GlobalSecondaryIndexes?.every((i) => i.IndexStatus === "ACTIVE")
    ) {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
