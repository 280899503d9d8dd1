import { METRICS } from "../config.ts";

/** One CloudWatch data point a handler publishes for the dashboard and alarms. */
export interface MetricPoint {
  name: string;
  value: number;
  rollout: string;
  /** Extra dimensions (`Phase`). */
  dimensions?: Record<string, string>;
}

/** The metrics port: EMF lines in Lambda logs on AWS, a list in tests. */
export interface MetricsSink {
  put(point: MetricPoint): void;
}

/**
 * CloudWatch Embedded Metric Format: a JSON log line that CloudWatch turns into metrics, with no
 * API call and no extra permission (the function already writes logs).
 */
export class EmfMetricsSink implements MetricsSink {
  readonly #write: (line: string) => void;
  readonly #now: () => number;

  constructor(write: (line: string) => void = (l) => process.stdout.write(`${l}\n`), now = () => Date.now()) {
    this.#write = write;
    this.#now = now;
  }

  put(point: MetricPoint): void {
    const dims = { [METRICS.dimension]: point.rollout, ...(point.dimensions ?? {}) };
    this.#write(
      JSON.stringify({
        _aws: {
          Timestamp: this.#now(),
          CloudWatchMetrics: [
            {
              Namespace: METRICS.namespace,
              Dimensions: [Object.keys(dims)],
              Metrics: [
                { Name: point.name, Unit: point.name === METRICS.canaryWeight ? "Percent" : "Count" },
              ],
            },
          ],
        },
        ...dims,
        [point.name]: point.value,
      }),
    );
  }
}

/** Keeps the points, for tests and the local runtime's summary. */
export class RecordingMetricsSink implements MetricsSink {
  readonly points: MetricPoint[] = [];

  put(point: MetricPoint): void {
    this.points.push(point);
  }
}
