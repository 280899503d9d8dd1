import http from "node:http";
import type { AddressInfo } from "node:net";
import { localProxyThroughPlugin } from "@sfn-rollouts/test-support/local-proxy";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { TargetConfigurationError, TargetNotReadyError } from "../../functions/traffic/errors.ts";
import type { TargetState, TrafficTarget } from "../../functions/traffic/port.ts";
import { type RunningProxy, startProxy } from "../../local/proxy/server.ts";
import type { LocalProxyState } from "../../local/proxy/target.ts";

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
  const { router, close } = await localProxyThroughPlugin(
    { adminUrl: proxy.adminUrl, progressDeadlineSeconds: 10 },
    clock,
  );
  closers.push(close);
  return { proxy, router, v1, v2, clock };
}

async function versions(url: string, n: number, headers: Record<string, string> = {}): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(await (await fetch(url, { headers })).text());
  return out;
}

async function readyCandidate(router: TrafficTarget, v2: string): Promise<TargetState> {
  const { state } = await router.prepare();
  // The pushed "image" is the running upstream's URL.
  const deployed = await router.deployCandidate(state, { image: v2, version: "v2" });
  const ready = await router.checkReadiness(deployed);
  expect(ready.ready).toBe(true);
  return ready.state;
}

describe("the local proxy plugin, through the plugin target, against a real proxy", () => {
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
    expect(s).toMatchObject({ type: "plugin", name: "local-proxy" });
    expect((s.state as LocalProxyState).previous?.version).toBe("v1");
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
    const s = await router.deployCandidate(state, { image: "http://127.0.0.1:9", version: "v2" });
    const first = await router.checkReadiness(s);
    expect(first.ready).toBe(false);
    clock.advance(10_000);
    const error = await router.checkReadiness(s).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetNotReadyError);
    expect((error as Error).message).toMatch(
      /^plugin "local-proxy" checkReadiness: the candidate was not ready before its progress deadline: /,
    );
  });
});

describe("which running upstream a pushed image is", () => {
  /** The proxy with v1 stable, the plugin with these upstreams: the upstream the candidate gets. */
  async function candidateOf(upstreams: Record<string, string>, pushed: { image: string; version?: string }) {
    const v1 = await upstream("v1");
    const proxy = await startProxy({ config: { stable: v1, stableVersion: "v1" } });
    closers.push(proxy.close);
    const { router, close } = await localProxyThroughPlugin(
      { adminUrl: proxy.adminUrl, upstreams },
      new ManualClock(0),
    );
    closers.push(close);
    const { state } = await router.prepare();
    await router.deployCandidate(state, pushed);
    return proxy.config()?.canary;
  }
  const image = (digest: string) => `000000000000.dkr.ecr.us-east-1.amazonaws.com/demo@${digest}`;
  const sha = (n: number) => `sha256:${String(n).repeat(64)}`;

  it('is the upstream of the pushed tag, else of its digest, else the "*" upstream', async () => {
    const upstreams = { v1: "http://127.0.0.1:2", [sha(4)]: "http://127.0.0.1:4", "*": "http://127.0.0.1:3" };
    // artifactFor labels the image with its tag, or its digest when it was pushed by digest only.
    expect(await candidateOf(upstreams, { image: image(sha(1)), version: "v1" })).toBe("http://127.0.0.1:2");
    expect(await candidateOf(upstreams, { image: image(sha(4)), version: "v9" })).toBe("http://127.0.0.1:4");
    expect(await candidateOf(upstreams, { image: image(sha(4)), version: sha(4) })).toBe(
      "http://127.0.0.1:4",
    );
    expect(await candidateOf(upstreams, { image: image(sha(7)), version: "v7" })).toBe("http://127.0.0.1:3");
  });

  it("refuses an image with no upstream, and an artifact that is not an image, at deployCandidate", async () => {
    const v1 = await upstream("v1");
    const proxy = await startProxy({ config: { stable: v1, stableVersion: "v1" } });
    closers.push(proxy.close);
    const { router, close } = await localProxyThroughPlugin(
      { adminUrl: proxy.adminUrl, upstreams: { v1: "http://127.0.0.1:2" } },
      new ManualClock(0),
    );
    closers.push(close);
    const { state } = await router.prepare();
    const pushed = router.artifactFor({ image: image(sha(2)), digest: sha(2), tag: "v7" });
    await expect(router.deployCandidate(state, pushed)).rejects.toThrow(
      new TargetConfigurationError(
        `plugin "local-proxy" deployCandidate: the local proxy has no upstream for image tag "v7" or digest "${sha(2)}": add it to upstreams (or a "*" upstream for any other image)`,
      ),
    );
    await expect(router.deployCandidate(state, { s3Key: "app.zip" })).rejects.toThrow(
      /^plugin "local-proxy" deployCandidate: a local proxy candidate is a running upstream: /,
    );
    expect(proxy.config()?.canary).toBeNull();
  });

  it("names a bad config field, as the plugin's TargetConfigurationError", async () => {
    const { router, close } = await localProxyThroughPlugin({ adminUrl: "not a url" }, new ManualClock(0));
    closers.push(close);
    await expect(router.prepare()).rejects.toThrow(
      new TargetConfigurationError(
        'plugin "local-proxy" prepare: invalid local proxy config: config.adminUrl: Invalid URL',
      ),
    );
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
    const { router, close } = await localProxyThroughPlugin(
      { adminUrl, requestTimeoutSeconds: 1 },
      new ManualClock(0),
    );
    closers.push(close);
    const error = await router.prepare().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetNotReadyError);
    expect((error as Error).message).toBe(
      `plugin "local-proxy" prepare: GET ${adminUrl}/admin/config did not answer within 1 s`,
    );
  });
});
