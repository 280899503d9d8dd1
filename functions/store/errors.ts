import { RolloutsError } from "../../statemachine/errors.ts";
/**
 * The store's named errors. Lambdas let them propagate, and the ASL matches `name` in `Retry`
 * (`ConcurrentUpdateError` is retryable: re-running the handler re-reads the item) and `Catch`.
 */

/** Another writer changed the item since it was read: the conditional write was refused. */
export class ConcurrentUpdateError extends RolloutsError {
  override readonly name = "ConcurrentUpdateError";
  /** The version the write expected; `null` when it expected the item not to exist. */
  readonly expectedVersion: number | null;
  readonly key: string;

  constructor(key: string, expectedVersion: number | null, options?: ErrorOptions) {
    super(
      expectedVersion === null
        ? `${key}: item already exists (another writer created it first)`
        : `${key}: version ${expectedVersion} is no longer current (another writer updated it)`,
      options,
    );
    this.key = key;
    this.expectedVersion = expectedVersion;
  }
}

/** The rollout has no item: it was never triggered (or the name is wrong). */
export class RolloutNotFoundError extends RolloutsError {
  override readonly name = "RolloutNotFoundError";
  readonly rollout: string;

  constructor(rollout: string, options?: ErrorOptions) {
    super(`rollout "${rollout}" not found in the store`, options);
    this.rollout = rollout;
  }
}

/** An item did not match its schema (on read: a bug or a hand edit; on write: a bug). Never retried. */
export class StoredItemInvalidError extends RolloutsError {
  override readonly name = "StoredItemInvalidError";
  readonly key: string;

  constructor(key: string, details: string, options?: ErrorOptions) {
    super(`${key}: item is invalid: ${details}`, options);
    this.key = key;
  }
}

/** DynamoDB itself failed (throttling after SDK retries, network, permissions). */
export class StoreUnavailableError extends RolloutsError {
  override readonly name = "StoreUnavailableError";

  constructor(operation: string, key: string, options?: ErrorOptions) {
    const why = options?.cause instanceof Error ? `: ${options.cause.name}: ${options.cause.message}` : "";
    super(`${operation} ${key} failed${why}`, options);
  }
}

/**
 * The store refused the write for what it holds, not for a passing condition: retrying the same
 * write fails the same way (DynamoDB's `ValidationException`). The caller must write something else.
 */
export class WriteRejectedError extends RolloutsError {
  override readonly name: string = "WriteRejectedError";
  readonly key: string;

  constructor(key: string, details: string, options?: { cause?: unknown }) {
    super(`${key}: write refused: ${details}`, options);
    this.key = key;
  }
}

/** The item would be larger than DynamoDB's 400 KB item limit: the write is refused, every time. */
export class ItemTooLargeError extends WriteRejectedError {
  override readonly name: string = "ItemTooLarge";
  /** The item's size as DynamoDB counts it, when known (the in-memory store computes it). */
  readonly bytes: number | undefined;

  constructor(key: string, bytes: number | undefined, options?: { cause?: unknown }) {
    super(
      key,
      `the item${bytes === undefined ? "" : ` (${bytes.toLocaleString("en-US")} bytes)`} is larger than DynamoDB's 400 KB item limit (409,600 bytes)`,
      options,
    );
    this.bytes = bytes;
  }
}

/**
 * A write that retrying cannot fix: the item is too large or otherwise refused, or it does not
 * match its schema. A handler that can write something smaller instead must do so; rethrowing
 * would only make every retry fail the same way.
 */
export function isPermanentWriteError(error: unknown): error is Error {
  return error instanceof WriteRejectedError || error instanceof StoredItemInvalidError;
}
