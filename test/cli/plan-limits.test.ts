import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { MAX_STEPS } from "../../statemachine/limits.ts";

/** The reference rollout's head (name, replicas, pod template) with these steps. */
function rolloutWith(steps: string[]): string {
  const head = (readFileSync("examples/rollout.yaml", "utf8").split("---")[0] as string).split(
    "      steps:",
  )[0];
  return `${head}      steps:\n${steps.map((s) => `        - ${s}\n`).join("")}`;
}

function write(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "plan-limits-")), name);
  writeFileSync(file, text);
  return file;
}

const TEMPLATE = "examples/analysis-success-rate.yaml";

describe("rollouts plan says what rollouts compile would say", () => {
  it(`a rollout of more than ${MAX_STEPS} steps is refused by both, with the same words`, async () => {
    const steps = Array.from({ length: 10_000 }, (_, i) =>
      i % 2 ? "pause: {duration: 1s}" : `setWeight: ${1 + (i % 99)}`,
    );
    const file = write("many.yaml", rolloutWith(steps));
    const plan = await run("plan", file);
    const compile = await run("compile", file);
    expect(plan.code).toBe(2);
    expect(plan.out).toBe("");
    expect(plan.err).toMatch(/10,000 steps, more than the 1,000 a definition can hold/);
    expect(compile.code).toBe(2);
    expect(compile.err).toBe(plan.err);
  });

  it("a definition past Step Functions' size is refused by plan as by compile, with the same words", async () => {
    // Under the step limit, but each analysis step carries its template: 2 MB of definition.
    const steps = Array.from(
      { length: 600 },
      () => "analysis: {templates: [{templateName: success-rate}], args: [{name: version, value: v2}]}",
    );
    const file = write("big.yaml", rolloutWith(steps));
    const compile = await run("compile", file, TEMPLATE);
    expect(compile.code).toBe(2);
    expect(compile.err).toMatch(
      /the state machine definition would be [\d,]+ characters once deployed, more than Step Functions' 1,048,576/,
    );
    const plan = await run("plan", file, TEMPLATE);
    expect(plan.code).toBe(2);
    expect(plan.out).toBe("");
    expect(plan.err).toBe(compile.err);
  });
});

describe("rollouts plan on a file of many problems", () => {
  it("one analysis naming the same template 16,000 times is one problem", async () => {
    const refs = Array(16_000).fill("{templateName: success-rate}").join(", ");
    const file = write(
      "dup.yaml",
      rolloutWith([`analysis: {templates: [${refs}], args: [{name: version, value: v2}]}`]),
    );
    const { code, err } = await run("plan", file, TEMPLATE);
    expect(code).toBe(2);
    expect(err.trimEnd().split("\n")).toEqual([
      `${file}: document 1 (Rollout demo): spec.strategy.canary.steps[0].analysis.templates[0].templateName (step 1): AnalysisTemplate "success-rate" is named 16,000 times in this analysis: name each template once (metric names must be unique in one analysis)`,
    ]);
  });

  it("prints the first 20 problems and counts the rest", async () => {
    const steps = Array.from({ length: 35 }, (_, i) => `setWeight: ${200 + i}`);
    const file = write("bad.yaml", rolloutWith(steps));
    const { code, err } = await run("plan", file);
    expect(code).toBe(2);
    const lines = err.trimEnd().split("\n");
    expect(lines).toHaveLength(21);
    expect(lines.slice(0, 20).every((l) => l.startsWith(`${file}: `))).toBe(true);
    expect(lines[20]).toBe("… and 15 more problems");
  });
});
