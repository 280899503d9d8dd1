import { describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "../../../functions/clock.ts";
import { InProcessTimer, type TimerFiring, TimerRunawayError } from "../../../functions/timer/index.ts";

const T0 = 1_000_000;

/** `Promise.withResolvers` is Node 22+; this runs on Node 20. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function virtual() {
  const clock = new ManualClock(T0);
  const fired: Array<{ key: string; now: number; payload: unknown }> = [];
  const timer = new InProcessTimer({
    clock,
    onFire: (firing) => {
      fired.push({ key: firing.key, now: clock.now(), payload: firing.payload });
    },
  });
  return { clock, timer, fired };
}

describe("InProcessTimer in virtual time", () => {
  it("fires due callbacks in time order (ties in scheduling order) with the clock at each due time", async () => {
    const { clock, timer, fired } = virtual();
    await timer.schedule({ at: T0 + 300, key: "c", payload: 3 });
    await timer.schedule({ at: T0 + 100, key: "a", payload: 1 });
    await timer.schedule({ at: T0 + 300, key: "d", payload: 4 });
    await timer.schedule({ at: T0 + 200, key: "b", payload: 2 });
    await timer.schedule({ at: T0 + 900, key: "later", payload: 9 });

    expect(await timer.advanceTo(T0 + 500)).toBe(4);
    expect(fired).toEqual([
      { key: "a", now: T0 + 100, payload: 1 },
      { key: "b", now: T0 + 200, payload: 2 },
      { key: "c", now: T0 + 300, payload: 3 },
      { key: "d", now: T0 + 300, payload: 4 },
    ]);
    expect(clock.now()).toBe(T0 + 500);
    expect(timer.pending().map((f) => f.key)).toEqual(["later"]);
    expect(timer.nextDueAt()).toBe(T0 + 900);
  });

  it("runUntilIdle also fires what the callbacks schedule (an analysis ticking every minute)", async () => {
    const clock = new ManualClock(T0);
    const ticks: number[] = [];
    const timer: InProcessTimer = new InProcessTimer({
      clock,
      onFire: async (firing: TimerFiring) => {
        const n = firing.payload as number;
        ticks.push(clock.now());
        if (n < 4) await timer.schedule({ at: clock.now() + 60_000, key: `tick-${n + 1}`, payload: n + 1 });
      },
    });
    await timer.schedule({ at: T0 + 60_000, key: "tick-1", payload: 1 });
    expect(await timer.runUntilIdle()).toBe(4);
    expect(ticks).toEqual([1, 2, 3, 4].map((i) => T0 + i * 60_000));
    expect(timer.nextDueAt()).toBeUndefined();
  });

  it("ignores a duplicate key while pending and honours cancel", async () => {
    const { timer, fired } = virtual();
    expect((await timer.schedule({ at: T0 + 10, key: "k", payload: "first" })).created).toBe(true);
    expect((await timer.schedule({ at: T0 + 5, key: "k", payload: "second" })).created).toBe(false);
    await timer.schedule({ at: T0 + 20, key: "gone", payload: null });
    await timer.cancel("gone");
    await timer.cancel("never-scheduled");
    await timer.runUntilIdle();
    expect(fired.map((f) => [f.key, f.payload])).toEqual([["k", "first"]]);
    // Once fired, the key can be used again.
    expect((await timer.schedule({ at: T0 + 30, key: "k", payload: "again" })).created).toBe(true);
  });

  it("fires a past-due callback at the current time without moving the clock back", async () => {
    const { clock, timer, fired } = virtual();
    await timer.schedule({ at: T0 - 50, key: "overdue", payload: null });
    await timer.advanceTo(T0);
    expect(fired).toEqual([{ key: "overdue", now: T0, payload: null }]);
    expect(clock.now()).toBe(T0);
  });

  it("stops a handler that reschedules forever with TimerRunawayError", async () => {
    const clock = new ManualClock(T0);
    const timer: InProcessTimer = new InProcessTimer({
      clock,
      onFire: async () => {
        await timer.schedule({ at: clock.now() + 1, key: `k-${clock.now()}`, payload: null });
      },
    });
    await timer.schedule({ at: T0, key: "start", payload: null });
    await expect(timer.runUntilIdle({ maxFirings: 50 })).rejects.toBeInstanceOf(TimerRunawayError);
  });

  it("propagates a handler's error to the caller in virtual time", async () => {
    const timer = new InProcessTimer({
      clock: new ManualClock(T0),
      onFire: () => {
        throw new Error("boom");
      },
    });
    await timer.schedule({ at: T0 + 1, key: "k", payload: null });
    await expect(timer.runUntilIdle()).rejects.toThrow("boom");
  });

  it("refuses virtual-time driving with a clock it cannot move", async () => {
    const timer = new InProcessTimer({ clock: systemClock, onFire: () => {} });
    await expect(timer.advanceTo(Date.now() + 1000)).rejects.toThrow(/ManualClock/);
  });

  it("does not share the payload object with the scheduler", async () => {
    const { timer, fired } = virtual();
    const payload = { n: 1 };
    await timer.schedule({ at: T0 + 1, key: "k", payload });
    payload.n = 2;
    await timer.runUntilIdle();
    expect(fired[0]?.payload).toEqual({ n: 1 });
  });
});

describe("InProcessTimer in real time", () => {
  it("wakes itself up for due callbacks once started, in order", async () => {
    const keys: string[] = [];
    const done = deferred();
    const timer = new InProcessTimer({
      clock: systemClock,
      onFire: (firing) => {
        keys.push(firing.key);
        if (keys.length === 2) done.resolve();
      },
    });
    timer.start();
    const now = Date.now();
    await timer.schedule({ at: now + 20, key: "second", payload: null });
    await timer.schedule({ at: now + 5, key: "first", payload: null });
    await done.promise;
    timer.stop();
    expect(keys).toEqual(["first", "second"]);
    expect(timer.pending()).toEqual([]);
  });

  it("reports handler errors through onError and keeps going", async () => {
    const errors: string[] = [];
    const done = deferred();
    const timer = new InProcessTimer({
      clock: systemClock,
      onFire: (firing) => {
        if (firing.key === "bad") throw new Error("bad handler");
        done.resolve();
      },
      onError: (error, firing) => errors.push(`${firing.key}: ${(error as Error).message}`),
    });
    timer.start();
    await timer.schedule({ at: Date.now(), key: "bad", payload: null });
    await timer.schedule({ at: Date.now() + 5, key: "good", payload: null });
    await done.promise;
    timer.stop();
    expect(errors).toEqual(["bad: bad handler"]);
  });
});
