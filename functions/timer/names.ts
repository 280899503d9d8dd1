import { createHash } from "node:crypto";
import { EXECUTION_NAME_MAX, NAME_HASH_LENGTH, SCHEDULE_NAME_MAX } from "../../statemachine/names.ts";

/**
 * Derives a resource name from an arbitrary key: deterministic (the same key always gives the same
 * name, which is what makes retries idempotent), limited to `[A-Za-z0-9_-]` (valid for Scheduler
 * schedule names, Step Functions execution names and CloudWatch log streams alike) and at most
 * `maxLength` characters. A readable prefix of the key is kept and a hash of the whole key is
 * appended, so two keys that only differ in characters that were replaced or cut off still get
 * different names.
 */
export function deriveName(key: string, maxLength: number, hashLength = NAME_HASH_LENGTH): string {
  if (maxLength < hashLength + 2) throw new RangeError(`deriveName: maxLength ${maxLength} is too small`);
  const hash = createHash("sha256").update(key).digest("hex").slice(0, hashLength);
  const readable = key
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, maxLength - hashLength - 1)
    .replace(/-+$/g, "");
  return readable === "" ? hash : `${readable}-${hash}`;
}

/** EventBridge Scheduler: `[0-9a-zA-Z-_.]+`, 1–64 characters; Step Functions executions: 1–80. */
export { EXECUTION_NAME_MAX, SCHEDULE_NAME_MAX };
