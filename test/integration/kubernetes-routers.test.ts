import { deploymentManifest, shopRolloutFile } from "@sfn-rollouts/test-support/kube";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { RESOURCE_TYPES } from "../../local/kube/resources.ts";
import { type KubeApi, startKubeApi } from "../../local/kube/server.ts";
import type { KubeObject } from "../../local/kube/store.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../../local/stack.ts";
import { DIGESTS } from "./scenario.ts";

/**
 * Whole rollouts through each traffic router of the kubernetes target: the synthesized stack in
 * the embedded runtime, its handlers calling the local Kubernetes API, in virtual time. What the
 * API holds (VirtualService weights, the canary Ingress's annotations, the Services' selectors,
 * the Deployments' pods) is read from its store at each step of the rollout.
 */
const NS = "default";
const LABEL = "rollouts.sfn/deployment";

type Obj = KubeObject & { spec: Record<string, unknown> };

const rolloutFile = (strategy: string[]) => shopRolloutFile(strategy);

/** A local API with both Deployments (empty), a Service per Deployment, and the router's objects. */
async function scenario(
  spec: string,
  router: Record<string, unknown>,
  objects: { path: string; body: unknown }[],
): Promise<{
  kube: KubeApi;
  stack: EmbeddedStack;
  held: (resource: string, name: string) => Obj | undefined;
}> {
  const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
  const kube = await startKubeApi({
    clock,
    syncIntervalMs: 0,
    readyAfterMs: 3000,
    neverReady: (image) => image.endsWith(DIGESTS.v3),
  });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${kube.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
  };
  for (const name of ["shop-stable", "shop-canary"]) {
    await post(`/apis/apps/v1/namespaces/${NS}/deployments`, deploymentManifest(name, 0, "shop:none", 60));
    await post(`/api/v1/namespaces/${NS}/services`, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: NS },
      spec: { selector: { app: "shop", [LABEL]: name }, ports: [{ port: 80, targetPort: 8080 }] },
    });
  }
  for (const o of objects) await post(o.path, o.body);
  const stack = await startEmbeddedStack({
    specFiles: [spec],
    repository: "shop",
    target: {
      type: "kubernetes",
      server: kube.url,
      auth: { type: "token", token: "local" },
      stableDeployment: "shop-stable",
      canaryDeployment: "shop-canary",
      router,
      pollSeconds: 2,
    } as Parameters<typeof startEmbeddedStack>[0]["target"],
    clock,
  });
  const held = (resource: string, name: string) => {
    const type = RESOURCE_TYPES.find((t) => t.resource === resource);
    if (!type) throw new Error(`no resource ${resource}`);
    return kube.store.find(type, NS, name) as Obj | undefined;
  };
  return { kube, stack, held };
}

/**
 * Runs the rollout a second at a time until `done`, calling `snapshot` each time the step of
 * `tag` changes while it runs.
 */
async function drive(
  stack: EmbeddedStack,
  tag: string,
  done: (item: RolloutItem) => boolean,
  snapshot: (item: RolloutItem) => unknown = () => {},
): Promise<RolloutItem | undefined> {
  let step = -1;
  let item: RolloutItem | undefined;
  for (let s = 0; s < 600; s++) {
    await stack.runtime.settle();
    item = await stack.item();
    const mine = item?.currentRevision?.tag === tag;
    if (
      mine &&
      item &&
      (item.phase === "Progressing" || item.phase === "Paused") &&
      item.stepIndex !== step
    ) {
      step = item.stepIndex;
      await snapshot(item);
    }
    if (mine && item && done(item)) return item;
    await stack.runtime.advanceBy(1000);
  }
  return item;
}

const healthy = (i: RolloutItem) => i.phase === "Healthy";
const finished = (i: RolloutItem) => i.phase === "Healthy" || i.phase === "Degraded";
/** The digest a Deployment's pods run (its image is `repository@digest`). */
const image = (d: Obj | undefined): string | undefined => {
  const template = d?.spec.template as { spec: { containers: { image: string }[] } } | undefined;
  return template?.spec.containers[0]?.image.split("@")[1];
};
const replicas = (d: Obj | undefined) => d?.spec.replicas as number;

const CANARY_STEPS = [
  "canary:",
  "  scaleDownDelaySeconds: 30",
  "  steps:",
  "    - setWeight: 25",
  "    - pause: { duration: 10s }",
  "    - setWeight: 50",
  "    - pause: { duration: 10s }",
];

/** The shop's VirtualService, all to the stable Service, as an Istio canary starts. */
const SHOP_VIRTUAL_SERVICE = {
  path: `/apis/networking.istio.io/v1/namespaces/${NS}/virtualservices`,
  body: {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name: "shop", namespace: NS },
    spec: {
      hosts: ["shop"],
      http: [{ name: "primary", route: [{ destination: { host: "shop-stable" }, weight: 100 }] }],
    },
  },
};

describe("an Istio canary on the local Kubernetes API, on the embedded runtime", () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  const weights = () => {
    const http = s.held("virtualservices", "shop")?.spec.http as {
      name: string;
      route: { destination: { host: string }; weight?: number }[];
    }[];
    const primary = http.find((h) => h.name === "primary");
    return (primary?.route ?? []).map((r) => [r.destination.host, r.weight ?? 0]);
  };

  beforeAll(async () => {
    s = await scenario(
      rolloutFile(CANARY_STEPS),
      { type: "istio", virtualService: "shop", stableService: "shop-stable", canaryService: "shop-canary" },
      [SHOP_VIRTUAL_SERVICE],
    );
  });

  afterAll(async () => {
    await s?.stack.close();
    await s?.kube.close();
  });

  it("sets the route weights at each step with the canary's pods, promotes, then weight 0 and no canary pods", async () => {
    await s.stack.push("v1", DIGESTS.v1);
    expect((await drive(s.stack, "v1", healthy))?.phase).toBe("Healthy");
    await s.stack.push("v2", DIGESTS.v2);
    const seen: unknown[] = [];
    const item = await drive(s.stack, "v2", healthy, (i) =>
      seen.push([i.weight, weights(), replicas(s.held("deployments", "shop-canary"))]),
    );
    expect(item?.phase).toBe("Healthy");
    expect(seen).toEqual(
      expect.arrayContaining([
        [
          25,
          [
            ["shop-stable", 75],
            ["shop-canary", 25],
          ],
          1,
        ],
        [
          50,
          [
            ["shop-stable", 50],
            ["shop-canary", 50],
          ],
          2,
        ],
      ]),
    );
    expect(image(s.held("deployments", "shop-stable"))).toBe(DIGESTS.v2);
    await s.stack.runtime.advanceBy(60_000);
    await s.stack.runtime.settle();
    expect(weights()).toEqual([
      ["shop-stable", 100],
      ["shop-canary", 0],
    ]);
    expect(replicas(s.held("deployments", "shop-canary"))).toBe(0);
    expect(replicas(s.held("deployments", "shop-stable"))).toBe(4);
  });
});

describe("an NGINX canary Ingress on the local Kubernetes API, on the embedded runtime", () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  const PREFIX = "nginx.ingress.kubernetes.io";
  const annotations = () => s.held("ingresses", "shop-canary")?.metadata.annotations ?? {};

  beforeAll(async () => {
    s = await scenario(
      rolloutFile([
        "canary:",
        "  scaleDownDelaySeconds: 30",
        "  trafficRouting:",
        "    managedRoutes: [{ name: qa }]",
        "  steps:",
        "    - setWeight: 20",
        "    - setHeaderRoute: { name: qa, match: [{ headerName: X-Team, headerValue: { exact: qa } }] }",
        "    - pause: { duration: 10s }",
        "    - setWeight: 50",
        "    - pause: { duration: 10s }",
      ]),
      { type: "nginx", stableIngress: "shop", stableService: "shop-stable", canaryService: "shop-canary" },
      [
        {
          path: `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`,
          body: {
            apiVersion: "networking.k8s.io/v1",
            kind: "Ingress",
            metadata: { name: "shop", namespace: NS },
            spec: {
              ingressClassName: "nginx",
              rules: [
                {
                  host: "shop.example",
                  http: {
                    paths: [
                      {
                        path: "/",
                        pathType: "Prefix",
                        backend: { service: { name: "shop-stable", port: { number: 80 } } },
                      },
                    ],
                  },
                },
              ],
            },
          },
        },
      ],
    );
  });

  afterAll(async () => {
    await s?.stack.close();
    await s?.kube.close();
  });

  it("weighs the canary Ingress at each step, routes the header with canary-by-header, promotes, then weight 0", async () => {
    await s.stack.push("v1", DIGESTS.v1);
    expect((await drive(s.stack, "v1", healthy))?.phase).toBe("Healthy");
    await s.stack.push("v2", DIGESTS.v2);
    const seen: unknown[] = [];
    const item = await drive(s.stack, "v2", healthy, (i) => {
      const a = annotations();
      seen.push([
        i.weight,
        a[`${PREFIX}/canary-weight`],
        a[`${PREFIX}/canary-by-header`],
        a[`${PREFIX}/canary-by-header-value`],
        replicas(s.held("deployments", "shop-canary")),
      ]);
    });
    expect(item?.phase).toBe("Healthy");
    expect(seen).toEqual(
      expect.arrayContaining([
        [20, "20", "X-Team", "qa", 1],
        [50, "50", "X-Team", "qa", 2],
      ]),
    );
    const backend = (
      s.held("ingresses", "shop-canary")?.spec.rules as
        | { http: { paths: { backend: { service: { name: string } } }[] } }[]
        | undefined
    )?.[0]?.http.paths[0]?.backend.service.name;
    expect(backend).toBe("shop-canary");
    expect(annotations()[`${PREFIX}/canary`]).toBe("true");
    expect(image(s.held("deployments", "shop-stable"))).toBe(DIGESTS.v2);
    await s.stack.runtime.advanceBy(60_000);
    await s.stack.runtime.settle();
    expect(annotations()[`${PREFIX}/canary-weight`]).toBe("0");
    expect(annotations()[`${PREFIX}/canary-by-header`]).toBeUndefined();
    expect(replicas(s.held("deployments", "shop-canary"))).toBe(0);
  });
});

describe("a blue/green rollout by Service selector on the local Kubernetes API, on the embedded runtime", () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  const selects = (service: string) =>
    (s.held("services", service)?.spec.selector as Record<string, string> | undefined)?.[LABEL];
  /** The digest each Service's selected Deployment runs. */
  const serving = (service: string) => {
    const name = selects(service);
    return name === undefined ? undefined : image(s.held("deployments", name));
  };

  beforeAll(async () => {
    const service = (name: string) => ({
      path: `/api/v1/namespaces/${NS}/services`,
      body: {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: NS },
        spec: { selector: { app: "shop", [LABEL]: "shop-stable" }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    s = await scenario(
      rolloutFile([
        "blueGreen:",
        "  activeService: shop-active",
        "  previewService: shop-preview",
        "  previewReplicaCount: 1",
        "  autoPromotionSeconds: 10",
        "  scaleDownDelaySeconds: 30",
      ]),
      {
        type: "blue-green",
        activeService: "shop-active",
        previewService: "shop-preview",
        previewReplicaCount: 1,
      },
      [service("shop-active"), service("shop-preview")],
    );
  });

  afterAll(async () => {
    await s?.stack.close();
    await s?.kube.close();
  });

  it("releases v1 behind the active Service", async () => {
    await s.stack.push("v1", DIGESTS.v1);
    expect((await drive(s.stack, "v1", healthy))?.phase).toBe("Healthy");
    expect(serving("shop-active")).toBe(DIGESTS.v1);
  });

  it("puts v2 behind preview only, then switches active to it at promotion and scales the old side down", async () => {
    await s.stack.push("v2", DIGESTS.v2);
    const before: unknown[] = [];
    const item = await drive(s.stack, "v2", healthy, () =>
      before.push([
        serving("shop-active"),
        serving("shop-preview"),
        replicas(s.held("deployments", selects("shop-preview") ?? "")),
      ]),
    );
    expect(item?.phase).toBe("Healthy");
    // While v2 waited for its promotion: active on v1, preview on v2's one preview pod.
    expect(before).toContainEqual([DIGESTS.v1, DIGESTS.v2, 1]);
    expect([serving("shop-active"), serving("shop-preview")]).toEqual([DIGESTS.v2, DIGESTS.v2]);
    const active = selects("shop-active") as string;
    const old = active === "shop-stable" ? "shop-canary" : "shop-stable";
    expect(replicas(s.held("deployments", active))).toBe(4);
    await s.stack.runtime.advanceBy(60_000);
    await s.stack.runtime.settle();
    expect(replicas(s.held("deployments", old))).toBe(0);
    expect(selects("shop-active")).toBe(active);
  });

  it("aborts v3, whose pods never become ready: the active Service stays on v2's side", async () => {
    const active = selects("shop-active") as string;
    await s.stack.push("v3", DIGESTS.v3);
    const item = await drive(s.stack, "v3", finished);
    expect(item?.phase).toBe("Degraded");
    expect(selects("shop-active")).toBe(active);
    expect(serving("shop-active")).toBe(DIGESTS.v2);
    expect(selects("shop-preview")).toBe(active);
    expect(replicas(s.held("deployments", active))).toBe(4);
    await s.stack.runtime.advanceBy(60_000);
    await s.stack.runtime.settle();
    const other = active === "shop-stable" ? "shop-canary" : "shop-stable";
    expect(replicas(s.held("deployments", other))).toBe(0);
  });
});

describe("setCanaryScale behind an Istio VirtualService on the local Kubernetes API, on the embedded runtime", () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  /** The pods the canary Deployment's ReplicaSets are asked for, as the API server lists them. */
  const canaryReplicaSetPods = async (): Promise<number> => {
    const res = await fetch(`${s.kube.url}/apis/apps/v1/namespaces/${NS}/replicasets`);
    expect(res.status).toBe(200);
    const list = (await res.json()) as {
      items: { metadata: { ownerReferences?: { name: string }[] }; spec: { replicas?: number } }[];
    };
    return list.items
      .filter((rs) => rs.metadata.ownerReferences?.some((o) => o.name === "shop-canary"))
      .reduce((sum, rs) => sum + (rs.spec.replicas ?? 0), 0);
  };

  beforeAll(async () => {
    s = await scenario(
      rolloutFile([
        "canary:",
        "  scaleDownDelaySeconds: 30",
        "  trafficRouting:",
        "    istio: { virtualService: { name: shop, routes: [primary] } }",
        "  steps:",
        // A pause after each change: the pods are read while it runs.
        ...[
          "setWeight: 25",
          "setCanaryScale: { replicas: 3 }",
          "setWeight: 50",
          "setCanaryScale: { weight: 150 }",
          "setWeight: 75",
          "setCanaryScale: { matchTrafficWeight: true }",
          "setWeight: 50",
        ].flatMap((step) => [`    - ${step}`, "    - pause: { duration: 10s }"]),
      ]),
      { type: "istio", virtualService: "shop", stableService: "shop-stable", canaryService: "shop-canary" },
      [SHOP_VIRTUAL_SERVICE],
    );
  });

  afterAll(async () => {
    await s?.stack.close();
    await s?.kube.close();
  });

  it("runs the scale's pods whatever the weight until matchTrafficWeight, then none once promoted", async () => {
    await s.stack.push("v1", DIGESTS.v1);
    expect((await drive(s.stack, "v1", healthy))?.phase).toBe("Healthy");
    await s.stack.push("v2", DIGESTS.v2);
    const seen = new Map<number, [number, number]>();
    const item = await drive(s.stack, "v2", healthy, async (i) => {
      seen.set(i.stepIndex, [i.weight, await canaryReplicaSetPods()]);
    });
    expect(item?.phase).toBe("Healthy");
    // During the pause after each change: [weight, canary pods], with 4 replicas.
    expect([1, 3, 5, 7, 9, 11, 13].map((i) => seen.get(i))).toEqual([
      [25, 1], // ceil(4 × 25%)
      [25, 3], // setCanaryScale replicas 3
      [50, 3], // the scale holds through setWeight 50 (the weight alone would give 2)
      [50, 6], // setCanaryScale weight 150: ceil(4 × 150%)
      [75, 6],
      [75, 3], // matchTrafficWeight: ceil(4 × 75%)
      [50, 2],
    ]);
    // The promoted version runs on the stable side; the canary is scaled to 0 after the delay.
    await s.stack.runtime.advanceBy(60_000);
    await s.stack.runtime.settle();
    expect(await canaryReplicaSetPods()).toBe(0);
    expect(replicas(s.held("deployments", "shop-stable"))).toBe(4);
  });
});
