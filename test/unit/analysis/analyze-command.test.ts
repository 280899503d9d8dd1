import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "@sfn-rollouts/test-support/http-server";
import { Command, CommanderError } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnalyzeDeps, analyzeCommand } from "../../../cli/commands/analyze.ts";
import { UsageError } from "../../../cli/io.ts";
import { main } from "../../../cli/main.ts";
import { defaultProviders } from "../../../functions/metrics/index.ts";

/**
 * `rollouts analyze` end to end against a local web metric, in virtual time: the clock moves when
 * the command sleeps, so a run of many intervals takes no wall time.
 */

let server: Awaited<ReturnType<typeof startServer>>;
let dir: string;
const answers: Record<string, { status: number; body: string }> = {};

beforeAll(async () => {
  server = await startServer((req, res) => {
    const a = answers[req.url] ?? { status: 404, body: "" };
    res.writeHead(a.status, { "content-type": "application/json" }).end(a.body);
  });
  dir = mkdtempSync(join(tmpdir(), "analyze-"));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function template(name: string, metric: Record<string, string>): string {
  const file = join(dir, `${name}.yaml`);
  const lines = [
    "apiVersion: argoproj.io/v1alpha1",
    "kind: AnalysisTemplate",
    "metadata:",
    `  name: ${name}`,
    "spec:",
    "  args:",
    "    - name: base",
    "  metrics:",
    `    - name: ${metric.name ?? "success-rate"}`,
    ...Object.entries(metric)
      .filter(([k]) => !["name", "path", "jsonPath"].includes(k))
      .map(([k, v]) => `      ${k}: ${v}`),
    "      provider:",
    "        web:",
    `          url: "{{args.base}}${metric.path ?? "/rate"}"`,
    `          jsonPath: "${metric.jsonPath ?? "{$.rate}"}"`,
    "",
  ];
  writeFileSync(file, lines.join("\n"));
  return file;
}

function virtualDeps(stopAfterSeconds?: number): AnalyzeDeps & { slept: number[] } {
  let t = Date.parse("2026-05-01T10:00:00Z");
  const start = t;
  const slept: number[] = [];
  let controller: AbortController | undefined;
  return {
    slept,
    now: () => new Date(t),
    sleep: async (ms) => {
      slept.push(ms);
      t += ms;
      if (stopAfterSeconds !== undefined && t - start >= stopAfterSeconds * 1000) controller?.abort();
    },
    providers: () => defaultProviders(),
    interrupt: (c) => {
      controller = c;
      return () => undefined;
    },
  };
}

async function cli(argv: string[], deps: AnalyzeDeps = virtualDeps()) {
  const out: string[] = [];
  const err: string[] = [];
  let code = -1;
  const program = new Command("rollouts").exitOverride().configureOutput({
    writeOut: (s) => out.push(s),
    writeErr: (s) => err.push(s),
  });
  analyzeCommand(deps)(program, { out: (s) => out.push(s), err: (s) => err.push(s) }, (c) => {
    code = c;
  });
  for (const sub of program.commands) sub.exitOverride();
  try {
    await program.parseAsync(["analyze", ...argv], { from: "user" });
  } catch (e) {
    if (e instanceof UsageError || e instanceof CommanderError) {
      err.push(e.message);
      code = 2;
    } else throw e;
  }
  return { code, out, err };
}

describe("rollouts analyze", () => {
  it("Successful: prints each measurement and exits 0", async () => {
    answers["/good"] = { status: 200, body: '{"rate": 0.99}' };
    const file = template("good", {
      interval: "5s",
      count: "3",
      successCondition: "result >= 0.95",
      path: "/good",
    });
    const r = await cli([file, "--arg", `base=${server.url}`]);
    expect(r.out).toEqual([
      "analysis: 1 metric(s): success-rate",
      "measurement success-rate = 0.99 Successful",
      "measurement success-rate = 0.99 Successful",
      "measurement success-rate = 0.99 Successful",
      "phase: Successful",
    ]);
    expect(r.code).toBe(0);
  });

  it("Failed: the message is Argo's and the exit code 1", async () => {
    answers["/bad"] = { status: 200, body: '{"rate": 0.5}' };
    const file = template("bad", {
      interval: "5s",
      count: "3",
      successCondition: "result >= 0.95",
      path: "/bad",
    });
    const r = await cli([file, "--arg", `base=${server.url}`]);
    expect(r.out).toEqual([
      "analysis: 1 metric(s): success-rate",
      "measurement success-rate = 0.5 Failed",
      "phase: Failed",
      'message: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)',
    ]);
    expect(r.code).toBe(1);
  });

  it("Inconclusive exits 3", async () => {
    answers["/meh"] = { status: 200, body: '{"rate": 0.7}' };
    const file = template("meh", {
      successCondition: "result >= 0.95",
      failureCondition: "result < 0.5",
      path: "/meh",
    });
    const r = await cli([file, "--arg", `base=${server.url}`]);
    expect(r.out.at(-2)).toBe("phase: Inconclusive");
    expect(r.code).toBe(3);
  });

  it("Error after five consecutive errors, 10 s apart, exits 1", async () => {
    answers["/down"] = { status: 503, body: "" };
    const deps = virtualDeps();
    const file = template("down", {
      interval: "60s",
      count: "3",
      successCondition: "result >= 0.95",
      path: "/down",
    });
    const r = await cli([file, "--arg", `base=${server.url}`], deps);
    expect(r.out.filter((l) => l.startsWith("measurement"))).toHaveLength(5);
    expect(r.out[1]).toBe("measurement success-rate Error: received non 2xx response code: 503");
    expect(r.out.at(-1)).toBe(
      'message: Metric "success-rate" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: received non 2xx response code: 503"',
    );
    expect(deps.slept).toEqual([10_000, 10_000, 10_000, 10_000]);
    expect(r.code).toBe(1);
  });

  it("--json prints the final run on stdout and the measurements on stderr", async () => {
    answers["/good"] = { status: 200, body: '{"rate": 0.99}' };
    const file = template("json", { successCondition: "result >= 0.95", path: "/good" });
    const r = await cli([file, "--arg", `base=${server.url}`, "--json"]);
    expect(r.code).toBe(0);
    expect(r.err).toContain("measurement success-rate = 0.99 Successful");
    const json = JSON.parse(r.out.join("\n"));
    expect(json).toEqual({
      phase: "Successful",
      message: "",
      metricResults: [
        {
          name: "success-rate",
          phase: "Successful",
          message: "",
          count: 1,
          successful: 1,
          failed: 0,
          inconclusive: 0,
          error: 0,
          consecutiveError: 0,
          measurements: [
            {
              phase: "Successful",
              value: "0.99",
              startedAt: "2026-05-01T10:00:00.000Z",
              finishedAt: "2026-05-01T10:00:00.000Z",
              message: "",
            },
          ],
        },
      ],
    });
  });

  it("a background metric (interval, no count) runs until --duration, then ends Successful", async () => {
    answers["/good"] = { status: 200, body: '{"rate": 0.99}' };
    const file = template("bg", { interval: "10s", successCondition: "result >= 0.95", path: "/good" });
    const r = await cli([file, "--arg", `base=${server.url}`, "--duration", "35"]);
    expect(r.out.filter((l) => l.startsWith("measurement"))).toHaveLength(4);
    expect(r.out.slice(-2)).toEqual(["phase: Successful", "message: Run Terminated"]);
    expect(r.code).toBe(0);
  });

  it("an interrupt terminates the run the same way", async () => {
    answers["/good"] = { status: 200, body: '{"rate": 0.99}' };
    const file = template("int", { interval: "10s", successCondition: "result >= 0.95", path: "/good" });
    // Measurements at 0 s and 10 s; the interrupt arrives while sleeping towards 20 s.
    const r = await cli([file, "--arg", `base=${server.url}`], virtualDeps(20));
    expect(r.out.filter((l) => l.startsWith("measurement"))).toHaveLength(2);
    expect(r.out.at(-1)).toBe("message: Run Terminated");
    expect(r.code).toBe(0);
  });

  it("input it cannot use exits 2", async () => {
    expect((await cli([join(dir, "missing.yaml")])).code).toBe(2);
    const good = template("args", { successCondition: "result >= 0.95" });
    const badArg = await cli([good, "--arg", "base"]);
    expect(badArg.code).toBe(2);
    expect(badArg.err.join("\n")).toContain('--arg must be NAME=VALUE, got "base"');
    const typo = template("typo", { successCondition: '"result[0] >="' });
    const r = await cli([typo, "--arg", `base=${server.url}`]);
    expect(r.code).toBe(2);
    expect(r.err.join("\n")).toMatch(/typo/);
    expect(r.err.join("\n")).toMatch(/successCondition/);
  });

  it("is registered in the rollouts command", async () => {
    const out: string[] = [];
    const code = await main(["analyze", join(dir, "missing.yaml")], {
      out: (s) => out.push(s),
      err: (s) => out.push(s),
    });
    expect(code).toBe(2);
    expect(out.join("\n")).toMatch(/missing\.yaml/);
  });
});

describe("rollouts analyze with a judge", () => {
  function judgeTemplate(): string {
    const file = join(dir, "judge.yaml");
    writeFileSync(
      file,
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: judge}
spec:
  args: [{name: base}]
  metrics:
    - name: errors
      interval: 10s
      count: 3
      provider:
        plugin:
          sfn-rollouts/judge:
            test: two-proportion
            label: errors
            candidate: {web: {url: "{{args.base}}/stats/{{rollout.latest}}"}}
            stable: {web: {url: "{{args.base}}/stats/{{rollout.stable}}"}}
`,
    );
    return file;
  }

  it("needs the versions a rollout would know, and names the flags", async () => {
    const r = await cli([judgeTemplate(), "--arg", `base=${server.url}`]);
    expect(r.code).toBe(2);
    expect(r.err.join("\n")).toContain(
      "the templates read {{rollout.latest}}, {{rollout.stable}}: give --latest, --stable",
    );
  });

  it("refuses a --latest, --stable or --digest that is not an image tag or digest, as a rollout would", async () => {
    const r = await cli([
      judgeTemplate(),
      "--arg",
      `base=${server.url}`,
      "--latest",
      "v2/../x",
      "--stable",
      "v1",
    ]);
    expect(r.code).toBe(2);
    expect(r.err.join("\n")).toContain(
      '--latest: {{rollout.latest}} would be "v2/../x", which is not an image tag',
    );
  });

  it("judges the candidate against the stable version it is given", async () => {
    answers["/stats/v2"] = { status: 200, body: '{"bad": 30, "n": 1000}' };
    answers["/stats/v1"] = { status: 200, body: '{"bad": 10, "n": 1000}' };
    const r = await cli([judgeTemplate(), "--arg", `base=${server.url}`, "--latest", "v2", "--stable", "v1"]);
    expect(r.code).toBe(1);
    expect(r.out.at(-1)).toMatch(
      /^message: Gate "errors" rolled back: candidate 3\.0% vs stable 1\.0% errors, p = \S+ < alpha 0\.05 \(two-proportion, n = 1000\/1000\)$/,
    );
  });
});
