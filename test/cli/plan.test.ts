import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import validator from "asl-validator";
import { describe, expect, it } from "vitest";

const SEED = ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"];

describe("rollouts plan", () => {
  it("prints one row per step with pods, share and the analysis in words", async () => {
    const { code, out, err } = await run("plan", ...SEED);
    expect(code).toBe(0);
    expect(err).toContain(
      "note: examples/rollout.yaml: document 2: skipped Service demo (not a rollout object)",
    );
    const lines = out.split("\n");
    expect(lines[0]).toMatch(
      /^rollout demo \(revision [0-9a-f]{10}\): canary, 4 replicas, whole pods behind one Service$/,
    );
    expect(lines[2]).toMatch(/^0\s+setWeight: 25\s+25%\s+1\s+3\s+25%$/);
    expect(out).toContain(
      "    success-rate: every 3s x2 after 5s; success when result[0] >= 0.95; failureLimit 0",
    );
    expect(lines.find((l) => l.startsWith("3 "))).toMatch(/pause: 2s\s+50%\s+2\s+2\s+50%/);
  });

  it("plans Argo's notification example; a subscription to a trigger nobody defines is a warning", async () => {
    const rollout = "test/fixtures/argo-examples/notifications/rollout-canary.yaml";
    const withConfig = await run("plan", rollout, "test/fixtures/argo-examples/notifications/configmap.yaml");
    expect(withConfig.code).toBe(0);
    expect(withConfig.err).not.toContain("warning:");
    expect(withConfig.out).toMatch(/^rollout rollout-canary /);
    const alone = await run("plan", rollout);
    expect(alone.code).toBe(0);
    expect(alone.err).toContain(
      'warning: rollout rollout-canary: subscription on-purple.slack is ignored: trigger "on-purple" is neither built in nor defined in the argo-rollouts-notification-configmap',
    );
  });

  it("shows the real share of connections that pod rounding gives, and the candidate's request rate", async () => {
    const { out } = await run("plan", ...SEED, "--replicas", "3", "--rps", "40", "--json");
    const plan = JSON.parse(out);
    expect(plan.steps[0]).toMatchObject({
      index: 0,
      kind: "setWeight",
      weight: 25,
      canaryPods: 1,
      stablePods: 3,
      share: 25,
      candidateRps: 10,
    });
    expect(plan.steps[2]).toMatchObject({
      index: 2,
      weight: 50,
      canaryPods: 2,
      stablePods: 2,
      share: 50,
      candidateRps: 20,
    });
  });

  it("prints the JSON shape other tools read", async () => {
    const { code, out } = await run("plan", ...SEED, "--json");
    expect(code).toBe(0);
    const plan = JSON.parse(out);
    expect(Object.keys(plan)).toEqual(expect.arrayContaining(["name", "revision", "strategy", "steps"]));
    expect(plan.name).toBe("demo");
    expect(plan.steps.map((s: { index: number }) => s.index)).toEqual([0, 1, 2, 3, 4]);
    for (const step of plan.steps) {
      expect(Object.keys(step)).toEqual(
        expect.arrayContaining(["index", "kind", "weight", "canaryPods", "stablePods", "share"]),
      );
    }
    expect(plan.steps[1].analysis).toEqual([
      "success-rate: every 3s x2 after 5s; success when result[0] >= 0.95; failureLimit 0",
    ]);
  });

  it("warns where Argo's rounding gives the candidate no pod", async () => {
    const { out } = await run("plan", "test/fixtures/statemachine/no-surge.yaml");
    expect(out).toMatch(/^0\s+setWeight: 50\s+50%\s+1\s+1\s+50%$/m);
    expect(out).toMatch(/^1\s+setWeight: 75\s+75%\s+0\s+2\s+0%$/m);
    expect(out).toContain(
      "    warning: 2 pods cannot carry 75% without surge: Argo's rounding gives the candidate no pod here",
    );
  });

  it("shows the canary's pods of setCanaryScale, kept through setWeight until matchTrafficWeight", async () => {
    const { code, out } = await run("plan", "test/fixtures/statemachine/canary-scale.yaml", "--json");
    expect(code).toBe(0);
    const plan = JSON.parse(out);
    expect(
      plan.steps.map((s: { kind: string; weight: number; canaryPods: number; stablePods: number }) => [
        s.kind,
        s.weight,
        s.canaryPods,
        s.stablePods,
      ]),
    ).toEqual([
      ["setCanaryScale", 0, 2, 10],
      ["setWeight", 5, 2, 10],
      ["setWeight", 40, 2, 10],
      ["setCanaryScale", 40, 0, 10],
      ["setCanaryScale", 40, 4, 10],
      ["setWeight", 60, 6, 10],
    ]);
    expect(plan.steps[3].warning).toBe(
      "setCanaryScale leaves the candidate no pod while the router sends it 40% of the requests",
    );
    const text = await run("plan", "test/fixtures/statemachine/canary-scale.yaml");
    expect(text.out).toMatch(/^0\s+setCanaryScale: 2 canary pods, whatever the weight\s+0%\s+2\s+10\s+0%$/m);
  });

  it("refuses setCanaryScale for a target whose candidate scales with the weight, naming the step and the target", async () => {
    const file = "test/fixtures/statemachine/canary-scale.yaml";
    const alias = { type: "lambda-alias", functionName: "api", alias: "live" };
    const refused = await run("compile", file, "--target", JSON.stringify(alias));
    expect(refused.code).toBe(2);
    expect(refused.err).toContain(
      "rollouts: --target: step 1: setCanaryScale: the lambda-alias target scales the candidate with the weight (targets that can: kubernetes)",
    );
    expect(refused.err).toContain("step 4: setCanaryScale");
  });

  it("exits 2 with every problem for input it cannot use", async () => {
    const { code, err } = await run("plan", "examples/rollout.yaml");
    expect(code).toBe(2);
    expect(err).toContain(
      'examples/rollout.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[1].analysis.templates[0].templateName (step 2): AnalysisTemplate "success-rate" not found in the files given',
    );
    expect(err).toContain("(step 5)");
  });

  it("exits 2 for bad options", async () => {
    expect((await run("plan", ...SEED, "--rps", "lots")).code).toBe(2);
    expect((await run("plan")).code).toBe(2);
    expect((await run("frobnicate")).code).toBe(2);
  });
});

describe("rollouts plan: numbers in options", () => {
  it.each([
    ["--rps", "0x10"],
    ["--rps", "1e308"],
    ["--rps", "100001"],
    ["--rps", "0"],
    ["--rps", "Infinity"],
    ["--rps", " "],
  ])("refuses %s %j with the bounds simulate uses, exit 2", async (flag, value) => {
    const { code, out, err } = await run("plan", ...SEED, flag, value);
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(err).toContain(`${flag} must be a number in (0, 100000], got "${value}"`);
    expect(err).not.toContain("Infinity rps");
  });

  it.each([
    ["--replicas", "0x4"],
    ["--error-rate", "0x0"],
  ])("refuses %s %j: decimal numbers only", async (flag, value) => {
    const { code, err } = await run("plan", ...SEED, "--rps", "10", flag, value);
    expect(code).toBe(2);
    expect(err).toContain(`${flag} must be`);
    expect(err).toContain(`got "${value}"`);
  });

  it("accepts decimal rps up to the bound", async () => {
    expect((await run("plan", ...SEED, "--rps", "100000")).code).toBe(0);
    expect((await run("plan", ...SEED, "--rps", "2.5")).code).toBe(0);
  });
});

describe("rollouts compile", () => {
  it("prints a definition asl-validator accepts", async () => {
    const target = { type: "lambda-alias", functionName: "api", alias: "live" };
    const { code, out } = await run("compile", ...SEED, "--target", JSON.stringify(target));
    expect(code).toBe(0);
    const definition = JSON.parse(out);
    expect(validator(definition).isValid).toBe(true);
    expect(definition.States["Step01-SetWeight-25"].Parameters.Payload.target).toEqual(target);
  });

  it("compiles for a kubernetes target: the settings embedded, readiness polled after each weight", async () => {
    const target = {
      type: "kubernetes",
      server: "https://k8s.example",
      auth: { type: "eks", clusterName: "prod" },
      stableDeployment: "shop-stable",
      canaryDeployment: "shop-canary",
      router: {
        type: "gateway-api",
        httpRoute: "shop",
        stableService: "shop-stable",
        canaryService: "shop-canary",
      },
    };
    const { code, out } = await run("compile", ...SEED, "--target", JSON.stringify(target));
    expect(code).toBe(0);
    const definition = JSON.parse(out);
    expect(validator(definition).isValid).toBe(true);
    expect(definition.States["Step01-SetWeight-25"].Parameters.Payload.target).toEqual(target);
    expect(
      Object.keys(definition.States).filter((s: string) => s.endsWith("-CheckReady")).length,
    ).toBeGreaterThan(1);
    const bad = await run(
      "compile",
      ...SEED,
      "--target",
      JSON.stringify({ ...target, router: { type: "istio" } }),
    );
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("rollouts: --target: router.virtualService:");
  });

  it("polls readiness by default where the construct does (alb-ecs too); the flag overrides either way", async () => {
    const alb = {
      type: "alb-ecs",
      listenerArn: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/shop/1/2",
      targetGroupA: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/a/1",
      targetGroupB: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/b/2",
      cluster: "shop",
      serviceA: "shop-a",
      serviceB: "shop-b",
      containerName: "app",
    };
    const lambda = { type: "lambda-alias", functionName: "api", alias: "live" };
    const checks = async (target: object, ...flags: string[]) => {
      const { code, out, err } = await run("compile", ...SEED, "--target", JSON.stringify(target), ...flags);
      expect(err.split("\n").filter((l) => l.startsWith("rollouts:"))).toEqual([]);
      expect(code).toBe(0);
      return Object.keys(JSON.parse(out).States).filter((s) => s.endsWith("-CheckReady")).length;
    };
    // A Lambda alias shifts at once: only the candidate's start is waited for, unless asked.
    const once = await checks(lambda);
    expect(await checks(lambda, "--readiness-checks")).toBeGreaterThan(once);
    // An ECS deployment settles after each traffic step: the construct polls it, so does compile.
    expect(await checks(alb)).toBeGreaterThan(once);
    expect(await checks(alb)).toBe(await checks(lambda, "--readiness-checks"));
    expect(await checks(alb, "--no-readiness-checks")).toBe(once);
  });

  it("validates the target as the construct does: every bad field, one line each, exit 2", async () => {
    const target = {
      type: "alb-ecs",
      listenerArn: "not-an-arn",
      targetGroupA: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/a/1",
      targetGroupB: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/a/1",
      cluster: "c",
      serviceA: "a",
      serviceB: "b",
      containerName: "app",
      progressDeadlineSeconds: 99_999_999_999,
      typo: true,
    };
    const { code, out, err } = await run("compile", ...SEED, "--target", JSON.stringify(target));
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(
      err
        .trimEnd()
        .split("\n")
        .filter((l) => l.startsWith("rollouts:")),
    ).toEqual([
      "rollouts: --target: listenerArn: an Elastic Load Balancing listener ARN",
      expect.stringMatching(
        /^rollouts: --target: progressDeadlineSeconds: must be at most 31536000 seconds \(a year\)/,
      ),
      'rollouts: --target: (root): unknown field "typo"',
      "rollouts: --target: targetGroupB: targetGroupA and targetGroupB must differ",
    ]);
    const unknown = await run("compile", ...SEED, "--target", '{"kind":"plugin"}');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain("rollouts: --target: type:");
  });

  it("refuses a mirror step for a target that cannot mirror, naming the step, and embeds it for one that can", async () => {
    const model = ["examples/model-shadow.yaml"];
    const alias = { type: "lambda-alias", functionName: "api", alias: "live" };
    const refused = await run("compile", ...model, "--target", JSON.stringify(alias));
    expect(refused.code).toBe(2);
    expect(refused.out).toBe("");
    expect(refused.err).toContain(
      'rollouts: --target: step 1: setMirrorRoute "shadow": the lambda-alias target cannot mirror requests (targets that can: sagemaker, plugin)',
    );
    expect(refused.err).toContain('step 3: setMirrorRoute "shadow"');
    const endpoint = {
      type: "sagemaker",
      endpointName: "ranker",
      executionRoleArn: "arn:aws:iam::123456789012:role/ranker",
    };
    const { code, out } = await run("compile", ...model, "--target", JSON.stringify(endpoint));
    expect(code).toBe(0);
    const definition = JSON.parse(out);
    expect(validator(definition).isValid).toBe(true);
    expect(definition.States["Step01-SetMirrorRoute-shadow"].Parameters.Payload.target).toEqual(endpoint);
  });

  it("embeds a target plugin, mirror steps included, and names its bad fields", async () => {
    const plugin = {
      type: "plugin",
      name: "mesh",
      functionArn: "arn:aws:lambda:eu-west-1:123456789012:function:mesh-router:live",
      config: { mesh: "prod" },
    };
    const { code, out } = await run(
      "compile",
      "examples/model-shadow.yaml",
      "--target",
      JSON.stringify(plugin),
    );
    expect(code).toBe(0);
    const definition = JSON.parse(out);
    expect(validator(definition).isValid).toBe(true);
    expect(definition.States["Step01-SetMirrorRoute-shadow"].Parameters.Payload.target).toEqual(plugin);
    const bad = await run(
      "compile",
      ...SEED,
      "--target",
      JSON.stringify({ ...plugin, functionArn: "mesh-router" }),
    );
    expect(bad.code).toBe(2);
    expect(
      bad.err
        .trimEnd()
        .split("\n")
        .filter((l) => l.startsWith("rollouts:")),
    ).toEqual([
      "rollouts: --target: functionArn: a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME, optionally :VERSION or :ALIAS)",
    ]);
  });

  it("rejects a target that is not a JSON object", async () => {
    const { code, err } = await run("compile", ...SEED, "--target", "[1]");
    expect(code).toBe(2);
    expect(err).toContain("--target must be a JSON object");
  });
});

describe("the rollouts binary", () => {
  it("runs from a fresh process and returns the exit code", () => {
    const out = execFileSync("node", ["bin/rollouts.mjs", "plan", ...SEED, "--json"], { encoding: "utf8" });
    expect(JSON.parse(out).name).toBe("demo");
    let status = 0;
    try {
      execFileSync("node", ["bin/rollouts.mjs", "plan", "nope.yaml"], { stdio: "pipe" });
    } catch (error) {
      status = (error as { status: number }).status;
    }
    expect(status).toBe(2);
  });
});

describe("rollouts plan with judges", () => {
  const JUDGED = ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"];

  it("shows each gate in words, the samples it needs and how long they take at the step's share", async () => {
    const { code, out } = await run("plan", ...JUDGED, "--rps", "40");
    expect(code).toBe(0);
    expect(out).toContain(
      "    errors: every 5s x120 after 5s; sequential-rate judge of the errors rate against stable (higher is worse), alpha 0.025 (half the rollout's error budget 0.05); rolls back at any look from 107 samples per side (where 10× a 1% rate of errors would cross alpha), promotes at 3000 per side in this analysis; more than 10% errors rolls back (absolute, outside the error budget)",
    );
    expect(out).toContain(
      "    latency: every 5s x120 after 5s; sequential-latency judge of the histogram latency against stable (higher is worse), alpha 0.025 (half the rollout's error budget 0.05), going on from the evidence of step 2; rolls back at any look from 22 samples per side (where 2× slower would cross alpha), promotes at 3000 per side in this analysis; a p95 above 500 ms rolls back (absolute, outside the error budget)",
    );
    // 25% of 40 rps is 10 rps for the candidate: 107 samples in 11 s, 3,000 in 5 minutes.
    expect(out).toContain(
      "    errors: 107 samples per side in 11s at this share, 3000 to promote in 5m; last look at 10m",
    );
    expect(out).not.toContain("warning");
    // The budget, shared by the two gates, each one test over both steps.
    expect(out).toContain(
      [
        "error budget 0.05: the chance, at most, that the gates below together roll back an identical release",
        "  errors: 0.025, one sequential-rate test over steps 2 and 4",
        "  latency: 0.025, one sequential-latency test over steps 2 and 4",
      ].join("\n"),
    );
  });

  it("warns when a step ends before its judge can have the samples it needs", async () => {
    const { out } = await run("plan", ...JUDGED, "--rps", "0.2", "--json");
    const plan = JSON.parse(out);
    expect(plan.steps[1].gates).toEqual([
      {
        metric: "errors",
        test: "sequential-rate",
        samplesNeeded: 107,
        perSide: true,
        promoteAtSamples: 3000,
        lastLookSeconds: 600,
        secondsToSamples: 2140,
        secondsToPromote: 60000,
      },
      {
        metric: "latency",
        test: "sequential-latency",
        samplesNeeded: 22,
        perSide: true,
        promoteAtSamples: 3000,
        lastLookSeconds: 600,
        secondsToSamples: 440,
        secondsToPromote: 60000,
      },
    ]);
    // A sequential gate promotes at its last look once it may decide: only the minimum must fit.
    expect(plan.steps[1].warning).toBe(
      'gate "errors" needs 107 samples per side: at 0.2 rps and 25% that takes 35m40s, but the analysis\'s last look is at 10m: it would hold and end Inconclusive (lengthen the analysis or lower the samples)',
    );
    // At 50% both versions get 0.1 rps: 1,070 s for 107 samples, still past the 10 minutes.
    expect(plan.steps[3].warning).toMatch(
      /^gate "errors" needs 107 samples per side: at 0.2 rps and 50% that takes 17m50s/,
    );
    expect(plan.errorBudget).toHaveLength(3);
  });
});

describe("rollouts plan with a judge under a mirror step", () => {
  // The judged rollout with a shadow: an analysis before the mirror, one under it, one after it is removed.
  const file = join(mkdtempSync(join(tmpdir(), "plan-mirror-")), "rollout.yaml");
  writeFileSync(
    file,
    readFileSync("examples/rollout-judged.yaml", "utf8").replace(
      /steps:\n(\s+)- setWeight: 25\n[\s\S]*?(?=\n---|\n*$)/,
      (_all, indent: string) =>
        [
          "steps:",
          "- analysis: { templates: [{ templateName: judges }] }",
          "- setMirrorRoute: { name: shadow, percentage: 50, match: [{ method: { exact: POST } }] }",
          "- analysis: { templates: [{ templateName: judges }] }",
          "- setMirrorRoute: { name: shadow }",
          "- analysis: { templates: [{ templateName: judges }] }",
        ].join(`\n${indent}`),
    ),
  );

  it("judges the mirrored copies: no 'no traffic' warning under the mirror, samples timed at its share", async () => {
    const { code, out, err } = await run(
      "plan",
      file,
      "examples/analysis-judges.yaml",
      "--rps",
      "40",
      "--json",
    );
    expect(err).toBe("");
    expect(code).toBe(0);
    const plan = JSON.parse(out);
    expect(plan.steps.map((s: { kind: string }) => s.kind)).toEqual([
      "analysis",
      "setMirrorRoute",
      "analysis",
      "setMirrorRoute",
      "analysis",
    ]);
    const noTraffic = /the candidate receives no traffic at this step/;
    expect(plan.steps[0].warning).toMatch(noTraffic);
    expect(plan.steps[2].warning).toBeUndefined();
    // 50% of 40 rps mirrored: 20 copies a second reach the candidate, 3,000 to promote in 150 s.
    expect(plan.steps[2].gates[0]).toMatchObject({
      metric: "errors",
      samplesNeeded: 107,
      secondsToSamples: 5.35,
      promoteAtSamples: 3000,
      secondsToPromote: 150,
    });
    expect(plan.steps[4].warning).toMatch(noTraffic);
  });
});

describe("rollouts plan --rps --error-rate", () => {
  it("prints what a bad version meets before the earliest abort of each analysis", async () => {
    const { code, out } = await run("plan", ...SEED, "--rps", "100", "--error-rate", "0.3");
    expect(code).toBe(0);
    // Step 1: 25% of 100 rps for initialDelay 5 s = 125 requests, 30% of them failed.
    expect(out).toContain(
      "    a bad version is aborted no earlier than 5s into this step (5s after the push): 125 requests to it, 38 failed",
    );
    // Step 4: the first analysis passed in full (8 s at 25%), the pause (2 s at 50%), then 5 s at 50%.
    expect(out).toContain(
      "    a bad version is aborted no earlier than 5s into this step (15s after the push): 550 requests to it, 165 failed",
    );
    const json = JSON.parse(
      (await run("plan", ...SEED, "--rps", "100", "--error-rate", "0.3", "--json")).out,
    );
    expect(json.steps[1].exposure).toEqual({ abortAfter: 5, at: 5, requests: 125, failed: 38 });
    expect(json.steps[0].exposure).toBeUndefined();
  });

  it("needs --rps for --error-rate and a share between 0 and 1", async () => {
    const alone = await run("plan", ...SEED, "--error-rate", "0.3");
    expect(alone.code).toBe(2);
    expect(alone.err).toContain("--error-rate needs --rps");
    const big = await run("plan", ...SEED, "--rps", "10", "--error-rate", "3");
    expect(big.code).toBe(2);
    expect(big.err).toContain("--error-rate must be a share between 0 and 1, got 3");
  });
});

describe("rollouts plan with alarms and hooks", () => {
  it("shows the alarms and each hook, where it runs and how long it may take", async () => {
    const { code, out } = await run("plan", "test/fixtures/safety/guarded.yaml");
    expect(code).toBe(0);
    expect(out).toContain(
      "alarms: shop-5xx, shop-p99: one going to ALARM aborts the running step at once; checked before every step and Promote; a missing alarm aborts",
    );
    expect(out).toContain(
      "hook beforeTraffic: arn:aws:lambda:eu-west-1:123456789012:function:smoke before any traffic moves, verdict within 10m",
    );
    expect(out).toContain(
      "hook afterTraffic: arn:aws:lambda:eu-west-1:123456789012:function:load-test after every weight change, verdict within 30m, a heartbeat every 1m",
    );
    const json = JSON.parse((await run("plan", "test/fixtures/safety/guarded.yaml", "--json")).out);
    expect(json.guards).toHaveLength(3);
  });
});
