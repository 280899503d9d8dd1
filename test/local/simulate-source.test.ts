import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SyntheticSource, startSyntheticSource } from "../../local/simulate/source.ts";

describe("the synthetic metrics source", () => {
  let now = Date.parse("2026-12-01T00:00:00Z");
  let source: SyntheticSource;
  beforeAll(async () => {
    source = await startSyntheticSource({
      now: () => now,
      seed: 7,
      model: (v) => ({
        requestsPerSecond: 20,
        errorRate: v === "bad" ? 0.3 : 0.01,
        latencyMedianMs: 100,
        latencySigma: 0.5,
      }),
    });
  });
  afterAll(() => source.close());

  it("gives the same numbers for the same window, in any order, and windows add up", () => {
    const t0 = Date.parse("2026-12-01T00:00:00Z");
    const whole = source.stats("v1", t0, t0 + 60_000);
    const first = source.stats("v1", t0, t0 + 30_000);
    const second = source.stats("v1", t0 + 30_000, t0 + 60_000);
    expect(source.stats("v1", t0, t0 + 60_000)).toEqual(whole);
    expect(first.requests + second.requests).toBe(whole.requests);
    expect(first.errors + second.errors).toBe(whole.errors);
    expect(whole.requests).toBe(1200);
    expect(whole.latency.n).toBe(1200);
    // ln(100) ≈ 4.605; σ 0.5: m2 / n ≈ 0.25.
    expect(whole.latency.mean).toBeCloseTo(Math.log(100), 1);
    expect(whole.latency.m2 / whole.latency.n).toBeCloseTo(0.25, 1);
  });

  it("draws each version's behaviour from its model, and versions differ", () => {
    const t0 = Date.parse("2026-12-01T01:00:00Z");
    const bad = source.stats("bad", t0, t0 + 600_000);
    const good = source.stats("v1", t0, t0 + 600_000);
    expect(bad.errors / bad.requests).toBeCloseTo(0.3, 1);
    expect(good.errors / good.requests).toBeLessThan(0.03);
    expect(source.stats("v2", t0, t0 + 600_000)).not.toEqual({ ...good, version: "v2" });
  });

  it("answers the web provider over HTTP, up to its clock's now by default, and refuses a bad query", async () => {
    now = Date.parse("2026-12-01T00:00:10Z");
    const answer = await (
      await fetch(`${source.url}/stats?version=v1&since=2026-12-01T00:00:00.000Z`)
    ).json();
    expect(answer).toEqual(source.stats("v1", Date.parse("2026-12-01T00:00:00Z"), now));
    expect((await fetch(`${source.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${source.url}/stats?version=v1`)).status).toBe(400);
  });
});
