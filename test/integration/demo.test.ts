import { describe, expect, it } from "vitest";
import { runDemo } from "../../local/demo/main.ts";
import { prometheusVersion } from "../../local/prometheus.ts";

/**
 * `npm start`, as a new user runs it: real time, real Prometheus (installed by .ci/run), the
 * synthesized stack in the embedded runtime. The outcome must be the one the README promises (its
 * wall time is measured by `npm run bench`, not asserted here).
 */
describe("the demo", () => {
  it("promotes v1 and v2, aborts v3 by its threshold and v4 by a judge, with the weight back at 0", async () => {
    expect(prometheusVersion(), "the prometheus binary (.ci/run installs it)").toBeDefined();
    const lines: string[] = [];
    const result = await runDemo({ print: (l) => lines.push(l) });
    expect(result.metrics).toBe("prometheus");
    expect(result.outcomes.map((o) => [o.tag, o.outcome, o.decidedBy, o.weight])).toEqual([
      ["v1", "Healthy", "-", 100],
      ["v2", "Healthy", "-", 100],
      ["v3", "Degraded", "metric success-rate", 0],
      ["v4", "Degraded", "gate errors", 0],
    ]);
    expect(result.outcomes[2]?.message).toBe(
      'RolloutAborted: Rollout aborted update to revision 3: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    );
    // v4 fails 3% of its checkouts where v2 fails 1%: the threshold (>= 95% success) passes it.
    // Failures are spread evenly, so a window's count may end one short: 7 of 799 reads 0.88%.
    expect(result.outcomes[3]?.message).toMatch(
      /^RolloutAborted: Rollout aborted update to revision 4: Gate "errors" rolled back: candidate [23]\.\d% vs stable (0\.[89]\d|1\.\d)% errors, p = \S+ < alpha 0\.05 \(sequential-rate, Bayes factor \S+, n = \d+\/\d+; alpha 0\.05 is the whole of the rollout's error budget 0\.05\)$/,
    );
    // v2 served real traffic and failed about 1% of it; v3 failed about half of what it served.
    const v2 = result.outcomes[1];
    expect(v2?.served).toBeGreaterThan(500);
    expect(Math.abs((v2?.failed ?? 0) * 100 - (v2?.served ?? 0))).toBeLessThanOrEqual(100);
    const v3 = result.outcomes[2];
    expect(v3?.failed).toBeGreaterThan(0);
    expect(Math.abs((v3?.failed ?? 0) * 2 - (v3?.served ?? 0))).toBeLessThanOrEqual(2);
    // Prometheus reads v3's success rate over a window whose edges may cut one request: 0.4995.
    const v3Reading = lines.join("\n").match(/measurement {12}success-rate = \[([\d.]+)\] Failed/)?.[1];
    expect(Number(v3Reading)).toBeCloseTo(0.5, 1);
    expect(lines.join("\n")).toMatch(
      /AnalysisRunSuccessful {2}analysis \(step 5\) \S+ Successful: Gate "errors" passed: /,
    );
    expect(result.ok).toBe(true);
  });
});
