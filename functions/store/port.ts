import type { z } from "zod";
import type { RolloutItem, RolloutItemInput } from "./schema.ts";

/**
 * An analysis run as stored: the run itself is the analysis engine's JSON, opaque to the store and
 * validated on read by the schema the caller passes (the store must not depend on the engine).
 */
export interface StoredRun<T = unknown> {
  rollout: string;
  runId: string;
  run: T;
  /** Optimistic lock, like the rollout item: two ticks of one run can never both write. */
  version: number;
  createdAt: number;
  updatedAt: number;
  /** Epoch seconds after which DynamoDB TTL may delete the run (the TTL attribute); null: kept. */
  expiresAt?: number | null;
}

/** One measurement of a run, kept until `expiresAt` (DynamoDB TTL deletes it some time after). */
export interface StoredMeasurement<T = unknown> {
  rollout: string;
  runId: string;
  /** Chosen by the caller; listings are sorted by it, so make it sortable (`<metric>#<000042>`). */
  measurementId: string;
  value: T;
  /** Epoch ms the measurement was taken. */
  at: number;
  /** Epoch seconds (the DynamoDB TTL attribute). */
  expiresAt: number;
}

export interface PutMeasurementInput {
  rollout: string;
  runId: string;
  measurementId: string;
  value: unknown;
  at: number;
  /** Seconds after `at` the measurement may be deleted. */
  ttlSeconds: number;
}

/**
 * The rollout store port. Every write is a single-item conditional write on an optimistic
 * `version`; a lost race throws `ConcurrentUpdateError` (never a silent overwrite), which is what
 * keeps two executions from both driving one rollout. Opaque JSON (runs, measurements,
 * `targetState`) is normalised through `JSON.stringify` on write, so what is read back is exactly
 * what JSON carries (no `undefined`, no `NaN`).
 *
 * Adapters: `DynamoRolloutStore` (AWS, dynalite, DynamoDB Local) and `MemoryRolloutStore` (tests).
 * For read-modify-write, use `update`/`upsert` from `./update.ts` rather than `save` directly.
 */
/** What a run write may say besides the run itself. */
export interface SaveRunOptions {
  /** Epoch seconds after which the run may be deleted (DynamoDB TTL); absent: never. */
  expiresAt?: number;
}

/** Which runs a listing reads. */
export interface ListRunsOptions {
  /** Only runs whose id starts with this (one execution's runs: its name and a dot). */
  prefix?: string;
}

/** Which measurements a listing reads. */
export interface ListMeasurementsOptions {
  /** Only measurements whose id starts with this (one metric's: `<metric>#`). */
  prefix?: string;
  /** Of those (and `match`), only the newest `last` by id, still returned oldest first. */
  last?: number;
  /** Keeps only the ids it accepts (a prefix `a#` also matches the ids of a metric `a#b`). */
  match?: (measurementId: string) => boolean;
}

/** Which parts of the rollout item a read needs; the rest reads as its schema's default. */
export interface GetOptions {
  /** Top-level fields to read (a DynamoDB projection); absent: the whole item. */
  fields?: readonly (keyof RolloutItem)[];
}

export interface RolloutStore {
  /** The rollout item, or only `options.fields` of it (the others take their defaults). */
  get(name: string, options?: GetOptions): Promise<RolloutItem | undefined>;
  /**
   * Writes the whole item if its stored version is `expectedVersion` (`null`: only if absent),
   * and returns it as stored (version incremented, `updatedAt` stamped).
   */
  save(item: RolloutItemInput, expectedVersion: number | null): Promise<RolloutItem>;
  /** All rollouts, sorted by name. */
  list(): Promise<RolloutItem[]>;

  getRun<T>(rollout: string, runId: string, schema: z.ZodType<T>): Promise<StoredRun<T> | undefined>;
  /**
   * Conditional like `save`: `expectedVersion` `null` creates the run, a number updates it. An item
   * larger than DynamoDB's 400 KB limit throws `ItemTooLargeError`, another refused write
   * `WriteRejectedError`: retrying them cannot help.
   */
  saveRun(
    rollout: string,
    runId: string,
    run: unknown,
    expectedVersion: number | null,
    options?: SaveRunOptions,
  ): Promise<StoredRun>;
  /** The rollout's unexpired runs (those `options.prefix` selects), sorted by run id. */
  listRuns<T>(rollout: string, schema: z.ZodType<T>, options?: ListRunsOptions): Promise<StoredRun<T>[]>;

  /**
   * Records a measurement once: returns `false` (and writes nothing) if that id already exists, so
   * a duplicated timer firing cannot count one measurement twice.
   */
  putMeasurement(input: PutMeasurementInput): Promise<boolean>;
  /** The run's unexpired measurements (those `options` select), sorted by measurement id. */
  listMeasurements<T>(
    rollout: string,
    runId: string,
    schema: z.ZodType<T>,
    options?: ListMeasurementsOptions,
  ): Promise<StoredMeasurement<T>[]>;
}
