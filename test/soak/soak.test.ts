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
      expect.arrayContaining([
        "crash-after",
        "race",
        "sagemaker-5xx",
        "throttle-dynamodb",
        "throttle-sagemaker",
        "throttle-sfn",
        "timer-duplicate",
      ]),
    );
    // The model rollouts met SageMaker's faults in their own calls.
    const models = new Set(run.rollouts.filter((r) => r.script.startsWith("model")).map((r) => r.name));
    expect(models.size).toBeGreaterThanOrEqual(4);
    const sagemakerFaults = run.plan.injected.filter((f) => f.kind.includes("sagemaker"));
    expect(sagemakerFaults.some((f) => models.has(/svc-\d{4}/.exec(f.where)?.[0] ?? ""))).toBe(true);
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

  it("reports a model rollout whose endpoint does not serve the stable model alone", async () => {
    if (run === undefined) throw new Error("the soak did not run");
    const victim = run.rollouts.find((r) => r.script === "model");
    if (victim === undefined) throw new Error("no model rollout");
    const sagemaker = run.runtime.sagemaker;
    const [variant] = sagemaker.describeEndpoint(victim.name).variants;
    if (variant === undefined) throw new Error("no production variant");
    sagemaker.updateWeights({
      EndpointName: victim.name,
      DesiredWeightsAndCapacities: [{ VariantName: variant.VariantName, DesiredWeight: 0 }],
    });
    const differences = (await checkSoak(run)).filter((d) => d.startsWith(`${victim.name} `));
    expect(differences).toEqual([
      `${victim.name} (model): endpoint Updating, expected InService`,
      `${victim.name} (model): an endpoint update is still pending`,
      `${victim.name} (model): endpoint variants ${variant.VariantName} (v2) weight ${variant.CurrentWeight}/0, expected v2's model alone with all the weight`,
    ]);
  });

  it("refuses an unknown fault kind by name", () => {
    expect(() => parseFaultKinds("throttle-sfn,lightning")).toThrow(/unknown fault kind "lightning"/);
    expect(parseFaultKinds("all")).toEqual([...FAULT_KINDS]);
  });
});
