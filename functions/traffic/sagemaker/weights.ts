import type { DescribeEndpointOutput } from "@aws-sdk/client-sagemaker";
import type { ObservedWeights } from "../port.ts";
import { SHARE_EPSILON, sharesMatch } from "../state.ts";

/**
 * The endpoint's production variants' weights as shares of the requests, described for messages
 * and compared with what the rollout set: a difference is drift, someone else's change.
 */

/** A variant's weight: the one asked for (`DesiredWeight`) while an update runs, else the current one. */
export function weightOf(v: { DesiredWeight?: number; CurrentWeight?: number }): number {
  return v.DesiredWeight ?? v.CurrentWeight ?? 0;
}

/** Percent of the requests each production variant receives. */
export function shareOf(endpoint: DescribeEndpointOutput): Map<string, number> {
  const variants = endpoint.ProductionVariants ?? [];
  const total = variants.reduce((sum, v) => sum + weightOf(v), 0);
  return new Map(variants.map((v) => [v.VariantName ?? "", total > 0 ? (100 * weightOf(v)) / total : 0]));
}

/** True when `variant` receives all the requests. */
export function carriesAll(shares: ReadonlyMap<string, number>, variant: string): boolean {
  return Math.abs((shares.get(variant) ?? 0) - 100) <= SHARE_EPSILON;
}

/** The endpoint's config and every variant's weight, shadows included, for messages. */
export function describeVariants(endpoint: DescribeEndpointOutput): string {
  const production = (endpoint.ProductionVariants ?? []).map((v) => `${v.VariantName}=${weightOf(v)}`);
  const shadow = (endpoint.ShadowProductionVariants ?? []).map(
    (v) => `shadow ${v.VariantName}=${weightOf(v)}`,
  );
  return `config ${endpoint.EndpointConfigName}: ${[...production, ...shadow].join(", ") || "no variants"}`;
}

/** The variants a rollout weighs and the candidate's share it last set. */
export interface Weighed {
  /** The candidate's variant; none once it is the stable one (after promotion). */
  readonly candidate: string | undefined;
  readonly stable: string;
  readonly expected: number;
}

/** The shares the endpoint gives the candidate and the stable variant, and whether they drifted. */
export function observeWeights(endpoint: DescribeEndpointOutput, weighed: Weighed): ObservedWeights {
  const shares = shareOf(endpoint);
  const canary = weighed.candidate !== undefined ? (shares.get(weighed.candidate) ?? 0) : 0;
  const stable = shares.get(weighed.stable) ?? 0;
  const drift = !sharesMatch(canary, stable, weighed.expected);
  return { canary, stable, expectedCanary: weighed.expected, drift, detail: describeVariants(endpoint) };
}

/** True when the observed shares are `percent` for the candidate and the rest for the stable variant. */
export function matches(observed: ObservedWeights, percent: number): boolean {
  return sharesMatch(observed.canary, observed.stable, percent);
}

/** What a `drift` outcome says: the candidate's share now, and the one the rollout set. */
export function driftMessage(endpointName: string, observed: ObservedWeights, expected: number): string {
  return (
    `endpoint ${endpointName} changed outside the rollout: the candidate receives ` +
    `${round(observed.canary)}% instead of ${expected}% (${observed.detail})`
  );
}

/** A share with at most two decimals. */
export function round(value: number): string {
  return String(Math.round(value * 100) / 100);
}
