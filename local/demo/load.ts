import { Agent, request } from "node:http";

/** A load generator: what the demo's users do. */
export interface Load {
  /** Requests sent and answered, by status class. */
  readonly counts: { sent: number; ok: number; failed: number; errors: number };
  stop(): Promise<void>;
}

/**
 * Sends `rps` requests per second to `url` over kept-alive connections (the proxy, like an ALB,
 * splits per request, not per connection), until `stop`. Bounded: it never has more than
 * `maxInFlight` requests open, and it only ever talks to the URL it is given (loopback in the demo).
 */
export function startLoad(options: { url: string; rps: number; maxInFlight?: number }): Load {
  const counts = { sent: 0, ok: 0, failed: 0, errors: 0 };
  const maxInFlight = options.maxInFlight ?? 64;
  const target = new URL(options.url);
  const agent = new Agent({ keepAlive: true, maxSockets: maxInFlight });
  let inFlight = 0;
  let stopped = false;
  const pending = new Set<Promise<void>>();
  const one = () =>
    new Promise<void>((resolve) => {
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          agent,
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            if ((res.statusCode ?? 0) < 500) counts.ok++;
            else counts.failed++;
            resolve();
          });
        },
      );
      req.setTimeout(5_000, () => req.destroy(new Error("timeout")));
      req.on("error", () => {
        counts.errors++;
        resolve();
      });
      req.end();
    });
  const intervalMs = 1000 / options.rps;
  let next = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const loop = () => {
    if (stopped) return;
    const now = Date.now();
    while (next <= now && inFlight < maxInFlight) {
      next += intervalMs;
      inFlight++;
      counts.sent++;
      const p = one().finally(() => {
        inFlight--;
        pending.delete(p);
      });
      pending.add(p);
    }
    if (next <= now) next = now; // saturated: do not build up a backlog
    timer = setTimeout(loop, Math.max(1, next - Date.now()));
  };
  loop();
  return {
    counts,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await Promise.all([...pending]);
      agent.destroy();
    },
  };
}
