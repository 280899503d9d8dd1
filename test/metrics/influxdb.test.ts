import type { ServerResponse } from "node:http";
import { loadTemplateText } from "@sfn-rollouts/test-support/analysis-template";
import { type Recorded, startServer } from "@sfn-rollouts/test-support/http-server";
import { SECRETS_CREDENTIALS, startSecretsManager } from "@sfn-rollouts/test-support/secrets-manager";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { SecretsManagerSource } from "../../functions/metrics/index.ts";
import { DIALECT, InfluxdbMetricProvider } from "../../functions/metrics/influxdb.ts";
import { goDuration } from "../../functions/metrics/influxdb-csv.ts";

/**
 * The InfluxDB provider against a local InfluxDB v2 query API (`POST /api/v2/query?org=…`, a Flux
 * query in, annotated CSV out, as influxdb-client-go speaks it). The cases, and the values, phases
 * and messages expected, are those of Argo Rollouts' `metricproviders/influxdb/influxdb_test.go`
 * (TestRunSuccessfully, TestRunWithTimeseries, TestRunWithEmptyResult, TestRunWithEvaluationError,
 * and TestNewInfluxdbAPI's four cases: default settings, a key missing, a profile, a secret not
 * found).
 */

const SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:influxdb-AbCdEf";
const PROFILE = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:my-influx-token-secret-GhIjKl";
const NOW = new Date(Date.UTC(2026, 10, 30, 12));

let reply: (req: Recorded, res: ServerResponse) => void = () => {};
let influx: Awaited<ReturnType<typeof startServer>>;
let secrets: Awaited<ReturnType<typeof startSecretsManager>>;
let stored: Record<string, Record<string, string>> = {};

beforeAll(async () => {
  influx = await startServer((req, res) => reply(req, res));
  secrets = await startSecretsManager({
    get [SECRET]() {
      return JSON.stringify(stored[SECRET]);
    },
    get [PROFILE]() {
      return JSON.stringify(stored[PROFILE]);
    },
  } as Record<string, string>);
});
afterAll(async () => {
  await influx?.close();
  await secrets?.close();
});

const account = () => ({ authToken: "ABCDEFG01234", org: "test-org", address: influx.url });

/** A fresh provider each time: a secret is kept five minutes once read. */
function provider(named: Record<string, string> = {}): InfluxdbMetricProvider {
  return new InfluxdbMetricProvider({
    secrets: new SecretsManagerSource({ endpoint: secrets.url, credentials: SECRETS_CREDENTIALS }),
    secretId: SECRET,
    named,
  });
}

const csv =
  (body: string, status = 200, type = "text/csv; charset=utf-8") =>
  (_req: Recorded, res: ServerResponse) => {
    res.writeHead(status, { "content-type": type });
    res.end(body);
  };

const HEAD = `#datatype,string,long,dateTime:RFC3339,dateTime:RFC3339,dateTime:RFC3339,double,string,string,string,string
#group,false,false,true,true,false,false,true,true,true,true
#default,_result,,,,,,,,,
,result,table,_start,_stop,_time,_value,_field,_measurement,a,b
`;
const row = (value: string, time = "2020-02-18T10:34:08.135814545Z") =>
  `,,0,2020-02-17T22:19:49.747562847Z,2020-02-18T22:19:49.747562847Z,${time},${value},f,test,1,adsfasdf\n`;

function template(conditions: string, provider = "query: test"): string {
  const indent = (text: string, n: number) =>
    text
      .split("\n")
      .map((l) => `${" ".repeat(n)}${l}`)
      .join("\n");
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: influx}
spec:
  metrics:
    - name: foo
${indent(conditions, 6)}
      provider:
        influxdb:
${indent(provider, 10)}
`;
}

async function measure(conditions: string, p = provider(), influxdb?: string) {
  stored[SECRET] ??= account();
  const spec = await loadTemplateText(template(conditions, influxdb));
  const run = await tick(createRun(spec, NOW), NOW, p);
  return run.metricResults[0]?.measurements[0];
}

describe("a measurement (influxdb_test.go)", () => {
  it("every record's _value is result; the Flux query goes to /api/v2/query with the org and the token (TestRunSuccessfully)", async () => {
    stored = { [SECRET]: account() };
    reply = csv(HEAD + row("1.0") + row("6.6", "2020-02-18T22:08:44.850214724Z"));
    const before = influx.requests.length;
    const m = await measure(`successCondition: result[0] == 1\nfailureCondition: result[0] != 1`);
    expect(m).toMatchObject({ phase: "Successful", value: "[1 6.6]" });
    const sent = influx.requests[before] as Recorded;
    expect(sent.method).toBe("POST");
    expect(sent.url).toBe("/api/v2/query?org=test-org");
    expect(sent.headers.authorization).toBe("Token ABCDEFG01234");
    expect(sent.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(sent.body)).toEqual({ query: "test", type: "flux", dialect: DIALECT });
    expect(DIALECT).toEqual({ annotations: ["datatype", "group", "default"], delimiter: ",", header: true });
  });

  it("a time series is a list, indexed in order (TestRunWithTimeseries)", async () => {
    reply = csv(HEAD + row("10") + row("20"));
    const m = await measure(`successCondition: result[0] == 10\nfailureCondition: result[1] <  20`);
    expect(m).toMatchObject({ phase: "Successful", value: "[10 20]" });
  });

  it("no record is an Error (TestRunWithEmptyResult)", async () => {
    reply = csv(HEAD);
    expect(
      await measure(`successCondition: result[0] == 10\nfailureCondition: result[0] != 10`),
    ).toMatchObject({ phase: "Error", message: "no results returned from flux query" });
  });

  it("an empty answer is an Error (TestRunWithEvaluationError)", async () => {
    reply = csv("");
    expect(await measure(`successCondition: result == 10\nfailureCondition: result != 10`)).toMatchObject({
      phase: "Error",
      message: "no results returned from flux query",
    });
  });

  it("several tables are read in turn; a long prints as an integer, a null _value as <nil>", async () => {
    const longs = `#datatype,string,long,long
#group,false,false,false
#default,_result,,
,result,table,_value
,,1,42
,,1,
`;
    reply = csv(`${HEAD}${row("0.5")}\n${longs}`);
    const m = await measure(`successCondition: result[0] == 0.5 && result[1] == 42 && result[2] == nil`);
    expect(m).toMatchObject({ phase: "Successful", value: "[0.5 42 <nil>]" });
  });

  it("a Flux error table ends the records, as Argo reads them: the records before it are the result", async () => {
    const error = `#datatype,string,string
#group,true,true
#default,,
,error,reference
,failed to execute query: bad bucket,897
`;
    reply = csv(`${HEAD}${row("0.25")}\n${error}`);
    expect(await measure("successCondition: result[0] < 1")).toMatchObject({
      phase: "Successful",
      value: "[0.25]",
    });
    reply = csv(error);
    expect(await measure("successCondition: result[0] < 1")).toMatchObject({
      phase: "Error",
      message: "no results returned from flux query",
    });
  });

  it("NaN is a double like any other: isNaN decides", async () => {
    reply = csv(HEAD + row("NaN"));
    expect(await measure("successCondition: isNaN(result[0])")).toMatchObject({
      phase: "Successful",
      value: "[NaN]",
    });
  });

  it("a time and a duration print as Go prints them; a quoted string keeps its comma", async () => {
    reply = csv(`#datatype,string,long,dateTime:RFC3339,duration,string
#group,false,false,false,false,false
#default,_result,,,,
,result,table,_value,d,s
,,0,2020-02-18T10:34:08.5Z,1h30m,"a,b"
`);
    expect(await measure("successCondition: len(result) == 1")).toMatchObject({
      phase: "Successful",
      value: "[2020-02-18 10:34:08.5 +0000 UTC]",
    });
    expect(goDuration(5_400_000_000_000n)).toBe("1h30m0s");
    expect(goDuration(1_500_000n)).toBe("1.5ms");
  });
});

describe("the server's errors, as influxdb-client-go reports them", () => {
  it.each([
    [
      "InfluxDB's JSON error",
      400,
      "application/json; charset=utf-8",
      `{"code":"invalid","message":"compilation failed: error at @1:1-1:5: undefined identifier tset"}`,
      "invalid: compilation failed: error at @1:1-1:5: undefined identifier tset",
    ],
    ["a text body", 401, "text/plain", "unauthorized access", "401 Unauthorized: unauthorized access"],
    [
      "a JSON body without code or message, 429",
      429,
      "application/json",
      "{}",
      "too many requests: exceeded rate limit",
    ],
    [
      "a JSON body without code or message, 503",
      503,
      "application/json",
      "{}",
      "unavailable: service temporarily unavailable",
    ],
    ["an empty text body", 500, "text/plain", "", "Unexpected status code 500"],
  ])("%s", async (_name, status, type, body, message) => {
    reply = csv(body, status, type);
    stored = { [SECRET]: account() };
    expect(await provider().measure(metric(), { now: NOW })).toEqual({ ok: false, message });
  });
});

const metric = (profile?: string) =>
  ({ name: "foo", provider: { influxdb: { query: "test", ...(profile ? { profile } : {}) } } }) as never;

describe("the secret (TestNewInfluxdbAPI)", () => {
  it("with default settings: the controller's InfluxDB secret", async () => {
    stored = { [SECRET]: account() };
    reply = csv(HEAD + row("1"));
    expect(await provider().measure(metric(), { now: NOW })).toMatchObject({ ok: true, result: [1] });
  });

  it("with authToken, org, or address missing", async () => {
    stored = { [SECRET]: { authToken: "ABCDEFG01234" } };
    expect(await provider().measure(metric(), { now: NOW })).toEqual({
      ok: false,
      message: "authToken, org, or address not found",
    });
  });

  it("when secretName is specified by the metric (profile): the secret of that name", async () => {
    stored = { [PROFILE]: { ...account(), authToken: "PROFILE-TOKEN" } };
    reply = csv(HEAD + row("1"));
    const before = influx.requests.length;
    const r = await provider({ "my-influx-token-secret": PROFILE }).measure(
      metric("my-influx-token-secret"),
      {
        now: NOW,
      },
    );
    expect(r).toMatchObject({ ok: true });
    expect(influx.requests[before]?.headers.authorization).toBe("Token PROFILE-TOKEN");
  });

  it("when the secret is not found", async () => {
    const r = await provider().measure(metric("unknown-profile"), { now: NOW });
    expect(r).toMatchObject({
      ok: false,
      message: expect.stringContaining('secrets "unknown-profile" not found'),
    });
    const none = await new InfluxdbMetricProvider().measure(metric(), { now: NOW });
    expect(none).toMatchObject({
      ok: false,
      message: expect.stringContaining("authToken, org, or address not found"),
    });
  });
});

describe("the template", () => {
  it("Argo's docs page template loads unchanged; profile names the secret, influxdb (Argo's default) is the controller's", async () => {
    // docs/analysis/influxdb.md
    const spec = await loadTemplateText(
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-rate
spec:
  args:
  - name: application-name
  metrics:
  - name: error-rate
    # NOTE: To be consistent with the prometheus metrics provider InfluxDB query results are returned as an array.
    # In the example we're looking at index 0 of the returned array to obtain the value we're using for the success condition
    successCondition: result[0] <= 0.01
    provider:
      influxdb:
        profile: my-influxdb-secret  # optional, defaults to 'influxdb'
        query: |
          from(bucket: "app_istio")
            |> range(start: -15m)
            |> filter(fn: (r) => r["destination_workload"] == "{{ args.application-name }}")
            |> filter(fn: (r) => r["_measurement"] == "istio:istio_requests_errors_percentage:rate1m:5xx")

`,
      { "application-name": "checkout" },
    );
    const i = spec.templates[0]?.metrics[0]?.provider.influxdb;
    expect(i?.profile).toBe("my-influxdb-secret");
    expect(i?.query).toContain(`r["destination_workload"] == "checkout"`);
    const byDefault = await loadTemplateText(
      template("successCondition: result[0] < 1", "profile: influxdb\nquery: x"),
    );
    expect(byDefault.templates[0]?.metrics[0]?.provider.influxdb).toEqual({ query: "x" });
  });

  it("an unknown field is refused at its path", async () => {
    await expect(
      loadTemplateText(template("successCondition: result[0] < 1", "query: x\norg: y")),
    ).rejects.toThrow(/spec\.metrics\[0\]\.provider\.influxdb.*org/);
  });
});
