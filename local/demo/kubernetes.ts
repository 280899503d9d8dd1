import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { columns } from "../../cli/table.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { Endpoint } from "../kube/pods.ts";
import { type KubeApi, startKubeApi } from "../kube/server.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../stack.ts";
import { type DemoApp, startDemoApp } from "./app.ts";

/**
 * `npm start -- --target kubernetes`: the demo on the kubernetes target, against the local
 * Kubernetes API (`local/kube/`) in real time. Two Deployments (`shop-stable`, `shop-canary`)
 * behind one Service, a basic canary of 4 pods without a traffic router (a weight is a pod count,
 * as Argo Rollouts does it), each pod a real process of the demo service, and users whose requests
 * go to the Service's ready pods as kube-proxy sends them. v1 is the first release; v2 walks 25%
 * and 50% and is promoted; v3's pods never become ready (a build whose readiness probe fails) and
 * the rollout is aborted by the Deployment's own progress deadline. The pods of each side are
 * printed at every step.
 */

const NS = "default";
const LABEL = "rollouts.sfn/deployment";
const DIGEST = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;
/** The versions pushed, with the share of checkouts each fails and whether its pods get ready. */
const VERSIONS = [
  { tag: "v1", errorRate: 0.01, ready: true },
  { tag: "v2", errorRate: 0.01, ready: true },
  { tag: "v3", errorRate: 0.01, ready: false },
] as const;
/** The Deployments' progress deadline: short, so v3's abort comes within seconds. */
const DEADLINE_SECONDS = 8;

export interface KubeDemoOutcome {
  tag: string;
  outcome: "Healthy" | "Degraded" | "timed out";
  message: string;
  seconds: number;
  /** Requests the pods of this version answered while it was rolled out, and how many failed. */
  served: number;
  failed: number;
  /** `weight canary/stable` pods at each step the rollout reached: `25% 1/3`. */
  steps: string[];
}

export interface KubeDemoResult {
  outcomes: KubeDemoOutcome[];
  seconds: number;
  ok: boolean;
}

export interface KubeDemoOptions {
  print?: (line: string) => void;
  /** Seconds one version may take before the demo gives up on it. */
  perVersionTimeoutSeconds?: number;
  /** Requests per second the users send. */
  rps?: number;
  signal?: AbortSignal;
}

function deploymentManifest(name: string) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: NS },
    spec: {
      replicas: 0,
      progressDeadlineSeconds: DEADLINE_SECONDS,
      selector: { matchLabels: { app: "shop", [LABEL]: name } },
      template: {
        metadata: { labels: { app: "shop", [LABEL]: name } },
        spec: { containers: [{ name: "app", image: "shop:none", ports: [{ containerPort: 8080 }] }] },
      },
    },
  };
}

function rolloutFile(dir: string): string {
  const file = join(dir, "rollout.yaml");
  writeFileSync(
    file,
    [
      "apiVersion: argoproj.io/v1alpha1",
      "kind: Rollout",
      "metadata: { name: shop }",
      "spec:",
      "  replicas: 4",
      "  template:",
      "    spec:",
      "      containers: [{ name: app, image: shop }]",
      "  strategy:",
      "    canary:",
      "      scaleDownDelaySeconds: 3",
      "      steps:",
      "        - setWeight: 25",
      "        - pause: { duration: 3s }",
      "        - setWeight: 50",
      "        - pause: { duration: 3s }",
      "",
    ].join("\n"),
  );
  return file;
}

async function create(kube: KubeApi, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${kube.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`creating ${path}: ${res.status} ${await res.text()}`);
}

/** Pods of one Deployment: how many, how many ready. */
function podsOf(endpoints: Endpoint[], deployment: string): { pods: number; ready: number } {
  const mine = endpoints.filter((e) => e.labels[LABEL] === deployment);
  return { pods: mine.length, ready: mine.filter((e) => e.ready).length };
}

/** The demo's users: what the pods of each version answered them, until they stop. */
interface Users {
  counts(version: string): { total: number; failed: number };
  stop(): void;
}

/** Users: requests to the Service's ready pods in turn, counted by the version that answered. */
function startUsers(kube: KubeApi, rps: number): Users {
  const counts = new Map<string, { total: number; failed: number }>();
  let next = 0;
  let stopped = false;
  const tick = async () => {
    const ready = kube.endpointsOf(NS, "shop").filter((e) => e.ready && e.port !== undefined);
    if (ready.length === 0) return;
    const endpoint = ready[next++ % ready.length]!;
    try {
      const res = await fetch(`http://127.0.0.1:${endpoint.port}/checkout`);
      await res.arrayBuffer();
      const version = res.headers.get("x-version") ?? "?";
      const c = counts.get(version) ?? { total: 0, failed: 0 };
      c.total += 1;
      if (res.status >= 500) c.failed += 1;
      counts.set(version, c);
    } catch {
      // A pod scaled down between the pick and the request: kube-proxy would retry elsewhere.
    }
  };
  const timer = setInterval(() => {
    if (!stopped) void tick();
  }, 1000 / rps);
  return {
    counts: (version: string) => ({ ...(counts.get(version) ?? { total: 0, failed: 0 }) }),
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}

export async function runKubernetesDemo(options: KubeDemoOptions = {}): Promise<KubeDemoResult> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const started = Date.now();
  const closers: Array<() => Promise<void>> = [];
  const dir = mkdtempSync(join(tmpdir(), "kube-demo-"));
  try {
    const kube = await startDemoKubeApi();
    closers.push(kube.close);
    const kubeconfig = await kube.kubeconfig(join(dir, "kubeconfig"));
    await createShop(kube);
    const stack = await startEmbeddedStack({
      specFiles: [rolloutFile(dir)],
      repository: "shop",
      target: {
        type: "kubernetes",
        server: kube.url,
        auth: { type: "token", token: "local" },
        stableDeployment: "shop-stable",
        canaryDeployment: "shop-canary",
        pollSeconds: 1,
      },
    });
    closers.push(stack.close);
    print(`local Kubernetes API ${kube.url}: Deployments shop-stable and shop-canary behind Service shop`);
    print("look at it with kubectl in another terminal:");
    print(`  kubectl --kubeconfig ${kubeconfig} get deploy,rs,pods -o wide`);
    print("");

    const users = startUsers(kube, options.rps ?? 50);
    closers.push(async () => users.stop());
    const outcomes: KubeDemoOutcome[] = [];
    const timeout = (options.perVersionTimeoutSeconds ?? 90) * 1000;
    for (const [n, version] of VERSIONS.entries()) {
      outcomes.push(
        await rollOut({ kube, stack, users, print, timeout, signal: options.signal }, n, version),
      );
      if (options.signal?.aborted) break;
    }
    users.stop();
    return summarize(print, outcomes, started);
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The local Kubernetes API with a real process of the demo service behind each pod, failing the
 * share of checkouts its version fails; the pods of a version that never gets ready never do.
 */
function startDemoKubeApi(): Promise<KubeApi> {
  return startKubeApi({
    readyAfterMs: 1500,
    neverReady: (image) => VERSIONS.some((v, i) => !v.ready && image.endsWith(DIGEST(i + 1))),
    backPod: async (pod) => {
      const index = VERSIONS.findIndex((_, i) => pod.image.endsWith(DIGEST(i + 1)));
      const version = VERSIONS[index];
      const app: DemoApp = await startDemoApp({
        version: version?.tag ?? pod.image,
        errorRate: version?.errorRate ?? 0,
      });
      return { port: Number(new URL(app.url).port), close: app.close };
    },
  });
}

/** The shop as the user would apply it: the two Deployments, and the Service in front of both. */
async function createShop(kube: KubeApi): Promise<void> {
  for (const name of ["shop-stable", "shop-canary"]) {
    await create(kube, `/apis/apps/v1/namespaces/${NS}/deployments`, deploymentManifest(name));
  }
  await create(kube, `/api/v1/namespaces/${NS}/services`, {
    metadata: { name: "shop" },
    spec: { selector: { app: "shop" }, ports: [{ port: 80, targetPort: 8080 }] },
  });
}

/** What following one version's rollout reads and where it prints. */
interface Following {
  kube: KubeApi;
  stack: EmbeddedStack;
  users: Users;
  print: (line: string) => void;
  /** Milliseconds one version may take. */
  timeout: number;
  signal: AbortSignal | undefined;
}

/** Pushes one version and follows its rollout to its end: its outcome, the requests its pods served. */
async function rollOut(
  following: Following,
  n: number,
  version: (typeof VERSIONS)[number],
): Promise<KubeDemoOutcome> {
  const { stack, users, print } = following;
  const previous = (await stack.item())?.executionArn ?? null;
  const before = users.counts(version.tag);
  const t0 = Date.now();
  print(`push ${version.tag}${version.ready ? "" : " (its pods never become ready)"}`);
  await stack.push(version.tag, DIGEST(n + 1));
  const { item, steps } = await followPods(following, previous, t0);
  const after = users.counts(version.tag);
  const outcome: KubeDemoOutcome = {
    tag: version.tag,
    outcome: item?.phase === "Healthy" || item?.phase === "Degraded" ? item.phase : "timed out",
    message: item?.message ?? "",
    seconds: (Date.now() - t0) / 1000,
    served: after.total - before.total,
    failed: after.failed - before.failed,
    steps: [...new Set(steps)],
  };
  if (item?.message) print(`  ${item.message}`);
  print("");
  return outcome;
}

/**
 * Prints the rollout's phase, step and weight with each side's pods whenever they change, until
 * the new execution is Healthy or Degraded (or the time is up, or Ctrl-C): its last item, and the
 * pods at each step it reached.
 */
async function followPods(
  following: Following,
  previous: string | null,
  t0: number,
): Promise<{ item: RolloutItem | undefined; steps: string[] }> {
  const { kube, stack, print } = following;
  const steps: string[] = [];
  let shown = "";
  let item: RolloutItem | undefined;
  for (;;) {
    item = await stack.item();
    const endpoints = kube.endpointsOf(NS, "shop");
    const canary = podsOf(endpoints, "shop-canary");
    const stable = podsOf(endpoints, "shop-stable");
    const line = `${item?.phase ?? "-"} step ${item?.stepIndex ?? 0} weight ${item?.weight ?? 0}%: canary ${canary.ready}/${canary.pods} ready, stable ${stable.ready}/${stable.pods} ready`;
    const current = item?.executionArn !== undefined && item.executionArn !== previous;
    if (current && line !== shown) {
      shown = line;
      print(`  ${line}`);
      if (item?.phase === "Progressing") steps.push(`${item.weight}% ${canary.pods}/${stable.pods}`);
    }
    const done =
      item?.executionArn &&
      item.executionArn !== previous &&
      (item.phase === "Healthy" || item.phase === "Degraded");
    if (done || Date.now() - t0 > following.timeout || following.signal?.aborted) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  return { item, steps };
}

/** Prints the table of outcomes and whether they are the expected ones: the demo's result. */
function summarize(
  print: (line: string) => void,
  outcomes: KubeDemoOutcome[],
  started: number,
): KubeDemoResult {
  const ok =
    outcomes[0]?.outcome === "Healthy" &&
    outcomes[1]?.outcome === "Healthy" &&
    outcomes[2]?.outcome === "Degraded";
  const seconds = (Date.now() - started) / 1000;
  print(
    columns(
      ["image", "outcome", "duration", "served", "failed", "pods at each step (weight canary/stable)"],
      outcomes.map((o) => [
        o.tag,
        o.outcome,
        `${o.seconds.toFixed(1)} s`,
        String(o.served),
        String(o.failed),
        o.steps.join(", ") || "-",
      ]),
    ).join("\n"),
  );
  print("");
  print(
    `done in ${seconds.toFixed(1)} s: ${ok ? "v1 released, v2 promoted, v3 aborted by its Deployment's progress deadline" : "NOT the expected outcome"}`,
  );
  return { outcomes, seconds, ok };
}
