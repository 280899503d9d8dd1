import { spawnSync } from "node:child_process";
import { fuzz } from "@sfn-rollouts/test-support/spec-fuzz";
import { describe, expect, it } from "vitest";

/**
 * The loader against hostile input (`test/support/spec-fuzz.ts`): every input loads or is refused
 * with a SpecError — never another exception —, what compiles is valid ASL, and an input past the
 * loader's token budget is refused. A failure names the seed, the case and a file holding the
 * input. `FUZZ_SEED` and `FUZZ_RUNS` set the seed and the number of cases; the full tier runs
 * 10,000 (`fuzz-full.test.ts`).
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20_260_301);
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

describe("fuzzing the loader with mutated examples", () => {
  it(`every input loads or is refused with a SpecError, and what compiles is valid ASL (seed ${SEED}, ${RUNS} cases)`, () => {
    const outcomes = fuzz(SEED, RUNS);
    // Both answers occur: the mutations are neither all harmless nor all fatal.
    expect(outcomes.loaded).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(RUNS / 4);
  }, 180_000);
});

/**
 * A dry-run metric name is a regular expression, as in Argo (which matches it with Go's RE2). A
 * nested quantifier against a long name backtracks exponentially in JavaScript's engine; with an
 * RE2 engine it is linear. The loader runs in a child process so that a hang fails the test at
 * its bound instead of stalling the suite. The template has a metric the pattern matches (`aaaa`)
 * beside the one it does not, so the rule matches something, as Argo requires of a dry-run rule.
 */
describe("a ReDoS-style dryRun pattern", () => {
  const load = (other: string, timeout: number) => {
    const rollout = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: redos}
spec:
  template: {spec: {containers: [{name: app, image: "app:2"}]}}
  strategy:
    canary:
      steps:
        - analysis:
            templates: [{templateName: t}]
            dryRun: [{metricName: "^(a+)+$"}]
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  metrics:
    - name: aaaa
      provider: {prometheus: {address: "http://p:9090", query: up}}
    - name: "${other}"
      provider: {prometheus: {address: "http://p:9090", query: up}}
`;
    const script = `
      import { parseSources } from "./statemachine/index.ts";
      const loaded = parseSources([{ file: "redos.yaml", text: ${JSON.stringify(rollout)} }]);
      const metrics = loaded.rollouts[0].steps[0].analysis.templates[0].metrics;
      process.stdout.write(JSON.stringify(metrics.map((m) => [m.name, m.dryRun])));
    `;
    const start = Date.now();
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: process.cwd(),
      encoding: "utf8",
      timeout,
      killSignal: "SIGKILL",
    });
    return { child, elapsed: Date.now() - start };
  };

  it("is matched as Argo matches it: the name it matches is dry-run, the one it does not is not", () => {
    const { child } = load("aaaa!", 15_000);
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([
      ["aaaa", true],
      ["aaaa!", false],
    ]);
  }, 20_000);

  // A backtracking engine needs about 2^40 steps for this name (hours); RE2 needs microseconds.
  // The child's 60 s bound sits between the two by orders of magnitude either way, so a loaded
  // machine cannot fail it by chance (test/statemachine/re2.test.ts checks that RE2 is the engine).
  it("does not hang the loader: ^(a+)+$ against 'a' × 40 + '!' loads", () => {
    const name = `${"a".repeat(40)}!`;
    const { child, elapsed } = load(name, 60_000);
    expect(child.signal, `the loader was killed after ${elapsed} ms: it hung on the pattern`).toBeNull();
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([
      ["aaaa", true],
      [name, false],
    ]);
  }, 90_000);
});
