import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { loadTemplateText, templateProblems } from "@sfn-rollouts/test-support/analysis-template";
import { SECRETS_CREDENTIALS, startSecretsManager } from "@sfn-rollouts/test-support/secrets-manager";
import { selfSignedCertificate } from "@sfn-rollouts/test-support/tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { SecretsManagerSource } from "../../functions/metrics/index.ts";
import { insecureFetch } from "../../functions/metrics/insecure-fetch.ts";
import { closestPoint, WavefrontMetricProvider } from "../../functions/metrics/wavefront.ts";

/**
 * The Wavefront provider against a local Wavefront chart API (`GET /api/v2/chart/api`, over https
 * as go-wavefront always reads it, with a certificate openssl makes for the test; the provider is
 * given the fetch that does not verify it). The cases, and the values, phases, messages and
 * metadata expected, are those of Argo Rollouts' `metricproviders/wavefront/wavefront_test.go`
 * (TestRunSuccessfully, TestRunWithQueryError, TestRunWithEvaluationError,
 * TestProcessMultipleTimeseriesResponse, TestNewWavefrontAPI, and TestFindDataPointValue's three).
 */

const SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:wavefront-api-tokens-AbCdEf";
const NOW = new Date(Date.UTC(2026, 10, 30, 12));
const NOW_S = NOW.getTime() / 1000;

interface Seen {
  url: string;
  headers: Record<string, string | string[] | undefined>;
}
let reply: (url: URL) => { status: number; body: string } = () => ({ status: 200, body: "{}" });
const seen: Seen[] = [];
let server: Server;
let address: string;
let secrets: Awaited<ReturnType<typeof startSecretsManager>>;
let tokens: Record<string, string> = {};

beforeAll(async () => {
  server = createServer(selfSignedCertificate("local-wavefront"), (req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    const r = reply(new URL(req.url ?? "/", "https://x"));
    res.writeHead(r.status, { "content-type": "application/json" });
    res.end(r.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  secrets = await startSecretsManager({
    get [SECRET]() {
      return JSON.stringify(tokens);
    },
  } as Record<string, string>);
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await secrets?.close();
});

const provider = () =>
  new WavefrontMetricProvider({
    fetch: insecureFetch,
    secrets: new SecretsManagerSource({ endpoint: secrets.url, credentials: SECRETS_CREDENTIALS }),
    secretId: SECRET,
  });

const series = (...list: number[][][]) =>
  JSON.stringify({
    query: "test",
    name: "test",
    timeseries: list.map((data) => ({ label: "x", host: "h", data })),
  });

function template(conditions: string, wavefront: string): string {
  const indent = (text: string, n: number) =>
    text
      .split("\n")
      .map((l) => `${" ".repeat(n)}${l}`)
      .join("\n");
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: wf}
spec:
  metrics:
    - name: foo
${indent(conditions, 6)}
      provider:
        wavefront:
${indent(wavefront, 10)}
`;
}

async function measure(conditions: string, query = "test") {
  tokens = { [address]: "123456789" };
  const spec = await loadTemplateText(
    template(conditions, `address: "${address}"\nquery: ${JSON.stringify(query)}`),
  );
  const run = await tick(createRun(spec, NOW), NOW, provider());
  return run.metricResults[0]?.measurements[0];
}

describe("a measurement (wavefront_test.go)", () => {
  it("one series is a number printed %.2f; the query is sent at the measurement's instant (TestRunSuccessfully)", async () => {
    reply = () => ({ status: 200, body: series([[NOW_S - 2, 10]]) });
    const before = seen.length;
    const m = await measure(`successCondition: result == 10\nfailureCondition: result != 10`, "ts(requests)");
    expect(m).toMatchObject({ phase: "Successful", value: "10.00" });
    expect(m?.metadata).toEqual({ timestamps: String(NOW_S - 2), drift: "-2" });
    const sent = seen[before] as Seen;
    const ms = String(NOW_S * 1000);
    expect(sent.url).toBe(
      `/api/v2/chart/api?autoEvents=false&e=${ms}&g=s&i=true&includeObsoleteMetrics=false&listmode=false&p=1&q=ts%28requests%29&s=${ms}&strict=false`,
    );
    expect(sent.headers.authorization).toBe("Bearer 123456789");
    expect(sent.headers.accept).toBe("application/json");
  });

  it("a query error is the measurement's Error, with the server's status and body (TestRunWithQueryError)", async () => {
    reply = () => ({ status: 400, body: "bad big bug :(" });
    expect(await measure(`successCondition: result == 10\nfailureCondition: result != 10`)).toMatchObject({
      phase: "Error",
      message: "server returned 400 Bad Request\nbad big bug :(\n",
    });
  });

  it("no series is an Error, Wavefront's warnings kept (TestRunWithEvaluationError)", async () => {
    reply = () => ({ status: 200, body: JSON.stringify({ timeseries: [], warnings: "No query provided" }) });
    const m = await measure(`successCondition: result == 10\nfailureCondition: result != 10`);
    expect(m).toMatchObject({ phase: "Error", message: "No TimeSeries found in response from Wavefront" });
    expect(m?.metadata).toEqual({ warnings: "No query provided" });
  });

  it("several series are a list, each its closest point (TestProcessMultipleTimeseriesResponse)", async () => {
    reply = () => ({ status: 200, body: series([[NOW_S, 10]], [[NOW_S, 11]]) });
    const m = await measure(`successCondition: 10 in result\nfailureCondition: len(result) != 2`);
    expect(m).toMatchObject({ phase: "Successful", value: "[10.00,11.00]" });
    expect(m?.metadata).toEqual({ timestamps: `[${NOW_S},${NOW_S}]`, drift: "[0,0]" });
  });

  it("%.2f rounds as Go does, on the exact value, and NaN-free answers compare as numbers", async () => {
    reply = () => ({ status: 200, body: series([[NOW_S, 0.125]]) });
    expect(await measure("successCondition: result < 0.2")).toMatchObject({
      phase: "Successful",
      value: "0.12",
    });
  });

  it("a series without points reads as 0, as in Argo (Go's zero value), its drift Go's conversion of infinity", async () => {
    reply = () => ({ status: 200, body: series([]) });
    const m = await measure("successCondition: result > 0");
    expect(m).toMatchObject({ phase: "Failed", value: "0.00" });
    expect(m?.metadata).toEqual({ timestamps: "0", drift: "-9223372036854775808" });
  });
});

describe("the API token (TestNewWavefrontAPI)", () => {
  const metric = (addr: string) =>
    ({ name: "foo", provider: { wavefront: { address: addr, query: "q" } } }) as never;

  it("an address the secret has no token for is `API token not found`; the one it has is read", async () => {
    tokens = { "example.wavefront.com": "123456789" };
    expect(await provider().measure(metric("invalid url"), { now: NOW })).toEqual({
      ok: false,
      message: "API token not found",
    });
    tokens = { "example.wavefront.com": "123456789", [address]: "987654321" };
    reply = () => ({ status: 200, body: series([[NOW_S, 1]]) });
    const before = seen.length;
    expect(await provider().measure(metric(address), { now: NOW })).toMatchObject({ ok: true, result: 1 });
    expect(seen[before]?.headers.authorization).toBe("Bearer 987654321");
  });

  it("no secret at all says which one the controller needs", async () => {
    expect(await new WavefrontMetricProvider().measure(metric(address), { now: NOW })).toMatchObject({
      ok: false,
      message: expect.stringContaining("API token not found: the controller has no Wavefront secret"),
    });
  });
});

describe("the closest point (TestFindDataPointValue)", () => {
  const points = [
    [0, 1],
    [5, 2],
  ];
  it.each([
    ["Choose earlier but closer point", 1, { value: 1, epoch: 0n, drift: -1n }],
    ["Choose later but closer point", 4, { value: 2, epoch: 5n, drift: 1n }],
    ["Choose exact point", 0, { value: 1, epoch: 0n, drift: 0n }],
  ])("%s", (_name, at, expected) => {
    expect(closestPoint(points, at)).toEqual(expected);
  });
  it("the earlier of two equally close points", () => {
    expect(
      closestPoint(
        [
          [0, 1],
          [4, 2],
        ],
        2,
      ),
    ).toEqual({ value: 1, epoch: 0n, drift: -2n });
  });
});

describe("the template", () => {
  it("Argo's docs page template loads unchanged", async () => {
    // docs/analysis/wavefront.md
    const spec = await loadTemplateText(
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
  - name: service-name
  metrics:
  - name: success-rate
    interval: 5m
    successCondition: result >= 0.95
    failureLimit: 3
    provider:
      wavefront:
        address: example.wavefront.com
        query: |
          sum(rate(
            5m, ts("istio.requestcount.count", response_code!=500 and destination_service="{{args.service-name}}"
          ))) /
          sum(rate(
            5m, ts("istio.requestcount.count", reporter=client and destination_service="{{args.service-name}}"
          )))
`,
      { "service-name": "checkout" },
    );
    const w = spec.templates[0]?.metrics[0]?.provider.wavefront;
    expect(w?.address).toBe("example.wavefront.com");
    expect(w?.query).toContain(`destination_service="checkout"`);
  });

  it.each([
    [`query: x`, "the Wavefront address is needed"],
    [
      `address: https://example.wavefront.com\nquery: x`,
      'the Wavefront address "https://example.wavefront.com" must be a host (example.wavefront.com), without a scheme',
    ],
  ])("a bad address is refused at its path: %s", async (wavefront, message) => {
    expect(await templateProblems(template("successCondition: result > 0", wavefront))).toEqual([
      expect.stringContaining(`spec.metrics[0].provider.wavefront.address: ${message}`),
    ]);
  });
});
