import { loadTemplateText, templateProblems } from "@sfn-rollouts/test-support/analysis-template";
import { DEAD_URL, type Recorded, startServer } from "@sfn-rollouts/test-support/http-server";
import { SECRETS_CREDENTIALS, startSecretsManager } from "@sfn-rollouts/test-support/secrets-manager";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { DatadogMetricProvider } from "../../functions/metrics/datadog.ts";
import { groupsMetadata, MAX_GROUPS_IN_METADATA } from "../../functions/metrics/datadog-response.ts";
import { defaultProviders, metricSecretsFrom, SecretsManagerSource } from "../../functions/metrics/index.ts";

/**
 * The Datadog provider against a local server speaking Datadog's query API
 * (`GET /api/v1/query`, `POST /api/v2/query/scalar`). The cases and their expected values,
 * phases and messages are those of Argo Rollouts' `metricproviders/datadog/datadogV1_test.go`
 * (TestRunSuite), `datadogV2_test.go` (TestRunSuiteV2) and `datadog_test.go`
 * (TestValidateIncomingProps, TestGroupsMetadata, TestParseResponseV2TruncatesHighCardinalityGroups,
 * TestRequestTimeout).
 */

const API_KEY = "0123456789abcdef0123456789abcdef";
const APP_KEY = "0123456789abcdef0123456789abcdef01234567";
/** Argo's tests' `unixNow`: 1599076435. */
const NOW = new Date(1599076435 * 1000);

let answer: { status: number; body: string; hang?: boolean } = { status: 200, body: "{}" };
let server: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  server = await startServer((_req, res) => {
    if (answer.hang) return; // never answers: the request timeout ends it
    res.writeHead(answer.status, { "content-type": "application/json" });
    res.end(answer.body);
  });
});
afterAll(() => server?.close());

const env = () => ({ DD_API_KEY: API_KEY, DD_APP_KEY: APP_KEY, DD_ADDRESS: server.url });

function template(provider: string, conditions: string): string {
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: dd}
spec:
  metrics:
    - name: foo
${conditions
  .split("\n")
  .map((l) => `      ${l}`)
  .join("\n")}
      provider:
        datadog:
${provider
  .split("\n")
  .map((l) => `          ${l}`)
  .join("\n")}
`;
}

/** One measurement of the template's metric through the analysis, against `body`. */
async function measure(provider: string, conditions: string, status: number, body: string) {
  answer = { status, body };
  const before = server.requests.length;
  const spec = await loadTemplateText(template(provider, conditions));
  const run = await tick(createRun(spec, NOW), NOW, defaultProvidersWithEnv());
  const m = run.metricResults[0]?.measurements[0];
  return { ...m, request: server.requests[before] as Recorded };
}

function defaultProvidersWithEnv() {
  return new DatadogMetricProvider({ env: env() });
}

const V1_OK = `{"status":"ok","series":[{"pointlist":[[1598867910000,0.0020008318672513122],[1598867925000,0.0003332881882246533]]}]}`;
const V1_BAD = `{"status":"ok","series":[{"pointlist":[[1598867910000,0.0020008318672513122],[1598867925000,0.006121378742186943]]}]}`;
const BOTH = "successCondition: result < 0.001\nfailureCondition: result >= 0.001";
const QUERY = "query: avg:kubernetes.cpu.user.total{*}";

describe("v1 (datadogV1_test.go TestRunSuite)", () => {
  it("the last point of the first series is the result; the window is interval seconds back from now", async () => {
    const m = await measure(`${QUERY}\ninterval: 10m`, BOTH, 200, V1_OK);
    expect(m).toMatchObject({ phase: "Successful", value: "0.0003332881882246533" });
    const url = new URL(m.request.url, server.url);
    expect(m.request.method).toBe("GET");
    expect(url.pathname).toBe("/api/v1/query");
    expect(url.searchParams.get("query")).toBe("avg:kubernetes.cpu.user.total{*}");
    expect(url.searchParams.get("from")).toBe(String(1599076435 - 600));
    expect(url.searchParams.get("to")).toBe("1599076435");
    expect(m.request.headers["content-type"]).toBe("application/json");
    expect(m.request.headers["dd-api-key"]).toBe(API_KEY);
    expect(m.request.headers["dd-application-key"]).toBe(APP_KEY);
  });

  it("apiVersion defaults to v1 and interval to 5m; a value past the threshold fails", async () => {
    const m = await measure(QUERY, BOTH, 200, V1_BAD);
    expect(m).toMatchObject({ phase: "Failed", value: "0.006121378742186943" });
    expect(new URL(m.request.url, server.url).searchParams.get("from")).toBe(String(1599076435 - 300));
  });

  it("a 400 and a 401 are Errors with the body", async () => {
    const bad = await measure(QUERY, BOTH, 400, `{"status":"error","error":"error messsage"}`);
    expect(bad).toMatchObject({
      phase: "Error",
      message: `received non 2xx response code: 400 {"status":"error","error":"error messsage"}`,
    });
    const auth = await measure(QUERY, BOTH, 401, `{"errors": ["No authenticated user."]}`);
    expect(auth).toMatchObject({
      phase: "Error",
      message: `received authentication error response code: 401 {"errors": ["No authenticated user."]}`,
    });
  });

  it("no data: nil for the condition, printed [] (default() passes or fails on its fallback)", async () => {
    const empty = `{"status":"ok","series":[]}`;
    expect(await measure(QUERY, "successCondition: default(result, 0) < 0.05", 200, V1_OK)).toMatchObject({
      phase: "Successful",
    });
    expect(await measure(QUERY, "successCondition: result < 0.05", 200, empty)).toMatchObject({
      phase: "Error",
      message: expect.stringContaining(
        "metric result is nil or empty: no data returned from the metric provider",
      ),
    });
    expect(await measure(QUERY, "successCondition: default(result, 0) < 0.05", 200, empty)).toMatchObject({
      phase: "Successful",
      value: "[]",
    });
    expect(await measure(QUERY, "successCondition: default(result, 1) < 0.05", 200, empty)).toMatchObject({
      phase: "Failed",
      value: "[]",
    });
    expect(await measure(QUERY, "successCondition: default(result, 1) < 0.05", 200, V1_BAD)).toMatchObject({
      phase: "Successful",
      value: "0.006121378742186943",
    });
  });

  it("a series that is not a list is Go's decoding error", async () => {
    expect(await measure(QUERY, BOTH, 200, `{"status":"ok","series":"invalid"}`)).toMatchObject({
      phase: "Error",
      message:
        'Could not parse JSON body: json: cannot unmarshal string into Go struct field datadogResponseV1.Series of type []struct { Pointlist [][]float64 "json:\\"pointlist\\"" }',
    });
  });

  it("a null value decodes as Go's zero value, 0 (as in Argo: documented)", async () => {
    expect(
      await measure(
        QUERY,
        "successCondition: result < 0.01",
        200,
        `{"series":[{"pointlist":[[1,0.5],[2,null]]}]}`,
      ),
    ).toMatchObject({ phase: "Successful", value: "0" });
  });

  it("a point without two values is an Error", async () => {
    expect(await measure(QUERY, BOTH, 200, `{"series":[{"pointlist":[[1598867925000]]}]}`)).toMatchObject({
      phase: "Error",
      message: "Datapoint does not have 2 values",
    });
  });
});

const V2 = `${QUERY}\napiVersion: v2`;
const columns = (values: string) => `{"data": {"attributes": {"columns": [ {"values": ${values}}]}}}`;

describe("v2 (datadogV2_test.go TestRunSuiteV2)", () => {
  it("a scalar query is POSTed as a scalar_request with the last aggregator, in milliseconds", async () => {
    const m = await measure(`${V2}\ninterval: 10m`, BOTH, 200, columns("[0.0006332881882246533]"));
    expect(m).toMatchObject({ phase: "Successful", value: "0.0006332881882246533" });
    expect(m.request.method).toBe("POST");
    expect(m.request.url).toBe("/api/v2/query/scalar");
    expect(JSON.parse(m.request.body)).toEqual({
      data: {
        attributes: {
          from: (1599076435 - 600) * 1000,
          to: 1599076435 * 1000,
          queries: [
            {
              aggregator: "last",
              data_source: "metrics",
              name: "query",
              query: "avg:kubernetes.cpu.user.total{*}",
            },
          ],
          formulas: [],
        },
        type: "scalar_request",
      },
    });
    expect(m.request.headers["dd-api-key"]).toBe(API_KEY);
  });

  it("queries and a formula, and an aggregator", async () => {
    const m = await measure(
      `apiVersion: v2\nqueries: {a: "avg:error_requests{*}", b: "avg:total_requests{*}"}\nformula: a/b\naggregator: sum`,
      "successCondition: default(result, 0) < 0.05",
      200,
      columns("[0.0006444881882246533]"),
    );
    expect(m).toMatchObject({ phase: "Successful", value: "0.0006444881882246533" });
    const attributes = JSON.parse(m.request.body).data.attributes;
    expect(attributes.queries).toEqual([
      { aggregator: "sum", data_source: "metrics", name: "a", query: "avg:error_requests{*}" },
      { aggregator: "sum", data_source: "metrics", name: "b", query: "avg:total_requests{*}" },
    ]);
    expect(attributes.formulas).toEqual([{ formula: "a/b" }]);
  });

  it("fails past the threshold; no data is nil, printed []", async () => {
    expect(await measure(V2, BOTH, 200, columns("[0.006121374442186943]"))).toMatchObject({
      phase: "Failed",
      value: "0.006121374442186943",
    });
    expect(await measure(V2, "successCondition: result < 0.05", 200, columns("[]"))).toMatchObject({
      phase: "Error",
      message: expect.stringContaining(
        "metric result is nil or empty: no data returned from the metric provider",
      ),
    });
    expect(
      await measure(V2, "successCondition: default(result, 1) < 0.05", 200, columns("[]")),
    ).toMatchObject({
      phase: "Failed",
      value: "[]",
    });
  });

  it("errors: a status, Go's decoding error, the query's own errors, a value that is not a number", async () => {
    expect(await measure(V2, BOTH, 401, `{"errors": ["No authenticated user."]}`)).toMatchObject({
      message: `received authentication error response code: 401 {"errors": ["No authenticated user."]}`,
    });
    expect(
      await measure(V2, BOTH, 200, `{"data": {"attributes": {"columns": [{"values": "invalid"}]}}}`),
    ).toMatchObject({
      phase: "Error",
      message:
        "Could not parse JSON body: json: cannot unmarshal string into Go struct field datadogV2Column.Data.Attributes.Columns.values of type []json.RawMessage",
    });
    expect(
      await measure(V2, BOTH, 200, `{"data": {"errors": "query exceeded the maximum allowed time range"}}`),
    ).toMatchObject({
      phase: "Error",
      message: "There were errors in your query: query exceeded the maximum allowed time range",
    });
    const oops = `{"data": {"attributes": {"columns": [{"name": "query1", "type": "number", "values": [1, "oops"]}]}}}`;
    expect(await measure(V2, "successCondition: max(result) < 5", 200, oops)).toMatchObject({
      phase: "Error",
      message: expect.stringContaining(`could not parse numeric value "\\"oops\\"" in column "query1"`),
    });
  });

  it("a grouped query is a list (even of one group), with metadata.groups joined across tag columns", async () => {
    const grouped = (cols: string) => `{"data": {"attributes": {"columns": [${cols}]}}}`;
    const a = await measure(
      V2,
      "successCondition: max(result) < 0.05",
      200,
      grouped(`{"name": "resource_name", "type": "group", "values": [["GET /a"], ["GET /b"], ["GET /c"]]},
               {"name": "query1", "type": "number", "values": [0.01, 0.087, 0.04]}`),
    );
    expect(a).toMatchObject({ phase: "Failed", value: "[0.01,0.087,0.04]" });
    expect(a.metadata).toEqual({
      groups: `[{"name":"GET /a","value":0.01},{"name":"GET /b","value":0.087},{"name":"GET /c","value":0.04}]`,
    });
    const one = await measure(
      V2,
      "successCondition: max(result) < 0.05",
      200,
      grouped(`{"name": "resource_name", "type": "group", "values": [["GET /a"]]},
               {"name": "query1", "type": "number", "values": [0.087]}`),
    );
    expect(one).toMatchObject({ phase: "Failed", value: "[0.087]" });
    const tags = await measure(
      V2,
      `successCondition: "all(result, # < 0.05)"`,
      200,
      grouped(`{"name": "region", "type": "group", "values": [["us-east"], ["us-west"]]},
               {"name": "host", "type": "group", "values": [["host-a"], ["host-b"]]},
               {"name": "query1", "type": "number", "values": [null, 0.02]}`),
    );
    expect(tags).toMatchObject({ phase: "Successful", value: "[0.02]" });
    expect(tags.metadata).toEqual({ groups: `[{"name":"us-west,host-b","value":0.02}]` });
    const malformed = await measure(
      V2,
      "successCondition: max(result) < 0.05",
      200,
      grouped(`{"name": "resource_name", "type": "group", "values": [["a"], "not-an-array"]},
               {"name": "query1", "type": "number", "values": [0.01, 0.02]}`),
    );
    expect(malformed).toMatchObject({ phase: "Error", message: "could not parse group label at index 1" });
  });

  it("metadata.groups keeps the lowest and highest halves past 100 groups (TestGroupsMetadata)", () => {
    const n = MAX_GROUPS_IN_METADATA + 50;
    const groups = Array.from({ length: n }, (_, i) => ({ name: `g${i}`, value: i }));
    const { json, truncated } = groupsMetadata(groups);
    const kept = (JSON.parse(json) as Array<{ name: string }>).map((g) => g.name);
    expect(truncated).toBe(true);
    expect(kept).toHaveLength(MAX_GROUPS_IN_METADATA);
    expect(kept).toContain("g0");
    expect(kept).toContain(`g${n - 1}`);
    expect(kept).not.toContain(`g${n / 2}`);
    expect(groupsMetadata(groups.slice(0, MAX_GROUPS_IN_METADATA)).truncated).toBe(false);
  });
});

describe("the request timeout (datadog_test.go TestRequestTimeout)", () => {
  it("a server slower than requestTimeout is an Error naming Client.Timeout", async () => {
    answer = { status: 200, body: "", hang: true };
    const spec = await loadTemplateText(template(`${V2}\nrequestTimeout: 1s`, BOTH));
    const run = await tick(createRun(spec, NOW), NOW, defaultProvidersWithEnv());
    expect(run.metricResults[0]?.measurements[0]).toMatchObject({
      phase: "Error",
      message: expect.stringContaining("Client.Timeout"),
    });
  });
});

describe("the template's checks, when it is loaded (datadog_test.go TestValidateIncomingProps)", () => {
  const problems = (provider: string) => templateProblems(template(provider, "successCondition: result < 1"));
  it.each([
    ["apiVersion: v1", "Must have either a query or queries"],
    ["apiVersion: v1\nquery: foo\nqueries: {a: x}", "Cannot have both a query and queries"],
    [
      "apiVersion: v1\nqueries: {a: x}",
      "Query is empty. API Version v1 only supports using the query parameter in your Analysis Template.",
    ],
    ["apiVersion: v1\nquery: foo\nformula: foo / bar", "Formula are only valid when queries are set"],
    [
      "apiVersion: v1\nquery: foo\naggregator: sum",
      "Aggregator is not supported in v1. Please review the Analysis Template.",
    ],
    [
      "apiVersion: v2\nqueries: {a: x, b: y}",
      "When multiple queries are provided you must include a formula.",
    ],
    ["apiVersion: v2\nquery: foo\nrequestTimeout: not-a-duration", "Could not parse the request timeout"],
    ["apiVersion: v2\nquery: foo\nrequestTimeout: 0s", "Request timeout must be a positive duration"],
    ["apiVersion: v2\nquery: foo\nrequestTimeout: -5s", "Request timeout must be a positive duration"],
    ["query: foo\nsecretRef: {namespaced: true}", "secret name is required for namespaced credentials"],
    ["apiVersion: v3\nquery: foo", "apiVersion"],
  ])("%j is refused: %s", async (provider, message) => {
    const found = await problems(provider);
    expect(found.join("\n")).toContain(message);
  });

  it.each([
    "apiVersion: v2\nquery: foo",
    "apiVersion: v2\nqueries: {a: x, b: y}\nformula: a + b\naggregator: avg",
    "apiVersion: v2\nquery: foo\nrequestTimeout: 30s",
    "query: foo\nsecretRef: {name: mysecret, namespaced: true}",
  ])("%j loads", async (provider) => {
    expect(await problems(provider)).toEqual([]);
  });
});

describe("the keys", () => {
  const SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:datadog-AbCdEf";
  let secrets: Awaited<ReturnType<typeof startSecretsManager>>;
  beforeAll(async () => {
    secrets = await startSecretsManager({
      [SECRET]: JSON.stringify({ "api-key": API_KEY, "app-key": APP_KEY, address: "" }),
    });
  });
  afterAll(() => secrets?.close());

  const source = () =>
    new SecretsManagerSource({
      endpoint: secrets.url,
      credentials: SECRETS_CREDENTIALS,
      region: "eu-west-1",
    });

  it("come from the controller's Secrets Manager secret, read once (signed) and kept", async () => {
    const full = JSON.stringify({ "api-key": API_KEY, "app-key": APP_KEY, address: server.url });
    const local = await startSecretsManager({ [SECRET]: full });
    try {
      const provider = new DatadogMetricProvider({
        env: {},
        secrets: new SecretsManagerSource({ endpoint: local.url, credentials: SECRETS_CREDENTIALS }),
        secretId: SECRET,
      });
      answer = { status: 200, body: V1_OK };
      const spec = await loadTemplateText(template(QUERY, BOTH));
      const before = server.requests.length;
      let run = await tick(createRun(spec, NOW), NOW, provider);
      run = await tick(createRun(spec, NOW), NOW, provider);
      expect(run.metricResults[0]?.measurements[0]).toMatchObject({ phase: "Successful" });
      expect(server.requests.slice(before).map((r) => r.headers["dd-api-key"])).toEqual([API_KEY, API_KEY]);
      expect(local.requests).toHaveLength(1);
      expect(JSON.parse(local.requests[0]?.body ?? "{}")).toEqual({ SecretId: SECRET });
    } finally {
      await local.close();
    }
  });

  it("without a secret or the three variables, Argo's message says what to give", async () => {
    const r = await new DatadogMetricProvider({ env: { DD_API_KEY: API_KEY } }).measure(
      (await loadTemplateText(template(QUERY, BOTH))).templates[0]?.metrics[0] as never,
      { now: NOW },
    );
    expect(r).toMatchObject({
      ok: false,
      message: expect.stringContaining("failed to find the credentials for datadog metrics provider"),
    });
  });

  it("a secret that cannot be read, or lacks a key, is an Error naming the secret, never a value", async () => {
    const metric = (await loadTemplateText(template(QUERY, BOTH))).templates[0]?.metrics[0] as never;
    const missing = await new DatadogMetricProvider({ env: {}, secrets: source(), secretId: "nope" }).measure(
      metric,
      { now: NOW },
    );
    expect(missing).toMatchObject({
      ok: false,
      message: expect.stringContaining("ResourceNotFoundException"),
    });
    const partial = await startSecretsManager({ s: JSON.stringify({ "api-key": API_KEY }) });
    try {
      const r = await new DatadogMetricProvider({
        env: {},
        secrets: new SecretsManagerSource({
          endpoint: partial.url,
          credentials: SECRETS_CREDENTIALS,
          region: "eu-west-1",
        }),
        secretId: "s",
      }).measure(metric, { now: NOW });
      expect(r).toEqual({
        ok: false,
        message:
          'failed to find the credentials for datadog metrics provider: secret s needs the keys "api-key" and "app-key"',
      });
      expect(JSON.stringify(r)).not.toContain(API_KEY);
    } finally {
      await partial.close();
    }
  });

  it("a SecretString that is not a JSON object of strings is an Error saying so", async () => {
    const metric = (await loadTemplateText(template(QUERY, BOTH))).templates[0]?.metrics[0] as never;
    const odd = await startSecretsManager({
      text: "api-key=x",
      list: "[1]",
      nested: `{"api-key": {"v": 1}}`,
    });
    try {
      const read = (secretId: string) =>
        new DatadogMetricProvider({
          env: {},
          secrets: new SecretsManagerSource({
            endpoint: odd.url,
            credentials: SECRETS_CREDENTIALS,
            region: "eu-west-1",
          }),
          secretId,
        }).measure(metric, { now: NOW });
      expect(await read("text")).toMatchObject({
        message: expect.stringContaining("secret text: its SecretString is not JSON"),
      });
      expect(await read("list")).toMatchObject({
        message: expect.stringContaining("secret list: its SecretString is not a JSON object"),
      });
      expect(await read("nested")).toMatchObject({
        message: expect.stringContaining('secret nested: key "api-key" is not a string'),
      });
    } finally {
      await odd.close();
    }
  });

  it("an address that is not a URL is Go's parse error; an unreachable one Go's client error", async () => {
    const metric = (await loadTemplateText(template(QUERY, BOTH))).templates[0]?.metrics[0] as never;
    const wrong = { DD_API_KEY: API_KEY, DD_APP_KEY: APP_KEY, DD_ADDRESS: "://wrong.schema" };
    expect(await new DatadogMetricProvider({ env: wrong }).measure(metric, { now: NOW })).toEqual({
      ok: false,
      message: 'parse "://wrong.schema": missing protocol scheme',
    });
    const dead = { DD_API_KEY: API_KEY, DD_APP_KEY: APP_KEY, DD_ADDRESS: DEAD_URL };
    expect(await new DatadogMetricProvider({ env: dead }).measure(metric, { now: NOW })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^Get "http:\/\/127\.0\.0\.1:2\/api\/v1\/query\?from=.*": /),
    });
  });

  it("the functions' environment names the secrets (ROLLOUTS_DATADOG_SECRET, …_NEWRELIC_SECRET, …_METRIC_SECRETS)", () => {
    expect(
      metricSecretsFrom({
        ROLLOUTS_DATADOG_SECRET: SECRET,
        ROLLOUTS_NEWRELIC_SECRET: "nr",
        ROLLOUTS_METRIC_SECRETS: JSON.stringify({ team: "t" }),
      }),
    ).toEqual({ datadog: SECRET, newRelic: "nr", named: { team: "t" } });
    expect(metricSecretsFrom({ ROLLOUTS_DATADOG_SECRET: "" })).toEqual({});
    expect(() => metricSecretsFrom({ ROLLOUTS_METRIC_SECRETS: "[1]" })).toThrow(
      /ROLLOUTS_METRIC_SECRETS must be a JSON object of secret ARNs by name/,
    );
  });

  it("a secretRef reads only the secret of that name, never the environment (Argo's findCredentials)", async () => {
    const team = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:team-datadog-XyZ123";
    const local = await startSecretsManager({
      [team]: JSON.stringify({ "api-key": "team-api", "app-key": "team-app", address: server.url }),
    });
    try {
      const provider = new DatadogMetricProvider({
        env: env(),
        secrets: new SecretsManagerSource({ endpoint: local.url, credentials: SECRETS_CREDENTIALS }),
        named: { "team-datadog": team },
      });
      answer = { status: 200, body: V1_OK };
      const named = (await loadTemplateText(template(`${QUERY}\nsecretRef: {name: team-datadog}`, BOTH)))
        .templates[0]?.metrics[0] as never;
      const before = server.requests.length;
      expect(await provider.measure(named, { now: NOW })).toMatchObject({ ok: true });
      expect(server.requests[before]?.headers["dd-api-key"]).toBe("team-api");
      const other = (await loadTemplateText(template(`${QUERY}\nsecretRef: {name: other}`, BOTH)))
        .templates[0]?.metrics[0] as never;
      expect(await provider.measure(other, { now: NOW })).toEqual({
        ok: false,
        message:
          'failed to find the credentials for datadog metrics provider: the controller has no secret named "other" (RolloutController\'s metricSecrets.named)',
      });
    } finally {
      await local.close();
    }
  });

  it("defaultProviders routes a datadog metric to it", async () => {
    const metric = (await loadTemplateText(template(QUERY, BOTH))).templates[0]?.metrics[0] as never;
    const r = await defaultProviders({ metricSecrets: { source: source() } }).measure(metric, { now: NOW });
    expect(r).toMatchObject({
      ok: false,
      message: expect.stringContaining("failed to find the credentials"),
    });
  });
});
