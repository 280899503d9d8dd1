/**
 * The model router's shared store (its configuration and observations in the controller's table:
 * `functions/router/dynamodb-*.ts`) against moto's DynamoDB: the same tests dynalite passes
 * (`test/unit/router/shared-store.ts`).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createRolloutsTable } from "@sfn-rollouts/test-support/dynalite";
import { type Moto, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll } from "vitest";
import { sharedStoreContract } from "../unit/router/shared-store.ts";

const TABLE = "rollouts";
let moto: Moto;
const clients: DynamoDBClient[] = [];

beforeAll(async () => {
  moto = await startMoto();
  await createRolloutsTable(client(), TABLE);
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  await moto?.close();
});

function client(): DynamoDBClient {
  const c = new DynamoDBClient(moto.config);
  clients.push(c);
  return c;
}

sharedStoreContract("moto", () => ({ client, tableName: TABLE }));
