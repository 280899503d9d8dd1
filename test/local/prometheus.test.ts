import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startPrometheus } from "../../local/demo/prometheus.ts";

/** A port another process holds, as one found free can be by the time Prometheus binds it. */
let taken: Server;
let takenPort: number;
beforeAll(async () => {
  taken = createServer((_req, res) => res.writeHead(503).end());
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  takenPort = (taken.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

describe("startPrometheus", () => {
  it("starts on another port when the one it found free was taken meanwhile", async () => {
    const ports = [takenPort];
    const prometheus = await startPrometheus({
      targets: [],
      port: async () => ports.shift() ?? freePort(),
    });
    try {
      expect(ports).toEqual([]);
      expect(prometheus.url).not.toBe(`http://127.0.0.1:${takenPort}`);
      expect((await fetch(`${prometheus.url}/-/ready`)).status).toBe(200);
    } finally {
      await prometheus.close();
    }
  }, 60_000);

  it("gives up, naming the port, when every port it tries is taken", async () => {
    await expect(startPrometheus({ targets: [], port: async () => takenPort })).rejects.toThrow(
      new RegExp(`port ${takenPort} is taken`),
    );
  }, 60_000);
});
