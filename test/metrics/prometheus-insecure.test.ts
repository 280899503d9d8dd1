import https from "node:https";
import type { AddressInfo } from "node:net";
import { selfSignedCertificate } from "@sfn-rollouts/test-support/tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PrometheusMetricProvider } from "../../functions/metrics/prometheus.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

/**
 * `insecure: true` as Argo's Prometheus provider has it (metricproviders/prometheus/prometheus.go,
 * `newHTTPTransport(insecureSkipVerify)`): an https Prometheus whose certificate is self-signed (one
 * openssl makes for 127.0.0.1 when the test starts) is read only when the metric says `insecure`;
 * without it the certificate is verified and the measurement is an Error naming why.
 */

const tls = selfSignedCertificate("local-prometheus");
let server: https.Server;
let url = "";
const seen: { method?: string; path?: string; body: string; orgId?: string }[] = [];

beforeAll(async () => {
  server = https.createServer(tls, (req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      seen.push({
        method: req.method,
        path: req.url,
        body,
        orgId: req.headers["x-scope-orgid"] as string | undefined,
      });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          status: "success",
          data: { resultType: "vector", result: [{ metric: {}, value: [1700000000, "0.97"] }] },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function metric(extra: Record<string, unknown>): Metric {
  return MetricSchema.parse({
    name: "m",
    provider: {
      prometheus: {
        address: url,
        query: "sum(up)",
        headers: [{ key: "X-Scope-OrgID", value: "team-a" }],
        ...extra,
      },
    },
  });
}
const now = new Date();

describe("Prometheus insecure", () => {
  it("verifies the certificate by default: a self-signed one is an Error measurement", async () => {
    const r = await new PrometheusMetricProvider().measure(metric({}), { now });
    expect(r.ok).toBe(false);
    expect(r.ok ? "" : r.message).toMatch(
      /^Post "https:\/\/127\.0\.0\.1:\d+\/api\/v1\/query": self[- ]signed certificate/,
    );
  });

  it("reads the same server with insecure: true, the query form-encoded and the headers sent", async () => {
    const before = seen.length;
    const r = await new PrometheusMetricProvider().measure(metric({ insecure: true }), { now });
    expect(r).toMatchObject({ ok: true, result: [0.97], value: "[0.97]" });
    const req = seen.at(-1);
    expect(seen.length).toBe(before + 1);
    expect(req?.method).toBe("POST");
    expect(req?.path).toBe("/api/v1/query");
    expect(new URLSearchParams(req?.body).get("query")).toBe("sum(up)");
    expect(req?.orgId).toBe("team-a");
  });
});
