import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { TargetSettingsSchema } from "../../functions/traffic/settings.ts";
import { deployedDefinitionSize } from "../../statemachine/compile.ts";
import {
  compile,
  parseRollout,
  type RolloutSpec,
  RolloutSpecSchema,
  SpecError,
} from "../../statemachine/index.ts";
import { DEFINITION_MAX_CHARS } from "../../statemachine/limits.ts";

const rollout = (strategy: string, replicas = "1") => `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: demo}
spec:
  replicas: ${replicas}
  template: {spec: {containers: [{name: app, image: "app:2"}]}}
  strategy:
${strategy}
`;
const canary = (steps: string, extra = "") => rollout(`    canary:\n${extra}      steps:\n${steps}`);

const template = (metric: string, provider = "prometheus: {address: 'http://prom:9090', query: up}") => `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  metrics:
    - name: m
${metric
  .split("\n")
  .map((l) => `      ${l}`)
  .join("\n")}
      provider: {${provider}}
`;
const withAnalysis = canary("        - setWeight: 50\n        - analysis: {templates: [{templateName: t}]}");

function problemsOf(...texts: string[]): string[] {
  try {
    parseRollout(texts.map((text, i) => ({ file: `f${i}.yaml`, text })));
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).message.split("\n");
  }
  throw new Error("expected a SpecError");
}

const one = (lines: string[], path: string, message: RegExp | string) => {
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(`: ${path}`);
  if (typeof message === "string") expect(lines[0]).toContain(message);
  else expect(lines[0]).toMatch(message);
};

describe("durations past what Step Functions and Scheduler accept are refused at load, at their field", () => {
  it.each([
    ["9999999999999h", /invalid duration "9999999999999h": longer than Go's largest duration/],
    [
      "8761h",
      /duration "8761h" is longer than 8760h: a rollout's Step Functions execution lasts at most a year/,
    ],
    ["-5s", /duration must be >= 0, got "-5s"/],
    [".nan", /got NaN/],
    [".inf", /got Infinity/],
    ["-1", /got -1/],
    ["1d", /unknown unit "d"/],
  ])("a pause of %s", (duration, message) => {
    one(
      problemsOf(canary(`        - pause: {duration: ${duration}}`)),
      "spec.strategy.canary.steps[0].pause.duration (step 1)",
      message,
    );
  });

  it("Go's forms load: 1.5h, 300ms, 2h45m", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: canary(
          "        - pause: {duration: 1.5h}\n        - pause: {duration: 300ms}\n        - pause: {duration: 2h45m}",
        ),
      },
    ]);
    expect(spec.steps.map((s) => (s.kind === "pause" ? s.duration : undefined))).toEqual([5400, 0.3, 9900]);
  });

  it.each([
    ["interval: 9000h\ncount: 2", "spec.metrics[0].interval", "is longer than 8760h"],
    ["initialDelay: 9999999999999h", "spec.metrics[0].initialDelay", "longer than Go's largest duration"],
    [
      "interval: 1h\ncount: 100000",
      "spec.metrics[0]",
      /metric "m" may run for up to \d+h.*lower count or interval/,
    ],
    [
      "count: '99999999999999999999'",
      "spec.metrics[0].count",
      "must be a whole number (at most 9007199254740991)",
    ],
  ])("a metric with %j", (metric, path, message) => {
    one(problemsOf(withAnalysis, template(metric)), path, message);
  });

  it.each([
    [
      "prometheus: {address: 'http://p:9090', query: up, timeout: 600}",
      "provider.prometheus.timeout",
      "at most 50 seconds",
    ],
    ["web: {url: 'http://w/x', timeoutSeconds: 3600}", "provider.web.timeoutSeconds", "at most 50 seconds"],
    [
      "cloudWatch: {interval: 11000h, metricDataQueries: [{id: a, expression: x}]}",
      "provider.cloudWatch.interval",
      "CloudWatch keeps metrics for 15 months",
    ],
    [
      "samples: {address: 'http://r', primary: a, candidate: b, window: 9999h}",
      "provider.samples.window",
      "8760h",
    ],
  ])("a provider %s", (provider, path, message) => {
    one(
      problemsOf(withAnalysis, template("interval: 1m\ncount: 1", provider)),
      `spec.metrics[0].${path}`,
      message,
    );
  });

  it.each([
    ["scaleDownDelaySeconds: 99999999999", "spec.strategy.canary.scaleDownDelaySeconds", "(a year)"],
    ["abortScaleDownDelaySeconds: 31536001", "spec.strategy.canary.abortScaleDownDelaySeconds", "(a year)"],
  ])("a canary's %s", (field, path, message) => {
    one(problemsOf(canary("        - setWeight: 50", `      ${field}\n`)), path, message);
  });

  it("a blue/green auto-promotion past a year", () => {
    one(
      problemsOf(rollout("    blueGreen: {activeService: a, autoPromotionSeconds: 40000000}")),
      "spec.strategy.blueGreen.autoPromotionSeconds",
      "(a year)",
    );
  });

  it.each([
    ["bake: 9999999999999h", "bake"],
    ["scaleDownDelay: 400d", "scaleDownDelay"],
    ["scaleDownDelay: 9000h", "scaleDownDelay"],
  ])("a native %s", (field, path) => {
    one(problemsOf(`name: shop\nsteps: [50, 100]\n${field}\n`), path, /duration|unit/);
  });
});

describe("provider URLs other than http and https are refused at load, where the provider is normalized", () => {
  it.each([
    [
      "web: {url: 'file:///etc/passwd'}",
      "provider.web.url",
      'Get "file:///etc/passwd": unsupported protocol scheme "file" (url must be an http:// or https:// URL',
    ],
    [
      "web: {url: 'gopher://h/x'}",
      "provider.web.url",
      'Get "gopher://h/x": unsupported protocol scheme "gopher"',
    ],
    [
      "web: {url: 'ftp://x', method: POST}",
      "provider.web.url",
      'Post "ftp://x": unsupported protocol scheme "ftp"',
    ],
    ["web: {url: 'localhost:8080/x'}", "provider.web.url", "url must be an http:// or https:// URL"],
    [
      "samples: {address: 'ftp://r', primary: a, candidate: b}",
      "provider.samples.address",
      "address must be an http:// or https:// URL",
    ],
  ])("%s", (provider, path, message) => {
    one(
      problemsOf(withAnalysis, template("interval: 1m\ncount: 1", provider)),
      `spec.metrics[0].${path}`,
      message,
    );
  });

  it("inside a judge, where each version is read through a provider", () => {
    const judge = `plugin: {sfn-rollouts/judge: {test: two-proportion, candidate: {bad: {web: {url: 'file:///a'}}, n: {web: {url: 'http://w/n'}}}, stable: {bad: {web: {url: 'http://w/b'}}, n: {web: {url: 'http://w/n'}}}}}`;
    const lines = problemsOf(withAnalysis, template("interval: 1m\ncount: 1", judge));
    expect(lines).toEqual([
      expect.stringContaining('candidate.bad.web.url: Get "file:///a": unsupported protocol scheme "file"'),
    ]);
  });

  it("http and https URLs load, with runtime placeholders after the scheme", () => {
    const { spec } = parseRollout([
      { file: "r.yaml", text: withAnalysis },
      {
        file: "t.yaml",
        text: template(
          "interval: 1m\ncount: 1",
          "web: {url: 'HTTPS://metrics.internal/v/{{rollout.latest}}'}",
        ),
      },
    ]);
    expect(spec.steps).toHaveLength(2);
  });
});

describe("counts past what the targets and the table hold are refused at load", () => {
  it("replicas past ECS's 5,000 tasks per service, in both forms", () => {
    one(
      problemsOf(rollout("    canary: {steps: [{setWeight: 5}]}", "1000000")),
      "spec.replicas",
      "must be at most 5000: ECS runs at most 5,000 tasks per service",
    );
    one(problemsOf("name: shop\nsteps: [50, 100]\nreplicas: 5001\n"), "replicas", "must be at most 5000");
    expect(
      parseRollout([{ file: "r.yaml", text: rollout("    canary: {steps: [{setWeight: 5}]}", "5000") }]).spec
        .replicas,
    ).toBe(5000);
  });

  it("a measurementRetention past what one DynamoDB item holds", () => {
    const lines = problemsOf(
      canary(
        "        - analysis: {templates: [{templateName: t}], measurementRetention: [{metricName: m, limit: 100000}]}",
      ),
      template("interval: 1m\ncount: 1"),
    );
    one(
      lines,
      "spec.strategy.canary.steps[0].analysis.measurementRetention[0].limit (step 1)",
      "one DynamoDB item (400 KB at most)",
    );
  });

  it("a RolloutSpec given directly is held to the same limits", () => {
    const { spec } = parseRollout([{ file: "r.yaml", text: canary("        - setWeight: 50") }]);
    const bad = RolloutSpecSchema.safeParse({
      ...spec,
      replicas: 10_000,
      steps: [{ kind: "pause", duration: 40_000_000 }],
    });
    expect(bad.error?.issues.map((i) => i.path.join("."))).toEqual(["replicas", "steps.0.duration"]);
  });

  it("a target's progress deadline, poll and task count past their limits", () => {
    const parsed = TargetSettingsSchema.safeParse({
      type: "lambda-alias",
      functionName: "f",
      alias: "live",
      progressDeadlineSeconds: 99_999_999_999,
      pollSeconds: 40_000_000,
    });
    expect(parsed.error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`)).toEqual([
      expect.stringMatching(/^progressDeadlineSeconds: must be at most 31536000 seconds \(a year\)/),
      expect.stringMatching(/^pollSeconds: must be at most 31536000 seconds/),
    ]);
  });
});

describe("a definition Step Functions would refuse is refused by compile, for every consumer", () => {
  /** An analysis step per weight, each carrying a long query: about 12 KB per step. */
  const big = (steps: number) =>
    parseRollout([
      {
        file: "r.yaml",
        text: canary(
          Array.from({ length: steps }, () => "        - analysis: {templates: [{templateName: t}]}").join(
            "\n",
          ),
        ),
      },
      {
        file: "t.yaml",
        text: template(
          "interval: 1m\ncount: 1",
          `prometheus: {address: 'http://p:9090', query: '${"x".repeat(12_000)}'}`,
        ),
      },
    ]).spec;

  it("a step list whose definition passes 1,048,576 characters once deployed is refused with its size", () => {
    const spec = big(100);
    let error: unknown;
    try {
      compile(spec);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SpecError);
    expect((error as SpecError).message).toMatch(
      /^rollout demo: the state machine definition would be [\d,]+ characters once deployed, more than Step Functions' 1,048,576: use fewer steps/,
    );
  });

  it("counts each function placeholder at the longest ARN it may become", () => {
    const spec = big(1);
    const definition = compile(spec);
    const compact = JSON.stringify(definition).length;
    expect(deployedDefinitionSize(definition)).toBeGreaterThan(compact);
    expect(deployedDefinitionSize(definition)).toBeLessThan(DEFINITION_MAX_CHARS);
  });

  it("a timeout past Step Functions' 99,999,999 seconds in a RolloutSpec given directly is refused", () => {
    const { spec } = parseRollout([{ file: "r.yaml", text: canary("        - setWeight: 50") }]);
    const huge: RolloutSpec = {
      ...spec,
      steps: [{ kind: "pause", duration: 200_000_000, reason: "CanaryPauseStep" }],
    };
    expect(() => compile(huge)).toThrow(
      /state Step01-Pause-\S+: TimeoutSeconds 200001680 is more than Step Functions' 99,999,999/,
    );
  });

  it("rollouts compile exits 2 naming the files; rollouts plan of the same files says the same", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spec-limits-"));
    const r = join(dir, "r.yaml");
    const t = join(dir, "t.yaml");
    writeFileSync(
      r,
      canary(
        Array.from({ length: 100 }, () => "        - analysis: {templates: [{templateName: t}]}").join("\n"),
      ),
    );
    writeFileSync(
      t,
      template(
        "interval: 1m\ncount: 1",
        `prometheus: {address: 'http://p:9090', query: '${"x".repeat(12_000)}'}`,
      ),
    );
    const compiled = await run("compile", r, t);
    expect(compiled.code).toBe(2);
    expect(compiled.out).toBe("");
    expect(compiled.err).toMatch(
      new RegExp(`^${r}, ${t}: Rollout demo: the state machine definition would be [\\d,]+ characters`),
    );
    const planned = await run("plan", r, t);
    expect(planned.code).toBe(2);
    expect(planned.err).toBe(compiled.err);
  });

  it("rollouts plan refuses a pause past a year with exit 2 and the field path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spec-limits-"));
    const r = join(dir, "r.yaml");
    writeFileSync(r, canary("        - pause: {duration: 9999999999999h}"));
    const { code, err } = await run("plan", r);
    expect(code).toBe(2);
    expect(err).toContain("spec.strategy.canary.steps[0].pause.duration (step 1): invalid duration");
  });
});
