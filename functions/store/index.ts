/** The rollout store: port, schema, adapters and the read-modify-write helpers. */
export { DynamoRolloutStore } from "./dynamodb.ts";
export {
  ConcurrentUpdateError,
  ItemTooLargeError,
  StoredItemInvalidError,
  StoreUnavailableError,
  WriteRejectedError,
} from "./errors.ts";
export * from "./keys.ts";
export { MemoryRolloutStore } from "./memory.ts";
export type { RolloutStore } from "./port.ts";
export * from "./schema.ts";
export { itemBytes, MAX_ITEM_BYTES } from "./size.ts";
export { update, upsert } from "./update.ts";
