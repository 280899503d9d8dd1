import { DEAD_URL, startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { toJsonPath, WebMetricProvider } from "../../functions/metrics/web.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

let server: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  server = await startServer((req, res) => {
    const path = req.url.split("?")[0];
    switch (path) {
      case "/json":
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ candidate: { feedback_rate: 0.85 }, primary: { feedback_rate: 0.8 } }));
        return;
      case "/echo":
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ method: req.method, body: req.body, headers: req.headers }));
        return;
      case "/html":
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<html><body>Bad Gateway</body></html>");
        return;
      case "/empty":
        res.writeHead(200);
        res.end();
        return;
      case "/go":
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          '{"z": 1e21, "a": [5.0, -0.0, 1e-7, 0.000001, 123456789012345678901], "m": {"b": "<&>", "a": "\\b\\f\\u2028"}}',
        );
        return;
      case "/500":
        res.writeHead(500, { "content-type": "application/json" });
        res.end('{"ok": true}');
        return;
      case "/slow":
        // Never answers: the provider's timeout must end the request.
        return;
      default:
        res.writeHead(404);
        res.end();
    }
  });
});

afterAll(async () => {
  await server.close();
});

function web(
  path: string,
  extra: Record<string, unknown> = {},
  metric: Record<string, unknown> = {},
): Metric {
  return MetricSchema.parse({
    name: "web",
    provider: { web: { url: `${server.url}${path}`, ...extra } },
    ...metric,
  });
}

const now = new Date();

describe("web provider against a local HTTP server", () => {
  it("JSON: the whole body is the result by default", async () => {
    const r = await new WebMetricProvider().measure(web("/json"), { now });
    expect(r).toEqual({
      ok: true,
      result: { candidate: { feedback_rate: 0.85 }, primary: { feedback_rate: 0.8 } },
      value: '{"candidate":{"feedback_rate":0.85},"primary":{"feedback_rate":0.8}}',
    });
  });

  it("jsonPath in Kubernetes form narrows the result", async () => {
    const r = await new WebMetricProvider().measure(
      web("/json", { jsonPath: "{$.candidate.feedback_rate}" }),
      {
        now,
      },
    );
    expect(r).toEqual({ ok: true, result: 0.85, value: "0.85" });
  });

  it("a jsonPath that matches nothing is an Error", async () => {
    const r = await new WebMetricProvider().measure(web("/json", { jsonPath: "{$.nope}" }), { now });
    expect(r).toEqual({ ok: false, message: "Could not find JSONPath in body: {$.nope} is not found" });
  });

  it("through a run, field access works on the parsed JSON", async () => {
    const metric = web("/json", {}, { successCondition: "result.candidate.feedback_rate >= 0.8" });
    const run = await tick(
      createRun({ templates: [{ name: "t", kind: "AnalysisTemplate", metrics: [metric] }] }, now),
      now,
      new WebMetricProvider(),
    );
    expect(run.phase).toBe("Successful");
  });

  it("sends method, headers and body; jsonBody sets the JSON content type", async () => {
    const p = new WebMetricProvider();
    const r = await p.measure(
      web("/echo", {
        method: "POST",
        headers: [{ key: "Authorization", value: "Bearer t" }],
        jsonBody: { a: 1 },
      }),
      { now },
    );
    expect(r.ok).toBe(true);
    const echo = (r.ok ? r.result : {}) as { method: string; body: string; headers: Record<string, string> };
    expect(echo.method).toBe("POST");
    expect(echo.body).toBe('{"a":1}');
    expect(echo.headers.authorization).toBe("Bearer t");
    expect(echo.headers["content-type"]).toBe("application/json");
    const put = await p.measure(web("/echo", { method: "PUT", body: "raw" }), { now });
    expect(put.ok && (put.result as { body: string }).body).toBe("raw");
  });

  it("a body with GET, or both body kinds, is an Error as in Argo", async () => {
    const p = new WebMetricProvider();
    expect(await p.measure(web("/echo", { body: "x" }), { now })).toEqual({
      ok: false,
      message: "Body/JSONBody can only be used with POST or PUT WebMetric Method types",
    });
    expect(await p.measure(web("/echo", { method: "POST", body: "x", jsonBody: {} }), { now })).toEqual({
      ok: false,
      message: "use either Body or JSONBody; both cannot exists for WebMetric payload",
    });
  });

  it("a non-JSON body is an Error measurement (unlike Argo, argo-rollouts#4535)", async () => {
    const p = new WebMetricProvider();
    const html = await p.measure(web("/html"), { now });
    expect(html).toEqual({
      ok: false,
      message: 'received a body that is not JSON (text/html): "<html><body>Bad Gateway</body></html>"',
    });
    const empty = await p.measure(web("/empty"), { now });
    expect(empty).toEqual({ ok: false, message: "received a body that is not JSON: <empty>" });
    // The run records it as an Error, never as a success of `result != "bad"`.
    const metric = web("/html", {}, { successCondition: 'result != "bad"' });
    const run = await tick(
      createRun({ templates: [{ name: "t", kind: "AnalysisTemplate", metrics: [metric] }] }, now),
      now,
      p,
    );
    expect(run.metricResults[0]?.measurements[0]?.phase).toBe("Error");
  });

  it("the stored value is JSON as Go's encoding/json writes it: sorted keys, Go's floats, HTML escaped", async () => {
    const r = await new WebMetricProvider().measure(web("/go"), { now });
    expect(r.ok && r.value).toBe(
      '{"a":[5,-0,1e-7,0.000001,123456789012345680000],"m":{"a":"\\b\\f\\u2028","b":"\\u003c\\u0026\\u003e"},"z":1e+21}',
    );
  });

  it("a URL with another scheme is an Error with Go's net/http message", async () => {
    // The spec refuses such a URL when it loads (test/statemachine/spec-limits.test.ts); the
    // provider still guards what reaches it, in Go's words.
    const metric = (url: string, method: "GET" | "POST"): Metric => {
      const m = MetricSchema.parse({ name: "w", provider: { web: { url: "http://x", method } } });
      return {
        ...m,
        provider: { web: { ...(m.provider.web as NonNullable<Metric["provider"]["web"]>), url } },
      };
    };
    expect(await new WebMetricProvider().measure(metric("ftp://x", "GET"), { now })).toEqual({
      ok: false,
      message: 'Get "ftp://x": unsupported protocol scheme "ftp"',
    });
    expect(await new WebMetricProvider().measure(metric("bad://url.com", "POST"), { now })).toEqual({
      ok: false,
      message: 'Post "bad://url.com": unsupported protocol scheme "bad"',
    });
  });

  it("a 500 is an Error even with a JSON body", async () => {
    expect(await new WebMetricProvider().measure(web("/500"), { now })).toEqual({
      ok: false,
      message: "received non 2xx response code: 500",
    });
  });

  it("a server that does not answer in timeoutSeconds is an Error", async () => {
    const r = await new WebMetricProvider().measure(web("/slow", { timeoutSeconds: 0.2 }), { now });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toBe(
      `Get "${server.url}/slow": context deadline exceeded (Client.Timeout exceeded after 0.2s)`,
    );
  });

  it("a refused connection is an Error", async () => {
    const url = `${DEAD_URL}/x`;
    const r = await new WebMetricProvider().measure(
      MetricSchema.parse({ name: "w", provider: { web: { url } } }),
      { now },
    );
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(new RegExp(`^Get "${url}": connect ECONNREFUSED`));
  });
});

describe("toJsonPath", () => {
  it.each([
    [undefined, "$"],
    ["{$}", "$"],
    ["{$.a.b}", "$.a.b"],
    ["{.a.b}", "$.a.b"],
    ["$.a[0]", "$.a[0]"],
    ["{[0].a}", "$[0].a"],
  ])("%s → %s", (input, output) => {
    expect(toJsonPath(input)).toBe(output);
  });
});
