/**
 * AWS resource names built from a rollout's name, and the longest rollout name they allow. The
 * builders live where the names are used (`functions/trigger/decide.ts` `executionName`,
 * `functions/timer/names.ts` `deriveName`); their shapes are here so the spec can refuse a name
 * they could not hold whole.
 */

/** Step Functions execution names: 1–80 characters. */
export const EXECUTION_NAME_MAX = 80;
/** EventBridge Scheduler schedule names: `[0-9a-zA-Z-_.]+`, 1–64 characters. */
export const SCHEDULE_NAME_MAX = 64;
/** Hex digits of the image digest in a push's execution name (`<rollout>-<hex>-g<generation>`). */
export const EXECUTION_DIGEST_HEX = 24;
/**
 * Digits of the generation an execution name keeps room for: a million accepted pushes of one
 * rollout (one a minute for almost two years) before the name's rollout part is cut.
 */
export const GENERATION_DIGITS = 6;
/** Hex digits of the hash a derived Timer name (schedule, ticker execution) ends with. */
export const NAME_HASH_LENGTH = 16;

/**
 * The longest rollout name: 47 characters, so that the name stays whole where people read it.
 * A push's execution name is `<rollout>-<24 hex of the digest>-g<generation>` within 80
 * characters (80 − 1 − 24 − 2 − 6 generation digits = 47); a Timer schedule's name is the start
 * of its key (`<rollout>/<run>/...`) and a 16-digit hash within 64 characters (64 − 1 − 16 = 47).
 */
export const ROLLOUT_NAME_MAX = Math.min(
  EXECUTION_NAME_MAX - (1 + EXECUTION_DIGEST_HEX + 2 + GENERATION_DIGITS),
  SCHEDULE_NAME_MAX - 1 - NAME_HASH_LENGTH,
);

/** A DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit. */
export const ROLLOUT_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why a rollout name cannot be used, or undefined when it can. */
export function rolloutNameProblem(name: string): string | undefined {
  if (ROLLOUT_NAME_PATTERN.test(name) && name.length <= ROLLOUT_NAME_MAX) return undefined;
  const shown =
    name.length > 60
      ? `${JSON.stringify(name.slice(0, 60)).slice(0, -1)}…" (${name.length} characters)`
      : JSON.stringify(name);
  return `${shown} is not a rollout name: use at most ${ROLLOUT_NAME_MAX} lower-case letters, digits and '-', starting and ending with a letter or digit (a DNS label short enough to stay whole in the rollout's Step Functions execution and schedule names)`;
}
