import { ARGO_DEFAULTS } from "./defaults.ts";
/**
 * Argo Rollouts' basic-canary rounding (approximateWeightedCanaryStableReplicaCounts): without a
 * traffic router a weight can only be whole pods behind one Service, so the controller tries the
 * floor and ceiling of `replicas * weight / 100`, with and without one surge pod, never leaves a
 * side empty for weights 1–99 once there are two pods, and keeps the option closest to the weight.
 * The first option wins a tie, as in Argo.
 */
export function canaryCounts(
  replicas: number,
  weight: number,
  maxSurge: number,
): { canary: number; stable: number } {
  if (replicas <= 0) return { canary: 0, stable: 0 };
  const exact = (replicas * weight) / 100;
  const ceil = Math.ceil(exact);
  const floor = Math.floor(exact);
  const zeroAllowed = weight === 0 || weight === 100 || (replicas === 1 && maxSurge === 0);
  const options: Array<{ canary: number; total: number }> = [];
  if (ceil < replicas || zeroAllowed) options.push({ canary: ceil, total: replicas });
  if (!tied(weight, replicas) && (floor !== 0 || zeroAllowed))
    options.push({ canary: floor, total: replicas });
  if (maxSurge > 0) {
    options.push({ canary: ceil, total: replicas + 1 });
    if (!tied(weight, replicas + 1) && (floor !== 0 || zeroAllowed)) {
      options.push({ canary: floor, total: replicas + 1 });
    }
  }
  const first = options[0];
  if (!first) return { canary: 0, stable: replicas };
  let best = first;
  for (const option of options.slice(1)) {
    if (delta(weight, option) < delta(weight, best)) best = option;
  }
  return { canary: best.canary, stable: best.total - best.canary };
}

/** Floor and ceiling equidistant from the weight (3 replicas at 50%): Argo then takes the ceiling. */
function tied(weight: number, total: number): boolean {
  const product = total * (weight / 100);
  return product - Math.trunc(product) === 0.5;
}

function delta(weight: number, option: { canary: number; total: number }): number {
  return Math.abs((option.canary * 100) / option.total - weight);
}

/**
 * With a traffic router the weight is exact and the canary is scaled to cover it
 * (trafficWeightToReplicas): `ceil(weight * replicas / 100)` pods, the stable keeps all of its own.
 */
export function routedCanaryCounts(replicas: number, weight: number): { canary: number; stable: number } {
  return { canary: Math.ceil((weight * replicas) / 100), stable: replicas };
}

/**
 * Resolves Argo's `maxSurge` (a number, or a percent rounded up against the replicas) to pods.
 * Argo's default is `ARGO_DEFAULTS.maxSurge`.
 */
export function resolveMaxSurge(maxSurge: number | string | undefined, replicas: number): number | undefined {
  if (maxSurge === undefined) return resolveMaxSurge(ARGO_DEFAULTS.maxSurge, replicas);
  if (typeof maxSurge === "number") return Number.isInteger(maxSurge) && maxSurge >= 0 ? maxSurge : undefined;
  const match = /^(\d+)%$/.exec(maxSurge.trim());
  if (match) return Math.ceil((replicas * Number(match[1])) / 100);
  if (/^\d+$/.test(maxSurge.trim())) return Number(maxSurge.trim());
  return undefined;
}

/**
 * Argo's `setCanaryScale` step: the canary's pods as an explicit count (`replicas`), as a percent
 * of the rollout's replicas (`weight`, may exceed 100), or back to following the traffic weight
 * (`matchTrafficWeight`). Argo reads `matchTrafficWeight` first, then `replicas`, then `weight`;
 * a step with none of them follows the weight too.
 */
export interface CanaryScale {
  readonly replicas?: number;
  readonly weight?: number;
  readonly matchTrafficWeight?: boolean;
}

/**
 * The canary scale in force after the step at `index` (Argo's UseSetCanaryScale): the last
 * `setCanaryScale` at or before it, none when that one matches the traffic weight, and none at
 * all without a traffic router (Argo scales a basic canary with `setWeight` only).
 */
export function canaryScaleAt(
  steps: readonly { readonly kind: string }[],
  index: number,
  trafficRouting: boolean,
): CanaryScale | undefined {
  if (!trafficRouting) return undefined;
  for (let i = Math.min(index, steps.length - 1); i >= 0; i--) {
    const step = steps[i] as { kind: string } & CanaryScale;
    if (step.kind !== "setCanaryScale") continue;
    return effectiveScale(step);
  }
  return undefined;
}

/** A scale that decouples the canary's pods from the weight, or undefined when it follows it. */
export function effectiveScale(scale: CanaryScale): CanaryScale | undefined {
  if (scale.matchTrafficWeight === true) return undefined;
  if (scale.replicas !== undefined) return { replicas: scale.replicas };
  if (scale.weight !== undefined) return { weight: scale.weight };
  return undefined;
}

/**
 * The pods of a canary behind a traffic router (Argo's GetCanaryReplicasOrWeight with
 * CalculateReplicaCountsForTrafficRoutedCanary): the scale's explicit count, or
 * `ceil(replicas × percent / 100)` of the scale's percent, else of the traffic weight; the stable
 * side keeps all of its pods.
 */
export function scaledCanaryCounts(
  replicas: number,
  weight: number,
  scale: CanaryScale | undefined,
): { canary: number; stable: number } {
  const effective = scale ? effectiveScale(scale) : undefined;
  if (effective?.replicas !== undefined) return { canary: effective.replicas, stable: replicas };
  if (effective?.weight !== undefined) return routedCanaryCounts(replicas, effective.weight);
  return routedCanaryCounts(replicas, weight);
}
