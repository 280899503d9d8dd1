import { describe, expect, it } from "vitest";
import { formatPlan, PlanError, parsePlan } from "../../cli/simulate/plan.ts";
import { encodeWriteRequest, snappyLiteral } from "../../local/simulate/remote-write.ts";
import { ExactSplit, PodModel, RequestClock } from "../../local/simulate/split.ts";

describe("the simulator's request arithmetic", () => {
  it("carries fractional requests per second over, so N seconds carry floor(N × rps)", () => {
    const half = new RequestClock(2.5);
    expect([half.next(), half.next(), half.next(), half.next()]).toEqual([2, 3, 2, 3]);
    const tenth = new RequestClock(0.1);
    let total = 0;
    for (let s = 0; s < 100; s++) total += tenth.next();
    expect(total).toBe(10);
    expect(() => new RequestClock(-1)).toThrow(/rps must be a number >= 0/);
  });

  it("splits exactly: floor(n × share) of the first n requests, spread evenly", () => {
    const quarter = new ExactSplit(25, 100);
    const picks = Array.from({ length: 100 }, () => quarter.next());
    expect(picks.filter(Boolean)).toHaveLength(25);
    expect(picks.slice(0, 8)).toEqual([false, false, false, true, false, false, false, true]);
    const third = new ExactSplit(1, 3);
    expect(Array.from({ length: 300 }, () => third.next()).filter(Boolean)).toHaveLength(100);
    const none = new ExactSplit(0, 4);
    expect(Array.from({ length: 50 }, () => none.next()).some(Boolean)).toBe(false);
    expect(new ExactSplit(1, 4).same(25, 100)).toBe(true);
    expect(() => new ExactSplit(5, 4)).toThrow(/a share is 0..1/);
  });
});

describe("the simulator's pods (no traffic router)", () => {
  it("rounds weights to whole pods as Argo does, the surge pod included", () => {
    const four = new PodModel(4, 1, 0);
    expect(four.at(25, 0)).toEqual({ canary: 1, stable: 3 });
    expect(four.at(50, 1)).toEqual({ canary: 2, stable: 2 });
    // 3 replicas at 25%: one canary next to all three stable pods (the surge pod).
    const three = new PodModel(3, 1, 0);
    expect(three.at(25, 0)).toEqual({ canary: 1, stable: 3 });
    expect(three.counts(10)).toEqual({ canary: 1, stable: 3 });
    expect(three.at(100, 1)).toEqual({ canary: 3, stable: 0 });
  });

  it("lets a new pod serve only after the ready delay, and keeps the old side until then", () => {
    const pods = new PodModel(4, 1, 5);
    for (let t = 0; t < 5; t++) expect(pods.at(25, t)).toEqual({ canary: 0, stable: 4 });
    expect(pods.at(25, 5)).toEqual({ canary: 1, stable: 3 });
    // Abort at 10: the stable pod that left must start again; the canary serves until it does.
    expect(pods.at(0, 10)).toEqual({ canary: 1, stable: 3 });
    expect(pods.at(0, 14)).toEqual({ canary: 1, stable: 3 });
    expect(pods.at(0, 15)).toEqual({ canary: 0, stable: 4 });
  });
});

describe("--plan's short form", () => {
  it("reads weights, analyses and timed pauses", () => {
    expect(parsePlan("25%,analysis,50%,pause=2s,analysis")).toEqual([
      { setWeight: 25 },
      { analysis: true },
      { setWeight: 50 },
      { pause: "2s" },
      { analysis: true },
    ]);
    expect(parsePlan("100")).toEqual([{ setWeight: 100 }]);
    expect(formatPlan(parsePlan(" 5 , analysis ,pause=1m"))).toBe("5%,analysis,pause=1m");
  });

  it("names the bad step and why", () => {
    expect(() => parsePlan("25%,analysys")).toThrow(
      '--plan "25%,analysys": step 2 "analysys": expected a weight (25 or 25%), analysis, or pause=DURATION',
    );
    expect(() => parsePlan("150%")).toThrow(/step 1 "150%": a weight is 0–100%/);
    expect(() => parsePlan("25,pause")).toThrow(
      /step 2 "pause": a pause without a duration waits for a person/,
    );
    expect(() => parsePlan("pause=soon")).toThrow(PlanError);
    expect(() => parsePlan("")).toThrow(/no steps/);
  });
});

describe("remote write framing", () => {
  it("encodes a WriteRequest as protobuf in snappy's literal framing", () => {
    const bytes = encodeWriteRequest([
      { labels: { b: "2", a: "1" }, samples: [{ value: 1, timestampMs: 1000 }] },
    ]);
    // timeseries(1) { labels(1) {name "a", value "1"}, labels(1) {name "b"...}, samples(2) {...} }
    expect([...bytes.slice(0, 6)]).toEqual([0x0a, bytes[1], 0x0a, 6, 0x0a, 1]);
    expect(String.fromCharCode(bytes[6] ?? 0)).toBe("a");
    const framed = snappyLiteral(bytes);
    expect(framed[0]).toBe(bytes.length);
    expect(framed[1]).toBe((bytes.length - 1) << 2);
    expect([...framed.slice(2)]).toEqual([...bytes]);
  });
});
