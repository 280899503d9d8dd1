import { startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import { SamplesMetricProvider } from "../../functions/metrics/samples.ts";
import { type Metric, MetricSchema } from "../../statemachine/spec.ts";

let server: Awaited<ReturnType<typeof startServer>>;
let answer: { status: number; body: string };

beforeAll(async () => {
  server = await startServer((_req, res) => {
    res.writeHead(answer.status, { "content-type": "application/json" });
    res.end(answer.body);
  });
});
afterAll(async () => {
  await server.close();
});

const summaries = {
  primary: { version: "v1", samples: 400, feedback_rate: 0.8 },
  candidate: { version: "v2", samples: 100, feedback_rate: 0.86 },
  window: 120,
};

function metric(condition?: string): Metric {
  return MetricSchema.parse({
    name: "feedback",
    ...(condition ? { successCondition: condition } : {}),
    provider: { samples: { address: `${server.url}/`, primary: "v1", candidate: "v2", window: 120 } },
  });
}

const now = new Date();

describe("samples provider (the router's /compare)", () => {
  it("asks for both versions over the window and returns both summaries", async () => {
    answer = { status: 200, body: JSON.stringify(summaries) };
    const r = await new SamplesMetricProvider().measure(metric(), { now });
    expect(server.requests.at(-1)?.url).toBe("/compare?primary=v1&candidate=v2&window=120");
    expect(r).toEqual({ ok: true, result: summaries, value: JSON.stringify(summaries) });
  });

  it("a condition compares the candidate with the primary", async () => {
    answer = { status: 200, body: JSON.stringify(summaries) };
    const spec = (c: string) => ({
      templates: [{ name: "t", kind: "inline" as const, metrics: [metric(c)] }],
    });
    const provider = new SamplesMetricProvider();
    const ok = await tick(
      createRun(spec("result.candidate.feedback_rate >= result.primary.feedback_rate"), now),
      now,
      provider,
    );
    expect(ok.phase).toBe("Successful");
    const low = await tick(createRun(spec("result.candidate.samples >= 200"), now), now, provider);
    expect(low.phase).toBe("Failed");
  });

  it("a missing summary is an Error", async () => {
    answer = { status: 200, body: JSON.stringify({ primary: {} }) };
    const r = await new SamplesMetricProvider().measure(metric(), { now });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^compare response: candidate: /);
  });

  it("a non-2xx answer is an Error with the router's text", async () => {
    answer = { status: 404, body: '{"error":"unknown version v2"}' };
    expect(await new SamplesMetricProvider().measure(metric(), { now })).toEqual({
      ok: false,
      message: 'received non 2xx response code: 404: {"error":"unknown version v2"}',
    });
  });

  it("a body that is not JSON is an Error", async () => {
    answer = { status: 200, body: "ok" };
    expect(await new SamplesMetricProvider().measure(metric(), { now })).toEqual({
      ok: false,
      message: 'received a body that is not JSON: "ok"',
    });
  });
});
