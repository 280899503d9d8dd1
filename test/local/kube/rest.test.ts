import http from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { type KubeApi, startKubeApi } from "../../../local/kube/server.ts";
import { humanDuration } from "../../../local/kube/table.ts";
import { type Answer, deployment, type JsonBody, kubeCall } from "./client.ts";

/** The local Kubernetes API's REST semantics, over HTTP, as a client sees them. */

let kube: KubeApi;
const clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));

beforeEach(async () => {
  kube = await startKubeApi({ clock, syncIntervalMs: 0, namespaces: ["default", "shop"] });
});
afterEach(async () => {
  await kube.close();
});

function call(method: string, path: string, body?: unknown, contentType?: string): Promise<Answer> {
  return kubeCall(kube, method, path, body, contentType);
}

const DEPLOYMENTS = "/apis/apps/v1/namespaces/shop/deployments";

describe("create, read, conflicts", () => {
  it("creates with 201 and server bookkeeping; a second create is 409 AlreadyExists", async () => {
    const created = await call("POST", DEPLOYMENTS, deployment("web"));
    expect(created.status).toBe(201);
    expect(created.body.metadata).toMatchObject({
      name: "web",
      namespace: "shop",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
    });
    expect(created.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(created.body.metadata.resourceVersion)).toBeGreaterThan(0);

    const again = await call("POST", DEPLOYMENTS, deployment("web"));
    expect(again).toEqual({
      status: 409,
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'deployments.apps "web" already exists',
        reason: "AlreadyExists",
        details: { name: "web", group: "apps", kind: "deployments" },
        code: 409,
      },
    });
  });

  it("answers 404 NotFound for a missing object, namespace and path", async () => {
    expect(await call("GET", `${DEPLOYMENTS}/nope`)).toMatchObject({
      status: 404,
      body: { kind: "Status", reason: "NotFound", message: 'deployments.apps "nope" not found', code: 404 },
    });
    expect(
      await call("POST", "/apis/apps/v1/namespaces/absent/deployments", deployment("web")),
    ).toMatchObject({
      status: 404,
      body: { reason: "NotFound", message: 'namespaces "absent" not found' },
    });
    expect(
      await call("PATCH", `${DEPLOYMENTS}/nope`, { spec: { replicas: 1 } }, "application/merge-patch+json"),
    ).toMatchObject({
      status: 404,
      body: { reason: "NotFound", message: 'deployments.apps "nope" not found' },
    });
    expect(await call("GET", "/apis/apps/v1/namespaces/shop/cronjobs")).toMatchObject({
      status: 404,
      body: { reason: "NotFound", message: "the server could not find the requested resource" },
    });
  });

  it("PUT with a stale resourceVersion is 409 Conflict with the API server's message; with the current one it writes and bumps generation", async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
    // The controller has written the status since the create answered: read the latest.
    const created = (await call("GET", `${DEPLOYMENTS}/web`)).body;
    const first = structuredClone(created);
    first.spec.replicas = 5;
    const updated = await call("PUT", `${DEPLOYMENTS}/web`, first);
    expect(updated.status).toBe(200);
    expect(updated.body.metadata.generation).toBe(2);
    expect(Number(updated.body.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );

    const stale = structuredClone(created);
    stale.spec.replicas = 7;
    expect(await call("PUT", `${DEPLOYMENTS}/web`, stale)).toEqual({
      status: 409,
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message:
          'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again',
        reason: "Conflict",
        details: { name: "web", group: "apps", kind: "deployments" },
        code: 409,
      },
    });
    expect((await call("GET", `${DEPLOYMENTS}/web`)).body.spec.replicas).toBe(5);
  });

  it("a write that changes nothing keeps the resourceVersion", async () => {
    await call("POST", "/api/v1/namespaces/shop/services", {
      metadata: { name: "web" },
      spec: { selector: { app: "web" } },
    });
    const read = (await call("GET", "/api/v1/namespaces/shop/services/web")).body;
    const again = await call("PUT", "/api/v1/namespaces/shop/services/web", read);
    expect(again.body.metadata.resourceVersion).toBe(read.metadata.resourceVersion);
  });

  it("refuses a body whose name, namespace or kind does not match the URL with 400", async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
    expect(await call("PUT", `${DEPLOYMENTS}/web`, deployment("other"))).toMatchObject({
      status: 400,
      body: {
        reason: "BadRequest",
        message: "the name of the object (other) does not match the name on the URL (web)",
      },
    });
    expect(
      await call("POST", DEPLOYMENTS, { ...deployment("x"), metadata: { name: "x", namespace: "default" } }),
    ).toMatchObject({
      status: 400,
      body: {
        message: "the namespace of the provided object does not match the namespace sent on the request",
      },
    });
    expect(await call("POST", DEPLOYMENTS, { ...deployment("x"), kind: "Service" })).toMatchObject({
      status: 400,
      body: { reason: "BadRequest" },
    });
    expect(await call("POST", DEPLOYMENTS, "{not json")).toMatchObject({
      status: 400,
      body: { reason: "BadRequest" },
    });
  });

  it("refuses an invalid Deployment with 422 Invalid naming the field", async () => {
    const bad = deployment("web");
    bad.spec.template.metadata.labels = { app: "other" };
    expect(await call("POST", DEPLOYMENTS, bad)).toMatchObject({
      status: 422,
      body: {
        reason: "Invalid",
        message:
          'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: {"app":"other"}: `selector` does not match template `labels`',
        details: { causes: [{ field: "spec.template.metadata.labels" }] },
      },
    });
    expect(await call("POST", DEPLOYMENTS, deployment("Bad_Name"))).toMatchObject({
      status: 422,
      body: { reason: "Invalid", details: { causes: [{ field: "metadata.name" }] } },
    });
    expect(await call("POST", DEPLOYMENTS, deployment("web", "", -1))).toMatchObject({
      status: 422,
      body: {
        details: {
          causes: [{ field: "spec.replicas" }, { field: "spec.template.spec.containers[0].image" }],
        },
      },
    });
  });

  it("DELETE answers the object, and a stale precondition is 409", async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
    expect(
      await call("DELETE", `${DEPLOYMENTS}/web`, { preconditions: { resourceVersion: "1" } }),
    ).toMatchObject({
      status: 409,
      body: {
        reason: "Conflict",
        message: expect.stringContaining("Precondition failed: ResourceVersion in precondition: 1"),
      },
    });
    const deleted = await call("DELETE", `${DEPLOYMENTS}/web`);
    expect(deleted).toMatchObject({ status: 200, body: { kind: "Deployment", metadata: { name: "web" } } });
    expect((await call("GET", `${DEPLOYMENTS}/web`)).status).toBe(404);
  });

  it("pods and replica sets are the controller's: clients may not create or patch them (405)", async () => {
    expect(await call("POST", "/api/v1/namespaces/shop/pods", { metadata: { name: "p" } })).toMatchObject({
      status: 405,
      body: { reason: "MethodNotAllowed" },
    });
    await call("POST", DEPLOYMENTS, deployment("web"));
    const [pod] = (await call("GET", "/api/v1/namespaces/shop/pods")).body.items;
    expect(
      await call(
        "PATCH",
        `/api/v1/namespaces/shop/pods/${pod.metadata.name}`,
        { metadata: { labels: { x: "y" } } },
        "application/merge-patch+json",
      ),
    ).toMatchObject({ status: 405 });
  });

  it("dryRun=All answers without storing", async () => {
    const dry = await call("POST", `${DEPLOYMENTS}?dryRun=All`, deployment("web"));
    expect(dry.status).toBe(201);
    expect((await call("GET", `${DEPLOYMENTS}/web`)).status).toBe(404);
  });
});

/** A GET with headers `fetch` would not send as given (Host). */
function rawGet(url: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "GET", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("patches", () => {
  beforeEach(async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
  });

  it("merge patch changes what it names, null removes", async () => {
    const out = await call(
      "PATCH",
      `${DEPLOYMENTS}/web`,
      { metadata: { labels: { tier: null, track: "stable" } }, spec: { replicas: 4 } },
      "application/merge-patch+json",
    );
    expect(out.status).toBe(200);
    expect(out.body.metadata.labels).toEqual({ app: "web", track: "stable" });
    expect(out.body.spec.replicas).toBe(4);
    expect(out.body.metadata.generation).toBe(2);
  });

  it("a patch carrying a stale resourceVersion is 409 Conflict; the current one applies", async () => {
    const read = (await call("GET", `${DEPLOYMENTS}/web`)).body;
    const patch = { metadata: { resourceVersion: read.metadata.resourceVersion }, spec: { replicas: 3 } };
    expect((await call("PATCH", `${DEPLOYMENTS}/web`, patch, "application/merge-patch+json")).status).toBe(
      200,
    );
    expect(await call("PATCH", `${DEPLOYMENTS}/web`, patch, "application/merge-patch+json")).toMatchObject({
      status: 409,
      body: { reason: "Conflict" },
    });
  });

  it("JSON patch applies its operations; a failed test is 422 and changes nothing", async () => {
    const ok = await call(
      "PATCH",
      `${DEPLOYMENTS}/web`,
      [
        { op: "test", path: "/spec/replicas", value: 2 },
        { op: "replace", path: "/spec/template/spec/containers/0/image", value: "registry/web:v2" },
        { op: "add", path: "/metadata/annotations", value: { note: "x" } },
      ],
      "application/json-patch+json",
    );
    expect(ok.status).toBe(200);
    expect(ok.body.spec.template.spec.containers[0].image).toBe("registry/web:v2");
    const failed = await call(
      "PATCH",
      `${DEPLOYMENTS}/web`,
      [
        { op: "replace", path: "/spec/replicas", value: 9 },
        { op: "test", path: "/spec/replicas", value: 2 },
      ],
      "application/json-patch+json",
    );
    expect(failed).toMatchObject({
      status: 422,
      body: { reason: "Invalid", message: "testing value /spec/replicas failed: test failed" },
    });
    expect((await call("GET", `${DEPLOYMENTS}/web`)).body.spec.replicas).toBe(2);
    expect(
      await call("PATCH", `${DEPLOYMENTS}/web`, { op: "add" }, "application/json-patch+json"),
    ).toMatchObject({ status: 400, body: { reason: "BadRequest" } });
  });

  it("strategic merge patch merges containers by name; refused (415) for a custom resource", async () => {
    const out = await call(
      "PATCH",
      `${DEPLOYMENTS}/web`,
      { spec: { template: { spec: { containers: [{ name: "app", image: "registry/web:v3" }] } } } },
      "application/strategic-merge-patch+json",
    );
    expect(out.body.spec.template.spec.containers).toEqual([
      { name: "app", image: "registry/web:v3", ports: [{ containerPort: 8080 }] },
    ]);
    await call("POST", "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes", {
      metadata: { name: "web" },
      spec: { rules: [{ backendRefs: [{ name: "web-stable", port: 80, weight: 100 }] }] },
    });
    expect(
      await call(
        "PATCH",
        "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/web",
        { spec: {} },
        "application/strategic-merge-patch+json",
      ),
    ).toMatchObject({
      status: 415,
      body: {
        reason: "UnsupportedMediaType",
        message:
          "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
      },
    });
  });

  it("refuses a body type it does not speak with 415", async () => {
    expect(await call("PATCH", `${DEPLOYMENTS}/web`, "{}", "text/plain")).toMatchObject({
      status: 415,
      body: { reason: "UnsupportedMediaType" },
    });
    expect(await call("POST", DEPLOYMENTS, "a=b", "application/x-www-form-urlencoded")).toMatchObject({
      status: 415,
    });
  });

  it("server-side apply creates, then merges into the live object", async () => {
    const path = "/apis/networking.istio.io/v1beta1/namespaces/shop/virtualservices/web";
    const yaml =
      "apiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata:\n  name: web\nspec:\n  hosts: [web]\n";
    expect(
      (await call("PATCH", `${path}?fieldManager=me`, yaml, "application/apply-patch+yaml")).status,
    ).toBe(201);
    const again = await call(
      "PATCH",
      `${path}?fieldManager=me`,
      "metadata: {name: web}\nspec: {gateways: [mesh]}\n",
      "application/apply-patch+yaml",
    );
    expect(again.body.spec).toEqual({ hosts: ["web"], gateways: ["mesh"] });
    // The same objects under the group's other version.
    expect(
      (await call("GET", "/apis/networking.istio.io/v1/namespaces/shop/virtualservices/web")).body,
    ).toMatchObject({
      apiVersion: "networking.istio.io/v1",
      spec: { hosts: ["web"], gateways: ["mesh"] },
    });
  });
});

describe("status and scale subresources", () => {
  beforeEach(async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
  });

  it("a write to the object keeps its status; a write to its status keeps the rest", async () => {
    const read = (await call("GET", `${DEPLOYMENTS}/web`)).body;
    const withStatus = { ...read, spec: { ...read.spec, replicas: 6 }, status: { replicas: 99 } };
    const main = await call("PUT", `${DEPLOYMENTS}/web`, withStatus);
    expect(main.body.spec.replicas).toBe(6);
    expect(main.body.status).toEqual(read.status);

    const status = await call(
      "PATCH",
      `${DEPLOYMENTS}/web/status`,
      { spec: { replicas: 1 }, status: { replicas: 42 } },
      "application/merge-patch+json",
    );
    expect(status.status).toBe(200);
    expect(status.body.spec.replicas).toBe(6);
    expect(status.body.status.replicas).toBe(42);
    expect(status.body.metadata.generation).toBe(main.body.metadata.generation);
  });

  it("scale reads and writes spec.replicas as an autoscaling/v1 Scale", async () => {
    const scale = await call("GET", `${DEPLOYMENTS}/web/scale`);
    expect(scale.body).toMatchObject({
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: { name: "web", namespace: "shop" },
      spec: { replicas: 2 },
      status: { replicas: 2, selector: "app=web" },
    });
    const patched = await call(
      "PATCH",
      `${DEPLOYMENTS}/web/scale`,
      { spec: { replicas: 5 } },
      "application/merge-patch+json",
    );
    expect(patched.body.spec.replicas).toBe(5);
    expect((await call("GET", `${DEPLOYMENTS}/web`)).body.spec.replicas).toBe(5);
    const stale = { ...scale.body, spec: { replicas: 1 } };
    expect((await call("PUT", `${DEPLOYMENTS}/web/scale`, stale)).status).toBe(409);
    expect(
      await call(
        "PATCH",
        `${DEPLOYMENTS}/web/scale`,
        { spec: { replicas: -1 } },
        "application/merge-patch+json",
      ),
    ).toMatchObject({ status: 422, body: { reason: "Invalid" } });
  });
});

describe("lists and selectors", () => {
  beforeEach(async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
    await call("POST", DEPLOYMENTS, {
      ...deployment("api"),
      metadata: { name: "api", labels: { app: "api", tier: "backend" } },
    });
    await call("POST", "/apis/apps/v1/namespaces/default/deployments", deployment("web"));
  });

  const names = async (path: string) =>
    ((await call("GET", path)).body.items as Array<{ metadata: { name: string; namespace: string } }>).map(
      (i) => `${i.metadata.namespace}/${i.metadata.name}`,
    );

  it.each([
    ["", ["shop/api", "shop/web"]],
    ["?labelSelector=tier%3Dweb", ["shop/web"]],
    ["?labelSelector=tier!%3Dweb", ["shop/api"]],
    ["?labelSelector=tier%20in%20(web%2Cbackend)", ["shop/api", "shop/web"]],
    ["?labelSelector=tier%20notin%20(web)", ["shop/api"]],
    ["?labelSelector=tier%2C!missing", ["shop/api", "shop/web"]],
    ["?labelSelector=missing", []],
    ["?fieldSelector=metadata.name%3Dapi", ["shop/api"]],
  ])("GET %s", async (query, expected) => {
    expect(await names(`${DEPLOYMENTS}${query}`)).toEqual(expected);
  });

  it("lists across namespaces with its List kind and the store's resourceVersion", async () => {
    const list = await call("GET", "/apis/apps/v1/deployments");
    expect(list.body.kind).toBe("DeploymentList");
    expect(list.body.metadata.resourceVersion).toBe(kube.store.resourceVersion());
    expect(await names("/apis/apps/v1/deployments?labelSelector=app%3Dweb")).toEqual([
      "default/web",
      "shop/web",
    ]);
  });

  it("refuses a malformed selector with 400", async () => {
    expect(await call("GET", `${DEPLOYMENTS}?labelSelector=a%20in%20(x`)).toMatchObject({ status: 400 });
    expect(await call("GET", `${DEPLOYMENTS}?fieldSelector=spec.replicas%3D1`)).toMatchObject({
      status: 400,
      body: { message: "field label not supported: spec.replicas" },
    });
  });
});

describe("tables", () => {
  it("answers kubectl's Table form with the Deployment's columns and ages on the clock", async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
    clock.advance(200_000);
    const response = await fetch(`${kube.url}${DEPLOYMENTS}`, {
      headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" },
    });
    expect(response.headers.get("content-type")).toBe("application/json;as=Table;v=v1;g=meta.k8s.io");
    const table = (await response.json()) as JsonBody;
    expect(table.kind).toBe("Table");
    expect(table.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      "Name",
      "Ready",
      "Up-to-date",
      "Available",
      "Age",
    ]);
    expect(table.rows.map((r: { cells: unknown[] }) => r.cells)).toEqual([["web", "2/2", 2, 2, "3m20s"]]);
    expect(table.rows[0].object).toMatchObject({ kind: "PartialObjectMetadata", metadata: { name: "web" } });
  });

  it.each([
    [45_000, "45s"],
    [200_000, "3m20s"],
    [17 * 60_000, "17m"],
    [(5 * 60 + 30) * 60_000, "5h30m"],
    [30 * 3_600_000, "30h"],
    [52 * 3_600_000, "2d4h"],
    [40 * 86_400_000, "40d"],
  ])("ages %d ms as %s", (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });
});

describe("watch", () => {
  it("answers its headers at once, then streams the changes after the given resourceVersion", async () => {
    await call("POST", "/api/v1/namespaces/shop/services", { metadata: { name: "web" }, spec: {} });
    const since = kube.store.resourceVersion();
    const controller = new AbortController();
    const response = await fetch(
      `${kube.url}/api/v1/namespaces/shop/services?watch=true&resourceVersion=${since}&fieldSelector=metadata.name%3Dweb`,
      { signal: controller.signal },
    );
    expect(response.status).toBe(200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    await call("POST", "/api/v1/namespaces/shop/services", { metadata: { name: "other" }, spec: {} });
    await call(
      "PATCH",
      "/api/v1/namespaces/shop/services/web",
      { spec: { selector: { app: "web" } } },
      "application/merge-patch+json",
    );
    const { value } = await reader.read();
    const event = JSON.parse(value!.split("\n")[0]!);
    expect(event).toMatchObject({
      type: "MODIFIED",
      object: { kind: "Service", metadata: { name: "web" }, spec: { selector: { app: "web" } } },
    });
    controller.abort();
  });

  it("sends what changed between the client's list and its watch, as the API server's watch cache replays it", async () => {
    await call("POST", "/api/v1/namespaces/shop/services", { metadata: { name: "late" }, spec: {} });
    const since = kube.store.resourceVersion();
    // The change lands after the client's list and before its watch starts.
    await call(
      "PATCH",
      "/api/v1/namespaces/shop/services/late",
      { spec: { selector: { app: "late" } } },
      "application/merge-patch+json",
    );
    const controller = new AbortController();
    const response = await fetch(
      `${kube.url}/api/v1/namespaces/shop/services?watch=true&resourceVersion=${since}&fieldSelector=metadata.name%3Dlate`,
      { signal: controller.signal },
    );
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const { value } = await reader.read();
    expect(JSON.parse(value!.split("\n")[0]!)).toMatchObject({
      type: "MODIFIED",
      object: { metadata: { name: "late" }, spec: { selector: { app: "late" } } },
    });
    controller.abort();
  });
});

describe("discovery", () => {
  it("answers /version, /api, /apis and each group version's resources", async () => {
    expect((await call("GET", "/version")).body).toMatchObject({ major: "1", minor: "32" });
    expect((await call("GET", "/api")).body).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const groups = (await call("GET", "/apis")).body;
    expect(groups.kind).toBe("APIGroupList");
    expect(groups.groups.map((g: { name: string }) => g.name)).toEqual([
      "apps",
      "batch",
      "networking.k8s.io",
      "gateway.networking.k8s.io",
      "networking.istio.io",
      "rbac.authorization.k8s.io",
    ]);
    const istio = groups.groups.find((g: { name: string }) => g.name === "networking.istio.io");
    expect(istio.versions.map((v: { version: string }) => v.version)).toEqual(["v1", "v1beta1"]);
    const apps = (await call("GET", "/apis/apps/v1")).body;
    expect(apps.resources.map((r: { name: string }) => r.name)).toEqual([
      "deployments",
      "deployments/status",
      "deployments/scale",
      "replicasets",
      "replicasets/status",
    ]);
    expect(apps.resources[0]).toMatchObject({ kind: "Deployment", namespaced: true, shortNames: ["deploy"] });
    expect(
      (await call("GET", "/api/v1")).body.resources.find((r: { name: string }) => r.name === "pods").verbs,
    ).toEqual(["delete", "get", "list", "watch"]);
  });

  it("publishes OpenAPI v3 documents with the fieldValidation parameter kubectl looks for", async () => {
    const root = (await call("GET", "/openapi/v3")).body;
    const url = root.paths["apis/apps/v1"].serverRelativeURL as string;
    const doc = (await call("GET", url)).body;
    const patch = doc.paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].patch;
    expect(patch["x-kubernetes-group-version-kind"]).toEqual({
      group: "apps",
      version: "v1",
      kind: "Deployment",
    });
    expect(patch.parameters).toContainEqual(
      expect.objectContaining({ name: "fieldValidation", in: "query" }),
    );
  });
});

describe("the listener", () => {
  it("refuses a foreign Host and another origin with a 403 Status", async () => {
    const host = `rebind.example:${kube.port}`;
    expect(await rawGet(`${kube.url}/api/v1/namespaces`, { host })).toEqual({
      status: 403,
      body: expect.objectContaining({
        kind: "Status",
        reason: "Forbidden",
        message: `request refused: Host ${host} is not this listener (127.0.0.1:${kube.port}, localhost:${kube.port} or [::1]:${kube.port})`,
      }),
    });
    const cross = await fetch(`${kube.url}/api/v1/namespaces`, {
      headers: { origin: "http://evil.example" },
    });
    expect(cross.status).toBe(403);
  });

  it("deleting a namespace deletes what is in it", async () => {
    await call("POST", DEPLOYMENTS, deployment("web"));
    expect((await call("DELETE", "/api/v1/namespaces/shop")).status).toBe(200);
    expect((await call("GET", "/apis/apps/v1/deployments")).body.items).toEqual([]);
    expect((await call("GET", "/api/v1/pods")).body.items).toEqual([]);
  });
});
