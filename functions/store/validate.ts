import type { z } from "zod";
import { formatIssues } from "../../statemachine/problems.ts";
import { StoredItemInvalidError } from "./errors.ts";

/**
 * Validates with zod and names the item and the field path in the error, so a bad item is
 * reported as `ROLLOUT#web/STATE: phase: …` rather than as an anonymous ZodError. Shared by every
 * adapter (kept out of the DynamoDB adapter so the in-memory store does not load the AWS SDK).
 */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, where: string, field: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const prefix = field === "" ? [] : [field];
  throw new StoredItemInvalidError(where, formatIssues(result.error, "(item)", prefix), {
    cause: result.error,
  });
}
