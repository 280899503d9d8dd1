import { awsErrorName } from "../../aws-errors.ts";
import { TargetNotReadyError } from "../errors.ts";

/**
 * What the target creates on SageMaker (models, endpoint configs) is named after the endpoint and
 * a hash of the artifact and the stable config, so a retried call finds what its first attempt
 * created: creating is a no-op when the name exists, deleting when it is gone.
 */

/** The prefix of every resource this target creates for the endpoint (≤ 43 characters). */
export function resourcePrefix(endpointName: string): string {
  return `${endpointName.slice(0, 40).replace(/-+$/, "")}-r-`;
}

/** Runs `create`; a resource that already exists is the first attempt's, anything else refuses. */
export async function createOnce(create: () => Promise<unknown>, what: string): Promise<void> {
  try {
    await create();
  } catch (err) {
    // A retry finds what its first attempt created (the names are derived from the artifact).
    if (awsErrorName(err) === "ValidationException" && /already exist/i.test((err as Error).message)) return;
    throw new TargetNotReadyError(
      `creating ${what} was refused: ${awsErrorName(err) ?? "error"}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/** Runs `remove`; a resource already gone is no error. */
export async function deleteIfPresent(remove: () => Promise<unknown>): Promise<void> {
  try {
    await remove();
  } catch (err) {
    if (awsErrorName(err) === "ValidationException" && /could not find/i.test((err as Error).message)) return;
    throw err;
  }
}

/** The names of both lists, each once. */
export function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}
