import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { parsePlan } from "../../cli/simulate/plan.ts";
import { prometheusVersion } from "../../local/prometheus.ts";
import { startSimulatedPrometheus } from "../../local/simulate/prometheus.ts";
import { simulate } from "../../local/simulate/run.ts";

/**
 * `rollouts simulate` on the real workflow: the synthesized stack in the embedded runtime, in
 * virtual time, the templates' own PromQL against a real Prometheus (installed by .ci/run).
 */
const SEED = ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"];
const JUDGED = ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"];

/** Within `tolerance` of `expected`, relatively. */
const near = (actual: number, expected: number, tolerance = 0.1) =>
  Math.abs(actual - expected) <= tolerance * expected;

/** A binomial count of failures is within 4 standard deviations of n × p. */
const binomial = (failed: number, n: number, p: number) =>
  Math.abs(failed - n * p) <= 4 * Math.sqrt(n * p * (1 - p)) + 1;

describe("rollouts simulate", () => {
  it("reproduces the reference's four rows (seed 000): within 10%, or by r × w × t where the reference halves it", async () => {
    expect(prometheusVersion(), "the prometheus binary (.ci/run installs it)").toBeDefined();
    const rows = await simulate({
      files: SEED,
      plans: [
        undefined,
        parsePlan("100"),
        parsePlan("5%,analysis,25%,analysis,50%,analysis"),
        parsePlan("50%,pause=1m,100%"),
      ],
      rps: 100,
      errorRate: 0.3,
      seed: 0,
    });
    const [own, plain, small, paused] = rows;
    // The rollout's own steps: aborted by the first measurement, 5 s after 25% (initialDelay 5s).
    // 100 rps × 25% × 5 s = 125 requests; the reference reports 62 (2.5 s of them) and a 20.7%
    // share that counts 0.5 s at weight 0: docs/simulate.md explains both.
    expect(own).toMatchObject({
      plan: "25%,analysis,50%,pause=2s,analysis",
      outcome: "aborted",
      at: 5,
      newRequests: 125,
    });
    expect(own?.share).toBe(0.25);
    expect(binomial(own?.newErrors ?? -1, 125, 0.3)).toBe(true);
    expect(own?.message).toContain(
      'Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    );
    // A plain 100: promoted at once, everyone meets the bad version for 5 minutes.
    expect(plain).toMatchObject({ plan: "100%", outcome: "promoted", at: 0, share: 1 });
    expect(near(plain?.newRequests ?? 0, 30_050)).toBe(true);
    expect(near(plain?.newErrors ?? 0, 9_015)).toBe(true);
    expect(binomial(plain?.newErrors ?? -1, 30_000, 0.3)).toBe(true);
    // 5% first: aborted at 5 s after 100 × 5% × 5 = 25 requests (the reference: 12, half of them).
    expect(small).toMatchObject({ outcome: "aborted", at: 5, newRequests: 25, share: 0.05 });
    // 50%, a minute's pause, 100%: no analysis, so it is promoted after the minute.
    expect(paused).toMatchObject({ plan: "50%,pause=1m,100%", outcome: "promoted", at: 60 });
    expect(paused?.newRequests).toBe(60 * 50 + 240 * 100);
    expect(near(paused?.newRequests ?? 0, 28_550)).toBe(true);
    expect(near(paused?.newErrors ?? 0, 8_565)).toBe(true);
    expect(paused?.share).toBeCloseTo(0.9, 10);
    // What ran: the workflow's transitions and Lambdas, and the template's queries.
    expect(own?.counts.providerQueries).toBe(1);
    expect(own?.counts.rolloutTransitions).toBeGreaterThan(5);
    // The ticker is Express: its executions and their duration are billed (each in whole 100 ms
    // steps, at least one), no transitions.
    expect(own?.counts.tickerTransitions).toBe(0);
    expect(own?.counts.tickerExecutions).toBeGreaterThanOrEqual(own?.counts.ticks ?? 1);
    expect((own?.counts.tickerBilledMs ?? 0) % 100).toBe(0);
    expect(own?.counts.tickerBilledMs).toBeGreaterThanOrEqual(100 * (own?.counts.tickerExecutions ?? 1));
    expect(own?.counts.dynamoWriteUnits).toBeGreaterThan(0);
    expect(own?.cost.total).toBeGreaterThan(0);
    expect(own?.counts.byHandler).toMatchObject({ setWeight: 1, startAnalysis: 1, abort: 1 });
  });

  it("runs a judged plan: the sequential gate rolls a subtle regression back that the threshold would pass", async () => {
    const [row] = await simulate({
      files: JUDGED,
      rps: 100,
      errorRate: 0.03,
      baselineErrorRate: 0.01,
      seed: 0,
      durationSeconds: 600,
    });
    expect(row?.outcome).toBe("aborted");
    expect(row?.message).toMatch(
      /Gate "errors" rolled back: candidate \d+\.\d% errors within the 10\.0% ceiling; candidate \d+\.\d% vs stable \d+\.\d+% errors, p = \S+ < alpha 0\.025 /,
    );
    // Decided at a look (every 5 s from 5 s) at 25%, in the first minute: the candidate served 25
    // requests a second until then.
    expect((row?.at ?? 0) % 5).toBe(0);
    expect(row?.at).toBeGreaterThan(0);
    expect(row?.at).toBeLessThanOrEqual(60);
    expect(row?.newRequests).toBe((row?.at ?? 0) * 25);
  });

  it("stops a severe regression at the judges' first look, as early as the threshold, on the same draws", async () => {
    const options = { rps: 100, errorRate: 0.3, baselineErrorRate: 0.01, seed: 4, durationSeconds: 120 };
    const [threshold] = await simulate({ files: SEED, ...options });
    const [judged] = await simulate({ files: JUDGED, ...options });
    expect(threshold).toMatchObject({ outcome: "aborted", at: 5, newRequests: 125 });
    expect(judged).toMatchObject({ outcome: "aborted", at: 5, newRequests: 125 });
    // The same seed draws the same failures for the same requests: the judges let none more through.
    expect(judged?.newErrors).toBe(threshold?.newErrors);
    // The sequential test decided at its first look; the 10% ceiling agrees beside it.
    expect(judged?.message).toMatch(
      /Gate "errors" rolled back: candidate \d+\.\d% errors above the 10\.0% ceiling; candidate \d+\.\d% vs stable \d+\.\d+% errors, p = \S+ < alpha 0\.025 \(sequential-rate, /,
    );
  });

  it("is deterministic for a seed, and the seed changes the draws", async () => {
    const options = {
      files: SEED,
      plans: [parsePlan("50%,pause=20s,100%")],
      rps: 40,
      errorRate: 0.2,
      durationSeconds: 40,
      series: true,
    };
    const [a] = await simulate({ ...options, seed: 7 });
    const [b] = await simulate({ ...options, seed: 7 });
    const [c] = await simulate({ ...options, seed: 8 });
    // Everything but the Lambda time (measured on this machine, so the cost's last digits vary).
    const fixed = (row: typeof a) => ({
      ...row,
      cost: undefined,
      counts: { ...row?.counts, lambdaMs: undefined },
    });
    expect(fixed(a)).toEqual(fixed(b));
    expect(near(b?.cost.total ?? 0, a?.cost.total ?? 0, 0.25)).toBe(true);
    expect(a?.series).toHaveLength(40);
    expect(a?.series?.[0]).toMatchObject({ t: 0, weight: 50, share: 0.5, newRequests: 20, oldRequests: 20 });
    expect(a?.series?.[25]).toMatchObject({ t: 25, weight: 100, share: 1, newRequests: 40, oldRequests: 0 });
    expect(c?.newRequests).toBe(a?.newRequests);
    expect(c?.series?.map((s) => s.newErrors)).not.toEqual(a?.series?.map((s) => s.newErrors));
  });

  it("splits by whole pods with --replicas and lets pods start with --ready-delay", async () => {
    const { code, out, err } = await run(
      "simulate",
      ...SEED,
      "--plan",
      "10%,analysis",
      "--replicas",
      "3",
      "--ready-delay",
      "5",
      "--json",
    );
    expect(err).toBe("");
    expect(code).toBe(0);
    const [row] = JSON.parse(out).rows;
    // 10% of 3 replicas is one canary pod next to three stable ones (25%), serving from 5 s: the
    // first measurement (5 s) sees no canary traffic, an Error, which Argo retries after 10 s; the
    // retry (15 s) sees it fail.
    expect(row.series[0]).toMatchObject({ weight: 10, share: 0, newRequests: 0 });
    expect(row.series[5]).toMatchObject({ weight: 10, share: 0.25, newRequests: 25 });
    expect(row).toMatchObject({ outcome: "aborted", at: 15, newRequests: 250 });
  });

  it("evaluates a samples-provider template through the local proxy's recorder: aborts a bad version, promotes a good one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simulate-samples-"));
    const rollout = join(dir, "rollout.yaml");
    writeFileSync(
      rollout,
      `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: samples}
spec:
  replicas: 4
  selector: {matchLabels: {app: samples}}
  template:
    metadata: {labels: {app: samples}}
    spec: {containers: [{name: app, image: app:v2}]}
  strategy:
    canary:
      steps:
        - setWeight: 25
        - analysis: {templates: [{templateName: error-rate}]}
        - setWeight: 50
        - analysis: {templates: [{templateName: error-rate}]}
`,
    );
    const template = join(dir, "error-rate.yaml");
    writeFileSync(
      template,
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: error-rate}
spec:
  metrics:
    - name: error-rate
      interval: 3s
      count: 2
      initialDelay: 5s
      failureLimit: 0
      successCondition: result.candidate.requests > 0 && result.candidate.error_rate <= result.primary.error_rate + 0.05
      provider:
        # The router's address: the simulation points it at the local proxy's admin listener.
        samples: {address: "http://127.0.0.1:1", primary: stable, candidate: canary, window: 20s}
`,
    );
    const options = { files: [rollout, template], rps: 100, seed: 0, durationSeconds: 60 };
    const [bad] = await simulate({ ...options, errorRate: 0.3 });
    // The first measurement, 5 s after 25%, reads 4 s of the candidate's requests (the window
    // holds the current, still empty, second): about 30% errors against the stable's none.
    expect(bad).toMatchObject({ outcome: "aborted", at: 5, newRequests: 125, share: 0.25 });
    expect(bad?.message).toContain(
      'Metric "error-rate" assessed Failed due to failed (1) > failureLimit (0)',
    );
    expect(bad?.counts.byHandler).toMatchObject({ setWeight: 1, abort: 1 });
    // One GET /compare, counted as a provider query like a PromQL one.
    expect(bad?.counts.providerQueries).toBe(1);
    const [good] = await simulate({ ...options, errorRate: 0 });
    // Two passing measurements at 25% (5 s, 8 s), then 50% and two more (13 s, 16 s).
    expect(good).toMatchObject({ outcome: "promoted", at: 16, newErrors: 0 });
    expect(good?.newRequests).toBe(8 * 25 + 8 * 50 + 44 * 100);
    expect(good?.counts.providerQueries).toBe(4);
  });

  it("runs a blue/green rollout: nothing to the preview until the switch, then everyone; a failed post-promotion analysis switches back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simulate-bluegreen-"));
    const rollout = join(dir, "rollout.yaml");
    writeFileSync(
      rollout,
      `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: bluegreen}
spec:
  replicas: 3
  selector: {matchLabels: {app: bluegreen}}
  template:
    metadata: {labels: {app: bluegreen}}
    spec: {containers: [{name: app, image: app:v2}]}
  strategy:
    blueGreen:
      activeService: active
      previewService: preview
      autoPromotionSeconds: 10
      postPromotionAnalysis: {templates: [{templateName: error-rate}]}
`,
    );
    const template = join(dir, "error-rate.yaml");
    writeFileSync(
      template,
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: error-rate}
spec:
  metrics:
    - name: error-rate
      interval: 3s
      count: 2
      initialDelay: 5s
      failureLimit: 0
      successCondition: result.candidate.requests > 0 && result.candidate.error_rate <= 0.05
      provider:
        samples: {address: "http://127.0.0.1:1", primary: v1, candidate: v2, window: 5s}
`,
    );
    const options = { files: [rollout, template], rps: 100, seed: 0, durationSeconds: 60, series: true };
    const [bad] = await simulate({ ...options, errorRate: 0.3 });
    const switched = bad?.series?.findIndex((s) => s.weight === 100) ?? -1;
    // The preview gets no traffic for autoPromotionSeconds, then the active service switches.
    expect(switched).toBeGreaterThanOrEqual(10);
    expect(bad?.series?.slice(0, switched).every((s) => s.weight === 0 && s.newRequests === 0)).toBe(true);
    expect(bad?.series?.[switched]).toMatchObject({ share: 1, newRequests: 100, oldRequests: 0 });
    // The post-promotion analysis' first measurement, 5 s after the switch, fails: switched back.
    expect(bad).toMatchObject({ plan: "blueGreen", outcome: "aborted", at: switched + 5, newRequests: 500 });
    expect(bad?.message).toContain('Metric "error-rate" assessed Failed');
    const [good] = await simulate({ ...options, errorRate: 0 });
    expect(good).toMatchObject({ outcome: "promoted", newErrors: 0 });
    expect(good?.newRequests).toBe((60 - switched) * 100);
    // A blue/green rollout has no steps for --plan to replace.
    await expect(simulate({ ...options, errorRate: 0, plans: [parsePlan("100")] })).rejects.toThrow(
      "--plan replaces canary steps, and spec.strategy has no canary",
    );
  });

  it("rewrites a native spec's steps with --plan, its analysis block being the plan's analysis", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simulate-native-"));
    const native = (analysis: boolean) => `apiVersion: sfn-rollouts/v1
kind: Rollout
name: shop
image: shop:v2
steps: [1, 5, 25, 50, 100]
bake: 10m
approvalsBetween: ["25"]
${
  analysis
    ? `analysis:
  args: {prometheus: "https://prometheus.example"}
  templates:
    - name: success-rate
      args: [{name: prometheus}]
      metrics:
        - name: success-rate
          interval: 3s
          count: 2
          initialDelay: 5s
          failureLimit: 0
          successCondition: result[0] >= 0.95
          provider:
            prometheus:
              address: "{{args.prometheus}}"
              query: |
                sum(rate(http_requests_total{version="v2",code=~"2.."}[20s]))
                / sum(rate(http_requests_total{version="v2"}[20s]))
`
    : ""
}`;
    const file = join(dir, "native.yaml");
    writeFileSync(file, native(true));
    const rows = await simulate({
      files: [file],
      plans: [parsePlan("25%,analysis,50%,analysis"), parsePlan("50%,pause=1m,100%")],
      rps: 100,
      errorRate: 0.3,
      seed: 0,
      durationSeconds: 90,
    });
    const [analysed, paused] = rows;
    // The same figures as the Argo reference canary's first step: the plan replaced the bakes
    // (10 minutes) and the approval, and the analysis read the simulation's Prometheus.
    expect(analysed).toMatchObject({
      plan: "25%,analysis,50%,analysis",
      outcome: "aborted",
      at: 5,
      newRequests: 125,
    });
    expect(analysed?.message).toContain(
      'Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    );
    expect(paused).toMatchObject({ plan: "50%,pause=1m,100%", outcome: "promoted", at: 60 });
    expect(paused?.newRequests).toBe(60 * 50 + 30 * 100);
    const bare = join(dir, "bare.yaml");
    writeFileSync(bare, native(false));
    await expect(
      simulate({ files: [bare], plans: [parsePlan("25%,analysis")], rps: 100, errorRate: 0.3 }),
    ).rejects.toThrow("--plan has an analysis step, but the native spec has no analysis block");
  });

  it("refuses a provider it cannot feed, a bad plan and a bad flag with exit 2, naming them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simulate-test-"));
    const template = join(dir, "web.yaml");
    writeFileSync(
      template,
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: success-rate}
spec:
  args: [{name: version}]
  metrics:
    - name: success-rate
      successCondition: result >= 0.95
      provider: {web: {url: "http://127.0.0.1:1/rate?v={{args.version}}", jsonPath: "{$.rate}"}}
`,
    );
    const web = await run("simulate", "examples/rollout.yaml", template);
    expect(web.code).toBe(2);
    expect(web.err).toContain(
      "step 2: template success-rate, metric success-rate: provider web cannot be simulated",
    );
    expect(web.err).toContain("use a prometheus query or the samples provider");
    const plan = await run("simulate", ...SEED, "--plan", "25%,analysys");
    expect(plan.code).toBe(2);
    expect(plan.err).toContain('step 2 "analysys": expected a weight');
    const flag = await run("simulate", ...SEED, "--error-rate", "1.5");
    expect(flag.code).toBe(2);
    expect(flag.err).toContain('--error-rate must be a share between 0 and 1, got "1.5"');
    const missing = await run("simulate", "examples/nope.yaml");
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("examples/nope.yaml: cannot read the file: no such file");
    const delay = await run("simulate", ...SEED, "--ready-delay", "5");
    expect(delay.code).toBe(2);
    expect(delay.err).toContain("--ready-delay needs --replicas");
  });

  it("writes the samples a query needs before it runs, even for queries sent at once", async () => {
    const t = Date.parse("2026-01-01T00:00:00Z");
    const prometheus = await startSimulatedPrometheus({ now: () => t + 10_000 });
    try {
      // Enough series that the write takes longer than a query would.
      for (let s = 1; s <= 10; s++) {
        prometheus.append(
          Array.from({ length: 2000 }, (_, i) => ({
            labels: { __name__: "up_total", job: `x${i}` },
            samples: [{ value: s, timestampMs: t + s * 1000 }],
          })),
        );
      }
      const query = (q: string) =>
        fetch(`${prometheus.url}/api/v1/query`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ query: q }).toString(),
        }).then((r) => r.json() as Promise<{ data: { result: Array<{ value: [number, string] }> } }>);
      const answers = await Promise.all([
        query("count(up_total)"),
        query("count(up_total == 10)"),
        query("min(up_total)"),
      ]);
      expect(answers.map((a) => a.data.result[0]?.value[1])).toEqual(["2000", "2000", "10"]);
      expect(prometheus.counts).toEqual({ written: 20_000, queries: 3 });
    } finally {
      await prometheus.close();
    }
  });
});
