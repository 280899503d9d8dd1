import { createHash } from "node:crypto";

/**
 * Canonical JSON: keys sorted at every level, no whitespace, non-ASCII escaped as `\uXXXX`, so
 * the same template always hashes to the same revision whatever the key order or file format.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

/**
 * The revision of a pod template: the first ten hex digits of the SHA-256 of its canonical JSON.
 * Like pod-template-hash, any change to the template starts a new rollout, and the same template
 * is the same revision.
 */
export function revisionOf(template: unknown): string {
  return createHash("sha256").update(canonicalJson(template)).digest("hex").slice(0, 10);
}
