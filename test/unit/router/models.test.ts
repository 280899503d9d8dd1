import { describe, expect, it } from "vitest";
import { makeDataset, quality } from "../../../local/demo/model.ts";
import { MODEL_VERSIONS } from "../../../local/demo/model-rollout.ts";

/** The demo's models, as docs/models.md describes them (accuracy and agreement with v1 on 5,000 examples). */
describe("the demo's models", () => {
  const data = makeDataset(7, 5000);
  it.each([
    ["v1", 0.97, 1],
    ["v2", 0.948, 0.976],
    ["v3", 0.882, 0.903],
  ])("%s is %f accurate and agrees with v1 on %f", (version, accuracy, agreement) => {
    const model = MODEL_VERSIONS.find((m) => m.version === version);
    const q = quality(model?.weights ?? [0, 0, 0], data);
    expect(q.accuracy).toBeCloseTo(accuracy, 3);
    expect(q.agreement).toBeCloseTo(agreement, 3);
  });

  it("v3 passes a 15% disagreement limit yet is more than 5 points less accurate than v1", () => {
    const [v1, , v3] = MODEL_VERSIONS.map((m) => quality(m.weights, data));
    expect(1 - (v3?.agreement ?? 0)).toBeLessThan(0.15);
    expect((v1?.accuracy ?? 0) - (v3?.accuracy ?? 0)).toBeGreaterThan(0.05);
  });
});
