import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { startServer } from "@sfn-rollouts/test-support/http-server";
import { decideThreePushes } from "@sfn-rollouts/test-support/provider-scenario";
import { SECRETS_CREDENTIALS, startSecretsManager } from "@sfn-rollouts/test-support/secrets-manager";
import { selfSignedCertificate } from "@sfn-rollouts/test-support/tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultProviders, SecretsManagerSource } from "../../functions/metrics/index.ts";
import { insecureFetch } from "../../functions/metrics/insecure-fetch.ts";

/**
 * Argo's datadog, newRelic, graphite, influxdb and wavefront providers deciding a rollout: the
 * compiled workflow in the embedded runtime, the shipped handlers, the providers as
 * `defaultProviders` composes them, their keys read from a local Secrets Manager, and local servers
 * speaking Datadog's v2 scalar query API, New Relic's NerdGraph, Graphite's render API, InfluxDB's
 * v2 query API and Wavefront's chart API (over https, as go-wavefront always reads it: the
 * providers are given the fetch that does not verify the test's certificate). Each answers a version's success rate from the version named in the query
 * (`{{args.version}}`, the pushed tag): v2 serves 99.5%, v3 90%.
 */

const DATADOG_SECRET = "arn:aws:secretsmanager:local:123456789012:secret:datadog-AbCdEf";
const NEW_RELIC_SECRET = "arn:aws:secretsmanager:local:123456789012:secret:newrelic-GhIjKl";
const INFLUXDB_SECRET = "arn:aws:secretsmanager:local:123456789012:secret:influxdb-MnOpQr";
const WAVEFRONT_SECRET = "arn:aws:secretsmanager:local:123456789012:secret:wavefront-StUvWx";
const RATES: Record<string, number> = { v2: 0.995, v3: 0.9 };

const rateOf = (text: string) =>
  RATES[
    /version:(v\d+)|version = '(v\d+)'|app\.(v\d+)\.|"version"\] == "(v\d+)"/
      .exec(text)
      ?.slice(1)
      .find(Boolean) ?? ""
  ];

let datadog: Awaited<ReturnType<typeof startServer>>;
let nerdGraph: Awaited<ReturnType<typeof startServer>>;
let graphite: Awaited<ReturnType<typeof startServer>>;
let influx: Awaited<ReturnType<typeof startServer>>;
let wavefront: Server;
let wavefrontAddress: string;
let secrets: Awaited<ReturnType<typeof startSecretsManager>>;

beforeAll(async () => {
  datadog = await startServer((req, res) => {
    if (req.headers["dd-api-key"] !== "dd-api" || req.headers["dd-application-key"] !== "dd-app") {
      res.writeHead(403, { "content-type": "application/json" });
      res.end(`{"errors":["Forbidden"]}`);
      return;
    }
    const queries = JSON.parse(req.body).data.attributes.queries as Array<{ query: string }>;
    const rate = rateOf(queries[0]?.query ?? "");
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        data: {
          attributes: { columns: [{ name: "q", type: "number", values: rate === undefined ? [] : [rate] }] },
        },
      }),
    );
  });
  nerdGraph = await startServer((req, res) => {
    const { variables } = JSON.parse(req.body) as { variables: { query: string; accountId: number } };
    const rate = rateOf(variables.query);
    const ok = req.headers["api-key"] === "NRAK-LOCAL" && variables.accountId === 1234567;
    res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
    res.end(
      JSON.stringify(
        ok
          ? {
              data: {
                actor: {
                  account: { nrql: { results: rate === undefined ? [] : [{ successRate: rate * 100 }] } },
                },
              },
            }
          : { errors: [{ message: "Invalid API key", extensions: { error_code: "BAD_API_KEY" } }] },
      ),
    );
  });
  graphite = await startServer((req, res) => {
    const target = new URL(req.url, "http://x").searchParams.get("target") ?? "";
    const rate = rateOf(target);
    res.writeHead(200, { "content-type": "application/json" });
    // Graphite's latest point is often still null: the condition reads the last one with data.
    res.end(
      JSON.stringify(
        rate === undefined
          ? []
          : [
              {
                target,
                datapoints: [
                  [rate, 60],
                  [null, 120],
                ],
              },
            ],
      ),
    );
  });
  influx = await startServer((req, res) => {
    if (req.headers.authorization !== "Token influx-token" || req.url !== "/api/v2/query?org=shop") {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(`{"code":"unauthorized","message":"unauthorized access"}`);
      return;
    }
    const rate = rateOf((JSON.parse(req.body) as { query: string }).query);
    res.writeHead(200, { "content-type": "text/csv; charset=utf-8" });
    res.end(
      `#datatype,string,long,double\n#group,false,false,false\n#default,_result,,\n,result,table,_value\n${
        rate === undefined ? "" : `,,0,${rate}\n`
      }`,
    );
  });
  wavefront = createServer(selfSignedCertificate("local-wavefront"), (req, res) => {
    const url = new URL(req.url ?? "/", "https://x");
    const rate = rateOf(url.searchParams.get("q") ?? "");
    const ok = req.headers.authorization === "Bearer wf-token" && url.pathname === "/api/v2/chart/api";
    res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
    // One series whose point is the query's instant (`s`, in milliseconds; points are in seconds).
    const at = Number(url.searchParams.get("s")) / 1000;
    res.end(
      JSON.stringify(
        ok
          ? {
              query: url.searchParams.get("q"),
              timeseries: rate === undefined ? [] : [{ label: "x", data: [[at, rate]] }],
            }
          : { message: "unauthorized" },
      ),
    );
  });
  await new Promise<void>((resolve) => wavefront.listen(0, "127.0.0.1", resolve));
  wavefrontAddress = `127.0.0.1:${(wavefront.address() as AddressInfo).port}`;
  secrets = await startSecretsManager({
    [WAVEFRONT_SECRET]: JSON.stringify({ [wavefrontAddress]: "wf-token" }),
    [INFLUXDB_SECRET]: JSON.stringify({ address: influx.url, authToken: "influx-token", org: "shop" }),
    [DATADOG_SECRET]: JSON.stringify({ "api-key": "dd-api", "app-key": "dd-app", address: datadog.url }),
    [NEW_RELIC_SECRET]: JSON.stringify({
      "personal-api-key": "NRAK-LOCAL",
      "account-id": "1234567",
      "base-url-nerdgraph": `${nerdGraph.url}/graphql`,
    }),
  });
});
afterAll(async () => {
  await datadog?.close();
  await nerdGraph?.close();
  await graphite?.close();
  await influx?.close();
  await new Promise<void>((resolve) => (wavefront ? wavefront.close(() => resolve()) : resolve()));
  await secrets?.close();
});

const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: success-rate}
spec:
  args: [{name: version}]
  metrics:
    - name: datadog-success
      interval: 1m
      count: 2
      successCondition: default(result, 0) >= 0.99
      provider:
        datadog:
          apiVersion: v2
          interval: 5m
          queries:
            ok: sum:trace.http.request.hits{version:{{args.version}},http.status_class:2xx}.as_count()
            all: sum:trace.http.request.hits{version:{{args.version}}}.as_count()
          formula: ok / all
          aggregator: sum
    - name: newrelic-success
      interval: 1m
      count: 2
      successCondition: result.successRate >= 99
      provider:
        newRelic:
          query: FROM Transaction SELECT percentage(count(*), WHERE httpResponseCode < 500) AS successRate WHERE tags.version = '{{args.version}}'
    - name: graphite-success
      interval: 1m
      count: 2
      successCondition: result[len(result)-1] >= 0.99
      provider:
        graphite:
          address: GRAPHITE_URL
          query: target=app.{{args.version}}.success_rate&from=-5min
    - name: influxdb-success
      interval: 1m
      count: 2
      successCondition: result[0] >= 0.99
      provider:
        influxdb:
          query: |
            from(bucket: "shop") |> range(start: -5m) |> filter(fn: (r) => r["version"] == "{{args.version}}") |> last()
    - name: wavefront-success
      interval: 1m
      count: 2
      successCondition: result >= 0.99
      provider:
        wavefront:
          address: WAVEFRONT_ADDRESS
          query: ts(app.{{args.version}}.success_rate)
`;

describe("the datadog, newRelic, graphite, influxdb and wavefront providers decide a rollout on the embedded runtime", () => {
  it("promotes v2 (99.5%) and aborts v3 (90%) on every provider's readings", async () => {
    const { states, message, runs } = await decideThreePushes({
      templateName: "success-rate",
      template: TEMPLATE.replace("GRAPHITE_URL", graphite.url).replace("WAVEFRONT_ADDRESS", wavefrontAddress),
      providers: defaultProviders({
        fetch: (input, init) =>
          input.startsWith("https:") ? insecureFetch(input, init) : fetch(input, init),
        metricSecrets: {
          wavefront: WAVEFRONT_SECRET,
          datadog: DATADOG_SECRET,
          newRelic: NEW_RELIC_SECRET,
          influxdb: INFLUXDB_SECRET,
          source: new SecretsManagerSource({ endpoint: secrets.url, credentials: SECRETS_CREDENTIALS }),
        },
      }),
    });
    expect(states).toEqual(["Healthy", "Healthy", "Aborted"]);
    expect(message).toMatch(
      /Metric "(datadog|newrelic|graphite|influxdb|wavefront)-success" assessed Failed/,
    );
    expect(runs.map((r) => r.phase)).toEqual(["Successful", "Failed"]);
    const [good, failed] = runs;
    const values = (run: typeof good, name: string) =>
      run?.metricResults.find((m) => m.name === name)?.measurements.map((m) => `${m.phase} ${m.value}`);
    expect(values(good, "datadog-success")).toEqual(["Successful 0.995", "Successful 0.995"]);
    expect(values(good, "newrelic-success")).toEqual([
      'Successful {"successRate":99.5}',
      'Successful {"successRate":99.5}',
    ]);
    expect(values(failed, "datadog-success")).toEqual(["Failed 0.9"]);
    expect(values(failed, "newrelic-success")).toEqual(['Failed {"successRate":90}']);
    expect(values(good, "graphite-success")).toEqual(["Successful [0.995000]", "Successful [0.995000]"]);
    expect(values(failed, "graphite-success")).toEqual(["Failed [0.900000]"]);
    expect(values(good, "influxdb-success")).toEqual(["Successful [0.995]", "Successful [0.995]"]);
    expect(values(failed, "influxdb-success")).toEqual(["Failed [0.9]"]);
    // %.2f of 0.995, which is 0.99499999999999999555… as a float64: Go prints 0.99.
    expect(values(good, "wavefront-success")).toEqual(["Successful 0.99", "Successful 0.99"]);
    expect(values(failed, "wavefront-success")).toEqual(["Failed 0.90"]);
    // The keys were read from Secrets Manager once per secret for the whole process.
    expect(secrets.requests.map((r) => JSON.parse(r.body).SecretId).sort()).toEqual([
      DATADOG_SECRET,
      INFLUXDB_SECRET,
      NEW_RELIC_SECRET,
      WAVEFRONT_SECRET,
    ]);
  });
});
