import { createHash } from "node:crypto";

/**
 * Sticky cohorts: which version a user sees, decided by a hash and never by a coin, so a user keeps
 * one version for the whole rollout and their feedback belongs to it. The arithmetic is the model
 * rollout reference's, bit for bit:
 *
 * - `fraction(...parts)` = the first 8 bytes of SHA-256 of the parts joined by `:`, read as a
 *   big-endian unsigned integer, divided by 2^64 (a number in [0, 1));
 * - `bucket(user, salt)` = `fraction("cohort", salt, user) × 100` (a number in [0, 100));
 * - a user is in the candidate's cohort when the weight is above 0 and `bucket < weight` (strictly).
 *
 * Three properties follow: the same user always lands in the same bucket; a user in the cohort at
 * 10% is still in it at 50% (bucket < 10 implies bucket < 50), so raising the weight only adds
 * users; and the salt (by default the candidate's name) reshuffles the users for every candidate,
 * so the same unlucky users are not the first cohort of every release.
 */

const TWO_TO_64 = 2 ** 64;

/** The first 8 bytes of SHA-256 of `parts.join(":")` as a fraction of 2^64, in [0, 1). */
export function fraction(...parts: readonly string[]): number {
  const digest = createHash("sha256").update(parts.join(":"), "utf8").digest();
  // Number(bigint) rounds to the nearest double, as Python's int / float does.
  return Number(digest.readBigUInt64BE(0)) / TWO_TO_64;
}

/** The user's bucket, in [0, 100), for this salt. */
export function bucket(user: string, salt: string): number {
  return fraction("cohort", salt, user) * 100;
}

/** Which side a user is on at `weight` percent (0–100) with this salt. */
export function assign(user: string, salt: string, weight: number): "candidate" | "primary" {
  return weight > 0 && bucket(user, salt) < weight ? "candidate" : "primary";
}

/** Whether a request id is mirrored at `percent` (0–100): the reference's `fraction("mirror", id)`. */
export function mirrored(requestId: string, percent: number): boolean {
  return percent > 0 && fraction("mirror", requestId) * 100 < percent;
}

/** The user names `rollouts assign` (and the reference's `assign`) counts: `u0` … `u{users-1}`. */
export function userName(index: number): string {
  return `u${index}`;
}

/** How many of `users` generated users (`u0`…) fall in the candidate's cohort at `weight`. */
export function cohortSize(users: number, salt: string, weight: number): number {
  let inCohort = 0;
  for (let i = 0; i < users; i++) if (assign(userName(i), salt, weight) === "candidate") inCohort += 1;
  return inCohort;
}

/** Where a request's cohort key is read: a header (case-insensitive) and/or a top-level JSON body field. */
export interface CohortKey {
  /** Header carrying the user id; default `x-user-id`. */
  readonly header?: string;
  /** Top-level field of a JSON object body carrying the user id; default `user`. */
  readonly field?: string;
}

export const DEFAULT_COHORT_KEY = { header: "x-user-id", field: "user" } as const;

/**
 * The cohort key of a request: the header, else the body field (a string or a finite number),
 * else undefined (the caller falls back to the request id, which makes that request non-sticky).
 */
export function cohortKeyOf(
  key: CohortKey,
  headers: Readonly<Record<string, string | undefined>>,
  body: unknown,
): string | undefined {
  const header = (key.header ?? DEFAULT_COHORT_KEY.header).toLowerCase();
  const fromHeader = headers[header];
  if (typeof fromHeader === "string" && fromHeader.length > 0) return fromHeader;
  const field = key.field ?? DEFAULT_COHORT_KEY.field;
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    const value = (body as Record<string, unknown>)[field];
    if (typeof value === "string" && value.length > 0) return value;
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
  }
  return undefined;
}
