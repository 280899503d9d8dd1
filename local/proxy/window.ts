/**
 * Per-version request counts and latencies in one-second buckets over the last `horizonSeconds`:
 * the proxy's own samples, which let an analysis judge a version without a Prometheus server
 * (`GET /admin/stats` with the web provider, `GET /compare` with the samples provider).
 */
interface Bucket {
  total: number;
  ok: number;
  /** Milliseconds of each request that reported its latency. */
  latencies: number[];
}

/** What `GET /compare` answers for one version (snake_case, as conditions read it). */
export interface VersionSummary {
  version: string;
  requests: number;
  /** Requests answered 2xx. */
  ok: number;
  /** Requests answered anything else (`requests - ok`). */
  errors: number;
  /** ok / requests; null without requests, so no condition can pass a version nobody called. */
  success_rate: number | null;
  /** errors / requests; null without requests. */
  error_rate: number | null;
  /** Latency in milliseconds (mean and nearest-rank percentiles); null without requests. */
  mean_ms: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

export class RequestWindow {
  readonly #buckets = new Map<string, Map<number, Bucket>>();
  readonly #horizon: number;
  readonly #now: () => number;

  constructor(options: { horizonSeconds?: number; now?: () => number } = {}) {
    this.#horizon = options.horizonSeconds ?? 600;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Counts one answered request; 2xx and 3xx are successes, as `code=~"2.."` would mostly see.
   * `seconds`, when given, is its latency.
   */
  record(version: string, code: number, seconds?: number): void {
    const second = Math.floor(this.#now() / 1000);
    let byVersion = this.#buckets.get(version);
    if (!byVersion) {
      byVersion = new Map();
      this.#buckets.set(version, byVersion);
    }
    let bucket = byVersion.get(second);
    if (!bucket) {
      bucket = { total: 0, ok: 0, latencies: [] };
      byVersion.set(second, bucket);
      for (const s of byVersion.keys()) if (s < second - this.#horizon) byVersion.delete(s);
    }
    bucket.total += 1;
    if (code >= 200 && code < 300) bucket.ok += 1;
    if (seconds !== undefined && Number.isFinite(seconds) && seconds >= 0)
      bucket.latencies.push(seconds * 1000);
  }

  /** The buckets of `version` in the last `windowSeconds`, the current second included. */
  #recent(version: string, windowSeconds: number): Bucket[] {
    const since = Math.floor(this.#now() / 1000) - Math.max(1, Math.min(windowSeconds, this.#horizon));
    return [...(this.#buckets.get(version) ?? [])].filter(([second]) => second > since).map(([, b]) => b);
  }

  /**
   * Requests of `version` answered in the last `windowSeconds`, and the share that succeeded.
   * `successRate` is null with no requests, so a condition cannot pass a version nobody called.
   */
  stats(
    version: string,
    windowSeconds: number,
  ): { requests: number; ok: number; successRate: number | null } {
    let requests = 0;
    let ok = 0;
    for (const bucket of this.#recent(version, windowSeconds)) {
      requests += bucket.total;
      ok += bucket.ok;
    }
    return { requests, ok, successRate: requests === 0 ? null : ok / requests };
  }

  /** The `GET /compare` summary of `version` over the last `windowSeconds`. */
  summary(version: string, windowSeconds: number): VersionSummary {
    let requests = 0;
    let ok = 0;
    const latencies: number[] = [];
    for (const bucket of this.#recent(version, windowSeconds)) {
      requests += bucket.total;
      ok += bucket.ok;
      for (const ms of bucket.latencies) latencies.push(ms);
    }
    latencies.sort((a, b) => a - b);
    const rank = (q: number) =>
      latencies.length === 0
        ? null
        : round(latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] as number);
    const errors = requests - ok;
    return {
      version,
      requests,
      ok,
      errors,
      success_rate: requests === 0 ? null : ok / requests,
      error_rate: requests === 0 ? null : errors / requests,
      mean_ms: latencies.length === 0 ? null : round(latencies.reduce((a, b) => a + b, 0) / latencies.length),
      p50_ms: rank(0.5),
      p95_ms: rank(0.95),
      p99_ms: rank(0.99),
    };
  }
}

/** Microsecond precision: enough for a condition, and no float noise in the JSON. */
const round = (ms: number) => Math.round(ms * 1000) / 1000;
