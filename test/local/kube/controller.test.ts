import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { templateHash } from "../../../local/kube/controller.ts";
import type { PodBacker } from "../../../local/kube/pods.ts";
import { type KubeApi, type KubeApiOptions, startKubeApi } from "../../../local/kube/server.ts";
import { deployment, type JsonBody, kubeCall } from "./client.ts";

/** The simulated Deployment controller, in virtual time, read through the API as a client reads it. */

const T0 = Date.parse("2026-01-01T00:00:00Z");
const NS = "/apis/apps/v1/namespaces/default";
let kube: KubeApi | undefined;
let clock: ManualClock;

afterEach(async () => {
  await kube?.close();
  kube = undefined;
});

async function start(options: KubeApiOptions = {}): Promise<KubeApi> {
  clock = new ManualClock(T0);
  kube = await startKubeApi({ clock, syncIntervalMs: 0, readyAfterMs: 1000, ...options });
  return kube;
}

async function get(path: string): Promise<JsonBody> {
  const answer = await kubeCall(kube!, "GET", path);
  expect(answer.status).toBe(200);
  return answer.body;
}

async function pods(selector = ""): Promise<JsonBody[]> {
  return (
    await get(
      `/api/v1/namespaces/default/pods${selector ? `?labelSelector=${encodeURIComponent(selector)}` : ""}`,
    )
  ).items;
}

function condition(status: JsonBody, type: string): JsonBody | undefined {
  return (status.conditions as JsonBody[]).find((c) => c.type === type);
}

describe("the Deployment controller", () => {
  it("creates a ReplicaSet and pods at once; they become ready after the delay, and the status says so", async () => {
    await start();
    expect(
      (await kubeCall(kube!, "POST", `${NS}/deployments`, deployment("web", "registry/web:v1", 3))).status,
    ).toBe(201);
    const hash = templateHash(deployment("web").spec.template);
    const rs = await get(`${NS}/replicasets/web-${hash}`);
    expect(rs.metadata.ownerReferences[0]).toMatchObject({
      kind: "Deployment",
      name: "web",
      controller: true,
    });
    expect(rs.metadata.annotations["deployment.kubernetes.io/revision"]).toBe("1");
    const created = await pods();
    expect(created).toHaveLength(3);
    for (const pod of created) {
      expect(pod.metadata.name).toMatch(new RegExp(`^web-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`));
      expect(pod.metadata.labels).toEqual({ app: "web", "pod-template-hash": hash });
      expect(pod.spec.containers[0].image).toBe("registry/web:v1");
      expect(pod.status.conditions.find((c: JsonBody) => c.type === "Ready").status).toBe("False");
    }
    let status = (await get(`${NS}/deployments/web`)).status;
    expect(status).toMatchObject({
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      unavailableReplicas: 3,
    });
    expect(status.readyReplicas).toBeUndefined();
    expect(condition(status, "Available")).toMatchObject({
      status: "False",
      reason: "MinimumReplicasUnavailable",
    });
    expect(condition(status, "Progressing")).toMatchObject({
      status: "True",
      reason: "NewReplicaSetCreated",
      message: `Created new replica set "web-${hash}"`,
    });

    clock.advance(999);
    expect((await get(`${NS}/deployments/web`)).status.readyReplicas).toBeUndefined();
    clock.advance(1);
    status = (await get(`${NS}/deployments/web`)).status;
    expect(status).toMatchObject({ replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 });
    expect(status.unavailableReplicas).toBeUndefined();
    expect(condition(status, "Available")).toMatchObject({
      status: "True",
      reason: "MinimumReplicasAvailable",
      message: "Deployment has minimum availability.",
    });
    expect(condition(status, "Progressing")).toMatchObject({
      status: "True",
      reason: "NewReplicaSetAvailable",
      message: `ReplicaSet "web-${hash}" has successfully progressed.`,
    });
    expect(
      (await pods()).every(
        (p) => p.status.conditions.find((c: JsonBody) => c.type === "Ready").status === "True",
      ),
    ).toBe(true);
  });

  it("an idle Deployment keeps its resourceVersion", async () => {
    await start();
    await kubeCall(kube!, "POST", `${NS}/deployments`, deployment("web"));
    clock.advance(5000);
    const before = (await get(`${NS}/deployments/web`)).metadata.resourceVersion;
    clock.advance(60_000);
    expect((await get(`${NS}/deployments/web`)).metadata.resourceVersion).toBe(before);
  });

  it("a new template gets a new ReplicaSet; the old pods serve until the new ones are available", async () => {
    await start();
    await kubeCall(kube!, "POST", `${NS}/deployments`, deployment("web", "registry/web:v1", 2));
    clock.advance(1000);
    const oldHash = templateHash(deployment("web").spec.template);
    const patch = {
      spec: { template: { spec: { containers: [{ name: "app", image: "registry/web:v2" }] } } },
    };
    const patched = await kubeCall(
      kube!,
      "PATCH",
      `${NS}/deployments/web`,
      patch,
      "application/strategic-merge-patch+json",
    );
    expect(patched.body.metadata.generation).toBe(2);
    const newHash = templateHash(patched.body.spec.template);
    expect(newHash).not.toBe(oldHash);

    let status = (await get(`${NS}/deployments/web`)).status;
    expect(status).toMatchObject({
      observedGeneration: 2,
      replicas: 4,
      updatedReplicas: 2,
      readyReplicas: 2,
    });
    expect(condition(status, "Available")?.status).toBe("True");
    expect((await pods(`pod-template-hash=${oldHash}`)).map((p) => p.spec.containers[0].image)).toEqual([
      "registry/web:v1",
      "registry/web:v1",
    ]);
    expect(
      (await get(`${NS}/replicasets/web-${newHash}`)).metadata.annotations[
        "deployment.kubernetes.io/revision"
      ],
    ).toBe("2");

    clock.advance(1000);
    status = (await get(`${NS}/deployments/web`)).status;
    expect(status).toMatchObject({ replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 });
    expect(await pods(`pod-template-hash=${oldHash}`)).toEqual([]);
    expect((await get(`${NS}/replicasets/web-${oldHash}`)).spec.replicas).toBe(0);
    expect(condition(status, "Progressing")?.reason).toBe("NewReplicaSetAvailable");
  });

  it("pods that never become ready exceed progressDeadlineSeconds with the controller's message; the old pods keep serving", async () => {
    await start();
    const web = deployment("web", "registry/web:v1", 2);
    await kubeCall(kube!, "POST", `${NS}/deployments`, {
      ...web,
      spec: { ...web.spec, progressDeadlineSeconds: 30 },
    });
    clock.advance(1000);
    const read = await get(`${NS}/deployments/web`);
    read.spec.template.spec.containers[0].image = "registry/web:v3-never-ready";
    expect((await kubeCall(kube!, "PUT", `${NS}/deployments/web`, read)).status).toBe(200);
    const rsName = `web-${templateHash(read.spec.template)}`;

    clock.advance(30_000);
    let status = (await get(`${NS}/deployments/web`)).status;
    expect(condition(status, "Progressing")).toMatchObject({
      status: "True",
      reason: "NewReplicaSetCreated",
    });
    clock.advance(1);
    status = (await get(`${NS}/deployments/web`)).status;
    expect(condition(status, "Progressing")).toMatchObject({
      status: "False",
      reason: "ProgressDeadlineExceeded",
      message: `ReplicaSet "${rsName}" has timed out progressing.`,
    });
    expect(status).toMatchObject({ replicas: 4, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 });
    expect(condition(status, "Available")?.status).toBe("True");

    // Rolling back to the old template takes its ReplicaSet (and its ready pods) again: done at once.
    const back = await get(`${NS}/deployments/web`);
    back.spec.template.spec.containers[0].image = "registry/web:v1";
    await kubeCall(kube!, "PUT", `${NS}/deployments/web`, back);
    const oldRS = `web-${templateHash(back.spec.template)}`;
    status = (await get(`${NS}/deployments/web`)).status;
    expect(status).toMatchObject({ replicas: 2, updatedReplicas: 2, readyReplicas: 2 });
    expect(condition(status, "Progressing")).toMatchObject({
      status: "True",
      reason: "NewReplicaSetAvailable",
      message: `ReplicaSet "${oldRS}" has successfully progressed.`,
    });
    expect(
      (await get(`${NS}/replicasets/${oldRS}`)).metadata.annotations["deployment.kubernetes.io/revision"],
    ).toBe("3");
    expect((await get(`${NS}/replicasets/${rsName}`)).spec.replicas).toBe(0);
  });

  it("follows scale-downs and deletions: a deleted pod is replaced, a deleted Deployment takes its pods", async () => {
    await start();
    await kubeCall(kube!, "POST", `${NS}/deployments`, deployment("web", "registry/web:v1", 3));
    await kubeCall(
      kube!,
      "PATCH",
      `${NS}/deployments/web/scale`,
      { spec: { replicas: 1 } },
      "application/merge-patch+json",
    );
    const [only] = await pods();
    expect(await pods()).toHaveLength(1);
    await kubeCall(kube!, "DELETE", `/api/v1/namespaces/default/pods/${only!.metadata.name}`);
    const replaced = await pods();
    expect(replaced).toHaveLength(1);
    expect(replaced[0]!.metadata.name).not.toBe(only!.metadata.name);
    await kubeCall(kube!, "DELETE", `${NS}/deployments/web`);
    expect(await pods()).toEqual([]);
    expect((await get(`${NS}/replicasets`)).items).toEqual([]);
  });

  it("hashes equal templates equally whatever their key order", () => {
    expect(templateHash({ metadata: { labels: { a: "1" } }, spec: { x: 1, y: 2 } })).toBe(
      templateHash({ spec: { y: 2, x: 1 }, metadata: { labels: { a: "1" } } }),
    );
    expect(templateHash({ spec: { x: 1 } })).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
  });
});

describe("pods backed by processes", () => {
  /** A process per pod that answers with its image, as the demo's app answers with its version. */
  function backer(started: string[], stopped: string[]): PodBacker {
    return async (pod) => {
      const server = http.createServer((_req, res) => res.end(pod.image));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      started.push(pod.name);
      return {
        port: (server.address() as { port: number }).port,
        close: async () => {
          stopped.push(pod.name);
          server.closeAllConnections();
          await new Promise<void>((resolve) => server.close(() => resolve()));
        },
      };
    };
  }

  it("sends a Service's traffic to its pods' processes, and stops a process when its pod goes", async () => {
    const started: string[] = [];
    const stopped: string[] = [];
    await start({ backPod: backer(started, stopped), readyAfterMs: 0 });
    await kubeCall(kube!, "POST", "/api/v1/namespaces/default/services", {
      metadata: { name: "web" },
      spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    await kubeCall(kube!, "POST", `${NS}/deployments`, deployment("web", "registry/web:v1", 2));
    await expect.poll(() => started.length).toBe(2);
    const endpoints = kube!.endpointsOf("default", "web");
    expect(endpoints).toHaveLength(2);
    for (const endpoint of endpoints) {
      expect(endpoint).toMatchObject({ ip: "127.0.0.1", ready: true, image: "registry/web:v1" });
      const answer = await fetch(`http://127.0.0.1:${endpoint.port}/`);
      expect(await answer.text()).toBe("registry/web:v1");
    }
    expect((await pods())[0]!.metadata.annotations["local.sfn-rollouts/port"]).toBe(
      String(endpoints[0]!.port),
    );

    await kubeCall(
      kube!,
      "PATCH",
      `${NS}/deployments/web/scale`,
      { spec: { replicas: 1 } },
      "application/merge-patch+json",
    );
    await expect.poll(() => stopped.length).toBe(1);
    const gone = endpoints.find((e) => e.pod === stopped[0])!;
    await expect(fetch(`http://127.0.0.1:${gone.port}/`)).rejects.toThrow();
    expect(kube!.endpointsOf("default", "web").map((e) => e.pod)).toEqual(
      endpoints.filter((e) => e.pod !== stopped[0]).map((e) => e.pod),
    );
  });

  it("a pod whose process fails to start is never ready, and says why", async () => {
    await start({
      readyAfterMs: 0,
      backPod: () => {
        throw new Error("port in use");
      },
    });
    await kubeCall(kube!, "POST", `${NS}/deployments`, deployment("web", "registry/web:v1", 1));
    await expect
      .poll(async () => (await pods())[0]?.status.containerStatuses?.[0]?.state.waiting)
      .toEqual({ reason: "CrashLoopBackOff", message: "port in use" });
    expect((await get(`${NS}/deployments/web`)).status.readyReplicas).toBeUndefined();
  });
});
