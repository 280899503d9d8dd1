import { describe, expect, it } from "vitest";
import { runDemo } from "../../local/demo/main.ts";
import { prometheusVersion } from "../../local/demo/prometheus.ts";

/**
 * `npm start`, as a new user runs it: real time, real Prometheus (installed by .ci/run), the
 * synthesized stack in the embedded runtime. The outcome must be the one the README promises (its
 * wall time is measured by `npm run bench`, not asserted here).
 */
describe("the demo", () => {
  it("promotes v1 and v2, aborts v3 at its first analysis with the weight back at 0", async () => {
    expect(prometheusVersion(), "the prometheus binary (.ci/run installs it)").toBeDefined();
    const lines: string[] = [];
    const result = await runDemo({ print: (l) => lines.push(l) });
    expect(result.metrics).toBe("prometheus");
    expect(result.outcomes.map((o) => [o.tag, o.outcome, o.weight])).toEqual([
      ["v1", "Healthy", 100],
      ["v2", "Healthy", 100],
      ["v3", "Degraded", 0],
    ]);
    expect(result.outcomes[2]?.message).toBe(
      'RolloutAborted: Rollout aborted update to revision 3: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    );
    // v2 served real traffic without failures; v3 failed about half of what it served.
    expect(result.outcomes[1]?.served).toBeGreaterThan(50);
    expect(result.outcomes[1]?.failed).toBe(0);
    const v3 = result.outcomes[2];
    expect(v3?.failed).toBeGreaterThan(0);
    expect(Math.abs((v3?.failed ?? 0) * 2 - (v3?.served ?? 0))).toBeLessThanOrEqual(2);
    expect(lines.join("\n")).toContain("measurement            success-rate = [0.5");
    expect(result.ok).toBe(true);
  }, 150_000);
});
