import { Counter, Histogram, Registry } from "prom-client";
import { RequestWindow } from "./window.ts";

/**
 * What the proxy records of each forwarded request: Prometheus counters and a latency histogram
 * (`GET /metrics`), and the recent samples `GET /admin/stats` and `GET /compare` answer from.
 */
export class TrafficMetrics {
  readonly registry = new Registry();
  readonly window: RequestWindow;
  readonly #requests = new Counter({
    name: "http_requests_total",
    help: "Requests forwarded by the proxy, by upstream version and status code.",
    labelNames: ["version", "code"] as const,
    registers: [this.registry],
  });
  readonly #duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to the end of the upstream's response, by upstream version.",
    labelNames: ["version"] as const,
    registers: [this.registry],
  });

  /** `now`: the clock of the stats windows (epoch ms). */
  constructor(now?: () => number) {
    this.window = new RequestWindow(now ? { now } : {});
  }

  record(version: string, code: number, seconds: number): void {
    this.#requests.inc({ version, code: String(code) });
    this.#duration.observe({ version }, seconds);
    this.window.record(version, code, seconds);
  }

  /** `result` is a vector like Prometheus' answer, so `result[0] >= 0.95` reads the same; empty with no data. */
  stats(version: string, seconds: number) {
    const stats = this.window.stats(version, seconds);
    return {
      version,
      window: seconds,
      ...stats,
      result: stats.successRate === null ? [] : [stats.successRate],
    };
  }
}
