import { describe, expect, it } from "vitest";
import { createRun, tick } from "../../functions/analysis/index.ts";
import {
  defaultProviders,
  formatFloat,
  type MetricProvider,
  MetricProviders,
  UnsupportedProviderError,
} from "../../functions/metrics/index.ts";
import { MetricSchema } from "../../statemachine/spec.ts";

const now = new Date();
const web = MetricSchema.parse({ name: "w", provider: { web: { url: "http://example.invalid/" } } });
const prom = MetricSchema.parse({
  name: "p",
  provider: { prometheus: { address: "http://x", query: "up" } },
});

function fixed(value: number): MetricProvider & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    measure: async (m) => {
      seen.push(m.name);
      return { ok: true, result: [value], value: `[${value}]` };
    },
  };
}

describe("MetricProviders", () => {
  it("sends each metric to the adapter of its provider", async () => {
    const w = fixed(1);
    const p = fixed(2);
    const router = new MetricProviders({ web: w, prometheus: p });
    expect(await router.measure(web, { now })).toMatchObject({ result: [1] });
    expect(await router.measure(prom, { now })).toMatchObject({ result: [2] });
    expect([w.seen, p.seen]).toEqual([["w"], ["p"]]);
  });

  it("a provider this process lacks throws a named error, which the run records as an Error", async () => {
    const router = new MetricProviders({ web: fixed(1) });
    expect(() => router.measure(prom, { now })).toThrow(UnsupportedProviderError);
    const run = await tick(
      createRun({ templates: [{ name: "t", kind: "inline", metrics: [prom] }] }, now),
      now,
      router,
    );
    expect(run.metricResults[0]?.measurements[0]).toMatchObject({
      phase: "Error",
      message: 'metric "p": no prometheus provider is configured in this process',
    });
  });

  it("defaultProviders uses the injected fetch for HTTP providers", async () => {
    const urls: string[] = [];
    const router = defaultProviders({
      fetch: async (url) => {
        urls.push(url);
        return new Response('{"ok": true}', { status: 200 });
      },
    });
    expect(await router.measure(web, { now })).toMatchObject({ ok: true, result: { ok: true } });
    expect(urls).toEqual(["http://example.invalid/"]);
  });
});

describe("formatFloat (Go's FormatFloat 'f', -1)", () => {
  it.each([
    [0.95, "0.95"],
    [1, "1"],
    [-0.5, "-0.5"],
    [1e21, "1000000000000000000000"],
    [1.5e-7, "0.00000015"],
    [Number.NaN, "NaN"],
    [Number.NEGATIVE_INFINITY, "-Inf"],
  ])("%s → %s", (v, s) => {
    expect(formatFloat(v)).toBe(s);
  });
});
