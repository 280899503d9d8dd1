import { TargetNotReadyError } from "../errors.ts";
import { type KubeClient, KubeConflictError, type KubeObject, type KubeResource } from "./client.ts";

/**
 * Conditional writes: read, decide from what was read, write at the `resourceVersion` read. A
 * 409 means someone wrote in between: read again and decide again (their change may be drift, or
 * already what we wanted), never write blindly over it.
 */

/** What to do with an object just read. */
export type Decision<T> =
  | { readonly write: KubeObject; readonly result: T }
  | { readonly skip: true; readonly result: T };

/** Tries this many read-decide-write rounds before giving up with a retryable error. */
const ROUNDS = 5;

export async function updateObject<T>(
  client: KubeClient,
  resource: KubeResource,
  namespace: string,
  name: string,
  decide: (object: KubeObject) => Decision<T>,
): Promise<T> {
  for (let round = 1; ; round++) {
    const object = await client.require(resource, namespace, name);
    const decision = decide(structuredClone(object));
    if ("skip" in decision) return decision.result;
    try {
      await client.replace(resource, {
        ...decision.write,
        metadata: { ...decision.write.metadata, resourceVersion: object.metadata.resourceVersion },
      });
      return decision.result;
    } catch (error) {
      if (!(error instanceof KubeConflictError)) throw error;
      if (round >= ROUNDS) {
        throw new TargetNotReadyError(
          `${resource.kind} ${namespace}/${name} kept changing while it was written (${ROUNDS} conflicts in a row); the workflow retries`,
          { cause: error },
        );
      }
    }
  }
}

/** `obj[key]` as a record (created when absent), for editing a copy in place. */
export function record(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = parent[key];
  if (value !== null && typeof value === "object" && !Array.isArray(value))
    return value as Record<string, unknown>;
  const created: Record<string, unknown> = {};
  parent[key] = created;
  return created;
}

/** `obj[key]` as an array of records (empty when absent). */
export function records(parent: Record<string, unknown> | undefined, key: string): Record<string, unknown>[] {
  const value = parent?.[key];
  return Array.isArray(value)
    ? (value.filter((v) => v !== null && typeof v === "object") as Record<string, unknown>[])
    : [];
}

/** A percentage as messages show it. */
export function percent(value: number): string {
  return Number.isInteger(value) ? `${value}%` : `${value.toFixed(2)}%`;
}
