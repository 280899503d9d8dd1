import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gaussian, mulberry32 } from "../../functions/judges/simulate.ts";

/**
 * A synthetic metrics source: per-version traffic made up one virtual second at a time from a
 * seed, answered over HTTP as a web provider reads it. It lets the real workflow judge thousands
 * of rollouts in virtual time without sending a request: each second of each version draws its
 * requests, errors and log-normal latencies from a generator seeded by (seed, version, second),
 * so any window can be read in any order and always gives the same numbers.
 *
 * `GET /stats?version=V&since=ISO&until=ISO` answers the seconds in [since, until):
 * `{"version", "requests", "errors", "latency": {"n", "mean", "m2"}}`, `mean` and `m2` being the
 * mean and the sum of squared deviations of ln(latency in ms) — the log-latency summary a
 * sequential latency judge reads. `GET /healthz` answers 200 (the candidate is always ready).
 */

/** How one version behaves. */
export interface VersionModel {
  readonly requestsPerSecond: number;
  readonly errorRate: number;
  readonly latencyMedianMs: number;
  /** σ of ln(latency). */
  readonly latencySigma: number;
}

export interface SyntheticSourceOptions {
  /** Epoch ms: the virtual clock of the runtime reading it. */
  readonly now: () => number;
  readonly seed: number;
  readonly model: (version: string) => VersionModel;
  readonly port?: number;
}

interface Second {
  requests: number;
  errors: number;
  sumLog: number;
  sumSquares: number;
}

export interface SourceStats {
  version: string;
  requests: number;
  errors: number;
  latency: { n: number; mean: number; m2: number };
}

export interface SyntheticSource {
  readonly url: string;
  stats(version: string, sinceMs: number, untilMs: number): SourceStats;
  close(): Promise<void>;
}

/** FNV-1a of (seed, version, second): a cheap, well-mixed 32-bit seed for that second's generator. */
function seedOf(seed: number, version: string, second: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (const ch of `${version}:${second}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
  return h >>> 0;
}

/** Starts the source on 127.0.0.1. */
export async function startSyntheticSource(options: SyntheticSourceOptions): Promise<SyntheticSource> {
  const cache = new Map<string, Second>();
  const second = (version: string, s: number): Second => {
    const key = `${version}@${s}`;
    let found = cache.get(key);
    if (!found) {
      const m = options.model(version);
      const random = mulberry32(seedOf(options.seed, version, s));
      const normal = gaussian(random);
      const whole = Math.floor(m.requestsPerSecond);
      const requests = whole + (random() < m.requestsPerSecond - whole ? 1 : 0);
      let errors = 0;
      let sumLog = 0;
      let sumSquares = 0;
      const mu = Math.log(m.latencyMedianMs);
      for (let i = 0; i < requests; i++) {
        if (random() < m.errorRate) errors++;
        const x = mu + m.latencySigma * normal();
        sumLog += x;
        sumSquares += x * x;
      }
      found = { requests, errors, sumLog, sumSquares };
      cache.set(key, found);
    }
    return found;
  };
  const stats = (version: string, sinceMs: number, untilMs: number): SourceStats => {
    let requests = 0;
    let errors = 0;
    let sumLog = 0;
    let sumSquares = 0;
    for (let s = Math.floor(sinceMs / 1000); s < Math.floor(untilMs / 1000); s++) {
      const one = second(version, s);
      requests += one.requests;
      errors += one.errors;
      sumLog += one.sumLog;
      sumSquares += one.sumSquares;
    }
    const mean = requests > 0 ? sumLog / requests : 0;
    const m2 = requests > 0 ? Math.max(0, sumSquares - requests * mean * mean) : 0;
    return { version, requests, errors, latency: { n: requests, mean, m2 } };
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://source");
    if (url.pathname === "/healthz") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
      return;
    }
    const version = url.searchParams.get("version");
    const since = Date.parse(url.searchParams.get("since") ?? "");
    const until = url.searchParams.has("until")
      ? Date.parse(url.searchParams.get("until") ?? "")
      : options.now();
    if (url.pathname !== "/stats" || !version || Number.isNaN(since) || Number.isNaN(until)) {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ error: "GET /stats?version=V&since=ISO[&until=ISO]" }));
      return;
    }
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify(stats(version, since, until)));
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
