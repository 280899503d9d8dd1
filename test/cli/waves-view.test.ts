import { describe, expect, it } from "vitest";
import { poll } from "../../cli/commands/operate-actions.ts";
import { type WavesReading, WavesRefresh, wavesJson, wavesText } from "../../cli/commands/waves-view.ts";
import { newRolloutItem, type RolloutItem } from "../../functions/store/schema.ts";

/**
 * How `rollouts get --watch` keeps the waves fresh: every region read on the first frame, when
 * this region's frame changes, and every few seconds; the frames in between reuse the reading.
 */

const item = (): RolloutItem => ({
  ...newRolloutItem("shop", 0),
  version: 1,
  updatedAt: 0,
  stepLabels: ["eu/50%", "eu/pause: 1m", "eu/100%"],
  stepCount: 3,
});

const reading: WavesReading = {
  found: {
    coordinatorArn: "arn:aws:states:eu-west-1:111111111111:stateMachine:shop-waves",
    latest: { name: "shop-1-g1", status: "RUNNING" },
    rows: [
      {
        pass: "us",
        account: "222222222222",
        location: { region: "us-east-1", table: "" },
        problem: "cannot read account 222222222222 with these credentials",
      },
    ],
  },
};

describe("WavesRefresh (the waves of a watch)", () => {
  it("reads on the first frame, when the frame changes and every 5 s; reuses the reading in between", async () => {
    let now = 0;
    const reads: number[] = [];
    const refresh = new WavesRefresh(
      async () => {
        reads.push(now);
        return reading;
      },
      { now: () => now },
    );
    // A tick every second for 12 s; this region's frame changes at 2.5 s.
    for (let tick = 0; tick <= 12; tick++) {
      now = tick * 1000;
      const key = now < 2500 ? "paused" : "progressing";
      expect(await refresh.get(item(), key)).toBe(reading);
    }
    // Read at 0, at 3 (the frame changed), then 5 s after each reading: 8; 13 ticks, 3 reads.
    expect(reads).toEqual([0, 3000, 8000]);
    expect(refresh.reads).toBe(3);
  });

  it("a reading that throws is a problem in the section, and the next one tries again", async () => {
    let now = 0;
    let fail = true;
    const refresh = new WavesRefresh(
      async () => {
        if (fail) throw new Error("socket hang up");
        return reading;
      },
      { now: () => now, everyMs: 5000 },
    );
    const failed = await refresh.get(item(), "a");
    expect(failed).toEqual({ problem: "cannot read the release: socket hang up" });
    expect(wavesText(failed)).toBe("\nWaves:\n  cannot read the release: socket hang up\n");
    expect(wavesJson(failed)).toEqual({
      coordinatorArn: null,
      release: null,
      passes: [],
      problem: "cannot read the release: socket hang up",
    });
    fail = false;
    now = 5000;
    expect(await refresh.get(item(), "a")).toBe(reading);
  });

  it("driven by the watch loop: a frame is drawn when only the waves changed", async () => {
    let now = 0;
    let status = "RUNNING";
    const refresh = new WavesRefresh(
      async () => ({ found: { ...reading.found, latest: { name: "shop-1-g1", status } } }) as WavesReading,
      { now: () => now },
    );
    const shown: string[] = [];
    await poll(
      async () => refresh.get(item(), "same frame"),
      (r) => wavesText(r),
      (text) => void shown.push(text),
      () => false,
      {
        intervalMs: 1000,
        maxFrames: 8,
        sleep: async (ms) => {
          now += ms;
          if (now === 2000) status = "SUCCEEDED";
        },
      },
    );
    // Frames at 0..7 s: the release's end (at 2 s) shows at the 5 s reading, not before.
    expect(refresh.reads).toBe(2);
    expect(shown).toHaveLength(2);
    expect(shown[0]).toContain("newest release shop-1-g1: RUNNING");
    expect(shown[1]).toContain("newest release shop-1-g1: SUCCEEDED");
    // The pass the credentials cannot read is a row saying why, in the text and the JSON.
    expect(shown[1]).toMatch(/us\s+us-east-1\s+\? Unknown\s+.*cannot read account 222222222222/);
    expect(wavesJson(reading)?.passes).toEqual([
      {
        pass: "us",
        region: "us-east-1",
        account: "222222222222",
        table: null,
        phase: null,
        step: null,
        stepCount: null,
        stage: null,
        weight: null,
        stable: null,
        canary: null,
        message: null,
        problem: "cannot read account 222222222222 with these credentials",
      },
    ]);
  });
});
