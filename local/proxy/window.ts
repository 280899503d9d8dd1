/**
 * Per-version request counts in one-second buckets over the last `horizonSeconds`: the proxy's
 * own samples, which let the demo judge a version without a Prometheus server (the analysis then
 * reads `GET /admin/stats` with the web provider instead of PromQL).
 */
export class RequestWindow {
  readonly #buckets = new Map<string, Map<number, { total: number; ok: number }>>();
  readonly #horizon: number;
  readonly #now: () => number;

  constructor(options: { horizonSeconds?: number; now?: () => number } = {}) {
    this.#horizon = options.horizonSeconds ?? 600;
    this.#now = options.now ?? Date.now;
  }

  /** Counts one answered request; 2xx and 3xx are successes, as `code=~"2.."` would mostly see. */
  record(version: string, code: number): void {
    const second = Math.floor(this.#now() / 1000);
    let byVersion = this.#buckets.get(version);
    if (!byVersion) {
      byVersion = new Map();
      this.#buckets.set(version, byVersion);
    }
    const bucket = byVersion.get(second) ?? { total: 0, ok: 0 };
    bucket.total += 1;
    if (code >= 200 && code < 300) bucket.ok += 1;
    byVersion.set(second, bucket);
    for (const s of byVersion.keys()) if (s < second - this.#horizon) byVersion.delete(s);
  }

  /**
   * Requests of `version` answered in the last `windowSeconds`, and the share that succeeded.
   * `successRate` is null with no requests, so a condition cannot pass a version nobody called.
   */
  stats(
    version: string,
    windowSeconds: number,
  ): { requests: number; ok: number; successRate: number | null } {
    const since = Math.floor(this.#now() / 1000) - Math.max(1, Math.min(windowSeconds, this.#horizon));
    let requests = 0;
    let ok = 0;
    for (const [second, bucket] of this.#buckets.get(version) ?? []) {
      if (second <= since) continue;
      requests += bucket.total;
      ok += bucket.ok;
    }
    return { requests, ok, successRate: requests === 0 ? null : ok / requests };
  }
}
