import { Sha256 } from "@aws-crypto/sha256-js";
import { DEAD_URL, startServer } from "@sfn-rollouts/test-support/http-server";
import { SignatureV4 } from "@smithy/signature-v4";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { interpret, isAmpHost, PrometheusMetricProvider } from "../../functions/metrics/prometheus.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

/**
 * The Prometheus adapter's HTTP behaviour that a real Prometheus does not show on demand: the POST
 * to GET fallback, SigV4 signing for Amazon Managed Prometheus, and the Go client's error rules.
 */

let server: Awaited<ReturnType<typeof startServer>>;
const vector = JSON.stringify({
  status: "success",
  data: { resultType: "vector", result: [{ metric: {}, value: [1700000000, "0.97"] }] },
});

beforeAll(async () => {
  server = await startServer((req, res) => {
    if (req.url.startsWith("/get-only/") && req.method === "POST") {
      res.writeHead(405).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(vector);
  });
});
afterAll(async () => {
  await server.close();
});

function metric(address: string, extra: Record<string, unknown> = {}): Metric {
  return MetricSchema.parse({
    name: "m",
    provider: { prometheus: { address, query: 'sum(rate(x{a="b"}[1m]))', ...extra } },
  });
}
const now = new Date();

describe("Prometheus adapter over HTTP", () => {
  it("POSTs the query form-encoded to /api/v1/query, with the template's headers", async () => {
    const r = await new PrometheusMetricProvider().measure(
      metric(server.url, { headers: [{ key: "X-Scope-OrgID", value: "team-a" }] }),
      { now },
    );
    expect(r).toMatchObject({ ok: true, result: [0.97], value: "[0.97]" });
    const req = server.requests.at(-1);
    expect(req?.method).toBe("POST");
    expect(req?.url).toBe("/api/v1/query");
    expect(new URLSearchParams(req?.body).get("query")).toBe('sum(rate(x{a="b"}[1m]))');
    expect(req?.headers["x-scope-orgid"]).toBe("team-a");
  });

  it("queries the controller's default Prometheus when a metric names no address", async () => {
    const withDefault = new PrometheusMetricProvider({ defaultAddress: { url: `${server.url}/tenant/` } });
    const r = await withDefault.measure(metric(""), { now });
    expect(r).toMatchObject({ ok: true, result: [0.97] });
    expect(server.requests.at(-1)?.url).toBe("/tenant/api/v1/query");
    const without = await new PrometheusMetricProvider().measure(metric(""), { now });
    expect(without).toEqual({
      ok: false,
      message:
        'metric "m" names no prometheus address and the controller has no default (its prometheus prop)',
    });
  });

  it("falls back to GET when POST is not allowed, keeping the address's path prefix", async () => {
    const r = await new PrometheusMetricProvider().measure(metric(`${server.url}/get-only/`), { now });
    expect(r.ok).toBe(true);
    const [post, get] = server.requests.slice(-2);
    expect(post?.method).toBe("POST");
    expect(get?.method).toBe("GET");
    const target = new URL(get?.url ?? "", server.url);
    expect(target.pathname).toBe("/get-only/api/v1/query");
    expect(target.searchParams.get("query")).toBe('sum(rate(x{a="b"}[1m]))');
  });

  it("signs Amazon Managed Prometheus requests with SigV4 (service aps)", async () => {
    const signer = new SignatureV4({
      service: "aps",
      region: "eu-west-1",
      sha256: Sha256,
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" },
    });
    const seen: { url: string; headers: Record<string, string> }[] = [];
    const provider = new PrometheusMetricProvider({
      signerFor: (cfg) => {
        expect(cfg.region).toBe("eu-west-1");
        return {
          sign: async (req) => {
            const signed = await signer.sign({ ...req, query: req.query ?? {} });
            return { ...req, headers: signed.headers as Record<string, string> };
          },
        };
      },
      fetch: async (url, init) => {
        seen.push({ url, headers: init?.headers as Record<string, string> });
        return new Response(vector, { status: 200 });
      },
    });
    const r = await provider.measure(
      metric("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1", {
        authentication: { sigv4: { region: "eu-west-1" } },
      }),
      { now },
    );
    expect(r.ok).toBe(true);
    expect(seen[0]?.url).toBe("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/api/v1/query");
    expect(seen[0]?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/aps\/aws4_request, SignedHeaders=.*host.*, Signature=[0-9a-f]{64}$/,
    );
    expect(seen[0]?.headers["x-amz-content-sha256"] ?? seen[0]?.headers["x-amz-date"]).toBeDefined();
  });

  it("does not sign addresses that are not AMP workspaces, as Argo", async () => {
    let signed = false;
    const provider = new PrometheusMetricProvider({
      signerFor: () => {
        signed = true;
        return { sign: async (r) => r };
      },
    });
    await provider.measure(metric(server.url, { authentication: { sigv4: { region: "eu-west-1" } } }), {
      now,
    });
    expect(signed).toBe(false);
  });

  it.each([
    "aps-workspaces.us-east-1.amazonaws.com",
    "aps-workspaces-fips.us-east-2.amazonaws.com",
    "aps-workspaces.eu-west-1.api.aws",
    "aps-workspaces-fips.us-west-2.api.aws",
    "aps-workspaces.us-gov-west-1.amazonaws.com",
    "aps-workspaces.ap-southeast-5.amazonaws.com",
    "aps-workspaces.cn-north-1.amazonaws.com.cn",
    "aps-workspaces.cn-northwest-1.api.amazonwebservices.com.cn",
    "APS-WORKSPACES.US-EAST-1.AMAZONAWS.COM",
  ])("signs for the AMP endpoint %s", (host) => {
    expect(isAmpHost(host)).toBe(true);
  });

  it.each([
    "aps-workspaces.evil.example",
    "aps-workspaces.us-east-1.amazonaws.com.evil.example",
    "evil-aps-workspaces.us-east-1.amazonaws.com",
    "aps-workspaces.us-east-1.amazonaws.com.",
    "aps-workspaces-evil.us-east-1.amazonaws.com",
    "x.aps-workspaces.us-east-1.amazonaws.com",
    "aps.us-east-1.amazonaws.com",
    "aps-workspaces.us-east-1.api.aws.cn",
    "aps-workspaces.useast1.amazonaws.com",
    "prometheus.internal",
  ])("never signs for %s, which only contains the word or the domain", (host) => {
    expect(isAmpHost(host)).toBe(false);
  });

  it("sends no signature to a host that merely contains aps-workspaces", async () => {
    let signed = false;
    const seen: Array<Record<string, string>> = [];
    const provider = new PrometheusMetricProvider({
      signerFor: () => {
        signed = true;
        return {
          sign: async (r) => ({ ...r, headers: { ...r.headers, authorization: "AWS4-HMAC-SHA256 x" } }),
        };
      },
      fetch: async (_url, init) => {
        seen.push(init?.headers as Record<string, string>);
        return new Response(vector, { status: 200 });
      },
    });
    await provider.measure(
      metric("https://aps-workspaces.us-east-1.amazonaws.com.evil.example/workspaces/ws", {
        authentication: { sigv4: { region: "us-east-1" } },
      }),
      { now },
    );
    expect(signed).toBe(false);
    expect(seen[0]?.authorization).toBeUndefined();
  });

  it("a signer that cannot be built is an Error measurement", async () => {
    const provider = new PrometheusMetricProvider({
      signerFor: () => {
        throw new Error("no region");
      },
    });
    const r = await provider.measure(
      metric("https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws", {
        authentication: { sigv4: {} },
      }),
      { now },
    );
    expect(r).toEqual({ ok: false, message: "sigv4: no region" });
  });

  it("an unreachable server is an Error measurement", async () => {
    const address = DEAD_URL;
    const r = await new PrometheusMetricProvider().measure(metric(address), { now });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(new RegExp(`^Post "${address}/api/v1/query": connect ECONNREFUSED`));
  });

  it("an address that is not a URL is an Error measurement with Argo's message", async () => {
    const r = await new PrometheusMetricProvider().measure(metric("prometheus:9090"), { now });
    expect(r).toEqual({ ok: false, message: "prometheus address is not is url format" });
  });
});

describe("interpret (Prometheus' Go client rules)", () => {
  it.each([
    [
      400,
      '{"status":"error","errorType":"bad_data","error":"1:5: parse error"}',
      "bad_data: 1:5: parse error",
    ],
    [
      422,
      '{"status":"error","errorType":"execution","error":"too many samples"}',
      "execution: too many samples",
    ],
    [
      503,
      '{"status":"error","errorType":"unavailable","error":"shutting down"}',
      "unavailable: shutting down",
    ],
    [500, "boom", "server_error: server error: 500: boom"],
    [502, "", "server_error: server error: 502"],
    [401, "denied", "client_error: client error: 401: denied"],
    [200, "<html>", "bad_response: Unexpected token '<', \"<html>\" is not valid JSON"],
    [
      200,
      '{"status":"success","data":{"resultType":"string","result":[1,"x"]}}',
      "Prometheus metric type not supported",
    ],
    [400, '{"status":"success","data":{}}', "bad_response: inconsistent body for response code"],
  ])("%i %s → %s", (status, body, message) => {
    expect(interpret(status, body)).toEqual({ ok: false, message });
  });

  it("a matrix is flattened; warnings become metadata", () => {
    const r = interpret(
      200,
      JSON.stringify({
        status: "success",
        warnings: ["partial"],
        data: {
          resultType: "matrix",
          result: [
            {
              metric: {},
              values: [
                [1, "1"],
                [2, "2"],
              ],
            },
            { metric: {}, values: [[1, "-Inf"]] },
          ],
        },
      }),
    );
    expect(r).toEqual({
      ok: true,
      result: [1, 2, Number.NEGATIVE_INFINITY],
      resultType: "float64s",
      value: "[1,2,-Inf]",
      metadata: { warnings: '"partial"' },
    });
  });
});
