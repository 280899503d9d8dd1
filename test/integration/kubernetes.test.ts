import { deploymentManifest, shopRolloutFile } from "@sfn-rollouts/test-support/kube";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { type KubeApi, startKubeApi } from "../../local/kube/server.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../../local/stack.ts";
import { DIGESTS } from "./scenario.ts";

/**
 * Whole rollouts on the kubernetes target: the synthesized stack in the embedded runtime, its
 * handlers calling the local Kubernetes API, in virtual time. A basic canary of 4 pods: v1 is the
 * first release, v2 walks 25% → pause → 50% → pause and is promoted, v3 never becomes ready and
 * is aborted by its progress deadline.
 */
const NS = "default";
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${NS}/deployments`;

function rolloutFile(): string {
  return shopRolloutFile([
    "canary:",
    "  scaleDownDelaySeconds: 30",
    "  steps:",
    "    - setWeight: 25",
    "    - pause: { duration: 10s }",
    "    - setWeight: 50",
    "    - pause: { duration: 10s }",
  ]);
}

describe("a basic canary on the local Kubernetes API, on the embedded runtime", () => {
  let kube: KubeApi;
  let stack: EmbeddedStack;
  let clock: ManualClock;
  /** [weight, canary pods, stable pods] each time the rollout item's step changed. */
  const seen: [number, number, number][] = [];

  const deployment = async (name: string) => {
    const d = (await (await fetch(`${kube.url}${DEPLOYMENTS}/${name}`)).json()) as {
      spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
    };
    return { replicas: d.spec.replicas, image: d.spec.template.spec.containers[0]?.image ?? "" };
  };

  /** Runs the rollout a second at a time until `done`, recording the pods at each step. */
  const drive = async (
    done: (item: RolloutItem | undefined) => boolean,
  ): Promise<RolloutItem | undefined> => {
    let step = -1;
    for (let s = 0; s < 600; s++) {
      await stack.runtime.settle();
      const item = await stack.item();
      if (item && item.stepIndex !== step && item.phase === "Progressing") {
        step = item.stepIndex;
        seen.push([
          item.weight,
          (await deployment("shop-canary")).replicas,
          (await deployment("shop-stable")).replicas,
        ]);
      }
      if (done(item)) return item;
      await stack.runtime.advanceBy(1000);
    }
    return stack.item();
  };

  beforeAll(async () => {
    clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
    kube = await startKubeApi({
      clock,
      syncIntervalMs: 0,
      readyAfterMs: 3000,
      neverReady: (image) => image.endsWith(DIGESTS.v3),
    });
    for (const [name, replicas] of [
      ["shop-stable", 0],
      ["shop-canary", 0],
    ] as const) {
      const res = await fetch(`${kube.url}${DEPLOYMENTS}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        // The Deployment's own deadline (60 s) comes before the target's (600 s).
        body: JSON.stringify(deploymentManifest(name, replicas, "shop:none", 60)),
      });
      expect(res.status).toBe(201);
    }
    stack = await startEmbeddedStack({
      specFiles: [rolloutFile()],
      repository: "shop",
      target: {
        type: "kubernetes",
        server: kube.url,
        auth: { type: "token", token: "local" },
        stableDeployment: "shop-stable",
        canaryDeployment: "shop-canary",
        pollSeconds: 2,
      },
      clock,
    });
  });

  afterAll(async () => {
    await stack?.close();
    await kube?.close();
  });

  it("releases v1 straight to the stable Deployment", async () => {
    await stack.push("v1", DIGESTS.v1);
    const item = await drive((i) => i?.currentRevision?.tag === "v1" && i.phase === "Healthy");
    expect(item?.phase).toBe("Healthy");
    const stable = await deployment("shop-stable");
    expect(stable.replicas).toBe(4);
    expect(stable.image.endsWith(`@${DIGESTS.v1}`)).toBe(true);
  });

  it("walks v2 through Argo's pod counts and promotes it: the image on stable, the canary scaled down after 30 s", async () => {
    seen.length = 0;
    await stack.push("v2", DIGESTS.v2);
    const item = await drive((i) => i?.currentRevision?.tag === "v2" && i.phase === "Healthy");
    expect(item?.phase).toBe("Healthy");
    // 25% of 4 pods with one surge pod: 1 canary + 3 stable; 50%: 2 + 2.
    expect(seen).toEqual(
      expect.arrayContaining([
        [25, 1, 3],
        [50, 2, 2],
      ]),
    );
    expect((await deployment("shop-stable")).image.endsWith(`@${DIGESTS.v2}`)).toBe(true);
    expect((await deployment("shop-canary")).replicas).toBe(2);
    await stack.runtime.advanceBy(60_000);
    await stack.runtime.settle();
    expect(await deployment("shop-canary")).toMatchObject({ replicas: 0 });
    expect(await deployment("shop-stable")).toMatchObject({ replicas: 4 });
  });

  it("aborts v3, whose pods never become ready, with the Deployment's own deadline message", async () => {
    await stack.push("v3", DIGESTS.v3);
    const item = await drive(
      (i) => i?.currentRevision?.tag === "v3" && (i.phase === "Degraded" || i.phase === "Healthy"),
    );
    expect(item?.phase).toBe("Degraded");
    expect(item?.message).toMatch(
      /the candidate on Deployment default\/shop-canary failed: ReplicaSet "shop-canary-[a-z0-9]+" has timed out progressing\./,
    );
    expect(await deployment("shop-stable")).toMatchObject({ replicas: 4 });
    expect((await deployment("shop-stable")).image.endsWith(`@${DIGESTS.v2}`)).toBe(true);
    expect((await deployment("shop-canary")).replicas).toBe(0);
  });
});

describe("a Gateway API canary on the local Kubernetes API, on the embedded runtime", () => {
  let kube: KubeApi;
  let stack: EmbeddedStack;
  const ROUTE = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/shop`;
  /** [weight, canary backendRef weight, canary pods] at each step. */
  const seen: [number, number, number][] = [];

  type Obj = {
    spec: {
      replicas: number;
      rules: { backendRefs: { name: string; weight?: number }[] }[];
      template: { spec: { containers: { image: string }[] } };
    };
  };
  const get = async (path: string) => (await (await fetch(`${kube.url}${path}`)).json()) as Obj;
  const canaryWeight = async () => {
    const refs = (await get(ROUTE)).spec.rules[0]?.backendRefs ?? [];
    return refs.find((r) => r.name === "shop-canary")?.weight ?? 0;
  };

  beforeAll(async () => {
    const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
    kube = await startKubeApi({ clock, syncIntervalMs: 0, readyAfterMs: 3000 });
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${kube.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(201);
    };
    await post(DEPLOYMENTS, deploymentManifest("shop-stable", 0, "shop:none"));
    await post(DEPLOYMENTS, deploymentManifest("shop-canary", 0, "shop:none"));
    for (const name of ["shop-stable", "shop-canary"]) {
      await post(`/api/v1/namespaces/${NS}/services`, {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: NS },
        spec: { selector: { app: "shop", "rollouts.sfn/deployment": name }, ports: [{ port: 80 }] },
      });
    }
    await post(`/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`, {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name: "shop", namespace: NS },
      spec: {
        parentRefs: [{ name: "gateway" }],
        rules: [{ backendRefs: [{ name: "shop-stable", port: 80 }] }],
      },
    });
    stack = await startEmbeddedStack({
      specFiles: [rolloutFile()],
      repository: "shop",
      target: {
        type: "kubernetes",
        server: kube.url,
        auth: { type: "token", token: "local" },
        stableDeployment: "shop-stable",
        canaryDeployment: "shop-canary",
        router: {
          type: "gateway-api",
          httpRoute: "shop",
          stableService: "shop-stable",
          canaryService: "shop-canary",
        },
        pollSeconds: 2,
      },
      clock,
    });
  });

  afterAll(async () => {
    await stack?.close();
    await kube?.close();
  });

  it("sets the exact weights with ceil(replicas × weight / 100) canary pods, promotes, then gives the stable everything back", async () => {
    await stack.push("v1", DIGESTS.v1);
    let item: RolloutItem | undefined;
    for (let s = 0; s < 120 && !(item?.currentRevision?.tag === "v1" && item.phase === "Healthy"); s++) {
      await stack.runtime.advanceBy(1000);
      await stack.runtime.settle();
      item = await stack.item();
    }
    expect(item?.phase).toBe("Healthy");
    await stack.push("v2", DIGESTS.v2);
    let step = -1;
    for (let s = 0; s < 600; s++) {
      await stack.runtime.settle();
      item = await stack.item();
      const running = item?.phase === "Progressing" || item?.phase === "Paused";
      if (item?.currentRevision?.tag === "v2" && running && item.stepIndex !== step) {
        step = item.stepIndex;
        const canary = (await get(`${DEPLOYMENTS}/shop-canary`)).spec.replicas;
        seen.push([item.weight, await canaryWeight(), canary]);
      }
      if (item?.currentRevision?.tag === "v2" && item.phase === "Healthy") break;
      await stack.runtime.advanceBy(1000);
    }
    expect(item?.phase).toBe("Healthy");
    expect(seen).toEqual(
      expect.arrayContaining([
        [25, 25, 1],
        [50, 50, 2],
      ]),
    );
    const stable = await get(`${DEPLOYMENTS}/shop-stable`);
    expect(stable.spec.template.spec.containers[0]?.image.endsWith(`@${DIGESTS.v2}`)).toBe(true);
    await stack.runtime.advanceBy(60_000);
    await stack.runtime.settle();
    expect(await canaryWeight()).toBe(0);
    expect((await get(`${DEPLOYMENTS}/shop-canary`)).spec.replicas).toBe(0);
  });
});
