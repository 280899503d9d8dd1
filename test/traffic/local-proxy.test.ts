import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { TargetNotReadyError } from "../../functions/traffic/errors.ts";
import { createTrafficTarget, type LocalProxyState } from "../../functions/traffic/index.ts";
import type { TargetState, TrafficTarget } from "../../functions/traffic/port.ts";
import { type RunningProxy, startProxy } from "../../local/proxy/server.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.();
});

async function upstream(version: string): Promise<string> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "x-version": version });
    res.end(version);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function setup(): Promise<{
  proxy: RunningProxy;
  router: TrafficTarget;
  v1: string;
  v2: string;
  clock: ManualClock;
}> {
  const v1 = await upstream("v1");
  const v2 = await upstream("v2");
  const proxy = await startProxy({ config: { stable: v1, stableVersion: "v1" } });
  closers.push(proxy.close);
  const clock = new ManualClock(1_000_000);
  const router = createTrafficTarget(
    { type: "local-proxy", adminUrl: proxy.adminUrl, progressDeadlineSeconds: 10 },
    {},
    clock,
  );
  return { proxy, router, v1, v2, clock };
}

async function versions(url: string, n: number, headers: Record<string, string> = {}): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(await (await fetch(url, { headers })).text());
  return out;
}

async function readyCandidate(router: TrafficTarget, v2: string): Promise<TargetState> {
  const { state } = await router.prepare();
  const deployed = await router.deployCandidate(state, { upstream: v2, version: "v2" });
  const ready = await router.checkReadiness(deployed);
  expect(ready.ready).toBe(true);
  return ready.state;
}

describe("LocalProxyTraffic against a real proxy", () => {
  it("deploys with no traffic, then moves an exact share", async () => {
    const { proxy, router, v2 } = await setup();
    let s = await readyCandidate(router, v2);
    expect(await versions(proxy.url, 10)).toEqual(Array(10).fill("v1"));
    const change = await router.setWeight(s, 25);
    expect(change.outcome).toBe("applied");
    s = change.state;
    const seen = await versions(proxy.url, 100);
    expect(seen.filter((v) => v === "v2")).toHaveLength(25);
    expect((await router.readWeights(s)).drift).toBe(false);
  });

  it("routes testers by header and removes the route on promotion", async () => {
    const { proxy, router, v2 } = await setup();
    let s = await readyCandidate(router, v2);
    s = (
      await router.setHeaderRoute(s, {
        name: "qa",
        match: [{ headerName: "X-Team", headerValue: { exact: "qa" } }],
      })
    ).state;
    expect(await versions(proxy.url, 3, { "X-Team": "qa" })).toEqual(["v2", "v2", "v2"]);
    s = await router.promote(s, { scaleDownDelaySeconds: 0 });
    expect(await versions(proxy.url, 5)).toEqual(Array(5).fill("v2"));
    expect(proxy.config()?.headerRoutes).toEqual([]);
    expect((s as LocalProxyState).previous?.version).toBe("v1");
    // Abort after promotion: back to v1 at once.
    const aborted = await router.abort(s, { abortScaleDownDelaySeconds: 0 });
    expect(aborted.ready).toBe(true);
    expect(await versions(proxy.url, 5)).toEqual(Array(5).fill("v1"));
  });

  it("reports drift when someone else changed the proxy's weight", async () => {
    const { proxy, router, v2 } = await setup();
    const s = (await router.setWeight(await readyCandidate(router, v2), 10)).state;
    await fetch(`${proxy.adminUrl}/admin/config`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ weight: 60 }),
    });
    const change = await router.setWeight(s, 20);
    expect(change.outcome).toBe("drift");
    expect(proxy.config()?.weight).toBe(60);
  });

  it("aborts before promotion by removing the candidate", async () => {
    const { proxy, router, v2 } = await setup();
    const s = (await router.setWeight(await readyCandidate(router, v2), 50)).state;
    await router.abort(s, { abortScaleDownDelaySeconds: 0 });
    expect(proxy.config()).toMatchObject({ canary: null, weight: 0 });
    expect(await versions(proxy.url, 4)).toEqual(Array(4).fill("v1"));
  });

  it("fails clearly when the candidate upstream never answers before the deadline", async () => {
    const { router, clock } = await setup();
    const { state } = await router.prepare();
    const s = await router.deployCandidate(state, { upstream: "http://127.0.0.1:9", version: "v2" });
    const first = await router.checkReadiness(s);
    expect(first.ready).toBe(false);
    clock.advance(10_000);
    await expect(router.checkReadiness(s)).rejects.toBeInstanceOf(TargetNotReadyError);
  });
});

describe("an admin API that accepts the connection and never answers", () => {
  it("each call gives up after requestTimeoutSeconds with a TargetNotReadyError naming the URL", {
    timeout: 10_000,
  }, async () => {
    const sockets = new Set<import("node:net").Socket>();
    const hung = http.createServer();
    hung.on("connection", (socket) => sockets.add(socket));
    hung.on("request", () => {}); // never answers
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          hung.close(() => resolve());
        }),
    );
    const adminUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    const router = createTrafficTarget(
      { type: "local-proxy", adminUrl, requestTimeoutSeconds: 1 },
      {},
      new ManualClock(0),
    );
    const error = await router.prepare().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetNotReadyError);
    expect((error as Error).message).toBe(`GET ${adminUrl}/admin/config did not answer within 1 s`);
  });
});
