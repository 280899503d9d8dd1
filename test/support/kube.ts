import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../functions/clock.ts";
import { createTrafficTarget } from "../../functions/traffic/index.ts";
import type { KubeCall } from "../../functions/traffic/kubernetes/client.ts";
import type { Readiness, TargetState, TrafficTarget } from "../../functions/traffic/port.ts";
import { type KubeApi, startKubeApi } from "../../local/kube/server.ts";

/**
 * A kubernetes target over the local Kubernetes API (`local/kube`), in virtual time: two
 * Deployments (`shop-stable` at v1, `shop-canary` empty), the Services of every router, and a
 * recorder of every API call the target makes.
 */
export const NS = "default";
const LABEL = "rollouts.sfn/deployment";

export interface KubeFixture {
  kube: KubeApi;
  clock: ManualClock;
  calls: KubeCall[];
  /** A REST call to the local API, as a client would make it. */
  api(method: string, path: string, body?: unknown, contentType?: string): Promise<Record<string, unknown>>;
  get(path: string): Promise<Record<string, unknown>>;
  router(settings: Record<string, unknown>): TrafficTarget;
  /** Moves virtual time and lets the Deployment controller catch up. */
  advance(ms: number): void;
  /** Polls readiness, moving time, until it is ready (at most `polls` times). */
  settle(router: TrafficTarget, state: TargetState, polls?: number): Promise<Readiness>;
  /** `[spec.replicas, status.availableReplicas, image]` of a Deployment. */
  deployment(name: string): Promise<{ replicas: number; available: number; image: string }>;
  close(): Promise<void>;
}

export function deploymentManifest(name: string, replicas: number, image: string, deadlineSeconds = 600) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      progressDeadlineSeconds: deadlineSeconds,
      selector: { matchLabels: { app: "shop", [LABEL]: name } },
      template: {
        metadata: { labels: { app: "shop", [LABEL]: name } },
        spec: { containers: [{ name: "app", image, ports: [{ containerPort: 8080 }] }] },
      },
    },
  };
}

function service(name: string, selector: Record<string, string>) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: NS },
    spec: { selector, ports: [{ port: 80, targetPort: 8080 }] },
  };
}

export async function kubeFixture(
  options: { stableReplicas?: number; readyAfterMs?: number } = {},
): Promise<KubeFixture> {
  const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
  const kube = await startKubeApi({ clock, syncIntervalMs: 0, readyAfterMs: options.readyAfterMs ?? 1000 });
  const calls: KubeCall[] = [];
  const api = async (method: string, path: string, body?: unknown, contentType = "application/json") => {
    const res = await fetch(`${kube.url}${path}`, {
      method,
      headers: { "content-type": contentType },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const deployments = `/apis/apps/v1/namespaces/${NS}/deployments`;
  await api("POST", deployments, deploymentManifest("shop-stable", options.stableReplicas ?? 4, "shop:v1"));
  await api("POST", deployments, deploymentManifest("shop-canary", 0, "shop:v1"));
  for (const s of [
    service("shop", { app: "shop" }),
    service("shop-stable", { app: "shop", [LABEL]: "shop-stable" }),
    service("shop-canary", { app: "shop", [LABEL]: "shop-canary" }),
    service("shop-active", { app: "shop", [LABEL]: "shop-stable" }),
    service("shop-preview", { app: "shop", [LABEL]: "shop-stable" }),
  ]) {
    await api("POST", `/api/v1/namespaces/${NS}/services`, s);
  }
  const fixture: KubeFixture = {
    kube,
    clock,
    calls,
    api,
    get: (path) => api("GET", path),
    router: (settings) =>
      createTrafficTarget(
        {
          type: "kubernetes",
          server: kube.url,
          auth: { type: "token", token: "local" },
          stableDeployment: "shop-stable",
          canaryDeployment: "shop-canary",
          pollSeconds: 1,
          progressDeadlineSeconds: 60,
          ...settings,
        },
        { kubernetes: { onCall: (call) => calls.push(call) } },
        clock,
      ),
    advance: (ms) => {
      clock.advance(ms);
      kube.sync();
    },
    settle: async (router, state, polls = 30) => {
      let readiness = await router.checkReadiness(state);
      for (let i = 0; i < polls && !readiness.ready; i++) {
        fixture.advance(readiness.retryAfterSeconds * 1000);
        readiness = await router.checkReadiness(readiness.state);
      }
      return readiness;
    },
    deployment: async (name) => {
      const d = (await api("GET", `${deployments}/${name}`)) as {
        spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
        status?: { availableReplicas?: number };
      };
      return {
        replicas: d.spec.replicas,
        available: d.status?.availableReplicas ?? 0,
        image: d.spec.template.spec.containers[0]?.image ?? "",
      };
    },
    close: () => kube.close(),
  };
  // The stable version's pods are up before a rollout starts.
  fixture.advance(2000);
  return fixture;
}

/**
 * The Argo Rollout the Kubernetes scenarios run (`shop`, 4 replicas of the image `shop`) with
 * these lines under `strategy:`, after the `before` documents (its templates, each ending with
 * `---`), written to a file of its own; the file's path.
 */
export function shopRolloutFile(strategy: string[], before: string[] = []): string {
  const file = join(mkdtempSync(join(tmpdir(), "kube-rollout-")), "rollout.yaml");
  writeFileSync(
    file,
    [
      ...before,
      "apiVersion: argoproj.io/v1alpha1",
      "kind: Rollout",
      "metadata: { name: shop }",
      "spec:",
      "  replicas: 4",
      "  template:",
      "    spec:",
      "      containers: [{ name: app, image: shop }]",
      "  strategy:",
      ...strategy.map((l) => `    ${l}`),
      "",
    ].join("\n"),
  );
  return file;
}
