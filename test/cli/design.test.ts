import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { type DesignOptions, designAction, type ProgressStream } from "../../cli/commands/design-actions.ts";
import type { Io } from "../../cli/io.ts";
import type {
  SecondRecord,
  SimulationOptions,
  SimulationRow,
  SimulationRuntime,
} from "../../cli/simulate/runtime.ts";
import { loadRollout, parseRollout } from "../../statemachine/index.ts";

/**
 * `rollouts design` in-process, the runtime replaced by one that answers from the plan's arithmetic
 * (the real simulation is test/integration/design.test.ts): the output's shape, the progress line,
 * the refusals.
 */

const DEMO = [
  "--rps",
  "800",
  "--slo-error-rate",
  "0.05",
  "--slo-p95",
  "300",
  "--baseline-error-rate",
  "0.01",
];

/** A runtime whose good version is promoted when the analyses end and whose bad ones are caught at the first look. */
function arithmeticRuntime(calls: SimulationOptions[] = [], files: string[] = []): SimulationRuntime {
  return {
    async simulate(o) {
      calls.push(o);
      files.push(...o.files.map((f) => readFileSync(f, "utf8")));
      const { spec } = await loadRollout(o.files);
      const metric = spec.steps.flatMap((s) =>
        s.kind === "analysis" ? s.analysis.templates[0]?.metrics : [],
      )[0];
      const interval = metric?.initialDelay ?? 0;
      const good = o.errorRate === o.baselineErrorRate && (o.latencyFactor ?? 1) === 1;
      return (o.plans ?? []).map((plan): SimulationRow => {
        const weights = (plan ?? []).flatMap((s) => ("setWeight" in s ? [s.setWeight] : []));
        const at = good ? weights.length * (metric?.count ?? 1) * interval : interval;
        const series: SecondRecord[] = Array.from({ length: at }, (_, t) => {
          const weight = weights[Math.min(weights.length - 1, Math.floor(t / interval))] ?? 0;
          const newRequests = Math.round((o.rps * weight) / 100);
          return {
            t,
            weight,
            share: weight / 100,
            newRequests,
            newErrors: 0,
            oldRequests: o.rps - newRequests,
            oldErrors: 0,
          };
        });
        const newRequests = series.reduce((n, s) => n + s.newRequests, 0);
        return {
          plan: weights.join(","),
          outcome: good ? "promoted" : "aborted",
          at,
          message: good ? null : 'Metric "error-ratio" assessed Failed',
          newRequests,
          newErrors: Math.round(newRequests * o.errorRate),
          totalRequests: o.rps * at,
          share: 0,
          counts: {} as SimulationRow["counts"],
          cost: { total: 0.0005, waitLoop: 0.0005 },
          ...(o.series ? { series } : {}),
        };
      });
    },
  };
}

function options(over: Partial<DesignOptions> = {}): DesignOptions {
  return {
    rps: 800,
    sloErrorRate: 0.05,
    sloP95: 300,
    baselineErrorRate: 0.01,
    replicas: 4,
    router: "alb",
    maxDuration: "1h",
    scrapeInterval: "1s",
    name: "shop",
    seed: 0,
    exposureBudget: 2000,
    signal: [],
    baseline: [],
    minEffect: [],
    ...over,
  };
}

function recorder(): Io & { text: { out: string; err: string } } {
  const text = { out: "", err: "" };
  return {
    text,
    out: (t) => {
      text.out += `${t}\n`;
    },
    err: (t) => {
      text.err += `${t}\n`;
    },
  };
}

describe("rollouts design", () => {
  it("prints the report as comments, then a Rollout and an AnalysisTemplate the loader reads", async () => {
    const io = recorder();
    const calls: SimulationOptions[] = [];
    const code = await designAction(io, options(), { loadRuntime: async () => arithmeticRuntime(calls) });
    expect(code).toBe(0);
    expect(io.text.out).toMatch(/^# rollouts design: shop at 800 rps/);
    expect(io.text.out).toContain("# chosen: 20%,analysis,50%,analysis (w20-x2.5-5s-c1-f0)");
    const { spec } = parseRollout([{ file: "design.yaml", text: io.text.out }]);
    expect(spec.steps.map((s) => (s.kind === "setWeight" ? s.weight : s.kind))).toEqual([
      20,
      "analysis",
      50,
      "analysis",
    ]);
    // Each chunk of candidates is simulated against the three versions, then the chosen one at half the SLO's errors.
    expect(calls.map((c) => [c.errorRate, Number((c.latencyFactor ?? 1).toFixed(2))])).toEqual([
      [0.01, 1],
      [0.05, 1],
      [0.01, 2.59],
      [0.01, 1],
      [0.05, 1],
      [0.01, 2.59],
      [0.025, 1],
    ]);
    expect(calls.every((c) => c.untilDecided === true && c.rps === 800 && c.seed === 0)).toBe(true);
  });

  it("--json: the documented shape", async () => {
    const io = recorder();
    await designAction(io, options({ json: true }), { loadRuntime: async () => arithmeticRuntime() });
    const report = JSON.parse(io.text.out);
    expect(Object.keys(report)).toEqual([
      "kind",
      "inputs",
      "look",
      "search",
      "chosen",
      "candidates",
      "subtle",
      "failureModes",
      "yaml",
    ]);
    expect(report.inputs).toMatchObject({
      rps: 800,
      exposureBudget: 2000,
      exposureBudgetRule: "--exposure-budget",
    });
    expect(report.look).toEqual({
      samples: 278,
      alpha: 0.001,
      power: 0.95,
      errorRate: 0.0284,
      p95Ms: 300,
      badLatencyFactor: expect.any(Number),
      goodSlowShare: expect.any(Number),
      badSlowShare: expect.any(Number),
    });
    expect(report.search).toMatchObject({ candidates: 960, simulated: 6, accepted: 6, simulations: 7 });
    expect(report.search.pruned).toEqual({ steps: 192, samples: 72, duration: 223, exposure: 311 });
    expect(report.chosen).toMatchObject({
      id: "w20-x2.5-5s-c1-f0",
      plan: "20%,analysis,50%,analysis",
      promoteSeconds: 10,
      verdict: { accepted: true, promoteSeconds: 10, exposure: 800 },
      costPerRollout: 0.0005,
    });
    expect(report.chosen.steps[0]).toEqual({
      index: 0,
      weight: 20,
      share: 20,
      candidateRps: 160,
      seconds: 5,
      arithmetic: { abortAfter: 5, at: 5, requests: 800, failed: 40 },
      simulated: { errors: { fate: "aborted", requests: 800 }, latency: { fate: "aborted", requests: 800 } },
    });
    expect(report.chosen.steps[1].simulated.errors).toEqual({ fate: "not reached", requests: 0 });
    expect(report.candidates).toHaveLength(6);
    expect(report.failureModes.map((f: { name: string }) => f.name)).toContain("subtle-regression");
    expect(report.yaml).toContain("or vector(0)");
  });

  const stream = (isTTY: boolean): ProgressStream & { written: string[] } => {
    const written: string[] = [];
    return { isTTY, written, write: (t: string) => written.push(t) };
  };

  it("draws a progress line on a terminal's stderr, and clears it at the end", async () => {
    const tty = stream(true);
    await designAction(recorder(), options(), {
      loadRuntime: async () => arithmeticRuntime(),
      progress: tty,
      now: () => 0,
    });
    expect(
      tty.written.some((t) => t.includes("rollouts design: simulated 6 of at most 30 candidates, 0 s")),
    ).toBe(true);
    expect(tty.written.at(-1)).toBe("\r\x1b[K");
  });

  it("draws no progress line when stderr is piped", async () => {
    const piped = stream(false);
    await designAction(recorder(), options(), {
      loadRuntime: async () => arithmeticRuntime(),
      progress: piped,
    });
    expect(piped.written).toEqual([]);
  });

  it("draws no progress line with --json, even on a terminal", async () => {
    const json = stream(true);
    await designAction(recorder(), options({ json: true }), {
      loadRuntime: async () => arithmeticRuntime(),
      progress: json,
    });
    expect(json.written).toEqual([]);
  });

  it("--html writes one page with a chart per candidate", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "design-html-")), "design.html");
    const io = recorder();
    await designAction(io, options({ html: file }), { loadRuntime: async () => arithmeticRuntime() });
    const page = readFileSync(file, "utf8");
    expect(io.text.err).toMatch(/^wrote .*design\.html \(\d+ bytes\)/);
    expect(page).toContain("default-src 'none'");
    expect(page.match(/<section class="candidate"/g)).toHaveLength(6);
    expect(page.match(/<svg class="chart"/g)).toHaveLength(12);
    expect(page).toContain('data-candidate="w20-x2.5-5s-c1-f0" data-verdict="chosen"');
    expect(page).not.toContain("<script");
  });

  it("exits 1 when no candidate stops the bad versions within the budget", async () => {
    const io = recorder();
    const code = await designAction(io, options({ exposureBudget: 100 }), {
      loadRuntime: async () => arithmeticRuntime(),
    });
    expect(code).toBe(1);
    expect(io.text.out).toContain("no candidate was accepted");
    expect(io.text.out).toContain("exposure (");
  });

  it("exits 2 for input it cannot use, naming the flag", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--slo-error-rate", "0.05", "--slo-p95", "300"], /--rps is required/],
      [["--rps", "800", "--slo-p95", "300"], /--slo-error-rate is required/],
      [
        [...DEMO, "--slo-error-rate", "1.5"],
        /--slo-error-rate must be a share above 0 and under 1, got "1.5"/,
      ],
      [
        ["--rps", "0", "--slo-error-rate", "0.05", "--slo-p95", "300"],
        /--rps must be a number in \(0, 100000\]/,
      ],
      [[...DEMO, "--router", "traefik"], /--router must be one of alb, lambda, gateway, istio, nginx, none/],
      [[...DEMO, "--slo-p95", "100"], /--slo-p95 must be above 160 ms/],
      [[...DEMO, "--max-duration", "soon"], /--max-duration: /],
      [[...DEMO, "--scrape-interval", "0s"], /--scrape-interval must be whole seconds from 1s/],
      [[...DEMO, "--exposure-budget", "1.5"], /--exposure-budget must be a whole number of requests/],
      [[...DEMO, "--name", "Shop_1"], /--name: "Shop_1" is not a rollout name/],
      [
        [...DEMO, "--metrics", "/nonexistent/metrics.yaml"],
        /--metrics \/nonexistent\/metrics.yaml: cannot read the file/,
      ],
      [["--model", "--rps", "60"], /--model needs at least one --signal/],
      [
        ["--model", "--rps", "60", "--signal", "clicks:1m", "--min-effect", "0.1"],
        /--signal: "clicks" is not a signal/,
      ],
      [
        ["--model", "--rps", "60", "--signal", "feedback:10m", "--min-effect", "0.1"],
        /--baseline feedback=RATE is required/,
      ],
      [
        ["--model", "--rps", "60", "--signal", "errors:0s", "--baseline", "errors=0.01"],
        /--min-effect is required for errors/,
      ],
      [
        ["--model", "--rps", "60", "--signal", "errors", "--min-effect", "0.1"],
        /--signal must be NAME:DELAY/,
      ],
    ];
    for (const [argv, message] of cases) {
      const { code, err } = await run("design", ...argv);
      expect({ argv, code }).toEqual({ argv, code: 2 });
      expect(err).toMatch(message);
    }
  });

  it("writes the metric names of --metrics, and simulates with the simulator's", async () => {
    const dir = mkdtempSync(join(tmpdir(), "design-metrics-"));
    const file = join(dir, "metrics.yaml");
    writeFileSync(file, "requests: shop_requests_total\nerrors: 'status=~\"5..\"'\nversion: release\n");
    const io = recorder();
    const simulated: string[] = [];
    await designAction(io, options({ metrics: file }), {
      loadRuntime: async () => arithmeticRuntime([], simulated),
    });
    expect(io.text.out).toContain(
      'sum(rate(shop_requests_total{release="{{args.version}}",status=~"5.."}[5s]))',
    );
    expect(simulated[0]).toContain(
      'sum(rate(http_requests_total{version="{{args.version}}",code=~"5.."}[5s]))',
    );
    expect(simulated.some((text) => text.includes("shop_requests_total"))).toBe(false);
    const { code, err } = await run(
      "design",
      ...DEMO,
      "--metrics",
      file,
      "--router",
      "none",
      "--replicas",
      "0",
    );
    expect(code).toBe(2);
    expect(err).toContain("--replicas must be a whole number from 1 to 5000");
  });
});

describe("rollouts design --model", () => {
  it("prints the plan as comments and the Rollout and templates the loader reads", async () => {
    const { code, out } = await run(
      "design",
      "--model",
      "--rps",
      "60",
      "--signal",
      "errors:0s",
      "--signal",
      "feedback:10m",
      "--baseline",
      "errors=0.01",
      "--baseline",
      "feedback=0.05",
      "--min-effect",
      "0.02",
      "--min-effect",
      "feedback=0.05",
      "--name",
      "ranker",
    );
    expect(code).toBe(0);
    expect(out).toContain("# shadow: worth it: errors is read on copies");
    expect(out).toMatch(/# shadow: 100% mirrored\s+ranker-shadow\s+errors\s+983\s+17s/);
    expect(out).toContain('"router":{"type":"model","key":{"header":"x-user-id"}}');
    const { spec } = parseRollout([{ file: "model.yaml", text: out }]);
    expect(spec.steps.map((s) => s.kind)).toEqual([
      "setMirrorRoute",
      "analysis",
      "setMirrorRoute",
      "setWeight",
      "analysis",
      "setWeight",
      "analysis",
    ]);
  });

  it("--json: the plan's shape", async () => {
    const { out } = await run(
      "design",
      "--model",
      "--json",
      "--rps",
      "60",
      "--signal",
      "feedback:10m",
      "--baseline",
      "feedback=0.05",
      "--min-effect",
      "0.05",
    );
    const plan = JSON.parse(out);
    expect(Object.keys(plan)).toEqual([
      "kind",
      "rps",
      "alpha",
      "samples",
      "shadow",
      "steps",
      "rollout",
      "templates",
      "target",
      "warnings",
      "yaml",
    ]);
    expect(plan.shadow.worth).toBe(false);
    expect(plan.steps[0]).toMatchObject({
      kind: "canary",
      weight: 25,
      decisionSeconds: 600 + Math.ceil(556 / 15),
    });
  });
});

describe("rollouts review on what rollouts design proposes", () => {
  /** Writes `text` to a file and reviews it as a user would before merging it. */
  async function review(text: string, ...flags: string[]) {
    const dir = mkdtempSync(join(tmpdir(), "design-review-"));
    const file = join(dir, "design.yaml");
    writeFileSync(file, text);
    return run("review", file, "--fail-on", "info", "--json", ...flags);
  }

  it.each([
    ["alb", options({ scrapeInterval: "15s" })],
    ["lambda", options({ scrapeInterval: "15s", router: "lambda" })],
    [
      "none, 5 replicas",
      options({ scrapeInterval: "15s", router: "none", replicas: 5, exposureBudget: 10_000 }),
    ],
    ["a 30s scrape", options({ scrapeInterval: "30s", exposureBudget: 10_000 })],
  ])("a design for %s has no finding at any severity", async (_, designed) => {
    const io = recorder();
    expect(await designAction(io, designed, { loadRuntime: async () => arithmeticRuntime() })).toBe(0);
    const { code, out } = await review(
      io.text.out,
      "--rps",
      String(designed.rps),
      "--error-rate",
      String(designed.sloErrorRate),
      "--exposure-budget",
      String(designed.exposureBudget),
      "--scrape-interval",
      designed.scrapeInterval,
    );
    expect(JSON.parse(out).findings).toEqual([]);
    expect(code).toBe(0);
  });

  it("a model rollout's design has no finding at any severity", async () => {
    const designed = await run(
      "design",
      "--model",
      "--rps",
      "60",
      "--signal",
      "errors:0s",
      "--signal",
      "feedback:10m",
      "--baseline",
      "errors=0.01",
      "--baseline",
      "feedback=0.05",
      "--min-effect",
      "0.02",
      "--name",
      "ranker",
    );
    expect(designed.code).toBe(0);
    const { code, out } = await review(designed.out, "--rps", "60", "--exposure-budget", "1000");
    expect(JSON.parse(out).findings).toEqual([]);
    expect(code).toBe(0);
  });
});
