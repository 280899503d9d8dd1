/** The rollout store: port, schema, adapters and the read-modify-write helpers. */
export { DynamoRolloutStore, type DynamoRolloutStoreOptions } from "./dynamodb.ts";
export {
  ConcurrentUpdateError,
  ItemTooLargeError,
  isPermanentWriteError,
  RolloutNotFoundError,
  StoredItemInvalidError,
  StoreUnavailableError,
  WriteRejectedError,
} from "./errors.ts";
export * from "./keys.ts";
export { MemoryRolloutStore } from "./memory.ts";
export type {
  GetOptions,
  ListMeasurementsOptions,
  ListRunsOptions,
  PutMeasurementInput,
  RolloutStore,
  SaveRunOptions,
  StoredMeasurement,
  StoredRun,
} from "./port.ts";
export * from "./schema.ts";
export { formatBytes, itemBytes, MAX_ITEM_BYTES, runItemBytes, utf8Bytes, valueBytes } from "./size.ts";
export { type Mutation, type UpdateOptions, update, upsert } from "./update.ts";
export { parseWith } from "./validate.ts";
