import {
  CLUSTER_E2E,
  clusterBackend,
  IMAGES,
  type KubeBackend,
  localBackend,
} from "@sfn-rollouts/test-support/kube-backend";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TargetState, TrafficTarget } from "../../functions/traffic/port.ts";

/**
 * The kubernetes target's rollouts, one per router, at the adapter level (the calls the
 * workflow's traffic states make, in their order): on the local Kubernetes API always, and on the
 * cluster of `KUBECONFIG` when `K8S_E2E=1` (`npm run test:kubernetes`; see docs/traffic.md). Each
 * router's objects are read back from the API after each call. On a cluster,
 * `K8S_E2E_ROUTERS=pods,nginx,blue-green` leaves out the routers whose CRDs it lacks.
 */
const LABEL = "rollouts.sfn/deployment";
const ROUTERS = ["pods", "gateway-api", "istio", "nginx", "blue-green"] as const;
type Router = (typeof ROUTERS)[number];

type Obj = { spec: Record<string, unknown>; metadata: { annotations?: Record<string, string> } };

function scenarios(start: () => Promise<KubeBackend>, routers: readonly Router[]) {
  let b: KubeBackend;
  beforeAll(async () => {
    b = await start();
  });
  afterAll(async () => {
    await b?.close();
  });

  const at = (path: string) => path.replace("NS", b.namespace);
  const get = async (path: string) => (await b.api("GET", at(path))) as unknown as Obj;
  const deployment = async (name: string) => {
    const d = (await b.api("GET", at(`/apis/apps/v1/namespaces/NS/deployments/${name}`))) as {
      spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
    };
    return { replicas: d.spec.replicas, image: d.spec.template.spec.containers[0]?.image };
  };

  /** Two Deployments `<prefix>-stable` (4 pods of v1, waited for) and `<prefix>-canary` (none), a Service each. */
  async function twoDeployments(prefix: string): Promise<void> {
    for (const [name, replicas] of [
      [`${prefix}-stable`, 4],
      [`${prefix}-canary`, 0],
    ] as const) {
      const labels = { app: prefix, [LABEL]: name };
      await b.api("POST", at("/apis/apps/v1/namespaces/NS/deployments"), {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name },
        spec: {
          replicas,
          progressDeadlineSeconds: 300,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: "app", image: IMAGES.v1, ports: [{ containerPort: 8080 }] }] },
          },
        },
      });
      await service(name, labels);
    }
    for (let i = 0; i < 300; i++) {
      const d = (await b.api("GET", at(`/apis/apps/v1/namespaces/NS/deployments/${prefix}-stable`))) as {
        status?: { availableReplicas?: number };
      };
      if (d.status?.availableReplicas === 4) return;
      await b.wait(1000);
    }
    throw new Error(`Deployment ${prefix}-stable never had 4 available pods`);
  }

  const service = (name: string, selector: Record<string, string>) =>
    b.api("POST", at("/api/v1/namespaces/NS/services"), {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name },
      spec: { selector, ports: [{ port: 80, targetPort: 8080 }] },
    });

  /** Calls `step` (checkReadiness, abort, scaleDown) until it reports ready, letting time pass. */
  async function untilReady(
    step: (state: TargetState) => Promise<{ ready: boolean; state: TargetState; retryAfterSeconds?: number }>,
    state: TargetState,
  ): Promise<TargetState> {
    let r = await step(state);
    for (let i = 0; i < 300 && !r.ready; i++) {
      await b.wait((r.retryAfterSeconds ?? 1) * 1000);
      r = await step(r.state);
    }
    expect(r.ready).toBe(true);
    return r.state;
  }

  async function candidate(router: TrafficTarget): Promise<TargetState> {
    const prepared = await router.prepare();
    const deployed = await router.deployCandidate(prepared.state, { image: IMAGES.v2 });
    return untilReady((s) => router.checkReadiness(s), deployed);
  }

  async function weigh(router: TrafficTarget, state: TargetState, weight: number): Promise<TargetState> {
    const change = await router.setWeight(state, weight);
    expect(change.outcome).toBe("applied");
    return untilReady((s) => router.checkReadiness(s), change.state);
  }

  async function promote(router: TrafficTarget, state: TargetState): Promise<void> {
    const promoted = await router.promote(state, { scaleDownDelaySeconds: 1 });
    await untilReady((s) => router.scaleDown(s), promoted);
  }

  it.runIf(routers.includes("pods"))(
    "basic canary: Argo's pod counts at each weight, the image on stable at promotion, the canary scaled down",
    async () => {
      await twoDeployments("pods");
      const router = b.router({ stableDeployment: "pods-stable", canaryDeployment: "pods-canary" });
      let state = await candidate(router);
      const seen: unknown[] = [];
      for (const weight of [25, 50]) {
        state = await weigh(router, state, weight);
        seen.push([
          weight,
          (await deployment("pods-canary")).replicas,
          (await deployment("pods-stable")).replicas,
        ]);
      }
      expect(seen).toEqual([
        [25, 1, 3],
        [50, 2, 2],
      ]);
      await promote(router, state);
      expect(await deployment("pods-stable")).toEqual({ replicas: 4, image: IMAGES.v2 });
      expect((await deployment("pods-canary")).replicas).toBe(0);
    },
    600_000,
  );

  it.runIf(routers.includes("gateway-api"))(
    "Gateway API: the HTTPRoute's backendRef weights at each weight, back to the stable after promotion",
    async () => {
      await twoDeployments("gw");
      const ROUTE = "/apis/gateway.networking.k8s.io/v1/namespaces/NS/httproutes";
      await b.api("POST", at(ROUTE), {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "HTTPRoute",
        metadata: { name: "gw" },
        spec: {
          parentRefs: [{ name: "gateway" }],
          rules: [{ backendRefs: [{ name: "gw-stable", port: 80 }] }],
        },
      });
      const weights = async () =>
        (
          (await get(`${ROUTE}/gw`)).spec.rules as { backendRefs: { name: string; weight?: number }[] }[]
        )[0]?.backendRefs.map((r) => [r.name, r.weight ?? 1]);
      const router = b.router({
        stableDeployment: "gw-stable",
        canaryDeployment: "gw-canary",
        router: {
          type: "gateway-api",
          httpRoute: "gw",
          stableService: "gw-stable",
          canaryService: "gw-canary",
        },
      });
      const state = await weigh(router, await candidate(router), 25);
      expect(await weights()).toEqual([
        ["gw-stable", 75],
        ["gw-canary", 25],
      ]);
      expect((await deployment("gw-canary")).replicas).toBe(1);
      await promote(router, state);
      expect(await weights()).toEqual([
        ["gw-stable", 100],
        ["gw-canary", 0],
      ]);
      expect((await deployment("gw-canary")).replicas).toBe(0);
      expect((await deployment("gw-stable")).image).toBe(IMAGES.v2);
    },
    600_000,
  );

  it.runIf(routers.includes("istio"))(
    "Istio: the VirtualService's route weights, then weight 0 and no canary pods after promotion",
    async () => {
      await twoDeployments("istio");
      const VS = "/apis/networking.istio.io/v1/namespaces/NS/virtualservices";
      await b.api("POST", at(VS), {
        apiVersion: "networking.istio.io/v1",
        kind: "VirtualService",
        metadata: { name: "istio" },
        spec: {
          hosts: ["istio"],
          http: [{ name: "primary", route: [{ destination: { host: "istio-stable" }, weight: 100 }] }],
        },
      });
      const weights = async () =>
        (
          (await get(`${VS}/istio`)).spec.http as {
            route: { destination: { host: string }; weight?: number }[];
          }[]
        )[0]?.route.map((r) => [r.destination.host, r.weight ?? 0]);
      const router = b.router({
        stableDeployment: "istio-stable",
        canaryDeployment: "istio-canary",
        router: {
          type: "istio",
          virtualService: "istio",
          stableService: "istio-stable",
          canaryService: "istio-canary",
        },
      });
      const state = await weigh(router, await candidate(router), 30);
      expect(await weights()).toEqual([
        ["istio-stable", 70],
        ["istio-canary", 30],
      ]);
      expect((await deployment("istio-canary")).replicas).toBe(2);
      await promote(router, state);
      expect(await weights()).toEqual([
        ["istio-stable", 100],
        ["istio-canary", 0],
      ]);
      expect((await deployment("istio-canary")).replicas).toBe(0);
    },
    600_000,
  );

  it.runIf(routers.includes("nginx"))(
    "NGINX: the canary Ingress's canary-weight and canary-by-header, weight 0 after promotion",
    async () => {
      await twoDeployments("nginx");
      const ING = "/apis/networking.k8s.io/v1/namespaces/NS/ingresses";
      await b.api("POST", at(ING), {
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name: "nginx" },
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
                    backend: { service: { name: "nginx-stable", port: { number: 80 } } },
                  },
                ],
              },
            },
          ],
        },
      });
      const annotations = async () => (await get(`${ING}/nginx-canary`)).metadata.annotations ?? {};
      const P = "nginx.ingress.kubernetes.io";
      const router = b.router({
        stableDeployment: "nginx-stable",
        canaryDeployment: "nginx-canary",
        router: {
          type: "nginx",
          stableIngress: "nginx",
          stableService: "nginx-stable",
          canaryService: "nginx-canary",
        },
      });
      let state = await weigh(router, await candidate(router), 20);
      state = (
        await router.setHeaderRoute(state, {
          name: "qa",
          match: [{ headerName: "X-Team", headerValue: { exact: "qa" } }],
        })
      ).state;
      expect(await annotations()).toMatchObject({
        [`${P}/canary`]: "true",
        [`${P}/canary-weight`]: "20",
        [`${P}/canary-by-header`]: "X-Team",
        [`${P}/canary-by-header-value`]: "qa",
      });
      await promote(router, state);
      const after = await annotations();
      expect(after[`${P}/canary-weight`]).toBe("0");
      expect(after[`${P}/canary-by-header`]).toBeUndefined();
      expect((await deployment("nginx-canary")).replicas).toBe(0);
    },
    600_000,
  );

  it.runIf(routers.includes("blue-green"))(
    "blue/green: preview on the candidate, active switched at promotion; an aborted release leaves active where it was",
    async () => {
      await twoDeployments("bg");
      await service("bg-active", { app: "bg", [LABEL]: "bg-stable" });
      await service("bg-preview", { app: "bg", [LABEL]: "bg-stable" });
      const selects = async () =>
        Promise.all(
          ["bg-active", "bg-preview"].map(
            async (s) =>
              ((await get(`/api/v1/namespaces/NS/services/${s}`)).spec.selector as Record<string, string>)[
                LABEL
              ],
          ),
        );
      const router = b.router({
        stableDeployment: "bg-stable",
        canaryDeployment: "bg-canary",
        router: {
          type: "blue-green",
          activeService: "bg-active",
          previewService: "bg-preview",
          previewReplicaCount: 1,
        },
      });
      const state = await candidate(router);
      expect(await selects()).toEqual(["bg-stable", "bg-canary"]);
      expect((await deployment("bg-canary")).replicas).toBe(1);
      await promote(router, state);
      expect(await selects()).toEqual(["bg-canary", "bg-canary"]);
      expect(await deployment("bg-canary")).toEqual({ replicas: 4, image: IMAGES.v2 });
      expect((await deployment("bg-stable")).replicas).toBe(0);
      // The next release goes to bg-stable behind preview, and is aborted.
      const next = await router.deployCandidate((await router.prepare()).state, { image: IMAGES.v1 });
      expect(await selects()).toEqual(["bg-canary", "bg-stable"]);
      const aborted = await untilReady((s) => router.abort(s, { abortScaleDownDelaySeconds: 0 }), next);
      expect(await selects()).toEqual(["bg-canary", "bg-canary"]);
      await untilReady((s) => router.scaleDown(s), aborted);
      expect((await deployment("bg-stable")).replicas).toBe(0);
      expect(await deployment("bg-canary")).toEqual({ replicas: 4, image: IMAGES.v2 });
    },
    600_000,
  );
}

describe("the kubernetes target's routers on the local Kubernetes API", () => {
  scenarios(localBackend, ROUTERS);
});

/** The routers to run on the cluster: `K8S_E2E_ROUTERS` (comma-separated), else all of them. */
function clusterRouters(): Router[] {
  const asked = process.env.K8S_E2E_ROUTERS?.split(",")
    .map((r) => r.trim())
    .filter(Boolean);
  if (!asked) return [...ROUTERS];
  const unknown = asked.filter((r) => !(ROUTERS as readonly string[]).includes(r));
  if (unknown.length > 0)
    throw new Error(`K8S_E2E_ROUTERS: unknown router ${unknown.join(", ")} (use ${ROUTERS.join(", ")})`);
  return asked as Router[];
}

describe.skipIf(!CLUSTER_E2E)("the kubernetes target's routers on the cluster of KUBECONFIG", () => {
  scenarios(clusterBackend, CLUSTER_E2E ? clusterRouters() : []);
});
