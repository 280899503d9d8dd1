/** The rollout store: port, schema, adapters and the read-modify-write helpers. */
export { DynamoRolloutStore, type DynamoRolloutStoreOptions } from "./dynamodb.ts";
export {
  ConcurrentUpdateError,
  RolloutNotFoundError,
  StoredItemInvalidError,
  StoreUnavailableError,
} from "./errors.ts";
export * from "./keys.ts";
export { MemoryRolloutStore } from "./memory.ts";
export type { PutMeasurementInput, RolloutStore, StoredMeasurement, StoredRun } from "./port.ts";
export * from "./schema.ts";
export { type Mutation, type UpdateOptions, update, upsert } from "./update.ts";
export { parseWith } from "./validate.ts";
