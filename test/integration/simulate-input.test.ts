import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { run } from "../support/cli.ts";

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
  }, 120_000);

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

  it("refuses a file past the loader's 1 MiB limit quickly, with the limit in the message", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simulate-input-"));
    const big = join(dir, "big.yaml");
    writeFileSync(big, `# ${"x".repeat(2 * 1024 * 1024)}\n`);
    const started = Date.now();
    const result = await run("simulate", big);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.code).toBe(2);
    expect(result.err).toContain(big);
    expect(result.err).toContain("1,048,576 bytes a rollout spec may have");
  });

  it("refuses work past the budget of simulated requests, and too many plans, naming the figures", async () => {
    const started = Date.now();
    const huge = await run("simulate", ...SEED, "--rps", "100000", "--duration", "24h");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(huge.code).toBe(2);
    expect(lines(huge.err)).toHaveLength(1);
    expect(huge.err).toContain("8,640,000,000");
    expect(huge.err).toContain("30,000,000");
    const plans = Array.from({ length: 21 }, () => ["--plan", "100"]).flat();
    const many = await run("simulate", ...SEED, ...plans, "--duration", "1s");
    expect(many.code).toBe(2);
    expect(many.err).toContain("21 plans");
    expect(many.err).toContain("at most 20");
  });
});
