import http from "node:http";
import https from "node:https";
import { TargetConfigurationError, TargetNotReadyError, TrafficTargetError } from "../errors.ts";

/**
 * A small Kubernetes REST client over `node:https`: GET, PUT (with the `resourceVersion` read, so
 * every write is conditional), POST and DELETE on the few paths the target uses. `node:https`
 * rather than `fetch` because a cluster's own CA must be trusted for this connection only.
 * Every call is bounded by `timeoutMs`, so an API server that never answers is an error with a
 * name, never a hang.
 */

/** A Kubernetes object as JSON; only `metadata` is typed, the rest is read by each router. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    generation?: number;
    [key: string]: unknown;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A resource kind as the API addresses it, and as RBAC names it (`apiGroup`, `resource`). */
export interface KubeResource {
  /** `""` for the core group. */
  readonly group: string;
  readonly version: string;
  /** Plural, lower case: `deployments`, `httproutes`. */
  readonly resource: string;
  /** The `kind` the API answers with, for messages. */
  readonly kind: string;
}

export const RESOURCES = {
  deployments: { group: "apps", version: "v1", resource: "deployments", kind: "Deployment" },
  replicaSets: { group: "apps", version: "v1", resource: "replicasets", kind: "ReplicaSet" },
  services: { group: "", version: "v1", resource: "services", kind: "Service" },
  jobs: { group: "batch", version: "v1", resource: "jobs", kind: "Job" },
  ingresses: { group: "networking.k8s.io", version: "v1", resource: "ingresses", kind: "Ingress" },
  httpRoutes: {
    group: "gateway.networking.k8s.io",
    version: "v1",
    resource: "httproutes",
    kind: "HTTPRoute",
  },
  virtualServices: {
    group: "networking.istio.io",
    version: "v1",
    resource: "virtualservices",
    kind: "VirtualService",
  },
} as const satisfies Record<string, KubeResource>;

/** The write was refused because the object changed since it was read (HTTP 409). */
export class KubeConflictError extends TrafficTargetError {
  override readonly name = "KubeConflictError";
}

/** The API server answered with an error status other than a conflict. */
export class KubeApiError extends TrafficTargetError {
  override readonly name = "KubeApiError";
  constructor(
    message: string,
    readonly status: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Where the API server is and the credentials of one call. */
export interface KubeEndpoint {
  /** `https://…` (a real cluster) or `http://127.0.0.1:…` (the local API). */
  readonly server: string;
  /** PEM of the cluster's CA, trusted for this connection only. */
  readonly ca?: string;
  /** A bearer token (an EKS token is made anew before its 15 minutes end). */
  readonly token: string;
}

/** How the client reaches and authenticates to the API server. */
export interface KubeConnection {
  /** The endpoint of the next call (a kubeconfig secret is read on the first). */
  readonly endpoint: () => Promise<KubeEndpoint>;
  readonly timeoutMs: number;
}

/** One call the client made, as RBAC sees it: what a least-privilege Role must allow. */
export interface KubeCall {
  readonly verb: "get" | "list" | "create" | "update" | "patch" | "delete";
  readonly group: string;
  readonly resource: string;
  readonly namespace: string;
  readonly name?: string;
}

export class KubeClient {
  constructor(
    private readonly connection: KubeConnection,
    private readonly onCall?: (call: KubeCall) => void,
  ) {}

  /** The object, or undefined when it does not exist (404). */
  async get(resource: KubeResource, namespace: string, name: string): Promise<KubeObject | undefined> {
    const res = await this.#call("GET", resource, namespace, name);
    if (res.status === 404) return undefined;
    return this.#object(res, `get ${resource.kind} ${namespace}/${name}`);
  }

  /** The object, or a `TargetConfigurationError` naming it when it does not exist. */
  async require(resource: KubeResource, namespace: string, name: string): Promise<KubeObject> {
    const object = await this.get(resource, namespace, name);
    if (!object) {
      throw new TargetConfigurationError(`${resource.kind} ${namespace}/${name} not found`);
    }
    return object;
  }

  /**
   * Replaces the object with `object`, which carries the `resourceVersion` it was read at: the
   * server refuses it with 409 (`KubeConflictError`) when someone wrote it since.
   */
  async replace(resource: KubeResource, object: KubeObject): Promise<KubeObject> {
    const namespace = object.metadata.namespace ?? "default";
    if (!object.metadata.resourceVersion) {
      throw new TargetConfigurationError(
        `refusing an unconditional write of ${resource.kind} ${namespace}/${object.metadata.name}: no resourceVersion`,
      );
    }
    const res = await this.#call("PUT", resource, namespace, object.metadata.name, object);
    return this.#object(res, `update ${resource.kind} ${namespace}/${object.metadata.name}`);
  }

  /** Creates the object; 409 (it exists already) is a `KubeConflictError` with the server's message. */
  async create(resource: KubeResource, object: KubeObject): Promise<KubeObject> {
    const namespace = object.metadata.namespace ?? "default";
    const res = await this.#call("POST", resource, namespace, undefined, object);
    const what = `create ${resource.kind} ${namespace}/${object.metadata.name}`;
    // On a create, 409 is AlreadyExists: the server's own words say so.
    if (res.status === 409) throw new KubeConflictError(`${what}: 409: ${statusMessage(res.body)}`);
    return this.#object(res, what);
  }

  /** The objects of a namespace whose labels match `labelSelector` (`key=value,…`). */
  async list(resource: KubeResource, namespace: string, labelSelector?: string): Promise<KubeObject[]> {
    const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
    const res = await this.#call("GET", resource, namespace, undefined, undefined, query);
    const list = this.#object(
      res.status >= 200 && res.status < 300 ? { ...res, body: listBody(res.body) } : res,
      `list ${resource.kind} ${namespace}`,
    );
    return (list as unknown as { items: KubeObject[] }).items;
  }

  /**
   * Deletes the object, its dependents first (`propagationPolicy: Foreground`, as a Job's or an
   * experiment's ReplicaSet's pods must go with it); false when it was gone already (404).
   */
  async delete(resource: KubeResource, namespace: string, name: string): Promise<boolean> {
    const res = await this.#call("DELETE", resource, namespace, name, {
      apiVersion: "v1",
      kind: "DeleteOptions",
      propagationPolicy: "Foreground",
    });
    if (res.status === 404) return false;
    this.#object(res, `delete ${resource.kind} ${namespace}/${name}`);
    return true;
  }

  #object(res: { status: number; body: string }, what: string): KubeObject {
    if (res.status === 409) {
      throw new KubeConflictError(`${what}: the object changed since it was read (409 Conflict)`);
    }
    if (res.status < 200 || res.status >= 300) {
      const message = statusMessage(res.body);
      if (res.status === 401 || res.status === 403) {
        throw new KubeApiError(
          `${what}: ${res.status} ${res.status === 401 ? "Unauthorized" : "Forbidden"}${message ? `: ${message}` : ""} (check the access entry or token, and the RBAC of docs/traffic.md)`,
          res.status,
        );
      }
      if (res.status === 404 || res.status === 422 || res.status === 400) {
        throw new TargetConfigurationError(`${what}: ${res.status}${message ? `: ${message}` : ""}`);
      }
      // 429, 5xx: the API server is busy or down; the workflow retries.
      throw new TargetNotReadyError(`${what}: ${res.status}${message ? `: ${message}` : ""}`);
    }
    try {
      const parsed = JSON.parse(res.body) as KubeObject;
      if (parsed === null || typeof parsed !== "object" || typeof parsed.metadata !== "object") {
        throw new Error("not an object with metadata");
      }
      return parsed;
    } catch (error) {
      throw new TargetNotReadyError(
        `${what}: the API server answered ${res.status} with no object: ${(error as Error).message}`,
      );
    }
  }

  async #call(
    method: "GET" | "PUT" | "POST" | "DELETE",
    resource: KubeResource,
    namespace: string,
    name: string | undefined,
    body?: unknown,
    query = "",
  ): Promise<{ status: number; body: string }> {
    const verb =
      method === "GET"
        ? name === undefined
          ? "list"
          : "get"
        : method === "PUT"
          ? "update"
          : method === "DELETE"
            ? "delete"
            : "create";
    this.onCall?.({
      verb,
      group: resource.group,
      resource: resource.resource,
      namespace,
      ...(name === undefined ? {} : { name }),
    });
    const prefix =
      resource.group === "" ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
    const path = `${prefix}/namespaces/${encodeURIComponent(namespace)}/${resource.resource}${name === undefined ? "" : `/${encodeURIComponent(name)}`}${query}`;
    const endpoint = await this.connection.endpoint();
    return request(endpoint, this.connection.timeoutMs, method, path, body);
  }
}

function request(
  connection: KubeEndpoint,
  timeoutMs: number,
  method: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: string }> {
  const token = connection.token;
  // The server may live under a path (a proxy): keep it.
  const url = new URL(connection.server);
  const [pathname = "", search] = path.split("?", 2);
  url.pathname = `${url.pathname.replace(/\/$/, "")}${pathname}`;
  if (search !== undefined) url.search = `?${search}`;
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = {
    accept: "application/json",
    ...(token ? { authorization: `Bearer ${token}` } : {}),
    ...(payload === undefined
      ? {}
      : { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) }),
  };
  const what = `${method} ${url.origin}${url.pathname}`;
  return new Promise((resolve, reject) => {
    const options = { method, headers, timeout: timeoutMs };
    const onResponse = (res: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        // A Kubernetes object is far below this; a larger answer is not what we asked for.
        if (size > 4 * 1024 * 1024) {
          req.destroy(new Error("response larger than 4 MiB"));
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", (error) =>
        reject(new TargetNotReadyError(`${what}: ${error.message}`, { cause: error })),
      );
    };
    let req: http.ClientRequest;
    if (url.protocol === "https:") {
      req = https.request(url, { ...options, ...(connection.ca ? { ca: connection.ca } : {}) }, onResponse);
    } else if (url.protocol === "http:") {
      req = http.request(url, options, onResponse);
    } else {
      reject(new TargetConfigurationError(`the API server ${connection.server} is not an http(s) URL`));
      return;
    }
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (error) =>
      reject(new TargetNotReadyError(`${what}: ${error.message}`, { cause: error })),
    );
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/**
 * A list answer given the `metadata` an object answer has, so one check reads both: a body that
 * is not a list (no `items` array) is left as is and refused there.
 */
function listBody(body: string): string {
  try {
    const list = JSON.parse(body) as { items?: unknown; metadata?: unknown };
    if (Array.isArray(list.items)) return JSON.stringify({ ...list, metadata: list.metadata ?? {} });
  } catch {
    // not JSON: refused as an answer with no object
  }
  return body;
}

/** The `message` of a Kubernetes `Status` body, or the start of the body. */
function statusMessage(body: string): string {
  try {
    const status = JSON.parse(body) as { message?: unknown };
    if (typeof status.message === "string") return status.message;
  } catch {
    // not JSON
  }
  return body.slice(0, 200).trim();
}
