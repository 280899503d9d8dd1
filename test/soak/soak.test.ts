import { checkSoak, runSoak, type SoakRun, soakSummary } from "@sfn-rollouts/test-support/soak";
import { FAULT_KINDS, type FaultKind, parseFaultKinds } from "@sfn-rollouts/test-support/soak-faults";
import { afterAll, describe, expect, it } from "vitest";

/** Every fault kind the soak injects. */
const FAULTS: FaultKind[] = [...FAULT_KINDS];

describe("soak: 20 rollouts at once with faults at 5% per call", () => {
  let run: SoakRun | undefined;
  afterAll(async () => run?.close());

  it("ends every rollout as its script calls for, with nothing left running or waiting", async () => {
    run = await runSoak({ count: 20, rate: 0.05, faults: FAULTS, seed: 7 });
    expect(await checkSoak(run)).toEqual([]);
    // The faults were really there: every enabled kind that has a place in 20 rollouts was injected.
    const kinds = new Set(run.plan.injected.map((f) => f.kind));
    expect([...kinds].sort()).toEqual(
      expect.arrayContaining(["crash-after", "race", "throttle-dynamodb", "throttle-sfn", "timer-duplicate"]),
    );
    expect(run.plan.injected.length).toBeGreaterThan(50);
  });

  it("repeats itself for a seed: each rollout meets the same faults and ends the same way", async () => {
    if (run === undefined) throw new Error("the soak did not run");
    const first = await soakSummary(run);
    const again = await runSoak({ count: 20, rate: 0.05, faults: FAULTS, seed: 7 });
    try {
      expect(await soakSummary(again)).toEqual(first);
    } finally {
      await again.close();
    }
    // The runs compared met faults: the lines name them.
    expect(first.join("\n")).toMatch(/faults \S/);
  });

  it("reports each difference when a rollout does not end as its script says", async () => {
    if (run === undefined) throw new Error("the soak did not run");
    const victim = run.rollouts.find((r) => r.script === "good");
    if (victim === undefined) throw new Error("no good rollout");
    victim.router.canary = 30;
    victim.router.stable = "v1";
    const differences = await checkSoak(run);
    expect(differences).toEqual([
      `${victim.name} (good): traffic's stable side runs v1, expected v2`,
      `${victim.name} (good): 30% of traffic still on the candidate`,
    ]);
  });

  it("refuses an unknown fault kind by name", () => {
    expect(() => parseFaultKinds("throttle-sfn,lightning")).toThrow(/unknown fault kind "lightning"/);
    expect(parseFaultKinds("all")).toEqual([...FAULT_KINDS]);
  });
});
