import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ExactShare } from "../proxy/exact-share.ts";

/** A demo service: one version of "the shop". */
export interface DemoApp {
  url: string;
  version: string;
  close(): Promise<void>;
}

/**
 * A version of the demo service. `/healthz` always answers, as a real readiness probe would even
 * for a bad build; `/checkout` fails exactly `errorRate` of its requests (spread evenly, so the
 * demo is reproducible), which only an analysis of the version's own traffic can see.
 */
export async function startDemoApp(options: {
  version: string;
  errorRate?: number;
  port?: number;
  /** Where to listen (127.0.0.1 by default). */
  host?: string;
  /** How others reach it (the URL's host); default the listening host. */
  advertise?: string;
}): Promise<DemoApp> {
  const errors = new ExactShare(Math.round((options.errorRate ?? 0) * 100));
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const headers = { "content-type": "application/json", "x-version": options.version };
    if (path === "/healthz") {
      res.writeHead(200, headers).end(JSON.stringify({ status: "ok", version: options.version }));
      return;
    }
    if (path === "/checkout" && errors.next()) {
      res
        .writeHead(500, headers)
        .end(JSON.stringify({ error: "card payment failed", version: options.version }));
      return;
    }
    res.writeHead(200, headers).end(JSON.stringify({ ok: true, version: options.version }));
  });
  server.keepAliveTimeout = 1_000;
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.advertise ?? host}:${port}`,
    version: options.version,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
