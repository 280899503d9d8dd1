import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { parseAllDocuments } from "yaml";
import { type Clock, ManualClock, systemClock } from "../../functions/clock.ts";
import { createTrafficTarget } from "../../functions/traffic/index.ts";
import { parseKubeconfig } from "../../functions/traffic/kubernetes/auth.ts";
import type { TrafficTarget } from "../../functions/traffic/port.ts";
import { startKubeApi } from "../../local/kube/server.ts";

/**
 * Where the adapter-level Kubernetes scenarios run: the local API (always, in virtual time), or
 * the cluster of `KUBECONFIG` when `K8S_E2E=1` (in real time, in a namespace made for the run and
 * deleted after it, the target authenticated as a ServiceAccount bound to the Role of
 * examples/kubernetes-rbac.yaml).
 */
export interface KubeBackend {
  readonly name: string;
  readonly namespace: string;
  /** A REST call with the setup's credentials; throws on an error status, naming it. */
  api(method: string, path: string, body?: unknown, contentType?: string): Promise<Record<string, unknown>>;
  /** The kubernetes target on this backend, as the rollout's handlers build it. */
  router(settings: Record<string, unknown>): TrafficTarget;
  /** Lets `ms` pass (virtual time on the local API, a real wait on a cluster). */
  wait(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** Whether the cluster variant is asked for. */
export const CLUSTER_E2E = process.env.K8S_E2E === "1" && Boolean(process.env.KUBECONFIG);

/** The images of the scenarios: small, public, different (the local API runs any string). */
export const IMAGES = { v1: "registry.k8s.io/pause:3.9", v2: "registry.k8s.io/pause:3.10" } as const;

type Endpoint = { server: string; token: string; ca?: string };

function call(
  endpoint: Endpoint,
  method: string,
  path: string,
  body: unknown,
  contentType: string,
): Promise<Record<string, unknown>> {
  const url = new URL(path, endpoint.server);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const options = {
      method,
      headers: {
        accept: "application/json",
        authorization: `Bearer ${endpoint.token}`,
        ...(payload === undefined ? {} : { "content-type": contentType }),
      },
      ...(endpoint.ca ? { ca: endpoint.ca } : {}),
    };
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const status = res.statusCode ?? 0;
        if (status >= 400) reject(new Error(`${method} ${path}: ${status} ${text}`));
        else resolve(text ? (JSON.parse(text) as Record<string, unknown>) : {});
      });
    });
    req.on("error", reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

function backend(
  name: string,
  namespace: string,
  setup: Endpoint,
  target: Endpoint,
  clock: Clock,
  wait: (ms: number) => Promise<void>,
  close: () => Promise<void>,
): KubeBackend {
  return {
    name,
    namespace,
    api: (method, path, body, contentType = "application/json") =>
      call(setup, method, path, body, contentType),
    router: (settings) =>
      createTrafficTarget(
        {
          type: "kubernetes",
          server: target.server,
          ...(target.ca ? { certificateAuthority: Buffer.from(target.ca).toString("base64") } : {}),
          auth: { type: "token", token: target.token },
          namespace,
          pollSeconds: 1,
          progressDeadlineSeconds: 300,
          ...settings,
        },
        {},
        clock,
      ),
    wait,
    close,
  };
}

/** The local API in virtual time: pods are ready 1 s after they are asked for. */
export async function localBackend(): Promise<KubeBackend> {
  const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
  const kube = await startKubeApi({ clock, syncIntervalMs: 0, readyAfterMs: 1000 });
  const endpoint = { server: kube.url, token: "local" };
  return backend(
    "the local Kubernetes API",
    "default",
    endpoint,
    endpoint,
    clock,
    async (ms) => {
      clock.advance(ms);
      kube.sync();
    },
    () => kube.close(),
  );
}

/**
 * The cluster of `KUBECONFIG` (its current context, with a bearer token allowed to create a
 * namespace and RBAC objects): a namespace `sfn-rollouts-e2e-<random>`, the Role of
 * examples/kubernetes-rbac.yaml bound there to a ServiceAccount, and that ServiceAccount's token
 * (TokenRequest) for the target. `close` deletes the namespace and all it holds.
 */
export async function clusterBackend(): Promise<KubeBackend> {
  const kubeconfig = process.env.KUBECONFIG ?? "";
  const config = parseKubeconfig(readFileSync(kubeconfig, "utf8"), `KUBECONFIG ${kubeconfig}`);
  const admin: Endpoint = {
    server: config.server,
    token: config.token,
    ...(config.ca ? { ca: config.ca } : {}),
  };
  const ns = `sfn-rollouts-e2e-${randomBytes(4).toString("hex")}`;
  const api = (method: string, path: string, body?: unknown) =>
    call(admin, method, path, body, "application/json");
  await api("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  try {
    const role = parseAllDocuments(readFileSync("examples/kubernetes-rbac.yaml", "utf8"))
      .map((d) => d.toJSON() as { kind?: string; metadata?: Record<string, unknown> })
      .find((d) => d.kind === "Role");
    if (!role) throw new Error("examples/kubernetes-rbac.yaml has no Role");
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
    await api("POST", `${rbac}/roles`, { ...role, metadata: { ...role.metadata, namespace: ns } });
    await api("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "sfn-rollouts", namespace: ns },
    });
    await api("POST", `${rbac}/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "sfn-rollouts", namespace: ns },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "sfn-rollouts" },
      subjects: [{ kind: "ServiceAccount", name: "sfn-rollouts", namespace: ns }],
    });
    const issued = (await api("POST", `/api/v1/namespaces/${ns}/serviceaccounts/sfn-rollouts/token`, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    })) as { status?: { token?: string } };
    const token = issued.status?.token;
    if (!token) throw new Error(`no token issued for ServiceAccount ${ns}/sfn-rollouts`);
    return backend(
      `the cluster of KUBECONFIG (${config.server})`,
      ns,
      admin,
      { ...admin, token },
      systemClock,
      (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      async () => {
        await api("DELETE", `/api/v1/namespaces/${ns}`);
      },
    );
  } catch (error) {
    await api("DELETE", `/api/v1/namespaces/${ns}`).catch(() => undefined);
    throw error;
  }
}
