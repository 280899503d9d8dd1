import type { HeaderRoute } from "../port.ts";

/**
 * A traffic router of the kubernetes target (Gateway API, Istio, NGINX): the object that splits
 * requests between the stable and canary Services. Each write is conditional on the object's
 * `resourceVersion` and re-decided after a conflict (`objects.ts`).
 */
export interface WeightRouter {
  /** What the router is, for messages: `HTTPRoute default/shop`. */
  readonly what: string;
  /**
   * The percent of requests the canary receives now (fractional after someone else's change):
   * `shares` per weighted rule or route, `canary` the first of them.
   */
  read(): Promise<{ canary: number; shares: number[]; detail: string }>;
  /**
   * Sets the canary's percent. With `expected` (what this rollout last set), a router found at
   * another share is drift: nothing is written and the share found is returned.
   */
  write(percent: number, expected: number | undefined): Promise<WeightWrite>;
  /** Sends requests matching the route to the canary whatever the weight. */
  setHeaderRoute(route: HeaderRoute): Promise<string>;
  /** Removes the header route; a no-op when absent. */
  removeHeaderRoute(name: string): Promise<string>;
}

export type WeightWrite =
  | { readonly outcome: "applied"; readonly detail: string }
  | { readonly outcome: "drift"; readonly canary: number; readonly detail: string };

/** A share found by a read, compared with the one expected (a tiny float error is no drift). */
export function sameShare(found: number, expected: number): boolean {
  return Math.abs(found - expected) < 1e-6;
}

/** `^` + the prefix escaped for RE2 + `.*`: a prefix match where a router only has regexes. */
export function prefixRegex(prefix: string): string {
  return `^${prefix.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")}.*`;
}

/**
 * Sets a weighted pair of backends (an HTTPRoute's backendRefs, a VirtualService's routes) to
 * `canary` percent and the rest to the stable one, if it exists; true when anything changed.
 */
export function splitWeights(
  stable: { weight?: unknown } | undefined,
  canary: { weight?: unknown },
  canaryPercent: number,
): boolean {
  let changed = false;
  if (stable && stable.weight !== 100 - canaryPercent) {
    stable.weight = 100 - canaryPercent;
    changed = true;
  }
  if (canary.weight !== canaryPercent) {
    canary.weight = canaryPercent;
    changed = true;
  }
  return changed;
}
