import http from "node:http";
import type { AddressInfo } from "node:net";
import { DEAD_URL } from "@sfn-rollouts/test-support/http-server";
import { afterEach, describe, expect, it } from "vitest";
import { ExactShare } from "../../local/proxy/exact-share.ts";
import { type RunningProxy, startProxy } from "../../local/proxy/server.ts";

interface Upstream {
  url: string;
  hits: number;
  close(): Promise<void>;
}

/** A tiny upstream that answers with its version in the body and the `X-Version` header. */
async function startUpstream(version: string | null, status = 200): Promise<Upstream> {
  const state = { hits: 0 };
  const server = http.createServer((req, res) => {
    state.hits += 1;
    const headers: Record<string, string> = { "content-type": "text/plain" };
    if (version !== null) headers["x-version"] = version;
    res.writeHead(status, headers);
    res.end(`${version ?? "anonymous"} ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get hits() {
      return state.hits;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

async function postConfig(proxy: RunningProxy, body: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${proxy.adminUrl}/admin/config`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function setup(): Promise<{ proxy: RunningProxy; stable: Upstream; canary: Upstream }> {
  const stable = await startUpstream("v1");
  const canary = await startUpstream("v2");
  const proxy = await startProxy({ port: 0, host: "127.0.0.1" });
  cleanups.push(stable.close, canary.close, proxy.close);
  return { proxy, stable, canary };
}

describe("ExactShare", () => {
  it.each([0, 1, 7, 25, 33, 50, 99, 100])("sends exactly %i of every 100 to the candidate", (percent) => {
    const share = new ExactShare(percent);
    const picks = Array.from({ length: 1000 }, () => share.next());
    expect(picks.filter(Boolean).length).toBe(percent * 10);
    for (let block = 0; block < 10; block++) {
      expect(picks.slice(block * 100, block * 100 + 100).filter(Boolean).length).toBe(percent);
    }
  });

  it("spreads the candidate's requests evenly instead of in a burst", () => {
    const share = new ExactShare(25);
    const picks = Array.from({ length: 8 }, () => share.next());
    expect(picks).toEqual([false, false, false, true, false, false, false, true]);
  });

  it("rejects a share that is not an integer percent", () => {
    expect(() => new ExactShare(12.5)).toThrow(RangeError);
    expect(() => new ExactShare(101)).toThrow(RangeError);
  });
});

describe("local proxy", () => {
  it("answers 503 with a clear body before it is configured", async () => {
    const { proxy } = await setup();
    const res = await get(`${proxy.url}/hello`);
    expect(res.status).toBe(503);
    expect(res.body).toContain("POST /admin/config");
    expect(res.body).toContain(proxy.adminUrl);
  });

  it("splits exactly 1,000 requests at the configured weight", async () => {
    const { proxy, stable, canary } = await setup();
    const set = await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 7 });
    expect(set.status).toBe(200);
    const versions: string[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const bodies = await Promise.all(
        Array.from({ length: 100 }, () => get(`${proxy.url}/x`).then((r) => r.body.split(" ")[0] ?? "")),
      );
      versions.push(...bodies);
    }
    expect(versions.filter((v) => v === "v2")).toHaveLength(70);
    expect(versions.filter((v) => v === "v1")).toHaveLength(930);
    expect(canary.hits).toBe(70);
    expect(stable.hits).toBe(930);
    const admin = (await (await fetch(`${proxy.adminUrl}/admin/config`)).json()) as {
      split: { total: number; candidate: number };
      config: { weight: number };
    };
    expect(admin.split).toEqual({ total: 1000, candidate: 70 });
    expect(admin.config.weight).toBe(7);
  });

  it("forwards the path and query and labels the route taken", async () => {
    const { proxy, stable } = await setup();
    await postConfig(proxy, { stable: stable.url });
    const res = await get(`${proxy.url}/orders/42?full=1`);
    expect(res.body).toBe("v1 /orders/42?full=1");
    expect(res.headers.get("x-version")).toBe("v1");
    expect(res.headers.get("x-proxy-upstream")).toBe("stable");
    expect(res.headers.get("x-proxy-route")).toBe("weight");
  });

  it("sends X-Canary: always to the candidate at weight 0 without disturbing the split", async () => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 0 });
    for (let i = 0; i < 5; i++) {
      const res = await get(`${proxy.url}/`, { "X-Canary": "always" });
      expect(res.body.startsWith("v2")).toBe(true);
      expect(res.headers.get("x-proxy-route")).toBe("testers");
    }
    const live = await Promise.all(Array.from({ length: 20 }, () => get(`${proxy.url}/`)));
    expect(live.every((r) => r.body.startsWith("v1"))).toBe(true);
    expect(canary.hits).toBe(5);
    const wrongValue = await get(`${proxy.url}/`, { "X-Canary": "sometimes" });
    expect(wrongValue.body.startsWith("v1")).toBe(true);
  });

  it("honours a configured testers header and named header routes", async () => {
    const stable = await startUpstream("v1");
    const canary = await startUpstream("v2");
    const proxy = await startProxy({
      testersHeader: { name: "X-Tester", value: "yes" },
      config: {
        stable: stable.url,
        canary: canary.url,
        headerRoutes: [{ name: "qa", match: [{ headerName: "X-Team", headerValue: { exact: "qa" } }] }],
      },
    });
    cleanups.push(stable.close, canary.close, proxy.close);
    expect((await get(`${proxy.url}/`, { "X-Tester": "yes" })).body.startsWith("v2")).toBe(true);
    expect((await get(`${proxy.url}/`, { "X-Canary": "always" })).body.startsWith("v1")).toBe(true);
    const qa = await get(`${proxy.url}/`, { "x-team": "qa" });
    expect(qa.body.startsWith("v2")).toBe(true);
    expect(qa.headers.get("x-proxy-route")).toBe("qa");
    await postConfig(proxy, { headerRoutes: [] });
    expect((await get(`${proxy.url}/`, { "x-team": "qa" })).body.startsWith("v1")).toBe(true);
  });

  it("answers 502 with a clear body when an upstream is down and counts it for that version", async () => {
    const stable = await startUpstream("v1");
    const proxy = await startProxy();
    const down = DEAD_URL;
    cleanups.push(stable.close, proxy.close);
    await postConfig(proxy, { stable: stable.url, canary: down, canaryVersion: "v2", weight: 100 });
    const res = await get(`${proxy.url}/checkout`);
    expect(res.status).toBe(502);
    expect(res.body).toContain("Bad Gateway");
    expect(res.body).toContain("canary upstream v2");
    expect(res.body).toContain(down.replace("http://", ""));
    const metrics = await get(`${proxy.url}/metrics`);
    expect(metrics.body).toContain('http_requests_total{version="v2",code="502"} 1');
    expect(metrics.body).toContain('http_request_duration_seconds_count{version="v2"} 1');
  });

  it("exposes per-version counts and a latency histogram in Prometheus format", async () => {
    const stable = await startUpstream("v1");
    const canary = await startUpstream(null, 500);
    const proxy = await startProxy({
      config: { stable: stable.url, canary: canary.url, weight: 50, canaryVersion: "candidate-7" },
    });
    cleanups.push(stable.close, canary.close, proxy.close);
    for (let i = 0; i < 10; i++) await get(`${proxy.url}/`);
    const res = await get(`${proxy.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(res.body).toContain("# TYPE http_requests_total counter");
    expect(res.body).toContain('http_requests_total{version="v1",code="200"} 5');
    // No X-Version header from this upstream: the configured name labels it.
    expect(res.body).toContain('http_requests_total{version="candidate-7",code="500"} 5');
    expect(res.body).toContain("# TYPE http_request_duration_seconds histogram");
    expect(res.body).toContain('http_request_duration_seconds_bucket{le="0.005",version="v1"}');
    expect(res.body).toContain('http_request_duration_seconds_bucket{le="10",version="v1"}');
    expect(res.body).toContain('http_request_duration_seconds_bucket{le="+Inf",version="v1"} 5');
    expect(res.body).toContain('http_request_duration_seconds_count{version="candidate-7"} 5');
    // Admin and metrics requests are not counted as traffic.
    expect(res.body).not.toContain('version="stable"');
  });

  it("serves each version's recent success rate from its own samples at /admin/stats", async () => {
    const stable = await startUpstream("v1");
    const canary = await startUpstream("v3", 500);
    const proxy = await startProxy({ config: { stable: stable.url, canary: canary.url, weight: 25 } });
    cleanups.push(stable.close, canary.close, proxy.close);
    for (let i = 0; i < 20; i++) await get(`${proxy.url}/checkout`);
    const v1 = await (await fetch(`${proxy.adminUrl}/admin/stats?version=v1&window=20`)).json();
    expect(v1).toEqual({ version: "v1", window: 20, requests: 15, ok: 15, successRate: 1, result: [1] });
    const v3 = await (await fetch(`${proxy.adminUrl}/admin/stats?version=v3`)).json();
    expect(v3).toMatchObject({ requests: 5, ok: 0, successRate: 0, result: [0] });
    const none = await (await fetch(`${proxy.adminUrl}/admin/stats?version=v9`)).json();
    expect(none).toMatchObject({ requests: 0, successRate: null, result: [] });
    expect((await fetch(`${proxy.adminUrl}/admin/stats`)).status).toBe(400);
  });

  it("answers GET /compare with a summary per version, for the samples provider", async () => {
    const stable = await startUpstream("v1");
    const canary = await startUpstream("v3", 500);
    const proxy = await startProxy({
      config: {
        stable: stable.url,
        canary: canary.url,
        weight: 25,
        stableVersion: "v1",
        canaryVersion: "v3",
      },
    });
    cleanups.push(stable.close, canary.close, proxy.close);
    for (let i = 0; i < 20; i++) await get(`${proxy.url}/checkout`);
    const res = await fetch(`${proxy.adminUrl}/compare?primary=v1&candidate=v3&window=60`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, Record<string, unknown>>;
    expect(body.window).toBe(60);
    expect(body.primary).toMatchObject({
      version: "v1",
      requests: 15,
      errors: 0,
      success_rate: 1,
      error_rate: 0,
    });
    expect(body.candidate).toMatchObject({
      version: "v3",
      requests: 5,
      errors: 5,
      success_rate: 0,
      error_rate: 1,
    });
    for (const side of [body.primary, body.candidate]) {
      for (const field of ["mean_ms", "p50_ms", "p95_ms", "p99_ms"]) {
        expect(typeof side?.[field]).toBe("number");
        expect(side?.[field] as number).toBeGreaterThanOrEqual(0);
      }
    }
    // Argo's role words name the versions the configuration routes to.
    const roles = (await (
      await fetch(`${proxy.adminUrl}/compare?primary=stable&candidate=canary`)
    ).json()) as Record<string, Record<string, unknown>>;
    expect(roles.primary).toMatchObject({ version: "v1", requests: 15 });
    expect(roles.candidate).toMatchObject({ version: "v3", requests: 5 });
    // A version nobody called has no rates, so no condition can pass it.
    const none = (await (await fetch(`${proxy.adminUrl}/compare?primary=v1&candidate=v9`)).json()) as Record<
      string,
      Record<string, unknown>
    >;
    expect(none.candidate).toMatchObject({
      requests: 0,
      errors: 0,
      success_rate: null,
      error_rate: null,
      p95_ms: null,
    });
    const missing = await fetch(`${proxy.adminUrl}/compare?primary=v1`);
    expect(missing.status).toBe(400);
    expect(JSON.stringify(await missing.json())).toContain("candidate");
    const badWindow = await fetch(`${proxy.adminUrl}/compare?primary=v1&candidate=v3&window=-1`);
    expect(badWindow.status).toBe(400);
    // The admin API's guard holds for /compare too.
    const crossSite = await fetch(`${proxy.adminUrl}/compare?primary=v1&candidate=v3`, {
      headers: { origin: "http://evil.example" },
    });
    expect(crossSite.status).toBe(403);
  });

  it("feeds /compare from the samples the simulator records at its own virtual time", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const proxy = await startProxy({ now: () => now });
    cleanups.push(proxy.close);
    for (let s = 0; s < 30; s++) {
      for (let i = 0; i < 10; i++) proxy.record("v2", i < 3 ? 500 : 200, 0.1 * (i + 1));
      now += 1000;
    }
    const body = (await (
      await fetch(`${proxy.adminUrl}/compare?primary=v1&candidate=v2&window=10`)
    ).json()) as Record<string, Record<string, unknown>>;
    // The last 10 seconds, the current (empty) one included: 9 seconds of 10 requests.
    expect(body.candidate).toMatchObject({
      requests: 90,
      errors: 27,
      error_rate: 0.3,
      p50_ms: 500,
      p99_ms: 1000,
    });
    expect(body.candidate?.mean_ms).toBeCloseTo(550, 6);
  });

  it("rejects invalid admin bodies with a 400 naming the field, keeping the old config", async () => {
    const { proxy, stable } = await setup();
    await postConfig(proxy, { stable: stable.url });
    const noCanary = await postConfig(proxy, { weight: 10 });
    expect(noCanary.status).toBe(400);
    expect(JSON.stringify(noCanary.json)).toContain("weight: a weight above 0 needs a canary upstream");
    const badWeight = await postConfig(proxy, { weight: 12.5 });
    expect(badWeight.status).toBe(400);
    expect(JSON.stringify(badWeight.json)).toContain("weight");
    const unknown = await postConfig(proxy, { stabel: stable.url });
    expect(unknown.status).toBe(400);
    expect(proxy.config()?.weight).toBe(0);
    const notJson = await fetch(`${proxy.adminUrl}/admin/config`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(notJson.status).toBe(400);
  });

  it("resets the split when the weight changes, so each step starts exact", async () => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 50 });
    await get(`${proxy.url}/`);
    await postConfig(proxy, { weight: 25 });
    const bodies: string[] = [];
    for (let i = 0; i < 4; i++) bodies.push((await get(`${proxy.url}/`)).body.split(" ")[0] ?? "");
    expect(bodies).toEqual(["v1", "v1", "v1", "v2"]);
  });
});

describe("the admin listener", () => {
  /** A POST to the admin API with the given headers and body; answers the status and the JSON. */
  async function post(url: string, headers: Record<string, string>, body: string) {
    const res = await fetch(`${url}/admin/config`, { method: "POST", headers, body });
    const text = await res.text();
    return { status: res.status, type: res.headers.get("content-type"), text };
  }

  it("listens on its own 127.0.0.1 port, apart from the traffic listener", async () => {
    const { proxy } = await setup();
    const admin = new URL(proxy.adminUrl);
    expect(admin.hostname).toBe("127.0.0.1");
    expect(admin.port).not.toBe(new URL(proxy.url).port);
    expect(proxy.adminPort).toBe(Number(admin.port));
  });

  it("the traffic port does not change the configuration: /admin/config is forwarded like any path", async () => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 0 });
    const res = await fetch(`${proxy.url}/admin/config`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ weight: 100 }),
    });
    expect(await res.text()).toBe("v1 /admin/config");
    expect(proxy.config()?.weight).toBe(0);
  });

  it.each([
    ["an Origin of another site", { origin: "http://evil.example" }],
    ["an Origin of the traffic port", { origin: "TRAFFIC" }],
    ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
  ])("refuses %s with 403 and a JSON error, changing nothing", async (_what, extra) => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 0 });
    const headers: Record<string, string> = { "content-type": "application/json" };
    for (const [name, value] of Object.entries(extra))
      headers[name] = value === "TRAFFIC" ? proxy.url : value;
    const res = await post(proxy.adminUrl, headers, JSON.stringify({ weight: 100 }));
    expect(res.status).toBe(403);
    expect(res.type).toBe("application/json");
    expect(JSON.parse(res.text).error).toMatch(/cross-origin request refused/);
    expect(proxy.config()?.weight).toBe(0);
    // Reads are refused the same way: the answer is not for another site's script.
    const read = await fetch(`${proxy.adminUrl}/admin/config`, { headers });
    expect(read.status).toBe(403);
  });

  it.each([
    ["text/plain (a form or fetch a browser sends without asking)", "text/plain"],
    ["application/x-www-form-urlencoded", "application/x-www-form-urlencoded"],
    ["no content type", ""],
  ])("refuses a body of %s with 415 and a JSON error, changing nothing", async (_what, type) => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 0 });
    const res = await post(
      proxy.adminUrl,
      type ? { "content-type": type } : {},
      JSON.stringify({ weight: 100 }),
    );
    expect(res.status).toBe(415);
    expect(JSON.parse(res.text).error).toMatch(/Content-Type must be application\/json/);
    expect(proxy.config()?.weight).toBe(0);
  });

  /** A GET with the headers as given, `Host` included (which `fetch` does not let a caller set). */
  function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: "GET", headers }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on("error", reject);
      req.end();
    });
  }

  it.each([
    ["/admin/config", "same-origin"],
    ["/compare?primary=stable&candidate=canary&window=60", "same-origin"],
    ["/metrics", "same-origin"],
    ["/admin/config", "none"],
  ])("refuses a GET %s under another Host name (DNS rebinding), Sec-Fetch-Site: %s", async (path, site) => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 0 });
    const host = `rebind.evil.example:${proxy.adminPort}`;
    const res = await rawGet(`${proxy.adminUrl}${path}`, { host, "sec-fetch-site": site });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text).error).toBe(
      `request refused: Host ${host} is not this listener (127.0.0.1:${proxy.adminPort}, localhost:${proxy.adminPort} or [::1]:${proxy.adminPort})`,
    );
    expect(res.text).not.toContain(stable.url);
  });

  it("answers under its loopback names, whatever their case", async () => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 0 });
    for (const name of ["127.0.0.1", "localhost", "LocalHost", "[::1]"]) {
      const res = await rawGet(`${proxy.adminUrl}/admin/config`, { host: `${name}:${proxy.adminPort}` });
      expect(res.status, name).toBe(200);
    }
    // The right name with another port is another origin.
    const other = await rawGet(`${proxy.adminUrl}/admin/config`, { host: "127.0.0.1:1" });
    expect(other.status).toBe(403);
  });

  it("answers under the names it is told it is reached by (a container's host.docker.internal)", async () => {
    const proxy = await startProxy({ adminHost: "0.0.0.0", adminReachableAs: ["host.docker.internal"] });
    cleanups.push(proxy.close);
    const url = `http://127.0.0.1:${proxy.adminPort}/admin/config`;
    const ok = await rawGet(url, { host: `host.docker.internal:${proxy.adminPort}` });
    expect(ok.status).toBe(200);
    const refused = await rawGet(url, { host: `rebind.evil.example:${proxy.adminPort}` });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.text).error).toMatch(/host\.docker\.internal:\d+/);
  });

  it.each(["Cross-Site", "SAME-SITE"])("compares Sec-Fetch-Site without regard to case: %s", async (site) => {
    const { proxy } = await setup();
    const res = await rawGet(`${proxy.adminUrl}/admin/config`, { "sec-fetch-site": site });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text).error).toMatch(/cross-origin request refused/);
  });

  it("accepts its own origin, same-origin fetches and JSON with a charset", async () => {
    const { proxy, stable, canary } = await setup();
    await postConfig(proxy, { stable: stable.url, canary: canary.url, weight: 0 });
    const res = await post(
      proxy.adminUrl,
      {
        "content-type": "application/json; charset=utf-8",
        origin: proxy.adminUrl,
        "sec-fetch-site": "same-origin",
      },
      JSON.stringify({ weight: 30 }),
    );
    expect(res.status).toBe(200);
    expect(proxy.config()?.weight).toBe(30);
  });
});
