import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { afterAll, beforeAll } from "vitest";
import { sharedStoreContract } from "./shared-store.ts";

let db: DynaliteHarness;
beforeAll(async () => {
  db = await startDynalite();
});
afterAll(async () => {
  await db.close();
});

sharedStoreContract("dynalite", () => db);
