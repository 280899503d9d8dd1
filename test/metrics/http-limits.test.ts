import type { ServerResponse } from "node:http";
import { type Recorded, startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_MAX_BODY_BYTES,
  type Fetch,
  MAX_REDIRECTS,
  maxBodyBytesFrom,
} from "../../functions/metrics/http.ts";
import { PrometheusMetricProvider } from "../../functions/metrics/prometheus.ts";
import { SamplesMetricProvider } from "../../functions/metrics/samples.ts";
import { WebMetricProvider } from "../../functions/metrics/web.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

/**
 * What an HTTP provider does with an answer it must not trust: a body past the limit (declared
 * or streamed without end), redirects past five or to another scheme, credentials on a redirect
 * to another origin. Each is an Error measurement that says so, never a hang or an exception.
 */

let server: Awaited<ReturnType<typeof startServer>>;
let other: Awaited<ReturnType<typeof startServer>>;
const BIG = DEFAULT_MAX_BODY_BYTES + 1;
const SUMMARIES = JSON.stringify({ primary: { n: 1 }, candidate: { n: 2 } });

function route(req: Recorded, res: ServerResponse): void {
  const path = req.url.split("?")[0] ?? "";
  const hops = /^\/hops\/(\d+)/.exec(path);
  if (hops) {
    const n = Number(hops[1]);
    if (n === 0) {
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok": true}');
    } else {
      res.writeHead(302, { location: `/hops/${n - 1}` }).end();
    }
    return;
  }
  switch (path) {
    case "/json":
    case "/compare":
      res.writeHead(200, { "content-type": "application/json" }).end(SUMMARIES);
      return;
    case "/big":
      res.writeHead(200, { "content-type": "application/json" }).end(`"${"x".repeat(BIG)}"`);
      return;
    case "/endless": {
      // Chunked, no content-length, never ends: only the reader's limit stops it.
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = "x".repeat(64 * 1024);
      const write = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", write);
      };
      write();
      return;
    }
    case "/api/v1/query":
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          status: "success",
          data: { resultType: "vector", result: [{ metric: { pad: "x".repeat(BIG) }, value: [1, "1"] }] },
        }),
      );
      return;
    case "/deep":
    case "/deep/compare":
    case "/deep/api/v1/query":
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(`${"[".repeat(100_000)}${"]".repeat(100_000)}`);
      return;
    case "/to-file":
      res.writeHead(302, { location: "file:///etc/passwd" }).end();
      return;
    case "/to-https":
      res.writeHead(301, { location: "https://example.invalid/json" }).end();
      return;
    case "/loop":
      res.writeHead(307, { location: "/loop" }).end();
      return;
    case "/see-other":
      res.writeHead(303, { location: "/echo" }).end();
      return;
    case "/temporary":
      res.writeHead(307, { location: "/echo" }).end();
      return;
    case "/elsewhere":
      res.writeHead(302, { location: `${other.url}/echo` }).end();
      return;
    case "/echo":
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ method: req.method, body: req.body, headers: req.headers }));
      return;
    default:
      res.writeHead(404).end();
  }
}

beforeAll(async () => {
  server = await startServer(route);
  other = await startServer(route);
});
afterAll(async () => {
  await server.close();
  await other.close();
});

const now = new Date();

/**
 * A `fetch` whose response bodies are handed to the reader one chunk per read, and counted: how
 * many bytes the reader took and whether it cancelled the stream. Past `ceiling` bytes the body
 * fails, so a reader that ignored its limit ends in a different message here, at once, instead of
 * reading an endless answer until the deadline.
 */
function countedBodies(ceiling: number) {
  const read = { bytes: 0, largestChunk: 0, cancelled: false };
  const counted: Fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    const source = response.body.getReader();
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          if (read.bytes > ceiling) {
            controller.error(new Error(`read ${read.bytes} bytes, far past any limit`));
            await source.cancel();
            return;
          }
          const { done, value } = await source.read();
          if (done) {
            controller.close();
            return;
          }
          read.bytes += value.byteLength;
          read.largestChunk = Math.max(read.largestChunk, value.byteLength);
          controller.enqueue(value);
        },
        async cancel(reason) {
          read.cancelled = true;
          await source.cancel(reason);
        },
      },
      // Nothing is read ahead of the reader: the count is what it asked for.
      { highWaterMark: 0 },
    );
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch: counted, read };
}

const web = (path: string, extra: Record<string, unknown> = {}): Metric =>
  MetricSchema.parse({ name: "web", provider: { web: { url: `${server.url}${path}`, ...extra } } });

describe("the web provider's limits", () => {
  it("a body past the limit is an Error measurement naming the limit and its variable", async () => {
    const r = await new WebMetricProvider().measure(web("/big"), { now });
    expect(r).toEqual({
      ok: false,
      message:
        "the response body is larger than 1,048,576 bytes, the most a measurement reads (ROLLOUTS_METRIC_MAX_BODY_BYTES): narrow the query or the endpoint's answer, or raise the limit",
    });
  });

  it("a body that never ends is read as a stream and abandoned at the limit", async () => {
    const body = countedBodies(8 * DEFAULT_MAX_BODY_BYTES);
    const r = await new WebMetricProvider({ fetch: body.fetch }).measure(
      web("/endless", { timeoutSeconds: 30 }),
      { now },
    );
    // The limit's own message: neither the deadline nor the ceiling below stopped the read.
    expect(r).toMatchObject({ ok: false, message: expect.stringContaining("larger than 1,048,576 bytes") });
    // Read chunk by chunk up to the limit, not refused from a header (the endless answer has none),
    // and cancelled within the chunk that crossed it.
    expect(body.read.bytes).toBeGreaterThan(DEFAULT_MAX_BODY_BYTES);
    expect(body.read.bytes).toBeLessThanOrEqual(DEFAULT_MAX_BODY_BYTES + body.read.largestChunk);
    expect(body.read.cancelled).toBe(true);
  });

  it("the limit is configurable: a smaller one refuses a small answer", async () => {
    const r = await new WebMetricProvider({ maxBodyBytes: 10 }).measure(web("/json"), { now });
    expect(r).toMatchObject({ ok: false, message: expect.stringContaining("larger than 10 bytes") });
    expect(await new WebMetricProvider({ maxBodyBytes: 1000 }).measure(web("/json"), { now })).toMatchObject({
      ok: true,
    });
  });

  it(`follows up to ${MAX_REDIRECTS} redirects, and stops with an Error past them or in a loop`, async () => {
    expect(await new WebMetricProvider().measure(web(`/hops/${MAX_REDIRECTS}`), { now })).toEqual({
      ok: true,
      result: { ok: true },
      value: '{"ok":true}',
    });
    expect(await new WebMetricProvider().measure(web(`/hops/${MAX_REDIRECTS + 1}`), { now })).toEqual({
      ok: false,
      message: `stopped after ${MAX_REDIRECTS} redirects (the last to "/hops/0"): give the final URL`,
    });
    expect(await new WebMetricProvider().measure(web("/loop"), { now })).toMatchObject({
      ok: false,
      message: expect.stringContaining(`stopped after ${MAX_REDIRECTS} redirects`),
    });
  });

  it("never follows a redirect to another scheme: file:, or http to https", async () => {
    expect(await new WebMetricProvider().measure(web("/to-file"), { now })).toEqual({
      ok: false,
      message:
        'redirected from http: to file: ("file:///etc/passwd"): redirects are followed only within the URL\'s own scheme; give the final URL',
    });
    expect(await new WebMetricProvider().measure(web("/to-https"), { now })).toMatchObject({
      ok: false,
      message: expect.stringContaining("redirected from http: to https:"),
    });
  });

  it("a 303 turns a POST into a GET without its body; a 307 repeats the POST with it", async () => {
    const seeOther = await new WebMetricProvider().measure(
      web("/see-other", { method: "POST", jsonBody: { a: 1 } }),
      { now },
    );
    expect(seeOther).toMatchObject({ ok: true, result: { method: "GET", body: "" } });
    const temporary = await new WebMetricProvider().measure(
      web("/temporary", { method: "POST", jsonBody: { a: 1 } }),
      { now },
    );
    expect(temporary).toMatchObject({ ok: true, result: { method: "POST", body: '{"a":1}' } });
  });

  it("drops credentials on a redirect to another origin, keeps the other headers", async () => {
    const r = await new WebMetricProvider().measure(
      web("/elsewhere", {
        headers: [
          { key: "Authorization", value: "Bearer secret" },
          { key: "X-Team", value: "payments" },
        ],
      }),
      { now },
    );
    expect(r.ok).toBe(true);
    const headers = (r as { result: { headers: Record<string, string> } }).result.headers;
    expect(headers.authorization).toBeUndefined();
    expect(headers["x-team"]).toBe("payments");
  });

  it("refuses a URL that is not http or https at run time too (a spec that skipped the loader)", async () => {
    const metric = web("/json");
    const fileUrl = {
      ...metric,
      provider: { web: { ...metric.provider.web, url: "file:///etc/passwd" } },
    } as Metric;
    expect(await new WebMetricProvider().measure(fileUrl, { now })).toEqual({
      ok: false,
      message: 'Get "file:///etc/passwd": unsupported protocol scheme "file"',
    });
  });
});

describe("the samples provider's limits", () => {
  const samples = (address: string): Metric =>
    MetricSchema.parse({ name: "s", provider: { samples: { address, primary: "a", candidate: "b" } } });

  it("reads a small answer and refuses one past the limit", async () => {
    expect(await new SamplesMetricProvider().measure(samples(server.url), { now })).toMatchObject({
      ok: true,
    });
    expect(
      await new SamplesMetricProvider({ maxBodyBytes: 10 }).measure(samples(server.url), { now }),
    ).toMatchObject({ ok: false, message: expect.stringContaining("larger than 10 bytes") });
  });

  it("refuses a file: address at run time", async () => {
    const metric = samples(server.url);
    const fileUrl = {
      ...metric,
      provider: { samples: { ...metric.provider.samples, address: "file:///tmp" } },
    } as Metric;
    expect(await new SamplesMetricProvider().measure(fileUrl, { now })).toMatchObject({
      ok: false,
      message: expect.stringContaining("only http and https URLs are read, not file:"),
    });
  });
});

describe("the Prometheus provider's body limit", () => {
  it("an answer past the limit is an Error measurement, not a parsed megabyte", async () => {
    const metric = MetricSchema.parse({
      name: "p",
      provider: { prometheus: { address: server.url, query: "up" } },
    });
    expect(await new PrometheusMetricProvider().measure(metric, { now })).toMatchObject({
      ok: false,
      message: expect.stringContaining("larger than 1,048,576 bytes"),
    });
    expect(
      await new PrometheusMetricProvider({ maxBodyBytes: 4 * DEFAULT_MAX_BODY_BYTES }).measure(metric, {
        now,
      }),
    ).toMatchObject({ ok: true, result: [1] });
  });
});

describe("an answer nested deeper than anything a metric needs", () => {
  it("is an Error measurement for web, samples and Prometheus, never a stack overflow", async () => {
    const deep = "the response is nested more than 100 levels deep: a metric's answer needs far fewer";
    expect(await new WebMetricProvider().measure(web("/deep"), { now })).toEqual({
      ok: false,
      message: deep,
    });
    const samples = MetricSchema.parse({
      name: "s",
      provider: { samples: { address: `${server.url}/deep`, primary: "a", candidate: "b" } },
    });
    expect(await new SamplesMetricProvider().measure(samples, { now })).toEqual({ ok: false, message: deep });
    const prometheus = MetricSchema.parse({
      name: "p",
      provider: { prometheus: { address: `${server.url}/deep`, query: "up" } },
    });
    expect(await new PrometheusMetricProvider().measure(prometheus, { now })).toEqual({
      ok: false,
      message: `bad_response: ${deep}`,
    });
  });
});

describe("ROLLOUTS_METRIC_MAX_BODY_BYTES", () => {
  it("defaults to 1 MiB, takes a whole number of bytes, and names itself when it is not one", () => {
    expect(maxBodyBytesFrom(undefined)).toBe(1_048_576);
    expect(maxBodyBytesFrom("")).toBe(1_048_576);
    expect(maxBodyBytesFrom("2097152")).toBe(2_097_152);
    for (const bad of ["0", "-1", "1.5", "1MB", "1e6"]) {
      expect(() => maxBodyBytesFrom(bad)).toThrow(
        `ROLLOUTS_METRIC_MAX_BODY_BYTES must be a whole number of bytes >= 1, got "${bad}"`,
      );
    }
  });
});
