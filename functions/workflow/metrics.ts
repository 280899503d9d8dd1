import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
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

/** Keeps the points, for tests and the local runtime's summary. */
export class RecordingMetricsSink implements MetricsSink {
  readonly points: MetricPoint[] = [];

  put(point: MetricPoint): void {
    this.points.push(point);
  }
}
