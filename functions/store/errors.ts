/**
 * The store's named errors. Lambdas let them propagate, and the ASL matches `name` in `Retry`
 * (`ConcurrentUpdateError` is retryable: re-running the handler re-reads the item) and `Catch`.
 */

/** Another writer changed the item since it was read: the conditional write was refused. */
export class ConcurrentUpdateError extends Error {
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
export class RolloutNotFoundError extends Error {
  override readonly name = "RolloutNotFoundError";
  readonly rollout: string;

  constructor(rollout: string, options?: ErrorOptions) {
    super(`rollout "${rollout}" not found in the store`, options);
    this.rollout = rollout;
  }
}

/** An item did not match its schema (on read: a bug or a hand edit; on write: a bug). Never retried. */
export class StoredItemInvalidError extends Error {
  override readonly name = "StoredItemInvalidError";
  readonly key: string;

  constructor(key: string, details: string, options?: ErrorOptions) {
    super(`${key}: item is invalid: ${details}`, options);
    this.key = key;
  }
}

/** DynamoDB itself failed (throttling after SDK retries, network, permissions). */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";

  constructor(operation: string, key: string, options?: ErrorOptions) {
    const why = options?.cause instanceof Error ? `: ${options.cause.name}: ${options.cause.message}` : "";
    super(`${operation} ${key} failed${why}`, options);
  }
}
