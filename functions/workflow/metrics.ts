import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { GateFigures } from "../analysis/types.ts";
import { METRICS } from "../config.ts";

/** One CloudWatch data point a handler publishes for the dashboard and alarms. */
export interface MetricPoint {
  name: string;
  value: number;
  rollout: string;
  /** Extra dimensions (`Phase`). */
  dimensions?: Record<string, string>;
}

/** The metrics port: EMF lines in Lambda logs on AWS (Powertools), a list in tests. */
export interface MetricsSink {
  put(point: MetricPoint): void;
}

/**
 * CloudWatch metrics through Powertools' `Metrics` (Embedded Metric Format: a JSON log line
 * CloudWatch turns into metrics, with no API call and no extra permission). Each point is
 * published at once with exactly its own dimensions (`Rollout`, and `Phase` where given): the
 * `service` dimension Powertools adds by default is cleared, so the dashboard's and the alarms'
 * metrics stay the same series.
 */
export class PowertoolsMetricsSink implements MetricsSink {
  readonly #metrics: Metrics;

  constructor(metrics: Metrics = new Metrics({ namespace: METRICS.namespace })) {
    this.#metrics = metrics;
  }

  put(point: MetricPoint): void {
    const single = this.#metrics.singleMetric();
    single.clearDefaultDimensions();
    single.addDimensions({ [METRICS.dimension]: point.rollout, ...(point.dimensions ?? {}) });
    single.addMetric(point.name, unitOf(point.name), point.value);
  }
}

/** The weight is a percent, a judge's figures have no unit, the rest are counts. */
function unitOf(name: string): (typeof MetricUnit)[keyof typeof MetricUnit] {
  if (name === METRICS.canaryWeight) return MetricUnit.Percent;
  if (JUDGE_METRICS.has(name)) return MetricUnit.NoUnit;
  return MetricUnit.Count;
}
const JUDGE_METRICS = new Set<string>([
  METRICS.judgePValue,
  METRICS.judgeBayesFactor,
  METRICS.judgeCandidate,
  METRICS.judgeStable,
]);

/** A judge's figures at one look as metric points (the dashboard's judge graphs), absent ones left out. */
export function judgePoints(rollout: string, metric: string, judge: GateFigures | undefined): MetricPoint[] {
  if (!judge) return [];
  const figures: Array<[string, number | null | undefined]> = [
    [METRICS.judgePValue, judge.pValue],
    [METRICS.judgeBayesFactor, judge.bayesFactor],
    [METRICS.judgeCandidate, judge.candidate?.value],
    [METRICS.judgeStable, judge.stable?.value],
  ];
  return figures
    .filter((f): f is [string, number] => typeof f[1] === "number" && Number.isFinite(f[1]))
    .map(([name, value]) => ({ name, value, rollout, dimensions: { Metric: metric } }));
}

/** Keeps the points, for tests and the local runtime's summary. */
export class RecordingMetricsSink implements MetricsSink {
  readonly points: MetricPoint[] = [];

  put(point: MetricPoint): void {
    this.points.push(point);
  }
}
