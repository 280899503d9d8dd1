import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A local HTTP server whose routes the test defines; it records every request it gets. */
export async function startServer(
  handler: (req: Recorded, res: ServerResponse) => void,
): Promise<{ url: string; requests: Recorded[]; close: () => Promise<void> }> {
  const requests: Recorded[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const rec = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      requests.push(rec);
      handler(rec, res);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A port nothing listens on, for connection-refused cases. A port found free and closed again can
 * be handed to the next server any test starts (the "dead" address then answers); a port below
 * 1024 is never handed out as an ephemeral port, and 2 is not one that fetch refuses.
 */
export const DEAD_PORT = 2;

/** An address on this machine that refuses every connection. */
export const DEAD_URL = `http://127.0.0.1:${DEAD_PORT}`;
