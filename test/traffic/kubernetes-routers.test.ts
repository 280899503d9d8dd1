import { readFileSync } from "node:fs";
import { type KubeFixture, kubeFixture, NS } from "@sfn-rollouts/test-support/kube";
import { afterEach, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { TargetConfigurationError } from "../../functions/traffic/errors.ts";
import type { KubernetesState } from "../../functions/traffic/index.ts";
import type { KubeCall } from "../../functions/traffic/kubernetes/client.ts";
import type { TargetState, TrafficTarget } from "../../functions/traffic/port.ts";

let fixture: KubeFixture | undefined;
/** Every call the target made in this file, for the RBAC check at the end. */
const used: KubeCall[] = [];
afterEach(async () => {
  if (fixture) used.push(...fixture.calls);
  await fixture?.close();
  fixture = undefined;
});

const ROUTES = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`;
const VSS = `/apis/networking.istio.io/v1/namespaces/${NS}/virtualservices`;
const INGRESSES = `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`;
const SERVICES = `/api/v1/namespaces/${NS}/services`;
const MERGE = "application/merge-patch+json";
const REPLICA_SETS = `/apis/apps/v1/namespaces/${NS}/replicasets`;

type Obj = { spec: Record<string, unknown>; metadata: { annotations?: Record<string, string> } };

async function readyCandidate(
  f: KubeFixture,
  router: TrafficTarget,
  image = "shop:v2",
): Promise<TargetState> {
  const prepared = await router.prepare();
  const ready = await f.settle(router, await router.deployCandidate(prepared.state, { image }));
  expect(ready.ready).toBe(true);
  return ready.state;
}

async function until(f: KubeFixture, router: TrafficTarget, state: TargetState): Promise<TargetState> {
  let down = await router.scaleDown(state);
  for (let i = 0; i < 40 && !down.ready; i++) {
    f.advance(down.retryAfterSeconds * 1000);
    down = await router.scaleDown(down.state);
  }
  expect(down.ready).toBe(true);
  return down.state;
}

const gatewaySettings = {
  router: {
    type: "gateway-api",
    httpRoute: "shop",
    stableService: "shop-stable",
    canaryService: "shop-canary",
  },
};

async function withHttpRoute(f: KubeFixture): Promise<void> {
  await f.api("POST", ROUTES, {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name: "shop", namespace: NS },
    spec: {
      parentRefs: [{ name: "gateway" }],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backendRefs: [{ name: "shop-stable", port: 80 }],
        },
      ],
    },
  });
}

describe("kubernetes target, Gateway API", () => {
  it("sets exact backendRef weights and scales the canary to ceil(replicas × weight / 100), at least one pod", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    let state = await readyCandidate(f, router);
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 1, available: 1, image: "shop:v2" });
    const seen: unknown[] = [];
    for (const weight of [5, 25, 60, 100]) {
      const change = await router.setWeight(state, weight);
      expect(change.outcome).toBe("applied");
      state = (await f.settle(router, change.state)).state;
      const route = (await f.get(`${ROUTES}/shop`)) as Obj;
      const refs = (
        route.spec.rules as { backendRefs: { name: string; weight: number; port: number }[] }[]
      )[0]?.backendRefs;
      seen.push([
        weight,
        refs,
        (await f.deployment("shop-canary")).replicas,
        (await f.deployment("shop-stable")).replicas,
      ]);
    }
    expect(seen).toEqual([
      [
        5,
        [
          { name: "shop-stable", port: 80, weight: 95 },
          { name: "shop-canary", port: 80, weight: 5 },
        ],
        1,
        4,
      ],
      [
        25,
        [
          { name: "shop-stable", port: 80, weight: 75 },
          { name: "shop-canary", port: 80, weight: 25 },
        ],
        1,
        4,
      ],
      [
        60,
        [
          { name: "shop-stable", port: 80, weight: 40 },
          { name: "shop-canary", port: 80, weight: 60 },
        ],
        3,
        4,
      ],
      [
        100,
        [
          { name: "shop-stable", port: 80, weight: 0 },
          { name: "shop-canary", port: 80, weight: 100 },
        ],
        4,
        4,
      ],
    ]);
  });

  it("routes a header to the canary with a rule of its own (path kept), removes it, and reports changed weights as drift", async () => {
    fixture = await kubeFixture();
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    let state = await readyCandidate(f, router);
    state = (await router.setWeight(state, 10)).state;
    const header = await router.setHeaderRoute(state, {
      name: "testers",
      match: [
        { headerName: "X-Team", headerValue: { exact: "qa" } },
        { headerName: "X-Build", headerValue: { prefix: "v2." } },
      ],
    });
    expect(header.applied).toBe(true);
    state = header.state;
    let rules = ((await f.get(`${ROUTES}/shop`)) as Obj).spec.rules as Record<string, unknown>[];
    expect(rules[0]).toEqual({
      name: "testers",
      matches: [
        {
          path: { type: "PathPrefix", value: "/" },
          headers: [
            { type: "Exact", name: "X-Team", value: "qa" },
            { type: "RegularExpression", name: "X-Build", value: "^v2\\..*" },
          ],
        },
      ],
      backendRefs: [{ name: "shop-canary", port: 80, weight: 1 }],
    });
    expect(rules).toHaveLength(2);
    state = (await router.removeHeaderRoute(state, "testers")).state;
    rules = ((await f.get(`${ROUTES}/shop`)) as Obj).spec.rules as Record<string, unknown>[];
    expect(rules.map((r) => r.name)).toEqual([undefined]);

    // Someone sets the weights by hand.
    await f.api(
      "PATCH",
      `${ROUTES}/shop`,
      [{ op: "replace", path: "/spec/rules/0/backendRefs/1/weight", value: 50 }],
      "application/json-patch+json",
    );
    const drift = await router.setWeight(state, 30);
    expect(drift.outcome).toBe("drift");
    if (drift.outcome === "drift") {
      expect(drift.message).toMatch(
        /the candidate receives 35\.71% instead of 10% \(HTTPRoute default\/shop: shop-canary gets 35\.71%/,
      );
    }
    expect(await router.readWeights(state)).toMatchObject({ drift: true, expectedCanary: 10 });
    const refs = (
      ((await f.get(`${ROUTES}/shop`)) as Obj).spec.rules as { backendRefs: { weight: number }[] }[]
    )[0]?.backendRefs;
    expect(refs?.map((r) => r.weight)).toEqual([90, 50]);
  });

  it("promotes: the stable Deployment gets the image; once it runs it and the delay passed, weight 0 and the canary scaled down", async () => {
    fixture = await kubeFixture({ stableReplicas: 2 });
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    let state = await readyCandidate(f, router);
    state = (await f.settle(router, (await router.setWeight(state, 50)).state)).state;
    state = (
      await router.setHeaderRoute(state, {
        name: "qa",
        match: [{ headerName: "x-qa", headerValue: { exact: "1" } }],
      })
    ).state;
    state = await router.promote(state, { scaleDownDelaySeconds: 10 });
    let rules = ((await f.get(`${ROUTES}/shop`)) as Obj).spec.rules as {
      name?: string;
      backendRefs: { weight: number }[];
    }[];
    expect(rules.map((r) => r.name)).toEqual([undefined]);
    expect(rules[0]?.backendRefs.map((r) => r.weight)).toEqual([50, 50]);
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 2, image: "shop:v2" });
    state = await until(f, router, state);
    rules = ((await f.get(`${ROUTES}/shop`)) as Obj).spec.rules as { backendRefs: { weight: number }[] }[];
    expect(rules[0]?.backendRefs.map((r) => r.weight)).toEqual([100, 0]);
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 0 });
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 2, available: 2, image: "shop:v2" });
    // The next release starts from there.
    const next = await router.prepare();
    expect(next.stable).toContain("shop:v2");
  });

  it("aborts after a promotion: the stable Deployment goes back to the old image, the canary loses its traffic at once", async () => {
    fixture = await kubeFixture({ stableReplicas: 2 });
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    let state = await readyCandidate(f, router, "shop:v4");
    state = (await router.setWeight(state, 50)).state;
    state = await router.promote(state, { scaleDownDelaySeconds: 600 });
    let abort = await router.abort(state, { abortScaleDownDelaySeconds: 30 });
    expect(abort).toMatchObject({ ready: false, message: "rolling Deployment shop-stable back to shop:v1" });
    const refs = () =>
      f
        .get(`${ROUTES}/shop`)
        .then((r) =>
          ((r as Obj).spec.rules as { backendRefs: { weight: number }[] }[])[0]?.backendRefs.map(
            (b) => b.weight,
          ),
        );
    expect(await refs()).toEqual([100, 0]);
    for (let i = 0; i < 20 && !abort.ready; i++) {
      f.advance(1000);
      abort = await router.abort(abort.state, { abortScaleDownDelaySeconds: 30 });
    }
    expect(abort.ready).toBe(true);
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 2, available: 2, image: "shop:v1" });
    expect((abort.state as KubernetesState).pendingScaleDown).toMatchObject({ deployment: "shop-canary" });
    await until(f, router, abort.state);
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 0 });
  });

  it("setCanaryScale: the canary runs the scale's pods whatever the weight until the next one; abort clears it", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    if (!router.setCanaryScale) throw new Error("the kubernetes target scales the canary");
    let state = await readyCandidate(f, router);
    const pods = async () => (await f.deployment("shop-canary")).replicas;
    const weights = async () =>
      (
        ((await f.get(`${ROUTES}/shop`)) as Obj).spec.rules as { backendRefs: { weight: number }[] }[]
      )[0]?.backendRefs.map((b) => b.weight);
    const seen: unknown[] = [];
    state = (await f.settle(router, (await router.setWeight(state, 10)).state)).state;
    seen.push(["setWeight 10", await pods(), await weights()]);
    const scaled = await router.setCanaryScale(state, { replicas: 3 });
    expect(scaled.message).toBe("Deployment default/shop-canary runs 3 canary pods (as set)");
    state = (await f.settle(router, scaled.state)).state;
    seen.push(["replicas 3", await pods(), await weights()]);
    state = (await f.settle(router, (await router.setWeight(state, 60)).state)).state;
    seen.push(["setWeight 60", await pods(), await weights()]);
    state = (await f.settle(router, (await router.setCanaryScale(state, { weight: 0 })).state)).state;
    seen.push(["weight 0", await pods(), await weights()]);
    state = (await f.settle(router, (await router.setCanaryScale(state, { matchTrafficWeight: true })).state))
      .state;
    seen.push(["matchTrafficWeight", await pods(), await weights()]);
    state = (await f.settle(router, (await router.setCanaryScale(state, { weight: 50 })).state)).state;
    expect(seen).toEqual([
      ["setWeight 10", 1, [90, 10]],
      ["replicas 3", 3, [90, 10]],
      ["setWeight 60", 3, [40, 60]],
      ["weight 0", 0, [40, 60]],
      ["matchTrafficWeight", 3, [40, 60]],
    ]);
    expect((state as KubernetesState).canaryScale).toEqual({ weight: 50 });
    const aborted = await router.abort(state, { abortScaleDownDelaySeconds: 30 });
    expect(aborted.ready).toBe(true);
    expect((aborted.state as KubernetesState).canaryScale).toBeUndefined();
    expect(await weights()).toEqual([100, 0]);
    await until(f, router, aborted.state);
    expect(await pods()).toBe(0);
  });

  it("experiment: creates a ReplicaSet per template beside the Deployments, waits until available, deletes them at its end", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    if (!router.startExperiment || !router.stopExperiment)
      throw new Error("the kubernetes target runs experiments");
    let state = await readyCandidate(f, router);
    const started = await router.startExperiment(state, {
      stepIndex: 2,
      templates: [
        { name: "baseline", specRef: "stable", replicas: 1 },
        { name: "canary", specRef: "canary", replicas: 2 },
      ],
    });
    const experiment = (started.state as KubernetesState).experiment;
    expect(experiment?.name).toMatch(/^shop-canary-[bcdfghjklmnpqrstvwxz2456789]+-2$/);
    const names = experiment?.replicaSets.map((r) => r.name) ?? [];
    expect(names).toEqual([`${experiment?.name}-baseline`, `${experiment?.name}-canary`]);
    // Read back over HTTP: the pod templates of the stable and the candidate, each with its hash.
    const sets = await Promise.all(names.map((n) => f.get(`${REPLICA_SETS}/${n}`)));
    const view = sets.map((rs) => {
      const o = rs as {
        metadata: { labels: Record<string, string>; annotations: Record<string, string> };
        spec: {
          replicas: number;
          selector: { matchLabels: Record<string, string> };
          template: {
            metadata: { labels: Record<string, string> };
            spec: { containers: { image: string }[] };
          };
        };
      };
      return {
        replicas: o.spec.replicas,
        image: o.spec.template.spec.containers[0]?.image,
        template: o.metadata.annotations["experiment.argoproj.io/template-name"],
        experiment: o.metadata.annotations["experiment.argoproj.io/name"],
        hashes: [
          o.metadata.labels["rollouts-pod-template-hash"],
          o.spec.selector.matchLabels["rollouts-pod-template-hash"],
          o.spec.template.metadata.labels["rollouts-pod-template-hash"],
        ],
        // The Deployment's selector labels are on the pods only, never on the ReplicaSet itself.
        ownLabels: Object.keys(o.metadata.labels).sort(),
        podLabels: o.spec.template.metadata.labels.app,
        routed: [
          o.spec.template.metadata.labels["rollouts.sfn/deployment"],
          o.spec.selector.matchLabels["rollouts.sfn/deployment"],
        ],
      };
    });
    expect(view.map((v) => [v.template, v.replicas, v.image, v.experiment, v.podLabels])).toEqual([
      ["baseline", 1, "shop:v1", experiment?.name, "shop"],
      ["canary", 2, "shop:v2", experiment?.name, "shop"],
    ]);
    for (const v of view) {
      // The label the stable and canary Services select their pods by is left off.
      expect(v.routed).toEqual([undefined, undefined]);
      expect(new Set(v.hashes).size).toBe(1);
      expect(v.ownLabels).toEqual(["rollouts-pod-template-hash", "rollouts.sfn/experiment"]);
    }
    expect(view[0]?.hashes[0]).not.toBe(view[1]?.hashes[0]);
    // Not available until the pods are ready; then readiness says so and the wait is over.
    const first = await router.checkReadiness(started.state);
    expect(first.ready).toBe(false);
    expect(first.message).toContain("not available yet");
    const ready = await f.settle(router, first.state);
    expect(ready.ready).toBe(true);
    // Neither Service of the router sends the experiment's (ready) pods traffic.
    for (const service of ["shop-stable", "shop-canary"]) {
      const pods = f.kube.endpointsOf(NS, service).map((e) => e.pod);
      expect(pods.length).toBeGreaterThan(0);
      expect(pods.some((p) => p.startsWith(experiment?.name ?? "?"))).toBe(false);
    }
    expect(
      f.kube.endpointsOf(NS, "shop").filter((e) => e.pod.startsWith(experiment?.name ?? "?")),
    ).toHaveLength(3);
    expect((ready.state as KubernetesState).experiment?.deadlineAt).toBeUndefined();
    // A retried start finds its own ReplicaSets.
    const again = await router.startExperiment(state, {
      stepIndex: 2,
      templates: [
        { name: "baseline", specRef: "stable", replicas: 1 },
        { name: "canary", specRef: "canary", replicas: 2 },
      ],
    });
    expect((again.state as KubernetesState).experiment?.replicaSets).toEqual(experiment?.replicaSets);
    const stopped = await router.stopExperiment(ready.state);
    expect(stopped.message).toContain("deleted");
    state = stopped.state;
    expect((state as KubernetesState).experiment).toBeUndefined();
    for (const n of names) {
      const res = await fetch(`${f.kube.url}${REPLICA_SETS}/${n}`);
      expect(res.status).toBe(404);
    }
    expect((await router.stopExperiment(state)).message).toBe("no experiment running");
  });

  it("experiment: an abort while it runs deletes its ReplicaSets; one not available by the deadline fails", async () => {
    fixture = await kubeFixture({ stableReplicas: 2 });
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    if (!router.startExperiment) throw new Error("the kubernetes target runs experiments");
    const state = await readyCandidate(f, router);
    const started = await router.startExperiment(state, {
      stepIndex: 0,
      templates: [{ name: "canary", specRef: "canary", replicas: 1 }],
    });
    const name = (started.state as KubernetesState).experiment?.replicaSets[0]?.name;
    expect((await fetch(`${f.kube.url}${REPLICA_SETS}/${name}`)).status).toBe(200);
    const aborted = await router.abort(started.state, { abortScaleDownDelaySeconds: 0 });
    expect((aborted.state as KubernetesState).experiment).toBeUndefined();
    expect((await fetch(`${f.kube.url}${REPLICA_SETS}/${name}`)).status).toBe(404);
    // A template whose pods never become available (the candidate's Deployment given an image
    // that never gets ready, as the experiment copies what the API holds): the deadline fails it.
    const fresh = await readyCandidate(f, router, "shop:v3");
    await f.api(
      "PATCH",
      `/apis/apps/v1/namespaces/${NS}/deployments/shop-canary`,
      { spec: { template: { spec: { containers: [{ name: "app", image: "shop:never-ready" }] } } } },
      MERGE,
    );
    const stuck = await router.startExperiment(fresh, {
      stepIndex: 1,
      templates: [{ name: "canary", specRef: "canary", replicas: 1 }],
    });
    f.advance(61_000);
    await expect(router.checkReadiness(stuck.state)).rejects.toThrow(
      /the experiment's ReplicaSets did not become available before their progress deadline .*0\/1 available/,
    );
  });

  it("setCanaryScale is cleared by promotion", async () => {
    fixture = await kubeFixture({ stableReplicas: 2 });
    const f = fixture;
    await withHttpRoute(f);
    const router = f.router(gatewaySettings);
    let state = await readyCandidate(f, router);
    state = (await f.settle(router, (await router.setWeight(state, 50)).state)).state;
    state = (await f.settle(router, (await router.setCanaryScale?.(state, { replicas: 2 }))?.state ?? state))
      .state;
    expect((state as KubernetesState).canaryScale).toEqual({ replicas: 2 });
    state = await router.promote(state, { scaleDownDelaySeconds: 10 });
    expect((state as KubernetesState).canaryScale).toBeUndefined();
  });

  it("refuses to start while the canary still receives traffic, naming the route", async () => {
    fixture = await kubeFixture();
    const f = fixture;
    await withHttpRoute(f);
    await f.api(
      "PATCH",
      `${ROUTES}/shop`,
      {
        spec: {
          rules: [
            {
              backendRefs: [
                { name: "shop-stable", port: 80, weight: 90 },
                { name: "shop-canary", port: 80, weight: 10 },
              ],
            },
          ],
        },
      },
      MERGE,
    );
    await f.api(
      "PATCH",
      `/apis/apps/v1/namespaces/${NS}/deployments/shop-canary`,
      { spec: { template: { spec: { containers: [{ name: "app", image: "shop:v9" }] } } } },
      "application/strategic-merge-patch+json",
    );
    const error = await f
      .router(gatewaySettings)
      .prepare()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetConfigurationError);
    expect((error as Error).message).toMatch(
      /the canary still receives traffic \(HTTPRoute default\/shop: shop-canary gets 10%/,
    );
  });
});

describe("kubernetes target, Istio", () => {
  it("sets the route weights of the named routes, a header route first, and its drift", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    await f.api("POST", VSS, {
      apiVersion: "networking.istio.io/v1",
      kind: "VirtualService",
      metadata: { name: "shop", namespace: NS },
      spec: {
        hosts: ["shop"],
        http: [
          {
            name: "admin",
            match: [{ uri: { prefix: "/admin" } }],
            route: [{ destination: { host: "shop-admin" } }],
          },
          {
            name: "primary",
            route: [{ destination: { host: "shop-stable", port: { number: 80 } }, weight: 100 }],
          },
        ],
      },
    });
    const router = f.router({
      router: {
        type: "istio",
        virtualService: "shop",
        stableService: "shop-stable",
        canaryService: "shop-canary",
        routes: ["primary"],
      },
    });
    let state = await readyCandidate(f, router);
    state = (await f.settle(router, (await router.setWeight(state, 30)).state)).state;
    let http = ((await f.get(`${VSS}/shop`)) as Obj).spec.http as { name: string; route: unknown[] }[];
    expect(http[1]).toEqual({
      name: "primary",
      route: [
        { destination: { host: "shop-stable", port: { number: 80 } }, weight: 70 },
        { destination: { host: "shop-canary", port: { number: 80 } }, weight: 30 },
      ],
    });
    expect(http[0]?.name).toBe("admin");
    expect((await f.deployment("shop-canary")).replicas).toBe(2);
    state = (
      await router.setHeaderRoute(state, {
        name: "qa",
        match: [{ headerName: "X-Team", headerValue: { regex: "qa|ops" } }],
      })
    ).state;
    http = ((await f.get(`${VSS}/shop`)) as Obj).spec.http as { name: string; route: unknown[] }[];
    expect(http[0]).toEqual({
      name: "qa",
      match: [{ headers: { "x-team": { regex: "qa|ops" } } }],
      route: [{ destination: { host: "shop-canary", port: { number: 80 } }, weight: 100 }],
    });
    await f.api(
      "PATCH",
      `${VSS}/shop`,
      [
        { op: "replace", path: "/spec/http/2/route/1/weight", value: 0 },
        { op: "replace", path: "/spec/http/2/route/0/weight", value: 100 },
      ],
      "application/json-patch+json",
    );
    const drift = await router.setWeight(state, 60);
    expect(drift.outcome).toBe("drift");
    const aborted = await router.abort(state, { abortScaleDownDelaySeconds: 0 });
    expect(aborted.ready).toBe(true);
    http = ((await f.get(`${VSS}/shop`)) as Obj).spec.http as { name: string; route: { weight: number }[] }[];
    expect(http.map((h) => h.name)).toEqual(["admin", "primary"]);
    expect((http[1]?.route ?? []).map((r) => (r as { weight: number }).weight)).toEqual([100, 0]);
    await until(f, router, aborted.state);
    expect((await f.deployment("shop-canary")).replicas).toBe(0);
  });
});

describe("kubernetes target, NGINX", () => {
  it("creates the canary Ingress from the stable one, weighs it, routes one header, and refuses two", async () => {
    fixture = await kubeFixture();
    const f = fixture;
    await f.api("POST", INGRESSES, {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: {
        name: "shop",
        namespace: NS,
        annotations: { "nginx.ingress.kubernetes.io/proxy-body-size": "8m" },
      },
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
    });
    const router = f.router({
      router: {
        type: "nginx",
        stableIngress: "shop",
        stableService: "shop-stable",
        canaryService: "shop-canary",
      },
    });
    let state = await readyCandidate(f, router);
    state = (await router.setWeight(state, 20)).state;
    let canary = (await f.get(`${INGRESSES}/shop-canary`)) as Obj;
    expect(canary.metadata.annotations).toEqual({
      "nginx.ingress.kubernetes.io/proxy-body-size": "8m",
      "nginx.ingress.kubernetes.io/canary": "true",
      "nginx.ingress.kubernetes.io/canary-weight": "20",
    });
    expect(canary.spec).toEqual({
      ingressClassName: "nginx",
      rules: [
        {
          host: "shop.example",
          http: {
            paths: [
              {
                path: "/",
                pathType: "Prefix",
                backend: { service: { name: "shop-canary", port: { number: 80 } } },
              },
            ],
          },
        },
      ],
    });
    state = (
      await router.setHeaderRoute(state, {
        name: "qa",
        match: [{ headerName: "X-Team", headerValue: { prefix: "qa" } }],
      })
    ).state;
    canary = (await f.get(`${INGRESSES}/shop-canary`)) as Obj;
    expect(canary.metadata.annotations).toMatchObject({
      "nginx.ingress.kubernetes.io/canary-by-header": "X-Team",
      "nginx.ingress.kubernetes.io/canary-by-header-pattern": "^qa.*",
    });
    await expect(
      router.setHeaderRoute(state, {
        name: "two",
        match: [
          { headerName: "a", headerValue: { exact: "1" } },
          { headerName: "b", headerValue: { exact: "2" } },
        ],
      }),
    ).rejects.toThrow(/routes by one header \(canary-by-header\); this route has 2/);
    await f.api(
      "PATCH",
      `${INGRESSES}/shop-canary`,
      { metadata: { annotations: { "nginx.ingress.kubernetes.io/canary-weight": "70" } } },
      MERGE,
    );
    expect((await router.setWeight(state, 40)).outcome).toBe("drift");
    const promoted = await router.promote(state, { scaleDownDelaySeconds: 5 });
    canary = (await f.get(`${INGRESSES}/shop-canary`)) as Obj;
    expect(canary.metadata.annotations?.["nginx.ingress.kubernetes.io/canary-by-header"]).toBeUndefined();
    await until(f, router, promoted);
    canary = (await f.get(`${INGRESSES}/shop-canary`)) as Obj;
    expect(canary.metadata.annotations?.["nginx.ingress.kubernetes.io/canary-weight"]).toBe("0");
  });
});

describe("kubernetes target, blue/green by Service selector", () => {
  const settings = {
    router: {
      type: "blue-green",
      activeService: "shop-active",
      previewService: "shop-preview",
      previewReplicaCount: 1,
    },
  };
  const selected = async (f: KubeFixture, service: string) =>
    (((await f.get(`${SERVICES}/${service}`)) as Obj).spec.selector as Record<string, string>)[
      "rollouts.sfn/deployment"
    ];

  it("an experiment's pods are selected by neither the active nor the preview Service", async () => {
    fixture = await kubeFixture({ stableReplicas: 2 });
    const f = fixture;
    const router = f.router(settings);
    if (!router.startExperiment) throw new Error("the kubernetes target runs experiments");
    const prepared = await router.prepare();
    const state = (await f.settle(router, await router.deployCandidate(prepared.state, { image: "shop:v2" })))
      .state;
    const started = await router.startExperiment(state, {
      stepIndex: 0,
      templates: [
        { name: "baseline", specRef: "stable", replicas: 1 },
        { name: "canary", specRef: "canary", replicas: 1 },
      ],
    });
    expect((await f.settle(router, started.state)).ready).toBe(true);
    const name = (started.state as KubernetesState).experiment?.name ?? "?";
    for (const service of ["shop-active", "shop-preview"]) {
      const pods = f.kube.endpointsOf(NS, service).map((e) => e.pod);
      expect(pods.length).toBeGreaterThan(0);
      expect(pods.some((p) => p.startsWith(name))).toBe(false);
    }
    expect(f.kube.endpointsOf(NS, "shop").filter((e) => e.pod.startsWith(name))).toHaveLength(2);
  });

  it("deploys to the inactive Deployment behind preview, switches active at promotion, scales the old side down after the delay", async () => {
    fixture = await kubeFixture({ stableReplicas: 3 });
    const f = fixture;
    const router = f.router(settings);
    const prepared = await router.prepare();
    expect(prepared.stable).toContain("shop-stable");
    let state = (await f.settle(router, await router.deployCandidate(prepared.state, { image: "shop:v2" })))
      .state;
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 1, available: 1, image: "shop:v2" });
    expect([await selected(f, "shop-active"), await selected(f, "shop-preview")]).toEqual([
      "shop-stable",
      "shop-canary",
    ]);
    expect(f.kube.endpointsOf(NS, "shop-preview").length).toBe(1);
    const header = await router.setHeaderRoute(state, {
      name: "qa",
      match: [{ headerName: "x", headerValue: { exact: "1" } }],
    });
    expect(header).toMatchObject({
      applied: false,
      message: expect.stringMatching(/preview Service shop-preview/),
    });
    state = await router.promote(state, { scaleDownDelaySeconds: 30 });
    expect([await selected(f, "shop-active"), await selected(f, "shop-preview")]).toEqual([
      "shop-canary",
      "shop-canary",
    ]);
    expect((await f.deployment("shop-canary")).replicas).toBe(3);
    state = await until(f, router, state);
    expect((await f.deployment("shop-stable")).replicas).toBe(0);
    // The next release goes to the other Deployment.
    const next = await router.prepare();
    expect(next.stable).toContain("shop-canary (shop:v2, 3 replicas)");
    const deployed = await router.deployCandidate(next.state, { image: "shop:v3" });
    expect((deployed as KubernetesState).candidate).toEqual({ deployment: "shop-stable", image: "shop:v3" });
    // Abort: active stays, preview goes back, the candidate scales down after the delay.
    const aborted = await router.abort(deployed, { abortScaleDownDelaySeconds: 0 });
    expect([await selected(f, "shop-active"), await selected(f, "shop-preview")]).toEqual([
      "shop-canary",
      "shop-canary",
    ]);
    await until(f, router, aborted.state);
    expect((await f.deployment("shop-stable")).replicas).toBe(0);
  });

  it("aborts after the promotion's scale-down: the old Deployment comes back before the Services switch back", async () => {
    fixture = await kubeFixture({ stableReplicas: 2 });
    const f = fixture;
    const router = f.router(settings);
    let state = (
      await f.settle(
        router,
        await router.deployCandidate((await router.prepare()).state, { image: "shop:v2" }),
      )
    ).state;
    state = await until(f, router, await router.promote(state, { scaleDownDelaySeconds: 1 }));
    expect((await f.deployment("shop-stable")).replicas).toBe(0);
    let abort = await router.abort(state, { abortScaleDownDelaySeconds: 30 });
    expect(abort.ready).toBe(false);
    expect(await selected(f, "shop-active")).toBe("shop-canary");
    for (let i = 0; i < 10 && !abort.ready; i++) {
      f.advance(1000);
      abort = await router.abort(abort.state, { abortScaleDownDelaySeconds: 30 });
    }
    expect(abort.ready).toBe(true);
    expect(await selected(f, "shop-active")).toBe("shop-stable");
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 2, available: 2, image: "shop:v1" });
  });

  it("refuses Deployments whose pods do not carry the label, naming it", async () => {
    fixture = await kubeFixture();
    const f = fixture;
    const error = await f
      .router({ router: { ...settings.router, label: "slot" } })
      .prepare()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetConfigurationError);
    expect((error as Error).message).toMatch(
      /Deployment default\/shop-stable: its pod template must carry the label slot: shop-stable \(it has none\)/,
    );
  });
});

// Runs last: it reads the calls of every test above (run the whole file).
describe("least privilege", () => {
  it("uses exactly the verbs and resources examples/kubernetes-rbac.yaml grants, in the rollout's namespace", () => {
    const role = parseAllDocuments(readFileSync("examples/kubernetes-rbac.yaml", "utf8"))
      .map(
        (d) =>
          d.toJS() as {
            kind: string;
            rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
          },
      )
      .find((d) => d.kind === "Role");
    const granted = new Set(
      (role?.rules ?? []).flatMap((r) =>
        r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res}:${v}`))),
      ),
    );
    const calls = new Set(used.map((c) => `${c.group}/${c.resource}:${c.verb}`));
    expect(used.length).toBeGreaterThan(50);
    expect([...new Set(used.map((c) => c.namespace))]).toEqual([NS]);
    // Nothing beyond the manifest, and nothing in the manifest that is never used.
    expect([...calls].sort()).toEqual([...granted].sort());
  });
});
