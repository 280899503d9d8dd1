import { fuzz } from "@sfn-rollouts/test-support/spec-fuzz";
import { describe, expect, it } from "vitest";

/** The spec fuzz of `fuzz.test.ts` at 10,000 cases, on another seed: the full tier's. */
describe("fuzzing the loader with 10,000 mutated examples", () => {
  it("every input loads or is refused with a SpecError, what compiles is valid ASL, and inputs past the token budget are refused", () => {
    const outcomes = fuzz(20_261_205, 10_000);
    expect(outcomes.loaded).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(2500);
    expect(outcomes.overBudget).toBeGreaterThan(0);
  }, 3_600_000);
});
