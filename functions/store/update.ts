import { ConcurrentUpdateError, RolloutNotFoundError } from "./errors.ts";
import type { RolloutStore } from "./port.ts";
import type { RolloutItem, RolloutItemInput } from "./schema.ts";

/**
 * Computes the next item from the current one. Return `null` to write nothing. Throw to give up
 * (e.g. `RolloutAbortedError` when the item says the rollout was aborted): nothing is written.
 * It may be called several times (once per attempt), so it must be pure.
 */
export type Mutation = (current: RolloutItem) => RolloutItemInput | null;

export interface UpdateOptions {
  /** Attempts before the last `ConcurrentUpdateError` is rethrown. Default 5. */
  maxAttempts?: number;
}

const DEFAULT_ATTEMPTS = 5;

/**
 * Read-modify-write of one rollout item with optimistic locking.
 *
 * - `expectedVersion` a number: a strict compare-and-set. The caller decided on that version (it
 *   showed it to a person, or computed from it); if the item moved on, the decision may be stale,
 *   so the `ConcurrentUpdateError` is thrown without retrying.
 * - `expectedVersion` `"latest"`: read, mutate, write; on a conflict re-read and re-apply the
 *   mutation, up to `maxAttempts` times (the mutation sees the other writer's change, so it can
 *   decide again, e.g. refuse because `abortRequested` is now set).
 *
 * Returns the item as stored (or the current item when the mutation returned `null`).
 */
export async function update(
  store: RolloutStore,
  name: string,
  expectedVersion: number | "latest",
  mutate: Mutation,
  options: UpdateOptions = {},
): Promise<RolloutItem> {
  return upsert(
    store,
    name,
    (current) => {
      if (current === undefined) throw new RolloutNotFoundError(name);
      if (expectedVersion !== "latest" && current.version !== expectedVersion) {
        throw new ConcurrentUpdateError(`rollout "${name}"`, expectedVersion);
      }
      return mutate(current) ?? current;
    },
    expectedVersion === "latest" ? options : { ...options, maxAttempts: 1 },
  ) as Promise<RolloutItem>;
}

/**
 * Like `update("latest")`, but the item may not exist yet: the mutation receives `undefined` and
 * returning an item creates it (conditional on absence, so two creators cannot both win).
 * Returns `undefined` only when the item is absent and the mutation returned `null`.
 */
export async function upsert(
  store: RolloutStore,
  name: string,
  mutate: (current: RolloutItem | undefined) => RolloutItemInput | null,
  options: UpdateOptions = {},
): Promise<RolloutItem | undefined> {
  const attempts = Math.max(1, options.maxAttempts ?? DEFAULT_ATTEMPTS);
  let lastConflict: ConcurrentUpdateError | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const current = await store.get(name);
    const next = mutate(current);
    if (next === null || next === current) return current;
    if (next.name !== name) throw new RangeError(`mutation renamed rollout "${name}" to "${next.name}"`);
    try {
      return await store.save(next, current?.version ?? null);
    } catch (error) {
      if (!(error instanceof ConcurrentUpdateError)) throw error;
      lastConflict = error;
    }
  }
  throw lastConflict ?? new ConcurrentUpdateError(`rollout "${name}"`, null);
}
