/**
 * The table layout, shared by the DynamoDB adapter and the construct that creates the table (the
 * construct may import constants of `functions/`). One partition per rollout: the rollout item,
 * its analysis runs and their measurements live together, so reading a rollout for
 * `rollouts get` is one query and rollouts never share a partition.
 */
export const TABLE = {
  partitionKey: "pk",
  sortKey: "sk",
  /** The TTL attribute (epoch seconds), set on measurement items only. */
  ttlAttribute: "expiresAt",
  /**
   * A sparse GSI: only rollout items carry `kind`, so `list()` reads rollout items and nothing
   * else, however many runs and measurements the table holds.
   */
  listIndex: { name: "byKind", partitionKey: "kind", sortKey: "pk" },
} as const;

/** The value of `kind` on rollout items (the only items in the list index). */
export const ROLLOUT_KIND = "ROLLOUT";

export const rolloutPk = (name: string): string => `ROLLOUT#${name}`;
export const STATE_SK = "STATE";
export const RUN_SK_PREFIX = "RUN#";
export const runSk = (runId: string): string => `${RUN_SK_PREFIX}${runId}`;
/** Measurements sort after their run's id; `MEAS#` keeps them out of a `begins_with(RUN#)` query. */
export const measurementSkPrefix = (runId: string): string => `MEAS#${runId}#`;
export const measurementSk = (runId: string, measurementId: string): string =>
  `${measurementSkPrefix(runId)}${measurementId}`;

/** A human-readable key for error messages. */
export const describeKey = (pk: string, sk: string): string => `${pk}/${sk}`;

/** JSON round trip: opaque values are stored exactly as JSON would carry them. */
export function toJson(value: unknown): unknown {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  return text === undefined ? null : JSON.parse(text);
}
