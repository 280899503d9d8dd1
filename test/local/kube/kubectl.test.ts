import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RESOURCE_TYPES } from "../../../local/kube/resources.ts";
import { type KubeApi, startKubeApi } from "../../../local/kube/server.ts";

/**
 * kubectl (the real binary, installed by scripts/preflight.mjs) against the local API: what it
 * reads (discovery, OpenAPI), what it sends (client-side apply's strategic merge patch, a merge
 * patch for custom resources, the scale subresource, watches) and what the server holds after.
 */

let kube: KubeApi;
let dir: string;
let kubeconfig: string;

beforeAll(async () => {
  kube = await startKubeApi({ readyAfterMs: 200 });
  dir = await mkdtemp(join(tmpdir(), "kubectl-"));
  kubeconfig = await kube.kubeconfig(join(dir, "kubeconfig"));
});
afterAll(async () => {
  await kube.close();
  await rm(dir, { recursive: true, force: true });
});

function kubectl(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      "kubectl",
      ["--kubeconfig", kubeconfig, "--cache-dir", join(dir, "cache"), ...args],
      { timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, out: stdout, err: stderr });
      },
    );
  });
}

async function ok(...args: string[]): Promise<string> {
  const run = await kubectl(...args);
  expect(run.err).toBe("");
  expect(run.code).toBe(0);
  return run.out;
}

const type = (resource: string) => RESOURCE_TYPES.find((t) => t.resource === resource)!;

function manifest(image: string, replicas: number): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: ${replicas}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: ${image}
        ports: [{containerPort: 8080}]
        env: [{name: MODE, value: live}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`;
}

function route(stable: number, canary: number): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: web
spec:
  parentRefs: [{name: gateway}]
  rules:
  - backendRefs:
    - {name: web-stable, port: 80, weight: ${stable}}
    - {name: web-canary, port: 80, weight: ${canary}}
`;
}

describe("kubectl against the local API", () => {
  it("creates a namespace and applies a Deployment and a Service into it", async () => {
    await writeFile(join(dir, "ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    expect(await ok("apply", "-f", join(dir, "ns.yaml"))).toBe("namespace/shop created\n");
    await writeFile(join(dir, "app.yaml"), manifest("registry/web:v1", 3));
    expect(await ok("apply", "-n", "shop", "-f", join(dir, "app.yaml"))).toBe(
      "deployment.apps/web created\nservice/web created\n",
    );
    const held = kube.store.get(type("deployments"), "shop", "web");
    expect(held.spec?.replicas).toBe(3);
    expect(held.metadata.annotations?.["kubectl.kubernetes.io/last-applied-configuration"]).toContain(
      "registry/web:v1",
    );
    expect(kube.store.get(type("services"), "shop", "web").spec?.selector).toEqual({ app: "web" });
  });

  it("re-applies as an update: the changed fields change, what someone else added stays", async () => {
    // Someone else annotates the pod template; a client-side apply keeps what it never owned.
    const live = kube.store.get(type("deployments"), "shop", "web");
    const response = await fetch(`${kube.url}/apis/apps/v1/namespaces/shop/deployments/web`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ spec: { template: { metadata: { annotations: { owner: "team-a" } } } } }),
    });
    expect(response.status).toBe(200);
    await writeFile(join(dir, "app.yaml"), manifest("registry/web:v2", 2));
    expect(await ok("apply", "-n", "shop", "-f", join(dir, "app.yaml"))).toBe(
      "deployment.apps/web configured\nservice/web unchanged\n",
    );
    const held = kube.store.get(type("deployments"), "shop", "web");
    expect(held.spec?.replicas).toBe(2);
    const template = held.spec?.template as {
      metadata: { annotations: unknown };
      spec: { containers: unknown[] };
    };
    expect(template.spec.containers).toEqual([
      {
        name: "app",
        image: "registry/web:v2",
        ports: [{ containerPort: 8080 }],
        env: [{ name: "MODE", value: "live" }],
      },
    ]);
    expect(template.metadata.annotations).toEqual({ owner: "team-a" });
    expect(held.metadata.uid).toBe(live.metadata.uid);
    expect(held.metadata.generation).toBe(3);
  });

  it("reads Deployments as JSON, scales through the scale subresource and waits for the rollout", async () => {
    const list = JSON.parse(await ok("get", "deploy", "-n", "shop", "-o", "json"));
    expect(list.kind).toBe("List");
    expect(list.items.map((d: { metadata: { name: string } }) => d.metadata.name)).toEqual(["web"]);
    expect(list.items[0].spec.template.spec.containers[0].image).toBe("registry/web:v2");

    expect(await ok("scale", "deployment/web", "-n", "shop", "--replicas=4")).toBe(
      "deployment.apps/web scaled\n",
    );
    expect(kube.store.get(type("deployments"), "shop", "web").spec?.replicas).toBe(4);

    expect(await ok("rollout", "status", "deployment/web", "-n", "shop", "--timeout=20s")).toContain(
      'deployment "web" successfully rolled out',
    );
    const status = kube.store.get(type("deployments"), "shop", "web").status;
    expect(status).toMatchObject({ replicas: 4, updatedReplicas: 4, readyReplicas: 4, availableReplicas: 4 });
    const pods = JSON.parse(await ok("get", "pods", "-n", "shop", "-l", "app=web", "-o", "json"));
    expect(pods.items).toHaveLength(4);
    // Without -o, kubectl prints the server's Table columns.
    expect(await ok("get", "deploy", "web", "-n", "shop")).toMatch(
      /^NAME +READY +UP-TO-DATE +AVAILABLE +AGE\nweb +4\/4 +4 +4 +\d+s\n$/,
    );
    expect((await ok("get", "pods", "-n", "shop")).split("\n")[1]).toMatch(
      /^web-[a-z0-9]+-[a-z0-9]{5} +1\/1 +Running +0 +\d+s$/,
    );
  });

  it("applies and reads an HTTPRoute (a custom resource: kubectl sends a merge patch)", async () => {
    await writeFile(join(dir, "route.yaml"), route(100, 0));
    expect(await ok("apply", "-n", "shop", "-f", join(dir, "route.yaml"))).toBe(
      "httproute.gateway.networking.k8s.io/web created\n",
    );
    await writeFile(join(dir, "route.yaml"), route(80, 20));
    expect(await ok("apply", "-n", "shop", "-f", join(dir, "route.yaml"))).toBe(
      "httproute.gateway.networking.k8s.io/web configured\n",
    );
    const held = kube.store.get(type("httproutes"), "shop", "web");
    expect(held.spec?.rules).toEqual([
      {
        backendRefs: [
          { name: "web-stable", port: 80, weight: 80 },
          { name: "web-canary", port: 80, weight: 20 },
        ],
      },
    ]);
    const read = JSON.parse(await ok("get", "httproute", "web", "-n", "shop", "-o", "json"));
    expect(read.spec.rules[0].backendRefs.map((b: { weight: number }) => b.weight)).toEqual([80, 20]);
  });

  it("shows the server's errors as the API server words them", async () => {
    const missing = await kubectl("get", "deploy", "nope", "-n", "shop");
    expect(missing.code).toBe(1);
    expect(missing.err).toBe('Error from server (NotFound): deployments.apps "nope" not found\n');
    const taken = await kubectl("create", "-f", join(dir, "ns.yaml"));
    expect(taken.err).toBe(
      `Error from server (AlreadyExists): error when creating "${join(dir, "ns.yaml")}": namespaces "shop" already exists\n`,
    );
    // `kubectl create <kind>` sends protobuf, which this server does not speak: a 415 naming what it does.
    const protobuf = await kubectl("create", "namespace", "other");
    expect(protobuf.err).toBe(
      "Error from server (UnsupportedMediaType): the body of the request was in an unknown format - accepted media types include: application/json, application/yaml\n",
    );
  });

  it("deletes what it applied", async () => {
    expect(await ok("delete", "-n", "shop", "-f", join(dir, "app.yaml"))).toBe(
      'deployment.apps "web" deleted\nservice "web" deleted\n',
    );
    expect(kube.store.list(type("deployments"), "shop")).toEqual([]);
  });
});
