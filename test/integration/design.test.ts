import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { DEMO_RPS, DEMO_VERSIONS } from "../../local/demo/main.ts";
import { prometheusVersion } from "../../local/prometheus.ts";
import { simulate } from "../../local/simulate/run.ts";
import { SIMULATOR_METRICS } from "../../statemachine/design/input.ts";
import { thresholdsOf } from "../../statemachine/design/thresholds.ts";
import { loadRollout } from "../../statemachine/index.ts";

/**
 * `rollouts design` on the real workflow: the command as a user runs it (its output piped), for
 * the demo's traffic (800 rps, a good version failing 1%, the demo's threshold of 95% success as
 * the SLO) with an exposure budget; then its proposal simulated again, with another seed, against
 * the bad versions it was designed for and a good one. The budget it was given must hold.
 */

const BUDGET = 1000;
const GOOD = DEMO_VERSIONS.find(([v]) => v === "v2")?.[1] as number;
const SLO = { errorRate: 0.05, p95Ms: 300 };

function runCli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/rollouts.mjs", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

describe("rollouts design, simulated", () => {
  let design: { code: number | null; out: string; err: string };
  let file: string;

  beforeAll(async () => {
    expect(prometheusVersion(), "the prometheus binary (.ci/run installs it)").toBeDefined();
    design = await runCli([
      "design",
      "--rps",
      String(DEMO_RPS),
      "--slo-error-rate",
      String(SLO.errorRate),
      "--slo-p95",
      String(SLO.p95Ms),
      "--baseline-error-rate",
      String(GOOD),
      "--scrape-interval",
      "1s",
      "--exposure-budget",
      String(BUDGET),
      "--name",
      "shop",
    ]);
    file = join(mkdtempSync(join(tmpdir(), "design-")), "shop.yaml");
    writeFileSync(file, design.out);
  });

  it("proposes a Rollout and an AnalysisTemplate the loader reads, printing no progress line into a pipe", async () => {
    expect(design.code, design.err).toBe(0);
    expect(design.err).not.toContain("\r");
    expect(design.err).not.toContain("simulated");
    const { spec } = await loadRollout([file]);
    expect(spec.name).toBe("shop");
    expect(design.out).toMatch(/^# chosen: /m);
    // Its own simulation stayed within the budget.
    const exposure = Number(
      /a bad version serves at most ([\d,]+) requests/.exec(design.out)?.[1]?.replaceAll(",", ""),
    );
    expect(exposure).toBeGreaterThan(0);
    expect(exposure).toBeLessThanOrEqual(BUDGET);
  });

  it("stops a bad version at the SLO's breaking point within the budget it was given, and promotes a good one", async () => {
    const t = thresholdsOf({
      name: "shop",
      rps: DEMO_RPS,
      sloErrorRate: SLO.errorRate,
      sloP95Ms: SLO.p95Ms,
      baselineErrorRate: GOOD,
      replicas: 4,
      router: "alb",
      metrics: SIMULATOR_METRICS,
      exposureBudget: BUDGET,
      maxDurationSeconds: 3600,
      scrapeIntervalSeconds: 1,
    });
    const common = { files: [file], rps: DEMO_RPS, baselineErrorRate: GOOD, seed: 7, durationSeconds: 300 };
    const [errors] = await simulate({ ...common, errorRate: SLO.errorRate });
    const [latency] = await simulate({ ...common, errorRate: GOOD, latencyFactor: t.badLatencyFactor });
    const [good] = await simulate({ ...common, errorRate: GOOD, untilDecided: true });
    expect(errors).toMatchObject({ outcome: "aborted" });
    expect(errors?.message).toContain('Metric "error-ratio" assessed Failed');
    expect(errors?.newRequests).toBeLessThanOrEqual(BUDGET);
    expect(latency).toMatchObject({ outcome: "aborted" });
    expect(latency?.message).toContain('Metric "p95-latency" assessed Failed');
    expect(latency?.newRequests).toBeLessThanOrEqual(BUDGET);
    expect(good).toMatchObject({ outcome: "promoted" });
  });

  it("without a router, designs with the weights whole pods give, and its simulated exposure keeps to the budget", async () => {
    const { code, out, err } = await runCli([
      "design",
      "--rps",
      "100",
      "--slo-error-rate",
      "0.02",
      "--slo-p95",
      "400",
      "--router",
      "none",
      "--replicas",
      "5",
      "--scrape-interval",
      "5s",
      "--exposure-budget",
      "1000",
      "--json",
    ]);
    expect(code, err).toBe(0);
    const report = JSON.parse(out);
    // 5 replicas with a surge pod of 2: 1 of 5 is 20%, 3 of 6 is 50%.
    expect(report.chosen.steps.map((s: { weight: number; share: number }) => [s.weight, s.share])).toEqual([
      [20, 20],
      [50, 50],
    ]);
    for (const c of report.candidates) {
      if (c.verdict.accepted) expect(c.verdict.exposure).toBeLessThanOrEqual(1000);
    }
    expect(report.chosen.simulated.errors.outcome).toBe("aborted");
    expect(report.chosen.simulated.good.outcome).toBe("promoted");
  });
});
