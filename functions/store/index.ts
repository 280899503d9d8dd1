/** The rollout store: port, schema, adapters and the read-modify-write helpers. */
export { DynamoRolloutStore } from "./dynamodb.ts";
export {
  ConcurrentUpdateError,
  StoredItemInvalidError,
  StoreUnavailableError,
} from "./errors.ts";
export * from "./keys.ts";
export { MemoryRolloutStore } from "./memory.ts";
export type { RolloutStore } from "./port.ts";
export * from "./schema.ts";
export { update, upsert } from "./update.ts";
