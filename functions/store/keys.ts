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

/**
 * The model router's partition (`functions/router/keys.ts`): its configuration, answers and
 * feedback, named by the router (a SageMaker target's endpoint); here so the construct can scope
 * the router function's role to it.
 */
export const modelPk = (router: string): string => `MODEL#${router}`;

/** A human-readable key for error messages. */
export const describeKey = (pk: string, sk: string): string => `${pk}/${sk}`;

/** JSON round trip: opaque values are stored exactly as JSON would carry them. */
export function toJson(value: unknown): unknown {
  if (value === undefined) return null;
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "number" ? storableNumber(v) : v));
  return text === undefined ? null : JSON.parse(text);
}

/** The largest double DynamoDB stores (its numbers end below 1e126). */
const DYNAMO_MAX = 9.99999999999999e125;
/** DynamoDB's smallest non-zero magnitude. */
const DYNAMO_MIN = 1e-130;

/**
 * A number DynamoDB accepts: its numbers span 1e-130 to 1e126 in magnitude, so a finite double
 * beyond saturates (a judge's Bayes factor of 1e300 is stored as 9.99999999999999e125, a p-value
 * of 1e-300 as 0) instead of failing the whole write, which would leave the analysis unable to
 * record the very measurement that rolls a bad version back. Non-finite numbers become null, as
 * JSON makes them.
 */
export function storableNumber(n: number): number | null {
  if (!Number.isFinite(n)) return null;
  const magnitude = Math.abs(n);
  if (magnitude > DYNAMO_MAX) return Math.sign(n) * DYNAMO_MAX;
  if (magnitude !== 0 && magnitude < DYNAMO_MIN) return 0;
  return n;
}
