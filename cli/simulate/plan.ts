import { parseDuration } from "../../statemachine/duration.ts";
import { RolloutsError } from "../../statemachine/errors.ts";

/**
 * The `--plan` short form: comma-separated steps that replace a rollout's own, e.g.
 * `25%,analysis,50%,pause=2s,analysis`, `100`, `5%,analysis,25%,analysis`.
 * - `N` or `N%`: setWeight N (an integer 0–100);
 * - `analysis`: an analysis step with the rollout's own analysis (the templates and args of its
 *   first analysis step), or every AnalysisTemplate given when the rollout has none;
 * - `pause=DURATION`: a timed pause (`2s`, `1m`, `1h30m`). A pause without a duration waits for a
 *   person, which a simulation has not got, so it is refused.
 */
export type ShortStep = { setWeight: number } | { analysis: true } | { pause: string };

export class PlanError extends RolloutsError {
  override name = "PlanError";
}

/** Parses one `--plan` value; a bad token is named with its position. */
export function parsePlan(text: string): ShortStep[] {
  const tokens = text.split(",").map((t) => t.trim());
  if (tokens.length === 0 || tokens.every((t) => t === "")) throw new PlanError(`--plan "${text}": no steps`);
  return tokens.map((token, i) => {
    const where = `--plan "${text}": step ${i + 1} "${token}"`;
    const weight = /^(\d{1,3})%?$/.exec(token);
    if (weight) {
      const n = Number(weight[1]);
      if (n > 100) throw new PlanError(`${where}: a weight is 0–100%`);
      return { setWeight: n };
    }
    if (token === "analysis") return { analysis: true };
    const pause = /^pause(?:=(.*))?$/.exec(token);
    if (pause) {
      const duration = pause[1];
      if (duration === undefined || duration === "") {
        throw new PlanError(
          `${where}: a pause without a duration waits for a person; give pause=DURATION (e.g. pause=1m)`,
        );
      }
      const parsed = parseDuration(duration);
      if ("error" in parsed) throw new PlanError(`${where}: ${parsed.error}`);
      if (!(parsed.seconds > 0)) throw new PlanError(`${where}: the duration must be above 0`);
      return { pause: duration };
    }
    throw new PlanError(`${where}: expected a weight (25 or 25%), analysis, or pause=DURATION`);
  });
}

/** The Argo steps of a short plan, each analysis being `analysis` (an Argo RolloutAnalysis object). */
export function argoSteps(plan: readonly ShortStep[], analysis: unknown): unknown[] {
  return plan.map((step) => {
    if ("setWeight" in step) return { setWeight: step.setWeight };
    if ("pause" in step) return { pause: { duration: step.pause } };
    return { analysis: structuredClone(analysis) };
  });
}

/** The plan as the short form prints it (`25%,analysis,50%`). */
export function formatPlan(plan: readonly ShortStep[]): string {
  return plan
    .map((s) => ("setWeight" in s ? `${s.setWeight}%` : "pause" in s ? `pause=${s.pause}` : "analysis"))
    .join(",");
}
