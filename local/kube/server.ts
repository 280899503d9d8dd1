import http from "node:http";
import { crossOriginRefusal, hostRefusal, mediaType, ownHosts } from "../../cli/http-guard.ts";
import { type Clock, systemClock } from "../../functions/clock.ts";
import { close, listen } from "../proxy/listen.ts";
import { type ControllerOptions, DeploymentController } from "./controller.ts";
import { kubeconfigText, writeKubeconfig } from "./kubeconfig.ts";
import { type Endpoint, endpointsOf, type PodBacker } from "./pods.ts";
import { RESOURCE_TYPES } from "./resources.ts";
import { handle, resolvePath } from "./rest.ts";
import { KubeStatusError } from "./status.ts";
import { type KubeObject, KubeStore } from "./store.ts";
import { TABLE_CONTENT_TYPE, toTable, wantsTable } from "./table.ts";
import { startWatch } from "./watch.ts";

/**
 * A local Kubernetes API server on 127.0.0.1, for tests, the demo and `kubectl`:
 *
 * ```ts
 * const kube = await startKubeApi({ clock, readyAfterMs: 2000, backPod });
 * await kube.kubeconfig("/tmp/kubeconfig");       // kubectl --kubeconfig /tmp/kubeconfig get deploy
 * await fetch(`${kube.url}/apis/apps/v1/namespaces/default/deployments`, { method: "POST", … });
 * kube.sync();                                    // reconcile now (after moving a ManualClock)
 * kube.endpointsOf("default", "web");             // the pods the Service selects, with their ports
 * kube.store.get(…);                              // what the server holds, for assertions
 * await kube.close();
 * ```
 *
 * It serves core/v1 Namespaces, Services and Pods (read-only: the controller makes them),
 * apps/v1 Deployments (`status` and `scale` subresources) and ReplicaSets (read-only),
 * batch/v1 Jobs (completed or failed by the controller, `jobs.ts`),
 * networking.k8s.io/v1 Ingresses, gateway.networking.k8s.io/v1 HTTPRoutes,
 * networking.istio.io/v1 and v1beta1 VirtualServices, rbac.authorization.k8s.io/v1 Roles and
 * RoleBindings (stored only), with GET, LIST (label and field selectors), WATCH, POST, PUT,
 * PATCH (merge, JSON, strategic merge, apply) and DELETE; the discovery documents; and a
 * simulated Deployment and Job controller (`controller.ts`). What it leaves out: `docs/kubernetes-local.md`.
 *
 * The Deployment controller reconciles before every request and every `syncIntervalMs` of real
 * time, at the injected clock's time, so with a ManualClock a test moves the clock and the next
 * request sees the pods that became ready.
 */
export interface KubeApiOptions extends Partial<Omit<ControllerOptions, "clock">> {
  /** The port to listen on (default 0: a free one). */
  port?: number;
  /** The time the controller and the objects' timestamps read (default the wall clock). */
  clock?: Clock;
  /** Namespaces that exist from the start (default `default` and `kube-system`). */
  namespaces?: string[];
  /** How often the controller reconciles on its own, in real milliseconds (default 100; 0: never). */
  syncIntervalMs?: number;
  /** Starts a real process behind each pod (see `pods.ts`). */
  backPod?: PodBacker;
}

export interface KubeApi {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** The objects, for tests to assert on and arrange (writes through it skip validation). */
  store: KubeStore;
  controller: DeploymentController;
  /** Reconciles Deployments, ReplicaSets and pods at the clock's time now. */
  sync(): void;
  /** The pods a Service selects, with the ports of their processes (see `pods.ts`). */
  endpointsOf(namespace: string, service: string): Endpoint[];
  /** The kubeconfig text for this server. */
  kubeconfigText(namespace?: string): string;
  /** Writes a kubeconfig for this server to `path` and returns the path. */
  kubeconfig(path: string, namespace?: string): Promise<string>;
  /** Stops listening, ends watches and stops every pod's process. */
  close(): Promise<void>;
}

/** The largest request body accepted, as the API server's limit (3 MiB). */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

function send(
  response: http.ServerResponse,
  status: number,
  body: unknown,
  contentType = "application/json",
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(
          new KubeStatusError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"),
        );
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

export async function startKubeApi(options: KubeApiOptions = {}): Promise<KubeApi> {
  const clock = options.clock ?? systemClock;
  const store = new KubeStore(clock);
  const namespaces = RESOURCE_TYPES.find((t) => t.resource === "namespaces")!;
  for (const name of options.namespaces ?? ["default", "kube-system"]) {
    store.create(namespaces, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
  const controller = new DeploymentController(store, {
    clock,
    ...(options.readyAfterMs !== undefined ? { readyAfterMs: options.readyAfterMs } : {}),
    ...(options.neverReady ? { neverReady: options.neverReady } : {}),
    ...(options.backPod ? { backPod: options.backPod } : {}),
    ...(options.jobRunMs !== undefined ? { jobRunMs: options.jobRunMs } : {}),
    ...(options.jobExitCode ? { jobExitCode: options.jobExitCode } : {}),
  });
  const api: Served = { store, controller, clock, allowed: [], ownOrigin: "" };
  const server = http.createServer((request, response) => {
    serve(api, request, response).catch((error: unknown) => answerError(response, error));
  });
  const { url, port } = await listen(server, options.port ?? 0, "127.0.0.1");
  api.allowed = ownHosts(port);
  api.ownOrigin = url;
  const interval = options.syncIntervalMs ?? 100;
  const timer = interval > 0 ? setInterval(() => controller.sync(), interval) : undefined;
  timer?.unref();

  return {
    url,
    port,
    store,
    controller,
    sync: () => controller.sync(),
    endpointsOf: (namespace, service) => {
      controller.sync();
      return endpointsOf(store, namespace, service);
    },
    kubeconfigText: (namespace) => kubeconfigText(url, namespace),
    kubeconfig: (path, namespace) => writeKubeconfig(path, url, namespace),
    close: async () => {
      if (timer) clearInterval(timer);
      await close(server);
      await controller.close();
    },
  };
}

/** What the server's requests read: the objects, the controller, the clock, and who may call it. */
interface Served {
  store: KubeStore;
  controller: DeploymentController;
  clock: Clock;
  /** The `Host` values a request may name, once the server listens. */
  allowed: string[];
  /** The server's own origin: a request from any other is refused. */
  ownOrigin: string;
}

/**
 * One request: refused from another host or origin; else the controller reconciles, and a watch
 * streams, anything else gets the REST answer (as a Table when `kubectl get` asks for one), with
 * another reconcile after a write so the next read sees its effect.
 */
async function serve(
  api: Served,
  request: http.IncomingMessage,
  response: http.ServerResponse,
): Promise<void> {
  const refusal = hostRefusal(request, api.allowed) ?? crossOriginRefusal(request, api.ownOrigin);
  if (refusal) throw new KubeStatusError(403, "Forbidden", refusal.message);
  const url = new URL(request.url ?? "/", "http://local");
  const body = await readBody(request);
  api.controller.sync();
  const method = request.method ?? "GET";
  const watch = url.searchParams.get("watch");
  const watching = method === "GET" && (watch === "true" || watch === "1");
  if (watching && startedWatch(api, request, response, url)) return;
  const contentType = mediaType(request.headers["content-type"]);
  const answer = handle(api.store, {
    method,
    path: url.pathname,
    query: url.searchParams,
    ...(contentType ? { contentType } : {}),
    body,
  });
  if (method !== "GET") api.controller.sync();
  if (method === "GET" && answer.status === 200 && wantsTable(request.headers.accept)) {
    const table = asTable(api, url, answer.body);
    if (table !== undefined) return send(response, 200, table, TABLE_CONTENT_TYPE);
  }
  send(response, answer.status, answer.body);
}

/**
 * A watch of a collection: streams its events (as Table rows when `kubectl get -w` asks for them)
 * and says so; a watch of anything else is answered as a plain request.
 */
function startedWatch(
  api: Served,
  request: http.IncomingMessage,
  response: http.ServerResponse,
  url: URL,
): boolean {
  const resolved = resolvePath(url.pathname);
  if (resolved.kind !== "resource" || resolved.path.name !== undefined) return false;
  const type = resolved.path.type;
  if (wantsTable(request.headers.accept)) {
    const table = (o: KubeObject) => toTable(type, [o], api.clock.now(), api.store.resourceVersion());
    startWatch(api.store, resolved.path, url.searchParams, response, table, TABLE_CONTENT_TYPE);
  } else {
    startWatch(api.store, resolved.path, url.searchParams, response);
  }
  return true;
}

/** A GET's answer as the Table `kubectl get` asks for: one row per object; undefined for a subresource. */
function asTable(api: Served, url: URL, answered: unknown): ReturnType<typeof toTable> | undefined {
  const resolved = resolvePath(url.pathname);
  if (resolved.kind !== "resource" || resolved.path.subresource !== undefined) return undefined;
  const body = answered as KubeObject & { items?: KubeObject[] };
  const objects = resolved.path.name === undefined ? (body.items ?? []) : [body];
  return toTable(resolved.path.type, objects, api.clock.now(), api.store.resourceVersion());
}

/** A failed request: its Kubernetes Status when it has one, else a 500 Status; a started stream is cut. */
function answerError(response: http.ServerResponse, error: unknown): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  if (error instanceof KubeStatusError) {
    send(response, error.code, error.body);
    return;
  }
  const message = error instanceof Error ? error.message : String(error);
  send(response, 500, new KubeStatusError(500, "InternalError", `Internal error occurred: ${message}`).body);
}
