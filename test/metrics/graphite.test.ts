import type { ServerResponse } from "node:http";
import { loadTemplateText, templateProblems } from "@sfn-rollouts/test-support/analysis-template";
import { DEAD_URL, type Recorded, startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { goFixed } from "../../functions/metrics/go-fmt.ts";
import { GraphiteMetricProvider, renderUrl } from "../../functions/metrics/graphite.ts";
import { defaultProviders } from "../../functions/metrics/index.ts";

/**
 * The Graphite provider against a local Graphite render API (`GET /render?...&format=json`,
 * answering `[{"target", "datapoints": [[value, timestamp], ...]}]`). The cases, and the values,
 * phases and messages expected, are those of Argo Rollouts' `metricproviders/graphite/graphite_test.go`
 * (TestRunSuccessfulEvaluation, TestRunFailedEvaluation, TestRunMeasurementError,
 * TestRunErrorEvaluationFromNilQueryResponse, TestRunErrorEvaluationFromErrorQueryResponse) and
 * `metricproviders/graphite/api_test.go` (TestNewAPIClientWithValidURL, TestNewAPIWithInvalidURL,
 * and every case of TestQuery).
 */

const NOW = new Date(Date.UTC(2026, 10, 30, 12));
let reply: (req: Recorded, res: ServerResponse) => void = () => {};
let graphite: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  graphite = await startServer((req, res) => reply(req, res));
});
afterAll(async () => {
  await graphite?.close();
});

const answer =
  (body: string, status = 200) =>
  (_req: Recorded, res: ServerResponse) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(body);
  };

/** A render answer of one target with these `[value, timestamp]` points, as JSON text. */
const series = (points: string) =>
  `[{"datapoints": [${points}], "target": "sumSeries(app.http.*.*.count)", "tags": {"aggregatedBy": "sum", "name": "sumSeries(app.http.*.*.count)"}}]`;

function template(conditions: string, provider: string): string {
  return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: graphite}
spec:
  metrics:
    - name: foo
${conditions
  .split("\n")
  .map((l) => `      ${l}`)
  .join("\n")}
      provider:
        graphite:
${provider
  .split("\n")
  .map((l) => `          ${l}`)
  .join("\n")}
`;
}

const ARGO_CONDITIONS = `successCondition: 10.000000 in result\nfailureCondition: 10.000000 not in result`;

async function measure(
  conditions = ARGO_CONDITIONS,
  query = "foo=1",
  address = graphite.url,
): Promise<Record<string, unknown> | undefined> {
  const spec = await loadTemplateText(
    template(conditions, `address: ${JSON.stringify(address)}\nquery: ${JSON.stringify(query)}`),
  );
  const run = await tick(createRun(spec, NOW), NOW, defaultProviders());
  return run.metricResults[0]?.measurements[0] as Record<string, unknown> | undefined;
}

/** What the server was asked, as Go's `r.URL.Query()` reads it. */
function lastQuery(): URLSearchParams {
  const req = graphite.requests.at(-1) as Recorded;
  return new URL(req.url, "http://x").searchParams;
}

describe("a measurement (graphite_test.go)", () => {
  it("10 in the points is Successful, the value printed with %f (TestRunSuccessfulEvaluation)", async () => {
    reply = answer(series("[10, 1621348430]"));
    expect(await measure()).toMatchObject({ phase: "Successful", value: "[10.000000]" });
  });

  it("5 is Failed (TestRunFailedEvaluation)", async () => {
    reply = answer(series("[5, 1621348430]"));
    expect(await measure()).toMatchObject({ phase: "Failed", value: "[5.000000]" });
  });

  it("a condition that does not parse is refused when loaded, with expr's message (TestRunMeasurementError)", async () => {
    const problems = await templateProblems(
      template(
        `successCondition: result[0] 10.000000\nfailureCondition: result[0] 10.000000`,
        `address: http://g\nquery: foo=1`,
      ),
    );
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('unexpected token Number("10.000000")');
  });

  it("no datapoints is an Error, `no values found` (TestRunErrorEvaluationFromNilQueryResponse)", async () => {
    reply = answer(series(""));
    expect(await measure()).toMatchObject({ phase: "Error", message: "no values found" });
    reply = answer("[]");
    expect(await measure()).toMatchObject({ phase: "Error", message: "no values found" });
  });

  it("a query error is the measurement's Error (TestRunErrorEvaluationFromErrorQueryResponse)", async () => {
    reply = answer("some err", 500);
    expect(await measure()).toMatchObject({ phase: "Error", message: "error response: some err" });
  });

  it("every non-null point is in result, in order: the latest with data is result[len(result)-1]", async () => {
    reply = answer(series("[1.5, 1], [null, 2], [2.25, 3], [null, 4]"));
    const m = await measure(`successCondition: result[len(result)-1] == 2.25 && len(result) == 2`);
    expect(m).toMatchObject({ phase: "Successful", value: "[1.500000,2.250000]" });
  });

  it("all points null is an empty result: Argo's no-data message, unless default() decides", async () => {
    reply = answer(series("[null, 1], [null, 2]"));
    expect(await measure("successCondition: result[0] > 1")).toMatchObject({
      phase: "Error",
      message: expect.stringContaining("metric result is nil or empty"),
    });
    expect(await measure("successCondition: len(result) == 0")).toMatchObject({
      phase: "Successful",
      value: "[]",
    });
  });

  it("only the first target is read", async () => {
    reply = answer(`[{"target": "a", "datapoints": [[1, 1]]}, {"target": "b", "datapoints": [[10, 1]]}]`);
    expect(await measure()).toMatchObject({ phase: "Failed", value: "[1.000000]" });
  });

  it("a NaN string is a NaN point: isNaN decides, and it prints as Go prints it", async () => {
    reply = answer(series(`["NaN", 1]`));
    expect(await measure("successCondition: isNaN(result[0])")).toMatchObject({
      phase: "Successful",
      value: "[NaN]",
    });
  });

  it("an unreachable server is an Error in Go's words", async () => {
    const m = await measure(ARGO_CONDITIONS, "target=a", DEAD_URL);
    expect(m?.phase).toBe("Error");
    expect(m?.message).toMatch(/^Get "http:\/\/127\.0\.0\.1:2\/render\?format=json&target=a": /);
  });
});

describe("the render request (api_test.go, TestQuery)", () => {
  const query = "target=sumSeries(app.http.*.*.count)&from=-2min";
  const good = series("[100.000000, 1621348430]");
  const provider = new GraphiteMetricProvider();
  const metric = (q: string) =>
    ({
      name: "foo",
      provider: { graphite: { address: graphite.url, query: q } },
    }) as never;
  const run = (q: string) => provider.measure(metric(q), { now: NOW });

  it.each([
    ["ok", query, good, 200, { ok: true, result: [100], value: "[100.000000]" }],
    ["graphite response with empty array", query, "[]", 200, { ok: false, message: "no values found" }],
    ["query with surrounding whitespace", `\n  ${query} \t  \n`, good, 200, { ok: true, result: [100] }],
    [
      "graphite response body with invalid JSON",
      query,
      "invalid JSON",
      200,
      { ok: false, message: "invalid character 'i' looking for beginning of value" },
    ],
    ["400 graphite response status", query, "foo", 400, { ok: false, message: "error response: foo" }],
    ["500 graphite response status", query, "bar", 500, { ok: false, message: "error response: bar" }],
    [
      "graphite response data point JSON with only one item",
      query,
      series("[10]"),
      200,
      { ok: false, message: "error unmarshaling data point: [10]" },
    ],
    [
      "graphite response data point JSON with an invalid timestamp",
      query,
      series(`[100, "f"]`),
      200,
      { ok: false, message: 'strconv.ParseInt: parsing "f": invalid syntax' },
    ],
    [
      "graphite response data point JSON with a string value",
      query,
      series(`["100.000000", 1621348430]`),
      200,
      { ok: true, result: [100] },
    ],
    [
      "graphite response data point JSON with a null value",
      query,
      series("[null, 1621348430]"),
      200,
      { ok: true, result: [], value: "[]" },
    ],
    [
      "graphite response data point JSON triggers unmarshaling error",
      query,
      series("[[], 1621348420]"),
      200,
      { ok: false, message: "error unmarshaling value: []" },
    ],
    [
      "graphite response data point JSON with a string timestamp",
      query,
      series(`[100.000000, "1621348430"]`),
      200,
      { ok: true, result: [100] },
    ],
    [
      "graphite response data point timestamp JSON triggers unmarshaling error",
      query,
      series("[100, []]"),
      200,
      { ok: false, message: "error unmarshaling timestamp: 100" },
    ],
  ])("%s", async (_name, q, body, status, expected) => {
    reply = answer(body, status);
    const before = graphite.requests.length;
    expect(await run(q)).toMatchObject(expected);
    expect(graphite.requests.length).toBe(before + 1);
    const sent = lastQuery();
    expect(sent.get("target")).toBe("sumSeries(app.http.*.*.count)");
    expect(sent.get("from")).toBe("-2min");
    expect(sent.get("format")).toBe("json");
    expect(graphite.requests.at(-1)?.method).toBe("GET");
  });

  it("the parameters are sent as Go's url.Values encodes them: sorted, format=json, the path /render", async () => {
    reply = answer(good);
    await run("target=sumSeries(a.b)&from=-2min&until=now&format=raw");
    expect(graphite.requests.at(-1)?.url).toBe(
      "/render?format=json&from=-2min&target=sumSeries%28a.b%29&until=now",
    );
  });

  it("an address with a path keeps it", async () => {
    reply = answer(good);
    const r = await provider.measure(
      {
        name: "foo",
        provider: { graphite: { address: `${graphite.url}/graphite/`, query: "target=a" } },
      } as never,
      { now: NOW },
    );
    expect(r.ok).toBe(true);
    expect(graphite.requests.at(-1)?.url).toBe("/graphite/render?format=json&target=a");
  });

  it("an invalid query is Go's url.Parse error, and nothing is sent (invalid query)", async () => {
    const before = graphite.requests.length;
    expect(await run("target=#$%^&*(proper$#$%%^(password&from=-2min")).toEqual({
      ok: false,
      message: 'parse "./render?target=#$%^&*(proper$#$%%^(password&from=-2min": invalid URL escape "%^&"',
    });
    expect(graphite.requests.length).toBe(before);
  });
});

describe("the template (api_test.go, NewAPIClient)", () => {
  // docs/analysis/graphite.md, as Argo publishes it: its condition reads `results`, a name expr
  // does not know, so Argo's measurements would all be Errors; here the loader says so at once.
  const ARGO_DOCS = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
  - name: service-name
  metrics:
  - name: success-rate
    interval: 5m
    # Note that the Argo Rollouts Graphite metrics provider returns results as an array of float64s with 6 decimal places.
    successCondition: results[0] >= 90.000000
    failureLimit: 3
    provider:
      graphite:
        address: http://graphite.example.com:9090
        query: |
          target=summarize(
            asPercent(
              sumSeries(
                stats.timers.httpServerRequests.app.{{args.service-name}}.exception.*.method.*.outcome.{CLIENT_ERROR,INFORMATIONAL,REDIRECTION,SUCCESS}.status.*.uri.*.count
              ),
              sumSeries(
                stats.timers.httpServerRequests.app.{{args.service-name}}.exception.*.method.*.outcome.*.status.*.uri.*.count
              )
            ),
            '5min',
            'avg'
          )
`;

  it("Argo's docs page template loads, its provider unchanged (TestNewAPIClientWithValidURL)", async () => {
    const spec = await loadTemplateText(ARGO_DOCS.replace("results[0]", "result[0]"), {
      "service-name": "checkout",
    });
    const g = spec.templates[0]?.metrics[0]?.provider.graphite;
    expect(g?.address).toBe("http://graphite.example.com:9090");
    expect(g?.query).toContain("stats.timers.httpServerRequests.app.checkout.exception");
    const { url } = renderUrl(g?.address ?? "", g?.query ?? "") as { url: string };
    expect(new URL(url).searchParams.get("target")).toBe(
      "summarize(asPercent(sumSeries(stats.timers.httpServerRequests.app.checkout.exception.*.method.*.outcome.{CLIENT_ERROR,INFORMATIONAL,REDIRECTION,SUCCESS}.status.*.uri.*.count),sumSeries(stats.timers.httpServerRequests.app.checkout.exception.*.method.*.outcome.*.status.*.uri.*.count)),'5min','avg')",
    );
    const verbatim = await loadTemplateText(ARGO_DOCS, { "service-name": "checkout" }).then(
      () => [],
      (e: { problems?: Array<{ path?: string; message: string }> }) =>
        (e.problems ?? []).map((p) => `${p.path}: ${p.message}`),
    );
    expect(verbatim).toEqual([expect.stringContaining("spec.metrics[0].successCondition")]);
    expect(verbatim[0]).toContain("unknown name results");
  });

  it.each([
    [`address: ":::"\nquery: x`, "Graphite address ::: is not a valid URL"],
    [`query: x`, "Graphite address  is not a valid URL"],
    [`address: "graphite:8080"\nquery: x`, "Graphite address graphite:8080 is not a valid URL"],
  ])("a bad address is refused at its path (TestNewAPIWithInvalidURL): %s", async (provider, message) => {
    const problems = await templateProblems(template("successCondition: result[0] > 0", provider));
    expect(problems).toEqual([
      expect.stringContaining(`spec.metrics[0].provider.graphite.address: ${message}`),
    ]);
  });

  it("an unknown field is refused at its path", async () => {
    const problems = await templateProblems(
      template("successCondition: result[0] > 0", `address: http://g\nquery: x\nuser: y`),
    );
    expect(problems).toEqual([expect.stringContaining("spec.metrics[0].provider.graphite")]);
    expect(problems[0]).toContain("user");
  });
});

describe("Go's %f", () => {
  it.each([
    [10, "10.000000"],
    [0.0078125, "0.007812"],
    [0.0234375, "0.023438"],
    [-0, "-0.000000"],
    [-1e-7, "-0.000000"],
    [1e21, "1000000000000000000000.000000"],
    [Number.POSITIVE_INFINITY, "+Inf"],
  ])("%d is %s", (v, s) => {
    expect(goFixed(v, 6)).toBe(s);
  });
});
