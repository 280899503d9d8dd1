import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";

/** Input `rollouts simulate` must refuse with exit 2 and a line naming what is wrong, before running anything. */
const SEED = ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"];
const lines = (text: string) => text.trim().split("\n");

describe("rollouts simulate refuses bad input", () => {
  it("a plan whose compiled workflow is past Step Functions' definition size: exit 2, one line", async () => {
    const plan = `5,${Array.from({ length: 3000 }, () => "analysis").join(",")}`;
    const result = await run("simulate", ...SEED, "--plan", plan, "--duration", "1s");
    expect(result.code).toBe(2);
    expect(lines(result.err)).toHaveLength(1);
    expect(result.err).toMatch(/definition/i);
    expect(result.err).not.toMatch(/\n\s+at /);
  });

  it("a YAML alias bomb: exit 2, one line naming the user's file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simulate-input-"));
    const bomb = join(dir, "bomb.yaml");
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      const name = String.fromCharCode(97 + i);
      levels.push(`${name}: &${name} [${Array.from({ length: 10 }, () => `*${prev}`).join(", ")}]`);
    }
    writeFileSync(bomb, `${levels.join("\n")}\n`);
    const result = await run("simulate", bomb);
    expect(result.code).toBe(2);
    expect(result.err).toContain(`${bomb}: document 1`);
    expect(result.err).toMatch(/aliases expand too much|values once its aliases are expanded/);
    expect(lines(result.err)).toHaveLength(1);
  });

  it("names the user's file, not a rewritten copy, when the rollout's template is missing", async () => {
    const result = await run("simulate", "examples/rollout.yaml");
    expect(result.code).toBe(2);
    expect(result.err).toContain("examples/rollout.yaml");
    expect(result.err).not.toContain("check-0.yaml");
    expect(result.err).not.toContain("sfn-rollouts-simulate-");
  });

  it("refuses a file past the loader's 1 MiB limit without reading it whole, with the limit in the message", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simulate-input-"));
    const big = join(dir, "big.yaml");
    writeFileSync(big, `# ${"x".repeat(2 * 1024 * 1024)}\n`);
    const result = await run("simulate", big);
    expect(result.code).toBe(2);
    // "more than", not the file's size: the read stopped at the limit, before the YAML parser and
    // before anything was simulated.
    expect(lines(result.err)).toEqual([
      expect.stringContaining(
        `${big}: the file is more than the 1,048,576 bytes a rollout spec may have: give only the rollout and its templates`,
      ),
    ]);
    expect(result.out).toBe("");
  });

  it("refuses work past the budget of simulated requests, and too many plans, naming the figures", async () => {
    // The budget is checked before any request is simulated: the refusal is the budget's own
    // sentence, with the work counted from the options, and no row. A run that started the 8.64
    // billion requests instead would not end before the test's timeout.
    const huge = await run("simulate", ...SEED, "--rps", "100000", "--duration", "24h");
    expect(huge.code).toBe(2);
    expect(lines(huge.err)).toEqual([
      "100,000 rps × 86,400 s × 1 plan = 8,640,000,000 simulated requests, more than the 30,000,000 one run sends: lower --rps, --duration or the number of plans",
    ]);
    expect(huge.out).toBe("");
    const plans = Array.from({ length: 21 }, () => ["--plan", "100"]).flat();
    const many = await run("simulate", ...SEED, ...plans, "--duration", "1s");
    expect(many.code).toBe(2);
    expect(many.err).toContain("21 plans");
    expect(many.err).toContain("at most 20");
  });
});
