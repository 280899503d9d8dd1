import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type RunningPrometheus, startPrometheus } from "../prometheus.ts";
import { remoteWrite, type WriteSeries } from "./remote-write.ts";

/**
 * A real Prometheus fed the simulated series at their virtual timestamps (remote write) and
 * queried at the virtual time. Prometheus evaluates an instant query at its own wall clock unless
 * the request names a `time`; the analysis asks "now", as Argo does, so the simulation puts a small
 * forwarder in front of Prometheus that adds `time` = the virtual clock to every instant query
 * without one, after writing the samples due so far (a range query's `start` and `end` are
 * already the virtual clock's: its expressions' `now()` is the measurement's time). The queries themselves, PromQL's evaluation and the
 * answer are Prometheus' own.
 */
export interface SimulatedPrometheus {
  /** Where templates point: the forwarder. */
  readonly url: string;
  /** The Prometheus behind it (its version for reports). */
  readonly prometheus: RunningPrometheus;
  /** Queues samples; they are written before the next query, or on `flush`. */
  append(series: WriteSeries[]): void;
  flush(): Promise<void>;
  /** Samples written and queries answered, for the cost of a run. */
  readonly counts: { written: number; queries: number };
  close(): Promise<void>;
}

/** Where queries go: samples due are written first; an instant query gets the virtual `time`. */
const QUERY_PATHS = new Set(["/api/v1/query", "/api/v1/query_range"]);

export async function startSimulatedPrometheus(options: {
  now: () => number;
  binary?: string;
}): Promise<SimulatedPrometheus> {
  const prometheus = await startPrometheus({
    targets: [],
    ...(options.binary ? { binary: options.binary } : {}),
    extraArgs: ["--web.enable-remote-write-receiver"],
  });
  let pending = new Map<
    string,
    { labels: Record<string, string>; samples: WriteSeries["samples"][number][] }
  >();
  const counts = { written: 0, queries: 0 };
  // Writes are chained: a query waits for every write queued before it, including one another
  // query started (a judge reads both versions at once).
  let written: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    const batch = [...pending.values()];
    pending = new Map();
    if (batch.length > 0) {
      counts.written += batch.reduce((n, s) => n + s.samples.length, 0);
      written = written.then(() => remoteWrite(prometheus.url, batch));
    }
    return written;
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      try {
        const url = new URL(req.url ?? "/", prometheus.url);
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        let body = Buffer.concat(chunks).toString("utf8");
        const headers: Record<string, string> = {};
        const type = req.headers["content-type"];
        if (type) headers["content-type"] = type;
        if (QUERY_PATHS.has(url.pathname)) {
          counts.queries += 1;
          await flush();
          const time = String(options.now() / 1000);
          // A range query names its own start and end (from the virtual clock already).
          if (url.pathname !== "/api/v1/query_range") {
            if (req.method === "POST") {
              const form = new URLSearchParams(body);
              if (!form.has("time")) form.set("time", time);
              body = form.toString();
            } else if (!url.searchParams.has("time")) {
              url.searchParams.set("time", time);
            }
          }
        }
        const answer = await fetch(url, {
          method: req.method ?? "GET",
          headers,
          ...(req.method === "POST" ? { body } : {}),
        });
        const text = Buffer.from(await answer.arrayBuffer());
        res.writeHead(answer.status, {
          "content-type": answer.headers.get("content-type") ?? "application/json",
        });
        res.end(text);
      } catch (error) {
        res.writeHead(502, { "content-type": "application/json" });
        res.end(JSON.stringify({ status: "error", errorType: "simulation", error: String(error) }));
      }
    })();
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    prometheus,
    counts,
    append(series) {
      for (const s of series) {
        const key = JSON.stringify(Object.entries(s.labels).sort());
        const found = pending.get(key);
        if (found) found.samples.push(...s.samples);
        else pending.set(key, { labels: { ...s.labels }, samples: [...s.samples] });
      }
    },
    flush,
    async close() {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await prometheus.close();
    },
  };
}
