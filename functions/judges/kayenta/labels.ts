import type { Direction } from "../comparative.ts";
import type { NanStrategy } from "./preprocessing.ts";

/**
 * Kayenta's metric classifications, spelled as Kayenta spells them: `Pass`; `High` and `Low` (a
 * real difference, large enough, in a direction that counts); `Nodata` (no points on a side; does
 * not count in its group's score, unless the metric is critical); `NodataFailMetric` (no points on
 * a metric marked `mustHaveData`: counts as a failure in its group); `Error` (the classifier could
 * not run).
 */
export type MetricLabel = "Pass" | "High" | "Low" | "NodataFailMetric" | "Nodata" | "Error";

/** A metric's classification, with what a report shows beside it. */
export interface MetricClassification {
  readonly classification: MetricLabel;
  /** Why, in Kayenta's words; null for a plain Pass. */
  readonly reason: string | null;
  /** mean(experiment) / mean(control), 1 when no comparison ran, NaN when a mean is 0. */
  readonly deviation: number;
  /** A critical failure: the whole canary fails with a score of 0. */
  readonly critical: boolean;
}

/** What every classifier is told about the metric besides its two series. */
export interface MetricTraits {
  /** Named in reasons. */
  readonly name?: string;
  /** Which change fails the metric (Kayenta's default: `either`). */
  readonly direction?: Direction;
  /** With `replace`, a side without data is a Pass (Kayenta: a count that saw nothing). */
  readonly nanStrategy?: NanStrategy;
  readonly critical?: boolean;
  /** No data fails the metric (`NodataFailMetric`) instead of leaving it out of the score. */
  readonly mustHaveData?: boolean;
}

/**
 * Kayenta's rule for a side without points: with `nanStrategy: remove`, `Nodata` (critical if the
 * metric is), or `NodataFailMetric` for a non-critical `mustHaveData` metric; with `replace`, Pass.
 * Null when both sides have points.
 */
export function classifyMissingData(
  control: ArrayLike<number>,
  experiment: ArrayLike<number>,
  traits: MetricTraits,
): MetricClassification | null {
  if (experiment.length > 0 && control.length > 0) return null;
  if (traits.nanStrategy === "replace") {
    return { classification: "Pass", reason: null, deviation: 1, critical: false };
  }
  const reason = `Missing data for ${traits.name ?? "the metric"}`;
  const critical = traits.critical === true;
  if (traits.mustHaveData === true && !critical) {
    return { classification: "NodataFailMetric", reason, deviation: 1, critical: false };
  }
  return { classification: "Nodata", reason, deviation: 1, critical };
}
