import { describe, expect, it } from "vitest";
import { RequestWindow } from "../../local/proxy/window.ts";

describe("RequestWindow", () => {
  it("counts only the last window's seconds, per version", () => {
    let now = 1_000_000;
    const w = new RequestWindow({ now: () => now, horizonSeconds: 60 });
    w.record("v2", 200);
    w.record("v2", 500);
    now += 30_000;
    w.record("v2", 200);
    w.record("v3", 503);
    expect(w.stats("v2", 10)).toEqual({ requests: 1, ok: 1, successRate: 1 });
    expect(w.stats("v2", 40)).toEqual({ requests: 3, ok: 2, successRate: 2 / 3 });
    expect(w.stats("v3", 10)).toEqual({ requests: 1, ok: 0, successRate: 0 });
  });

  it("forgets buckets past its horizon and has no rate without requests", () => {
    let now = 0;
    const w = new RequestWindow({ now: () => now, horizonSeconds: 5 });
    w.record("v1", 200);
    now += 10_000;
    w.record("v1", 200);
    expect(w.stats("v1", 60)).toEqual({ requests: 1, ok: 1, successRate: 1 });
    expect(w.stats("v9", 60).successRate).toBeNull();
  });
});
