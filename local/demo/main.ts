import { Exit } from "../../cli/exit-codes.ts";
import { columns } from "../../cli/table.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { prometheusVersion, type RunningPrometheus, startPrometheus } from "../prometheus.ts";
import { type RunningProxy, startProxy } from "../proxy/server.ts";
import { LOCAL_PROXY_FUNCTION_ARN } from "../proxy/target.ts";
import { CLI_ENV_KEYS, type EmbeddedStack, startEmbeddedStack } from "../stack.ts";
import { type DemoApp, startDemoApp } from "./app.ts";
import { runKubernetesDemo } from "./kubernetes.ts";
import { type Load, startLoad } from "./load.ts";
import { runModelDemo } from "./model-demo.ts";
import { type DemoMetrics, writeDemoSpec } from "./spec.ts";

/** One pushed version and what happened to it. */
export interface DemoOutcome {
  tag: string;
  revision: number | null;
  outcome: "Healthy" | "Degraded" | "timed out";
  message: string;
  /** What decided an abort: `gate errors` (a judge) or `metric success-rate` (a threshold). */
  decidedBy: string;
  seconds: number;
  /** The candidate's weight when the version's rollout ended (100 promoted, 0 aborted). */
  weight: number;
  /** Requests the proxy sent to this version while it was the candidate, and how many failed. */
  served: number;
  failed: number;
}

export interface DemoResult {
  outcomes: DemoOutcome[];
  metrics: DemoMetrics["kind"];
  seconds: number;
  ok: boolean;
}

export interface DemoOptions {
  /** Requests per second the load generator sends. */
  rps?: number;
  /** Where progress lines go. */
  print?: (line: string) => void;
  /** Use the proxy's samples even when Prometheus is installed. */
  noPrometheus?: boolean;
  /** Seconds one version may take before the demo gives up on it. */
  perVersionTimeoutSeconds?: number;
  /** Ctrl-C: stop following, close everything, leave no process behind. */
  signal?: AbortSignal;
}

const DIGEST = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;

/** Requests per second of the demo's users: enough for the judge to decide within seconds at 50%. */
export const DEMO_RPS = 800;

/** `gate errors` or `metric success-rate`, from an abort message; `-` when nothing aborted. */
function decidedBy(message: string): string {
  const m = /(Gate|Metric) "([^"]+)"/.exec(message);
  return m ? `${m[1]?.toLowerCase()} ${m[2]}` : "-";
}

/** The demo's versions and the share of checkouts each fails. */
export const DEMO_VERSIONS = [
  ["v1", 0.01],
  ["v2", 0.01],
  ["v3", 0.5],
  ["v4", 0.03],
] as const;

/**
 * The demo a new user runs first (`npm start`): four versions of a service behind the local
 * proxy, live traffic, Prometheus when installed (else the proxy's own samples), and the
 * synthesized stack in the embedded runtime with the reference canary and a statistical gate.
 * It pushes four "images" as ECR events: v1 becomes Healthy with no steps; v2 walks the steps
 * and is promoted; v3 fails half of its checkouts and is aborted by the threshold at its first
 * analysis; v4 fails 3% of them where the stable version fails 1% — the threshold passes it, and
 * the judge comparing it with the stable version rolls it back.
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const started = Date.now();
  const closers: Array<() => Promise<void>> = [];
  try {
    const { apps, proxy, metrics, scraping } = await startServices(options, print, closers);
    const stack = await startEmbeddedStack({
      // Promotion at 1500 requests per side leaves room above where v4 is caught (about 800); at
      // 800 requests a second, 400 per side at 50%, the judge decides either way within 4 s.
      specFiles: writeDemoSpec(metrics, {
        pause: "{duration: 1s}",
        initialDelay: "3s",
        interval: "1s",
        judge: { samples: 1500, initialDelay: "2s", interval: "1s", count: 30 },
      }),
      // The local proxy is a target plugin the embedded runtime serves as a Lambda function.
      target: {
        type: "plugin",
        name: "local-proxy",
        functionArn: LOCAL_PROXY_FUNCTION_ARN,
        config: {
          adminUrl: proxy.adminUrl,
          readinessPath: "/healthz",
          upstreams: Object.fromEntries(Object.entries(apps).map(([v, app]) => [v, app.url])),
        },
      },
    });
    closers.push(stack.close);
    const notScraped = await scraping;
    if (notScraped) throw notScraped;
    printIntro(print, apps, proxy, stack);

    const seen: Seen = { lines: new Set() };
    let load: Load | undefined;
    const outcomes: DemoOutcome[] = [];
    const timeout = (options.perVersionTimeoutSeconds ?? 60) * 1000;
    for (const [n, [tag]] of DEMO_VERSIONS.entries()) {
      const before = await versionCounts(proxy.url, tag);
      const previous = (await stack.item())?.executionArn ?? null;
      const t0 = Date.now();
      print(`push ${tag} (${DIGEST(n + 1).slice(0, 19)}…)`);
      await stack.push(tag, DIGEST(n + 1));
      const item = await follow(stack, print, timeout, previous, seen, options.signal);
      if (options.signal?.aborted) break;
      if (!load) {
        // Users arrive once there is a version to serve; Prometheus then has data for every window.
        load = startLoad({ url: `${proxy.url}/checkout`, rps: options.rps ?? DEMO_RPS });
      }
      outcomes.push(outcomeOf(tag, item, t0, before, await versionCounts(proxy.url, tag)));
      print("");
    }
    await load?.stop();
    const { ok, seconds } = printSummary(print, outcomes, started);
    return { outcomes, metrics: metrics.kind, seconds, ok };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

/**
 * The demo's services, each added to `closers` as it starts: a process per version, the proxy in
 * front of them, and Prometheus scraping the proxy when it is installed (else the analysis reads
 * the proxy's own samples). `scraping` settles once Prometheus has made its first scrape: with an
 * error when it cannot.
 */
async function startServices(
  options: DemoOptions,
  print: (line: string) => void,
  closers: Array<() => Promise<void>>,
): Promise<{
  apps: Record<string, DemoApp>;
  proxy: RunningProxy;
  metrics: DemoMetrics;
  scraping: Promise<unknown> | undefined;
}> {
  const apps: Record<string, DemoApp> = {};
  for (const [version, errorRate] of DEMO_VERSIONS) {
    apps[version] = await startDemoApp({ version, errorRate });
    closers.push(apps[version].close);
  }
  const proxy = await startProxy({});
  closers.push(proxy.close);
  let prometheus: RunningPrometheus | undefined;
  let metrics: DemoMetrics = { kind: "proxy", url: proxy.adminUrl };
  if (!options.noPrometheus && prometheusVersion()) {
    prometheus = await startPrometheus({ targets: [new URL(proxy.url).host] });
    closers.push(prometheus.close);
    metrics = { kind: "prometheus", url: prometheus.url };
    print(`prometheus ${prometheus.version} on ${prometheus.url}, scraping the proxy every second`);
  } else {
    print("no prometheus binary: the analysis reads the proxy's own per-version samples (/admin/stats)");
  }
  // Prometheus applies its scrape targets up to 5 s after it starts: synthesize meanwhile.
  const scraping = prometheus?.scraped().then(
    () => undefined,
    (error: unknown) => error,
  );
  return { apps, proxy, metrics, scraping };
}

/** Where the services listen, and the command that watches the rollout live. */
function printIntro(
  print: (line: string) => void,
  apps: Record<string, DemoApp>,
  proxy: RunningProxy,
  stack: EmbeddedStack,
): void {
  print(`services: ${DEMO_VERSIONS.map(([v, e]) => `${v} ${apps[v]?.url} (${e * 100}% errors)`).join(", ")}`);
  print(`proxy ${proxy.url} (admin ${proxy.adminUrl}); workflow ${stack.stateMachineArn.split(":").at(-1)}`);
  print("watch it live in another terminal:");
  print(`  ${cliEnv(stack)} npx rollouts get ${stack.rollout} --watch`);
  print("");
}

/** One version's outcome: how its rollout ended, what decided it, and the requests it served meanwhile. */
function outcomeOf(
  tag: string,
  item: RolloutItem | undefined,
  t0: number,
  before: { total: number; failed: number },
  after: { total: number; failed: number },
): DemoOutcome {
  return {
    tag,
    revision: item?.currentRevision?.revision ?? null,
    outcome: item?.phase === "Healthy" || item?.phase === "Degraded" ? item.phase : "timed out",
    message: item?.message ?? "",
    decidedBy: decidedBy(item?.message ?? ""),
    seconds: (Date.now() - t0) / 1000,
    weight: item?.weight ?? 0,
    served: after.total - before.total,
    failed: after.failed - before.failed,
  };
}

/**
 * Prints the summary table, whether the four outcomes are the expected ones (each abort decided
 * by what should decide it), and where to look next.
 */
function printSummary(
  print: (line: string) => void,
  outcomes: DemoOutcome[],
  started: number,
): { ok: boolean; seconds: number } {
  const ok =
    outcomes[0]?.outcome === "Healthy" &&
    outcomes[1]?.outcome === "Healthy" &&
    outcomes[2]?.outcome === "Degraded" &&
    outcomes[2]?.decidedBy === "metric success-rate" &&
    outcomes[3]?.outcome === "Degraded" &&
    outcomes[3]?.decidedBy === "gate errors";
  const seconds = (Date.now() - started) / 1000;
  print(summary(outcomes));
  print("");
  print(
    `done in ${seconds.toFixed(1)} s: ${ok ? "v1 and v2 promoted, v3 aborted by a threshold, v4 rolled back by a judge" : "NOT the expected outcome"}`,
  );
  print("where to look next:");
  print("  examples/rollout.yaml, examples/analysis-success-rate.yaml  the rollout and its analysis");
  print("  examples/analysis-judges.yaml, docs/judges.md  statistical gates against the stable version");
  print("  npx rollouts plan examples/rollout.yaml examples/analysis-success-rate.yaml --rps 40");
  print("  npx rollouts compile examples/rollout.yaml examples/analysis-success-rate.yaml  the workflow");
  print("  README.md, 'Deploying with CDK'  the same stack on AWS");
  return { ok, seconds };
}

function cliEnv(stack: EmbeddedStack): string {
  return CLI_ENV_KEYS.filter((k) => k !== "AWS_SESSION_TOKEN")
    .map((k) => `${k}=${stack.env[k]}`)
    .join(" ");
}

/** What the demo has already printed, across versions. */
interface Seen {
  lines: Set<string>;
}

/** Prints the rollout's new events and measurements, in time order, until it is Healthy or Degraded. */
async function follow(
  stack: EmbeddedStack,
  print: (line: string) => void,
  timeoutMs: number,
  previousExecution: string | null,
  seen: Seen,
  signal?: AbortSignal,
): Promise<RolloutItem | undefined> {
  const until = Date.now() + timeoutMs;
  let item: RolloutItem | undefined;
  for (;;) {
    item = await stack.item();
    const fresh: Array<{ at: number; key: string; text: string }> = [];
    for (const event of item?.events ?? []) {
      const key = `e:${event.at}:${event.type}:${event.message}`;
      if (event.type !== "Triggered")
        fresh.push({ at: event.at, key, text: `${event.type.padEnd(22)} ${event.message}` });
    }
    for (const run of await stack.store.listRuns(stack.rollout, StoredAnalysisSchema)) {
      for (const result of run.run.run.metricResults) {
        for (const m of result.measurements) {
          const detail = m.message && m.phase === "Error" ? ` (${m.message})` : "";
          fresh.push({
            at: Date.parse(m.finishedAt),
            key: `m:${run.runId}:${result.name}:${m.finishedAt}`,
            text: `${"measurement".padEnd(22)} ${result.name} = ${m.value ?? ""} ${m.phase === "Running" ? "hold" : m.phase}${detail}`,
          });
        }
      }
    }
    for (const line of fresh.filter((l) => !seen.lines.has(l.key)).sort((a, b) => a.at - b.at)) {
      seen.lines.add(line.key);
      print(`  ${line.text}`);
    }
    const executionDone =
      item?.executionArn &&
      item.executionArn !== previousExecution &&
      (item.phase === "Healthy" || item.phase === "Degraded");
    if (executionDone || Date.now() > until || signal?.aborted) return item;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function versionCounts(proxyUrl: string, version: string): Promise<{ total: number; failed: number }> {
  const text = await (await fetch(`${proxyUrl}/metrics`)).text();
  let total = 0;
  let failed = 0;
  for (const line of text.split("\n")) {
    const m = /^http_requests_total\{version="([^"]*)",code="(\d+)"\} (\S+)$/.exec(line);
    if (!m || m[1] !== version) continue;
    const n = Number(m[3]);
    total += n;
    if (Number(m[2]) >= 500) failed += n;
  }
  return { total, failed };
}

/** The summary table: revision, outcome, what decided it, duration, requests the candidate served, of which failed. */
export function summary(outcomes: DemoOutcome[]): string {
  const header = ["image", "revision", "outcome", "decided by", "weight", "duration", "served", "failed"];
  const rows = outcomes.map((o) => [
    o.tag,
    String(o.revision ?? "-"),
    o.outcome,
    o.decidedBy,
    `${o.weight}%`,
    `${o.seconds.toFixed(1)} s`,
    String(o.served),
    String(o.failed),
  ]);
  const messages = outcomes.filter((o) => o.message).map((o) => `${o.tag}: ${o.message}`);
  return [...columns(header, rows), ...(messages.length ? ["", ...messages] : [])].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // The demo runs on the Node.js it is started with (20 or later); the Lambdas run Node.js 22.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  const stop = new AbortController();
  process.once("SIGINT", () => {
    process.stdout.write("\nstopping: closing the services, the proxy and Prometheus…\n");
    stop.abort();
  });
  const at = process.argv.indexOf("--target");
  const target = at >= 0 ? process.argv[at + 1] : "local-proxy";
  if (target !== "local-proxy" && target !== "kubernetes") {
    process.stderr.write(`--target must be local-proxy or kubernetes, got ${JSON.stringify(target ?? "")}\n`);
    process.exit(Exit.badInput);
  }
  const result = process.argv.includes("--model")
    ? await runModelDemo({ signal: stop.signal })
    : target === "kubernetes"
      ? await runKubernetesDemo({ signal: stop.signal })
      : await runDemo({ noPrometheus: process.argv.includes("--no-prometheus"), signal: stop.signal });
  process.exitCode = result.ok ? Exit.ok : Exit.negative;
}
