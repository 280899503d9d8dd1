import { describe, expect, it } from "vitest";
import { compareReleases, olderReleaseRefusal, type ReleasePush } from "../../statemachine/waves-order.ts";

const T = Date.parse("2026-12-01T12:00:00Z");
const push = (eventTime: number, eventId: string, executionName = `shop-${eventId}`): ReleasePush => ({
  eventTime,
  eventId,
  executionName,
});

describe("the order of releases in waves", () => {
  it("orders releases by the push's time, whatever order they are compared in", () => {
    const a = push(T, "a");
    const b = push(T + 1000, "b");
    expect(compareReleases(a, b)).toBeLessThan(0);
    expect(compareReleases(b, a)).toBeGreaterThan(0);
  });

  it("breaks a tie of the push's time by the event id, then the coordinator's execution name", () => {
    // ECR's event times have one-second resolution: two pushes may share one.
    const low = push(T, "0f1e9b6c-0000-4000-8000-000000000000");
    const high = push(T, "9a2d4c11-0000-4000-8000-000000000000");
    expect(compareReleases(low, high)).toBeLessThan(0);
    expect(compareReleases(high, low)).toBeGreaterThan(0);
    // One event delivered twice may start two coordinators: their names decide.
    const first = push(T, "e", "shop-aaaa");
    const second = push(T, "e", "shop-bbbb");
    expect(compareReleases(first, second)).toBeLessThan(0);
    expect(compareReleases(second, first)).toBeGreaterThan(0);
    // The same release (its undo carries the same push): equal.
    expect(compareReleases(push(T, "e", "shop-aaaa"), first)).toBe(0);
  });

  it("pushed in the same second: the release started later wins, as the trigger takes the later delivery", () => {
    // The coordinator's start time (ms) tells the deliveries apart; the ids no longer matter.
    const first = { ...push(T, "9a2d4c11"), releasedAt: T + 200 };
    const later = { ...push(T, "0f1e9b6c"), releasedAt: T + 350 };
    expect(compareReleases(first, later)).toBeLessThan(0);
    expect(compareReleases(later, first)).toBeGreaterThan(0);
    expect(olderReleaseRefusal(first, later)).toMatch(
      /took this region \(the same second: it started at 2026-12-01T12:00:00\.200Z, before\): it does not take it back$/,
    );
    // A region's record from before the start time was carried: the ids decide.
    expect(compareReleases(first, push(T, "0f1e9b6c"))).toBeGreaterThan(0);
  });

  it("compares ids by code unit, not by locale", () => {
    // "Z" (0x5a) sorts before "a" (0x61) in code units; a locale collation would put "a" first.
    expect(compareReleases(push(T, "Z"), push(T, "a"))).toBeLessThan(0);
  });

  it("refuses an older release the region of a newer one, with a message naming both pushes", () => {
    const older = push(T, "older", "shop-111111111111111111111111-g1");
    const newer = push(T + 60_000, "newer", "shop-222222222222222222222222-g1");
    const refusal = olderReleaseRefusal(older, newer);
    expect(refusal).toBe(
      "release shop-111111111111111111111111-g1 (pushed 2026-12-01T12:00:00.000Z) is older than release " +
        "shop-222222222222222222222222-g1 (pushed 2026-12-01T12:01:00.000Z), which took this region: it does not take it back",
    );
    expect(olderReleaseRefusal(newer, older)).toBeUndefined();
  });

  it("lets the same release through, and names the tie-break when the times are equal", () => {
    const r = push(T, "e", "shop-aaaa");
    expect(olderReleaseRefusal(r, { ...r })).toBeUndefined();
    expect(olderReleaseRefusal(push(T, "a"), push(T, "b"))).toMatch(
      /took this region \(the same second: its event id "a" sorts before "b"\): it does not take it back$/,
    );
    expect(olderReleaseRefusal(push(T, "e", "shop-aaaa"), push(T, "e", "shop-bbbb"))).toMatch(
      /\(the same push: its execution name sorts first\)/,
    );
  });

  it("refuses nothing when no release is recorded (the region's first, or an item from before the rule)", () => {
    expect(olderReleaseRefusal(push(T, "a"), null)).toBeUndefined();
  });
});
