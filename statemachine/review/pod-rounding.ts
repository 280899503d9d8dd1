import type { Plan } from "../plan.ts";
import { canaryCounts } from "../pods.ts";
import { type Finding, finding } from "./finding.ts";
import type { ReviewSubject } from "./subject.ts";

/**
 * Check 1, pod rounding: without a traffic router a canary's weight is whole pods behind one
 * Service (`pods.ts`, Argo's own rounding, the shares `rollouts plan` prints). A weight the pods
 * cannot give is reported with the share it really gets, and a step that leaves the share where
 * the previous one left it is reported too. With an exact traffic router there is nothing to round.
 */

/** Less than half a point from the weight is the weight: 33% of 3 pods is 33.3%. */
const EXACT = 0.5;

function shareOf(replicas: number, weight: number, maxSurge: number): number {
  const { canary, stable } = canaryCounts(replicas, weight, maxSurge);
  return canary + stable === 0 ? 0 : (100 * canary) / (canary + stable);
}

/** The weights (1–99) these replicas give exactly, each with the share it gets. */
function exactWeights(replicas: number, maxSurge: number): number[] {
  const out: number[] = [];
  for (let w = 1; w < 100; w++) if (Math.abs(shareOf(replicas, w, maxSurge) - w) < EXACT) out.push(w);
  return out;
}

/** The exact weight nearest `weight`, other than the shares in `avoid`. */
function nearest(
  exact: readonly number[],
  weight: number,
  avoid: readonly number[] = [],
): number | undefined {
  return exact
    .filter((w) => !avoid.some((a) => Math.abs(a - w) < EXACT))
    .sort((a, b) => Math.abs(a - weight) - Math.abs(b - weight) || a - b)[0];
}

/** The fewest replicas (up to 100) that give `weight` exactly. */
function replicasFor(weight: number, from: number, maxSurge: number): number | undefined {
  for (let r = from + 1; r <= 100; r++) if (Math.abs(shareOf(r, weight, maxSurge) - weight) < EXACT) return r;
  return undefined;
}

const pods = (n: number) => `${n} pod${n === 1 ? "" : "s"}`;

/** Check 1 over the rollout's setWeight steps. */
export function podFindings(subject: ReviewSubject, plan: Plan): Finding[] {
  const spec = subject.spec;
  if (spec.strategy !== "canary" || spec.trafficRouting) return [];
  const exact = exactWeights(spec.replicas, spec.maxSurge);
  const out: Finding[] = [];
  let previous: { index: number; weight: number; share: number } | undefined;
  spec.steps.forEach((step, i) => {
    const row = plan.steps[i];
    if (step.kind !== "setWeight" || !row) return;
    const where = { ...subject.rollout, path: `${subject.stepPaths[i]}.setWeight`, step: i };
    const setup = `${spec.replicas} replicas, maxSurge ${spec.maxSurge}`;
    const partial = row.weight > 0 && row.weight < 100;
    if (previous && partial && Math.abs(row.share - previous.share) < EXACT) {
      const next = nearest(
        exact.filter((w) => (row.weight > previous!.weight ? w > previous!.share : w < previous!.share)),
        row.weight,
      );
      out.push(
        finding("pod-rounding-no-change", "warning", where, {
          message: `setWeight ${row.weight} leaves the candidate at ${row.share}% (${pods(row.canaryPods)}), where step ${previous.index} (setWeight ${previous.weight}) left it: with ${setup} the share does not move`,
          fix:
            next !== undefined
              ? `setWeight: ${next}, the next share ${spec.replicas} replicas give, or remove the step`
              : "remove the step, or give the rollout more replicas",
        }),
      );
    } else if (partial && Math.abs(row.share - row.weight) >= EXACT) {
      const better = nearest(exact, row.weight);
      const more = replicasFor(row.weight, spec.replicas, spec.maxSurge);
      const gets =
        row.canaryPods === 0
          ? "no pod: the candidate gets no traffic at all"
          : `${pods(row.canaryPods)} beside ${row.stablePods} stable: the candidate gets ${row.share}% of connections, not ${row.weight}%`;
      out.push(
        finding("pod-rounding", "warning", where, {
          message: `setWeight ${row.weight} with ${setup} is ${gets}`,
          fix: [
            better !== undefined
              ? `setWeight: ${better} (what ${spec.replicas} replicas give exactly)`
              : undefined,
            more !== undefined ? `replicas: ${more}` : undefined,
            "or a traffic router (trafficRouting) for an exact weight",
          ]
            .filter(Boolean)
            .join(", "),
        }),
      );
    }
    previous = { index: i, weight: row.weight, share: row.share };
  });
  return out;
}
