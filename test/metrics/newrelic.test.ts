import type { ServerResponse } from "node:http";
import { loadTemplateText, templateProblems } from "@sfn-rollouts/test-support/analysis-template";
import { type Recorded, startServer } from "@sfn-rollouts/test-support/http-server";
import { SECRETS_CREDENTIALS, startSecretsManager } from "@sfn-rollouts/test-support/secrets-manager";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { SecretsManagerSource } from "../../functions/metrics/index.ts";
import { NewRelicMetricProvider, NRQL_QUERY, nerdGraphUrl } from "../../functions/metrics/newrelic.ts";
import type { Metric } from "../../statemachine/spec.ts";

/**
 * The New Relic provider against a local NerdGraph (GraphQL over HTTP, as newrelic-client-go
 * speaks it). The cases and expected values, phases and messages are those of Argo Rollouts'
 * `metricproviders/newrelic/newrelic_test.go` (TestRunSuccessfully, TestRunWithTimeseries,
 * TestRunWithFacet, TestRunWithEmptyResult, TestRunWithQueryError, TestRunWithEvaluationError,
 * TestNewNewRelicAPIClient, TestNewRelicClient_Query).
 */

const SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:newrelic-AbCdEf";
const NOW = new Date(Date.UTC(2026, 10, 30, 12));

let reply: (req: Recorded, res: ServerResponse) => void = () => {};
let nerdGraph: Awaited<ReturnType<typeof startServer>>;
let secrets: Awaited<ReturnType<typeof startSecretsManager>>;
let account: Record<string, string> = {};

const results = (list: unknown[]) => (_req: Recorded, res: ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ data: { actor: { account: { nrql: { results: list } } } } }));
};

beforeAll(async () => {
  nerdGraph = await startServer((req, res) => reply(req, res));
  secrets = await startSecretsManager({
    get [SECRET]() {
      return JSON.stringify(account);
    },
  } as Record<string, string>);
});
afterAll(async () => {
  await nerdGraph?.close();
  await secrets?.close();
});

const defaultAccount = () => ({
  "personal-api-key": "NRAK-ABCDEFG01234",
  "account-id": "1234567",
  "base-url-nerdgraph": `${nerdGraph.url}/graphql`,
});

function provider(): NewRelicMetricProvider {
  return new NewRelicMetricProvider({
    secrets: new SecretsManagerSource({ endpoint: secrets.url, credentials: SECRETS_CREDENTIALS }),
    secretId: SECRET,
  });
}

function template(provider: string, conditions: string): string {
  const indent = (text: string, n: number) =>
    text
      .split("\n")
      .map((l) => `${" ".repeat(n)}${l}`)
      .join("\n");
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: nr}
spec:
  metrics:
    - name: foo
${indent(conditions, 6)}
      provider:
        newRelic:
${indent(provider, 10)}
`;
}

async function measure(conditions: string, nrql = "query: resolved-query") {
  account = defaultAccount();
  const spec = await loadTemplateText(template(nrql, conditions));
  const run = await tick(createRun(spec, NOW), NOW, provider());
  return run.metricResults[0]?.measurements[0];
}

describe("a measurement (newrelic_test.go)", () => {
  it("one result is a map; the query goes to NerdGraph with the account, the key and the default timeout", async () => {
    reply = results([{ count: 10 }]);
    const before = nerdGraph.requests.length;
    const m = await measure(`successCondition: result.count == 10\nfailureCondition: result.count != 10`);
    expect(m).toMatchObject({ phase: "Successful", value: `{"count":10}` });
    expect(m?.metadata).toEqual({ ResolvedNewRelicQuery: "resolved-query" });
    const sent = nerdGraph.requests[before] as Recorded;
    expect(sent.method).toBe("POST");
    expect(sent.url).toBe("/graphql");
    expect(sent.headers["api-key"]).toBe("NRAK-ABCDEFG01234");
    expect(sent.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(sent.body)).toEqual({
      query: NRQL_QUERY,
      variables: { accountId: 1234567, query: "resolved-query", timeout: 5 },
    });
  });

  it("several results are a list of maps (TestRunWithTimeseries)", async () => {
    reply = results([{ count: 10 }, { count: 20 }, { count: 30 }]);
    const m = await measure(
      `successCondition: result[0].count == 10\nfailureCondition: result[2].count < 20`,
    );
    expect(m).toMatchObject({ phase: "Successful", value: `[{"count":10},{"count":20},{"count":30}]` });
  });

  it("a facet's dotted name is read by index; the value prints with the keys sorted (TestRunWithFacet)", async () => {
    reply = results([{ count: 10, "average.duration": 12.34 }]);
    const m = await measure(
      `successCondition: "result.count == 10 and result['average.duration'] < 15.0"\nfailureCondition: "result.count != 10 or result['average.duration'] >= 15.0"`,
    );
    expect(m).toMatchObject({ phase: "Successful", value: `{"average.duration":12.34,"count":10}` });
  });

  it("an empty map, or no result, is an Error (TestRunWithEmptyResult, TestRunWithEvaluationError)", async () => {
    reply = results([{}]);
    expect(await measure("successCondition: result.count == 10")).toMatchObject({
      phase: "Error",
      message: "no results returned from NRQL query",
    });
    reply = results([]);
    expect(await measure("successCondition: result == 10")).toMatchObject({
      phase: "Error",
      message: "no results returned from NRQL query",
    });
  });

  it("a GraphQL error is the measurement's Error (TestRunWithQueryError)", async () => {
    reply = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ errors: [{ message: "NRQL Syntax Error: Error at line 1" }], data: null }));
    };
    expect(await measure("successCondition: result.count == 10")).toMatchObject({
      phase: "Error",
      message: "NRQL Syntax Error: Error at line 1",
    });
  });

  it("a bad key, and another status, are the client's messages", async () => {
    reply = (_req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          errors: [{ message: "Invalid API key", extensions: { error_code: "BAD_API_KEY" } }],
        }),
      );
    };
    expect(await measure("successCondition: result.count == 10")).toMatchObject({
      phase: "Error",
      message:
        "401 response returned: Invalid credentials provided. Missing API key or an invalid API key was provided.",
    });
    reply = (_req, res) => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ errors: [{ message: "upstream unavailable" }] }));
    };
    expect(await measure("successCondition: result.count == 10")).toMatchObject({
      message: "503 response returned: upstream unavailable",
    });
  });

  it("a timeout is sent as NRQL's own (TestNewRelicClient_Query)", async () => {
    reply = results([{ count: 10 }]);
    const before = nerdGraph.requests.length;
    await measure("successCondition: result.count == 10", "query: q\ntimeout: 7");
    expect(JSON.parse(nerdGraph.requests[before]?.body ?? "{}").variables.timeout).toBe(7);
  });
});

describe("the account (TestNewNewRelicAPIClient)", () => {
  const metric = async () =>
    (await loadTemplateText(template("query: q", `successCondition: "true"`))).templates[0]
      ?.metrics[0] as Metric;

  it("a key or account id missing, or an account id that is not a number, is Argo's message", async () => {
    account = { "personal-api-key": "NRAK-ABCDEFG01234" };
    // A fresh provider: the secret is read again.
    expect(await provider().measure(await metric(), { now: NOW })).toMatchObject({
      ok: false,
      message: "account ID or personal API key not found",
    });
    account = { "personal-api-key": "NRAK-ABCDEFG01234", "account-id": "abcdef" };
    expect(await provider().measure(await metric(), { now: NOW })).toMatchObject({
      ok: false,
      message: 'could not parse account ID: strconv.Atoi: parsing "abcdef": invalid syntax',
    });
  });

  it("no secret is an Error that says what to give", async () => {
    expect(await new NewRelicMetricProvider().measure(await metric(), { now: NOW })).toMatchObject({
      ok: false,
      message: expect.stringContaining("metricSecrets.newRelic"),
    });
  });

  it("the region picks NerdGraph's URL; an unknown region is the US one, as the client does", () => {
    expect(nerdGraphUrl(undefined)).toBe("https://api.newrelic.com/graphql");
    expect(nerdGraphUrl("eu")).toBe("https://api.eu.newrelic.com/graphql");
    expect(nerdGraphUrl("EU")).toBe("https://api.eu.newrelic.com/graphql");
    expect(nerdGraphUrl("prod")).toBe("https://api.newrelic.com/graphql");
  });
});

describe("the template's checks, when it is loaded", () => {
  it("a negative timeout is refused with Argo's message", async () => {
    expect(await templateProblems(template("query: q\ntimeout: -1", `successCondition: "true"`))).toEqual([
      expect.stringContaining("provider.newRelic.timeout: timeout value needs to be a positive value"),
    ]);
  });
});

describe("a profile (TestNewNewRelicAPIClient: when secretName is specified by the metric)", () => {
  const OTHER = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:nr-other-QwErTy";
  const profiled = async (profile: string) =>
    (await loadTemplateText(template(`query: q\nprofile: ${profile}`, `successCondition: "true"`)))
      .templates[0]?.metrics[0] as Metric;

  it("reads the controller's secret of that name; newrelic is the provider's own; another is an Error", async () => {
    const other = await startSecretsManager({
      [OTHER]: JSON.stringify({ ...defaultAccount(), "personal-api-key": "NRAK-OTHER" }),
      [SECRET]: JSON.stringify(defaultAccount()),
    });
    try {
      const p = new NewRelicMetricProvider({
        secrets: new SecretsManagerSource({ endpoint: other.url, credentials: SECRETS_CREDENTIALS }),
        secretId: SECRET,
        named: { "my-newrelic-secret": OTHER },
      });
      reply = results([{ count: 1 }]);
      const before = nerdGraph.requests.length;
      expect(await p.measure(await profiled("my-newrelic-secret"), { now: NOW })).toMatchObject({ ok: true });
      expect(await p.measure(await profiled("newrelic"), { now: NOW })).toMatchObject({ ok: true });
      expect(nerdGraph.requests.slice(before).map((r) => r.headers["api-key"])).toEqual([
        "NRAK-OTHER",
        "NRAK-ABCDEFG01234",
      ]);
      expect(await p.measure(await profiled("unknown"), { now: NOW })).toMatchObject({
        ok: false,
        message: expect.stringContaining('secrets "unknown" not found'),
      });
      // A name every object inherits is not a secret the controller holds.
      expect(await p.measure(await profiled("constructor"), { now: NOW })).toMatchObject({
        ok: false,
        message: expect.stringContaining('secrets "constructor" not found'),
      });
    } finally {
      await other.close();
    }
  });
});
