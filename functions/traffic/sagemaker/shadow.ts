import { TargetStateError } from "../errors.ts";
import type { MirrorRoute } from "../port.ts";
import { SHARE_EPSILON } from "../state.ts";
import type { ConfigVariants } from "./configs.ts";
import { type Variant, variantInput } from "./variants.ts";
import { round } from "./weights.ts";

/**
 * A mirror route on SageMaker is a shadow variant (`ShadowProductionVariants`): the endpoint
 * copies a share of its requests to it and discards its answers. A shadow needs the endpoint's
 * only production variant, so the stable variant is alone in production and the candidate has no
 * live traffic while it mirrors.
 */

/** The variants of a mirror's config: the stable variant alone, the candidate its shadow at `percentage`. */
export function shadowVariants(stable: Variant, candidate: Variant, percentage: number): ConfigVariants {
  return {
    ProductionVariants: [variantInput(stable, 1)],
    ShadowProductionVariants: [variantInput(candidate, percentage / 100)],
  };
}

/** Refuses a mirror while the candidate has live traffic, as set (`canaryWeight`) or as observed. */
export function requireNoLiveTraffic(
  endpointName: string,
  canaryWeight: number,
  observedCanary: number,
): void {
  if (canaryWeight > 0 || observedCanary > SHARE_EPSILON) {
    throw new TargetStateError(
      `endpoint ${endpointName} can mirror only while the candidate has no live traffic (it has ${round(observedCanary)}%): ` +
        "a shadow variant needs the endpoint's only production variant; set the weight to 0 first",
    );
  }
}

/** What a mirror route does, in words; SageMaker samples every invocation, so a match is not evaluated. */
export function mirroredMessage(route: MirrorRoute, shadow: string, config: string): string {
  const unmatched = route.match?.length
    ? `; SageMaker samples every invocation, the match (${JSON.stringify(route.match)}) is not evaluated`
    : "";
  return `mirror route ${route.name}: ${route.percentage}% of the requests copied to shadow variant ${shadow} (config ${config})${unmatched}`;
}
