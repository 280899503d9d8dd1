import type { z } from "zod";
import { StoredItemInvalidError } from "./errors.ts";

/**
 * Validates with zod and names the item and the field path in the error, so a bad item is
 * reported as `ROLLOUT#web/STATE: phase: …` rather than as an anonymous ZodError. Shared by every
 * adapter (kept out of the DynamoDB adapter so the in-memory store does not load the AWS SDK).
 */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, where: string, field: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details = result.error.issues
    .map((issue) => {
      const path = [field, ...issue.path.map(String)].filter((part) => part !== "").join(".");
      return `${path || "(item)"}: ${issue.message}`;
    })
    .join("; ");
  throw new StoredItemInvalidError(where, details, { cause: result.error });
}
