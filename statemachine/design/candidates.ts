import { canaryCounts, resolveMaxSurge } from "../pods.ts";
import type { DesignInput } from "./input.ts";

/**
 * The family of canary plans a design chooses from: a first weight, how the weight grows, and one
 * analysis after every weight (its interval, how many looks, how many failed looks it tolerates).
 * Without a traffic router only the weights whole pods give exactly are used (Argo's rounding,
 * `pods.ts`), so a step's share of the traffic is its weight in every candidate.
 */

export const FIRST_WEIGHTS = [1, 2, 5, 10, 20] as const;
export const GROWTHS = ["x2", "x2.5", "linear"] as const;
export type Growth = (typeof GROWTHS)[number];
/** Analysis intervals, seconds: each look reads the candidate's requests of one interval. */
export const INTERVALS = [5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 900, 1200, 1800, 3600] as const;
/** Looks per analysis and the failed looks it tolerates (Argo's `count` and `failureLimit`). */
export const LOOKS = [
  { count: 1, failureLimit: 0 },
  { count: 2, failureLimit: 0 },
  { count: 2, failureLimit: 1 },
  { count: 3, failureLimit: 1 },
] as const;
/** The most weight steps a candidate has (linear growth from 1% would take 99). */
export const MAX_WEIGHT_STEPS = 10;

export interface Candidate {
  /** `w5-x2-30s-c1-f0`: what it is made of, unique in a design. */
  id: string;
  growth: Growth;
  /** The setWeight steps, each followed by the analysis; the last one is followed by the promotion. */
  weights: number[];
  intervalSeconds: number;
  count: number;
  failureLimit: number;
  /** The weights went past {@link MAX_WEIGHT_STEPS} before 100. */
  tooManySteps: boolean;
}

/**
 * The weights from 1 to 99 that whole pods give exactly without a traffic router: Argo's rounding
 * of `replicas` (with the default surge) lands on canary / (canary + stable) = weight.
 */
export function podWeights(replicas: number): number[] {
  const surge = resolveMaxSurge(undefined, replicas) ?? 0;
  const out: number[] = [];
  for (let w = 1; w < 100; w++) {
    const { canary, stable } = canaryCounts(replicas, w, surge);
    if (canary > 0 && canary * 100 === w * (canary + stable)) out.push(w);
  }
  return out;
}

/**
 * The weights of a growth from `first`: each the previous × 2, × 2.5, or + the first, until 100,
 * each moved up to the next weight `allowed` (when pods decide) and above the one before.
 */
export function weightsOf(
  first: number,
  growth: Growth,
  allowed?: readonly number[],
): { weights: number[]; tooManySteps: boolean } {
  const snap = (target: number, previous: number) => {
    const wanted = Math.max(Math.round(target), previous + 1);
    return allowed ? allowed.find((w) => w >= wanted) : wanted < 100 ? wanted : undefined;
  };
  const weights: number[] = [];
  let next = snap(first, 0);
  while (next !== undefined && next < 100) {
    if (weights.length === MAX_WEIGHT_STEPS) return { weights, tooManySteps: true };
    weights.push(next);
    const start = weights[0] as number;
    const target = growth === "x2" ? next * 2 : growth === "x2.5" ? next * 2.5 : next + start;
    next = target >= 100 ? undefined : snap(target, next);
  }
  return { weights, tooManySteps: false };
}

/** Every candidate of the family, once each (pods can make two first weights the same plan). */
export function candidatesOf(input: Pick<DesignInput, "router" | "replicas">): Candidate[] {
  const allowed = input.router === "none" ? podWeights(input.replicas) : undefined;
  const seen = new Set<string>();
  const out: Candidate[] = [];
  for (const first of FIRST_WEIGHTS) {
    for (const growth of GROWTHS) {
      const { weights, tooManySteps } = weightsOf(first, growth, allowed);
      if (weights.length === 0) continue;
      for (const intervalSeconds of INTERVALS) {
        for (const { count, failureLimit } of LOOKS) {
          const key = `${weights.join("-")}/${tooManySteps}/${intervalSeconds}/${count}/${failureLimit}`;
          if (seen.has(key)) continue;
          seen.add(key);
          out.push({
            id: `w${weights[0]}-${growth}-${intervalSeconds}s-c${count}-f${failureLimit}`,
            growth,
            weights,
            intervalSeconds,
            count,
            failureLimit,
            tooManySteps,
          });
        }
      }
    }
  }
  return out;
}

/** The plan in `rollouts simulate --plan`'s short form: `5%,analysis,10%,analysis`. */
export function shortForm(candidate: Pick<Candidate, "weights">): string {
  return candidate.weights.map((w) => `${w}%,analysis`).join(",");
}
