import { readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKS } from "../../statemachine/review/index.ts";

const SEED = ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"];
const ARGO = "test/fixtures/argo-examples";

describe("rollouts review", () => {
  it("prints each finding as a linter does, grouped by file, and exits 1 at warning", async () => {
    const { code, out, err } = await run("review", ...SEED);
    expect(code).toBe(1);
    expect(err).toContain(
      "note: examples/rollout.yaml: document 2: skipped Service demo (not a rollout object)",
    );
    const lines = out.split("\n");
    expect(lines[0]).toBe(
      "examples/rollout.yaml:1 Rollout demo  info  check-skipped  exposure (exposure-budget) not checked: exposure is requests, so it needs --rps R (and --error-rate E, --exposure-budget N)",
    );
    expect(lines).toContain(
      'examples/analysis-success-rate.yaml:1 AnalysisTemplate success-rate spec.metrics[0].provider.prometheus.query (step 1)  warning  window-initial-delay  metric "success-rate": rate(…[20s]) averages 20s, but at the first measurement the candidate has served 5s (initialDelay 5s)',
    );
    expect(lines).toContain(
      '    fix: initialDelay: 20s on metric "success-rate" (or a window of at most 5s)',
    );
    expect(lines.at(-2)).toBe("2 warnings, 1 info (exit 1: --fail-on warning)");
  });

  it("warns of a subscription to a trigger neither built in nor in the notification ConfigMap, with the fix", async () => {
    const rollout = "test/fixtures/argo-examples/notifications/rollout-canary.yaml";
    const { out } = await run("review", rollout, "--json");
    const found = JSON.parse(out).findings.filter(
      (f: { id: string }) => f.id === "notification-unknown-trigger",
    );
    expect(found).toEqual([
      {
        id: "notification-unknown-trigger",
        severity: "warning",
        file: rollout,
        document: 3,
        object: "Rollout rollout-canary",
        path: 'metadata.annotations["notifications.argoproj.io/subscribe.on-purple.slack"]',
        message:
          'trigger "on-purple" is neither one of the nine built-in triggers nor defined in the argo-rollouts-notification-configmap: the subscription is ignored',
        why: CHECKS["notification-unknown-trigger"],
        fix: "give the argo-rollouts-notification-configmap that defines trigger.on-purple with the spec files, or subscribe to a built-in trigger (on-rollout-completed, on-rollout-step-completed, on-rollout-updated, on-rollout-aborted, on-rollout-paused, on-scaling-replica-set, on-analysis-run-running, on-analysis-run-error, on-analysis-run-failed)",
      },
    ]);
    const withConfig = await run(
      "review",
      rollout,
      "test/fixtures/argo-examples/notifications/configmap.yaml",
      "--json",
    );
    expect(JSON.parse(withConfig.out).findings.map((f: { id: string }) => f.id)).not.toContain(
      "notification-unknown-trigger",
    );
  });

  it("exits 0 when nothing is at --fail-on or above", async () => {
    expect((await run("review", ...SEED, "--fail-on", "error")).code).toBe(0);
    const clean = await run("review", "examples/blue-green.yaml");
    expect(clean.code).toBe(0);
    expect(clean.out.trim().split("\n").at(-1)).toBe("1 info (exit 0: --fail-on warning)");
    expect((await run("review", "examples/blue-green.yaml", "--fail-on", "info")).code).toBe(1);
  });

  it("prints JSON for tools: every finding with where it is, why and the fix, and the summary", async () => {
    const { code, out } = await run("review", ...SEED, "--scrape-interval", "1s", "--rps", "40", "--json");
    expect(code).toBe(1);
    const report = JSON.parse(out);
    expect(Object.keys(report)).toEqual(["rollout", "failOn", "exitCode", "summary", "findings"]);
    expect(report).toMatchObject({
      rollout: "demo",
      failOn: "warning",
      exitCode: 1,
      summary: { info: 1, warning: 1, error: 0 },
    });
    expect(report.findings[1]).toEqual({
      id: "window-initial-delay",
      severity: "warning",
      file: "examples/analysis-success-rate.yaml",
      document: 1,
      object: "AnalysisTemplate success-rate",
      path: "spec.metrics[0].provider.prometheus.query",
      step: 1,
      message:
        'metric "success-rate": rate(…[20s]) averages 20s, but at the first measurement the candidate has served 5s (initialDelay 5s)',
      why: CHECKS["window-initial-delay"],
      fix: 'initialDelay: 20s on metric "success-rate" (or a window of at most 5s)',
    });
    expect(report.findings[0]).toMatchObject({ id: "exposure-budget", severity: "info", step: 1 });
  });

  it("exits 2 on input it cannot use, with the loader's own problems", async () => {
    const missing = await run("review", "examples/rollout.yaml");
    expect(missing.code).toBe(2);
    expect(missing.err).toContain(
      'examples/rollout.yaml: document 1 (Rollout demo): spec.strategy.canary.steps[1].analysis.templates[0].templateName (step 2): AnalysisTemplate "success-rate" not found in the files given',
    );
    expect((await run("review", "no-such-file.yaml")).err).toContain(
      "no-such-file.yaml: cannot read the file: no such file",
    );
    const flag = await run("review", ...SEED, "--fail-on", "never");
    expect(flag.code).toBe(2);
    expect(flag.err).toContain('--fail-on must be one of error, warning, info, got "never"');
    expect((await run("review", ...SEED, "--error-rate", "0.1")).code).toBe(2);
  });

  it("finds a bad version's exposure past --exposure-budget", async () => {
    const { code, out } = await run(
      "review",
      ...SEED,
      "--rps",
      "100",
      "--error-rate",
      "0.5",
      "--exposure-budget",
      "50",
      "--json",
    );
    expect(code).toBe(1);
    const f = JSON.parse(out).findings.find((x: { id: string }) => x.id === "exposure-budget");
    expect(f).toMatchObject({ severity: "error", path: "spec.strategy.canary.steps[1]", step: 1 });
    expect(f.message).toContain("when it has served 125 requests (63 failed at an error rate of 0.5)");
  });

  it("documents every finding id in docs/cli.md", () => {
    const doc = readFileSync("docs/cli.md", "utf8");
    for (const id of Object.keys(CHECKS)) expect(doc).toContain(`| \`${id}\``);
  });
});

describe("rollouts review on Argo Rollouts' own examples", () => {
  const idsOf = async (...argv: string[]) => {
    const { code, out } = await run("review", ...argv, "--json");
    return { code, findings: JSON.parse(out).findings as Array<Record<string, unknown>> };
  };

  it("rollout-canary.yaml: 20/40/60/80% of 5 replicas are whole pods; no analysis can stop a bad version", async () => {
    const { code, findings } = await idsOf(`${ARGO}/rollout-canary.yaml`, "--rps", "100");
    expect(code).toBe(1);
    expect(findings.map((f) => [f.id, f.severity, f.path])).toEqual([
      ["exposure-budget", "warning", "spec.strategy.canary.steps[7]"],
    ]);
  });

  it("rollout-bluegreen.yaml: nothing analyses the new stack before or after the switch", async () => {
    const { findings } = await idsOf(`${ARGO}/rollout-bluegreen.yaml`, "--rps", "100");
    expect(findings.map((f) => [f.id, f.path])).toEqual([
      ["exposure-budget", "spec.strategy.blueGreen.activeService"],
    ]);
  });

  it("appmesh: the success rate's envoy cluster argument has no value, so whether it selects the canary is unknown", async () => {
    // The example's Rollout routes with App Mesh, which is refused; its AnalysisTemplate (the
    // file's first document, as written) is reviewed next to the plain canary example.
    const example = `${ARGO}/appmesh/canary-rollout.yaml`;
    const refused = await run("review", example);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain(
      "spec.strategy.canary.trafficRouting.appMesh: AWS App Mesh is not a traffic router",
    );
    const dir = await mkdtemp(join(tmpdir(), "review-appmesh-"));
    const template = join(dir, "success-rate.yaml");
    await writeFile(template, readFileSync(example, "utf8").split("\n---\n")[0] as string);
    const { code, findings } = await idsOf(template, `${ARGO}/rollout-canary.yaml`);
    expect(code).toBe(0);
    const unknown = findings.find((f) => f.id === "query-candidate-unknown");
    expect(unknown).toMatchObject({
      severity: "info",
      object: "AnalysisTemplate success-rate",
      path: "spec.metrics[0].provider.prometheus.query",
    });
    expect(unknown?.message).toContain("args.envoy_cluster_name is given no value here");
    // Its numerator selects envoy_response_code_class!~"5.*": a healthy version fills it, no trap.
    expect(findings.map((f) => f.id)).not.toContain("empty-numerator");
  });

  it("rollout-analysis-step.yaml: its Job-provider templates load; only the exposure check is skipped", async () => {
    const { code, out } = await run(
      "review",
      `${ARGO}/rollout-analysis-step.yaml`,
      `${ARGO}/analysis-templates.yaml`,
      `${ARGO}/cluster-analysis-templates.yaml`,
    );
    expect(code).toBe(0);
    expect(out).toContain("check-skipped");
    expect(out).not.toMatch(/\b(warning|error)\b {2}/);
  });
});

describe("rollouts review --prometheus", () => {
  let server: Server;
  let url: string;
  let dir: string;
  const vector = (result: Array<{ metric: Record<string, string>; value: string }>) =>
    JSON.stringify({
      status: "success",
      data: {
        resultType: "vector",
        result: result.map((r) => ({ metric: r.metric, value: [1700000000, r.value] })),
      },
    });
  const answer = (query: string): string => {
    if (query.startsWith("count by") && query.includes("both_total")) {
      return vector([
        { metric: { version: "v1" }, value: "3" },
        { metric: { version: "v2" }, value: "1" },
      ]);
    }
    if (query.includes("empty_total")) return vector([]);
    if (query.includes("nan_total")) return vector([{ metric: {}, value: "NaN" }]);
    return vector([{ metric: {}, value: "1" }]);
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        const query = new URLSearchParams(body).get("query") ?? "";
        res.writeHead(200, { "content-type": "application/json" }).end(answer(query));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = await mkdtemp(join(tmpdir(), "review-live-"));
    const metric = (name: string, query: string) =>
      `    - name: ${name}\n      initialDelay: 1m\n      successCondition: result[0] >= 0\n      provider: {prometheus: {address: http://unused:9090, query: '${query}'}}\n`;
    await writeFile(
      join(dir, "rollout.yaml"),
      readFileSync("examples/rollout-judged.yaml", "utf8").replaceAll(
        "templateName: judges",
        "templateName: live",
      ),
    );
    await writeFile(
      join(dir, "template.yaml"),
      `apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: live}\nspec:\n  args: [{name: version, valueFrom: {podTemplateHashValue: Latest}}]\n  metrics:\n${metric("empty", 'sum(rate(empty_total{version="{{args.version}}"}[1m]))')}${metric("nan", 'sum(rate(nan_total{version="{{args.version}}"}[1m]))')}${metric("both", 'sum(rate(both_total{app="shop"}[1m]))')}`,
    );
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const live = async (...extra: string[]) => {
    const r = await run(
      "review",
      join(dir, "rollout.yaml"),
      join(dir, "template.yaml"),
      "--prometheus",
      url,
      "--json",
      ...extra,
    );
    if (r.code !== 0 && r.code !== 1) throw new Error(`exit ${r.code}: ${r.err}`);
    return {
      ...r,
      findings: JSON.parse(r.out).findings as Array<{
        id: string;
        severity: string;
        message: string;
        fix: string;
      }>,
    };
  };

  it("reports an empty vector, a NaN and a selector that matches two versions", async () => {
    const { code, findings } = await live("--latest", "v2");
    expect(code).toBe(1);
    const liveOnes = findings
      .filter((f) => f.id?.startsWith("live-"))
      .map((f) => [f.id, f.severity, f.message]);
    expect(liveOnes).toEqual([
      [
        "live-empty",
        "error",
        'metric "empty": the query answers an empty vector now (it ran as: sum(rate(empty_total{version="v2"}[1m])))',
      ],
      [
        "live-nan",
        "warning",
        'metric "nan": the query answers NaN now (it ran as: sum(rate(nan_total{version="v2"}[1m])))',
      ],
      [
        "live-both-versions",
        "warning",
        'metric "both": both_total{app="shop"} matches the series of 2 versions now (version="v1", version="v2")',
      ],
    ]);
  });

  it("skips, at info, a query whose placeholder has no value, naming the flag", async () => {
    const { findings } = await live();
    const skipped = findings.filter(
      (f) => f.id === "check-skipped" && f.message.includes("not run against Prometheus"),
    );
    expect(skipped.map((f) => f.fix)).toEqual(["give --latest VALUE", "give --latest VALUE"]);
    expect(findings.map((f) => f.id)).toContain("live-both-versions");
  });

  it("exits 5 when the Prometheus given does not answer", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await run(
      "review",
      join(dir, "rollout.yaml"),
      join(dir, "template.yaml"),
      "--prometheus",
      `http://127.0.0.1:${port}`,
    );
    expect(r.code).toBe(5);
    expect(r.err).toContain(`rollouts: Prometheus at http://127.0.0.1:${port} did not answer a query`);
  });
});
