import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startPrometheus } from "../../local/prometheus.ts";

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
  });

  it("scraped() resolves once its target's scrape succeeded, and not before the series exists", async () => {
    const target = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "text/plain" }).end("probe_total 7\n"),
    );
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    const prometheus = await startPrometheus({
      targets: [`127.0.0.1:${(target.address() as AddressInfo).port}`],
    });
    const query = async () => {
      const r = await fetch(`${prometheus.url}/api/v1/query?query=probe_total`);
      return ((await r.json()) as { data: { result: Array<{ value: [number, string] }> } }).data.result;
    };
    try {
      await prometheus.scraped();
      expect((await query()).map((s) => s.value[1])).toEqual(["7"]);
    } finally {
      await prometheus.close();
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
  });

  it("scraped() gives up, naming the time, when a target's scrape keeps failing", async () => {
    const prometheus = await startPrometheus({ targets: [`127.0.0.1:${takenPort}`] });
    try {
      await expect(prometheus.scraped(1_500)).rejects.toThrow(/did not scrape its targets in 1500 ms/);
    } finally {
      await prometheus.close();
    }
  });

  it("gives up, naming the port, when every port it tries is taken", async () => {
    await expect(startPrometheus({ targets: [], port: async () => takenPort })).rejects.toThrow(
      new RegExp(`port ${takenPort} is taken`),
    );
  });
});
