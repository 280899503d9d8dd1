import { gaussian, mulberry32, type Prng } from "../../functions/judges/simulate.ts";
import type { WriteSeries } from "./remote-write.ts";

/**
 * The simulated service's metrics, as an application instrumented like the local proxy exports
 * them: `http_requests_total{version,code}` and the histogram
 * `http_request_duration_seconds{version}` (prom-client's default buckets). Each virtual second's
 * requests are drawn from a generator seeded once per run, so a run is a pure function of its seed
 * and of the order the workflow sends traffic, which the workflow itself fixes.
 */

/** prom-client's default buckets, the ones the local proxy exports. */
export const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** How one version answers. */
export interface Behaviour {
  /** Share of requests answered 500. */
  readonly errorRate: number;
  /** Median latency, seconds. */
  readonly latencyMedian: number;
  /** σ of ln(latency). */
  readonly latencySigma: number;
}

interface VersionSeries {
  readonly codes: Map<string, number>;
  readonly buckets: number[];
  count: number;
  sum: number;
}

/** Counters per version, sampled into remote-write series at each virtual second. */
export class ServiceMetrics {
  readonly #versions = new Map<string, VersionSeries>();
  readonly #random: Prng;
  readonly #normal: () => number;

  constructor(seed: number) {
    this.#random = mulberry32(seed);
    this.#normal = gaussian(this.#random);
  }

  /** Serves one request of `version`: whether it failed, its status code and its latency. */
  serve(version: string, behaviour: Behaviour): { failed: boolean; code: number; seconds: number } {
    let v = this.#versions.get(version);
    if (!v) {
      v = { codes: new Map(), buckets: BUCKETS.map(() => 0), count: 0, sum: 0 };
      this.#versions.set(version, v);
    }
    const failed = this.#random() < behaviour.errorRate;
    const code = failed ? "500" : "200";
    v.codes.set(code, (v.codes.get(code) ?? 0) + 1);
    const seconds = behaviour.latencyMedian * Math.exp(behaviour.latencySigma * this.#normal());
    v.count += 1;
    v.sum += seconds;
    BUCKETS.forEach((le, i) => {
      if (seconds <= le) v.buckets[i] = (v.buckets[i] ?? 0) + 1;
    });
    return { failed, code: Number(code), seconds };
  }

  /** Every series that exists, with its value at `timestampMs` (what a scrape at that moment reads). */
  sample(timestampMs: number): WriteSeries[] {
    const out: WriteSeries[] = [];
    for (const [version, v] of this.#versions) {
      const at = (value: number) => [{ value, timestampMs }];
      for (const [code, n] of v.codes) {
        out.push({ labels: { __name__: "http_requests_total", version, code }, samples: at(n) });
      }
      BUCKETS.forEach((le, i) => {
        out.push({
          labels: { __name__: "http_request_duration_seconds_bucket", version, le: String(le) },
          samples: at(v.buckets[i] ?? 0),
        });
      });
      out.push({
        labels: { __name__: "http_request_duration_seconds_bucket", version, le: "+Inf" },
        samples: at(v.count),
      });
      out.push({
        labels: { __name__: "http_request_duration_seconds_count", version },
        samples: at(v.count),
      });
      out.push({ labels: { __name__: "http_request_duration_seconds_sum", version }, samples: at(v.sum) });
    }
    return out;
  }
}
