import { direct, itemOf, ROLLOUT, retried, startRevision } from "@sfn-rollouts/test-support/direct-workflow";
import { describe, expect, it } from "vitest";
import type { ModelRef, ModelRegistry } from "../../../functions/registry/port.ts";
import type { RegistrySettings } from "../../../functions/registry/settings.ts";
import { abort } from "../../../functions/workflow/abort.ts";
import type { WorkflowContext } from "../../../functions/workflow/payloads.ts";
import { promote } from "../../../functions/workflow/promote.ts";
import { setWeight } from "../../../functions/workflow/set-weight.ts";

/**
 * A release's registry update is one of its step's side effects: written with the state, made
 * after it, made again only while it has not succeeded. A registry that fails once must not lose
 * the update, and a retry must not repeat what already happened (the event, the rollback).
 */

const TARGET = { type: "fake", mlflow: { trackingUri: "http://mlflow:5000", model: "ranker" } };
const base = (context: WorkflowContext) => ({ context, rollout: ROLLOUT, target: TARGET });

class FlakyRegistry implements ModelRegistry {
  readonly calls: string[] = [];
  failures = 0;
  settings: RegistrySettings[] = [];
  async promoted(model: ModelRef): Promise<string> {
    return this.#record(`promoted ${model.version}`);
  }
  async rolledBack(model: ModelRef, reason: string): Promise<string> {
    return this.#record(`rolled-back ${model.version}: ${reason}`);
  }
  async #record(call: string): Promise<string> {
    this.calls.push(call);
    if (this.failures > 0) {
      this.failures--;
      throw new Error("registry unreachable");
    }
    return call;
  }
}

function setup() {
  const d = direct();
  const registry = new FlakyRegistry();
  d.deps.registryFor = (settings) => {
    registry.settings.push(settings);
    return registry;
  };
  return { d, registry };
}

describe("the registry update of a release", () => {
  it("records the promoted version once; a registry that failed is called again by the retry, and nothing else is", async () => {
    const { d, registry } = setup();
    const r1 = await startRevision(d, 1);
    registry.failures = 1;
    await retried(() => promote(d.deps, { ...base(r1), scaleDownDelaySeconds: 0 }));
    expect(registry.calls).toEqual(["promoted 1", "promoted 1"]);
    expect(registry.settings[0]).toEqual({
      type: "mlflow",
      trackingUri: "http://mlflow:5000",
      model: "ranker",
      alias: "champion",
    });
    expect(d.events.types().filter((t) => t !== "RolloutUpdated")).toEqual(["RolloutCompleted"]);
    expect(d.target.calls.filter((c) => c === "promote")).toHaveLength(1);
    const item = await itemOf(d);
    expect(item.effects.pending).toEqual([]);
    expect(item.effects.done).toContain("promote/registry/promoted");
    // A promote run again after it all succeeded touches the registry no more.
    await promote(d.deps, { ...base(r1), scaleDownDelaySeconds: 0 });
    expect(registry.calls).toHaveLength(2);
  });

  it("tags the rolled-back candidate with the reason, once, and records nothing for a promotion that did not happen", async () => {
    const { d, registry } = setup();
    const r1 = await startRevision(d, 1);
    await promote(d.deps, { ...base(r1), scaleDownDelaySeconds: 0 });
    await d.timer.runUntilIdle();
    const r2 = await startRevision(d, 2);
    await setWeight(d.deps, { ...base(r2), stepIndex: 0, step: { kind: "setWeight", weight: 25 } });
    registry.calls.length = 0;
    registry.failures = 2;
    await retried(() =>
      abort(d.deps, {
        ...base(r2),
        error: { Error: "AnalysisRunFailed", Cause: "analysis model-quality failed: accuracy 0.63 < 0.95" },
        onFailure: "rollback",
        abortScaleDownDelaySeconds: 30,
      }),
    );
    expect(registry.calls).toHaveLength(3);
    expect(new Set(registry.calls).size).toBe(1);
    expect(registry.calls[0]).toMatch(/^rolled-back 2: .*accuracy 0.63 < 0.95/);
    expect((await itemOf(d)).rollbacks).toHaveLength(1);
    expect(d.events.types().filter((t) => t === "RolloutAborted")).toHaveLength(1);
  });

  it("makes no registry call when the target names no registry", async () => {
    const { d, registry } = setup();
    const r1 = await startRevision(d, 1);
    await promote(d.deps, {
      context: r1,
      rollout: ROLLOUT,
      target: { type: "fake" },
      scaleDownDelaySeconds: 0,
    });
    expect(registry.calls).toEqual([]);
  });
});
