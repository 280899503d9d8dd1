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
