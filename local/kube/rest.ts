import { parse as parseYaml } from "yaml";
import { apiGroupList, apiGroupOf, apiResourceList, apiVersions, versionInfo } from "./discovery.ts";
import { openApiDocument, openApiRoot } from "./openapi.ts";
import { applyJsonPatch, decodeJsonPatch, isObject, type Json, JsonPatchError, mergePatch } from "./patch.ts";
import { findResource, groupVersion, type ResourceType } from "./resources.ts";
import { fromLabelSelector, parseLabelSelector, type Requirement, selectorString } from "./selector.ts";
import {
  badRequest,
  conflict,
  KubeStatusError,
  methodNotAllowed,
  notFound,
  PATCH_TYPES,
  pathNotFound,
  preconditionFailed,
  unsupportedMediaType,
} from "./status.ts";
import type { KubeObject, KubeStore, UpdatePart } from "./store.ts";
import { strategicMergePatch } from "./strategic-merge.ts";
import { checkBody, validate } from "./validate.ts";

/**
 * The REST semantics of the local Kubernetes API, apart from HTTP: a request (method, path,
 * query, content type, decoded body) is resolved to a resource and answered from the store with
 * the status code and body the API server gives. `server.ts` does the HTTP around it.
 *
 * Patches: `application/merge-patch+json` (RFC 7386), `application/json-patch+json` (RFC 6902),
 * `application/strategic-merge-patch+json` (lists of containers, ports, env… merge by their keys;
 * refused with 415 for HTTPRoute and VirtualService, as for any custom resource) and
 * `application/apply-patch+yaml` (server-side apply, simplified: the applied configuration is
 * merged into the live object like a strategic merge patch, or creates it; field ownership is
 * not tracked, so a field dropped from the configuration is kept rather than removed).
 */

export interface RestRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** The media type of the body, without parameters. */
  contentType?: string;
  /** The raw body (empty when none). */
  body: string;
}

export interface RestResponse {
  status: number;
  body: unknown;
}

/** A parsed resource path. */
export interface ResourcePath {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

type Resolved = { kind: "document"; body: unknown } | { kind: "resource"; path: ResourcePath };

/** What a path names: a discovery document, a resource (collection, object, subresource), or nothing. */
export function resolvePath(path: string): Resolved {
  const segments = path
    .split("/")
    .filter((s) => s !== "")
    .map(decodeURIComponent);
  if (segments.length === 1 && segments[0] === "version") return { kind: "document", body: versionInfo() };
  if (segments[0] === "openapi" && segments[1] === "v3") {
    const body = segments.length === 2 ? openApiRoot() : openApiDocument(segments.slice(2).join("/"));
    if (body) return { kind: "document", body };
    throw pathNotFound();
  }
  if (segments[0] === "api") {
    if (segments.length === 1) return { kind: "document", body: apiVersions() };
    return resolveIn("", segments[1]!, segments.slice(2));
  }
  if (segments[0] === "apis") {
    if (segments.length === 1) return { kind: "document", body: apiGroupList() };
    if (segments.length === 2) {
      const group = apiGroupOf(segments[1]!);
      if (group) return { kind: "document", body: group };
      throw pathNotFound();
    }
    return resolveIn(segments[1]!, segments[2]!, segments.slice(3));
  }
  throw pathNotFound();
}

function resolveIn(group: string, version: string, rest: string[]): Resolved {
  if (rest.length === 0) {
    const list = apiResourceList(group, version);
    if (list) return { kind: "document", body: list };
    throw pathNotFound();
  }
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const type = findResource(group, version, rest[2]!);
    if (type?.namespaced && rest.length <= 5) {
      return {
        kind: "resource",
        path: { type, namespace: rest[1], name: rest[3], subresource: rest[4] },
      };
    }
  }
  const type = findResource(group, version, rest[0]!);
  if (!type || rest.length > 3) throw pathNotFound();
  if (type.namespaced && rest.length > 1) throw pathNotFound();
  return { kind: "resource", path: { type, name: rest[1], subresource: rest[2] } };
}

function decodeBody(request: RestRequest): unknown {
  if (request.body.trim() === "") throw badRequest("the request has no body");
  const type = request.contentType ?? "application/json";
  try {
    if (type === "application/yaml" || type === "application/apply-patch+yaml")
      return parseYaml(request.body);
    return JSON.parse(request.body);
  } catch (error) {
    throw badRequest(`the body of the request could not be decoded as ${type}: ${(error as Error).message}`);
  }
}

const BODY_TYPES = ["application/json", "application/yaml"];

function requireBodyType(request: RestRequest): void {
  const type = request.contentType ?? "application/json";
  if (!BODY_TYPES.includes(type)) throw unsupportedMediaType(BODY_TYPES);
}

function dryRun(query: URLSearchParams): boolean {
  const values = query.getAll("dryRun");
  for (const v of values) if (v !== "All") throw badRequest(`unsupported dryRun value "${v}": only All is`);
  return values.length > 0;
}

/** `metadata.name=x,metadata.namespace=y`: the field selectors this server answers. */
function fieldFilter(query: URLSearchParams): (o: KubeObject) => boolean {
  const selector = query.get("fieldSelector");
  if (!selector) return () => true;
  const tests = selector.split(",").map((term) => {
    const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!m) throw badRequest(`invalid field selector: "${term}"`);
    const [, field, op, value] = m;
    const read =
      field === "metadata.name"
        ? (o: KubeObject) => o.metadata.name
        : field === "metadata.namespace"
          ? (o: KubeObject) => o.metadata.namespace ?? ""
          : undefined;
    if (!read) throw badRequest(`field label not supported: ${field}`);
    return (o: KubeObject) => (op === "!=" ? read(o) !== value : read(o) === value);
  });
  return (o) => tests.every((t) => t(o));
}

/** The filter a list or a watch applies: namespace, label selector, field selector. */
export function listFilter(
  path: ResourcePath,
  query: URLSearchParams,
): {
  namespace?: string;
  labels: Requirement[];
  fields: (o: KubeObject) => boolean;
} {
  return {
    ...(path.namespace !== undefined ? { namespace: path.namespace } : {}),
    labels: parseLabelSelector(query.get("labelSelector") ?? ""),
    fields: fieldFilter(query),
  };
}

function scaleOf(object: KubeObject): Record<string, unknown> {
  const { name, namespace, uid, resourceVersion, creationTimestamp } = object.metadata;
  return {
    kind: "Scale",
    apiVersion: "autoscaling/v1",
    metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
    spec: { replicas: typeof object.spec?.replicas === "number" ? object.spec.replicas : 1 },
    status: {
      replicas: typeof object.status?.replicas === "number" ? object.status.replicas : 0,
      selector: selectorString(fromLabelSelector(object.spec?.selector)),
    },
  };
}

/** Applies the request's patch to `current`; errors are the API server's 400, 415 and 422. */
function patched(type: ResourceType, current: Json, request: RestRequest): Json {
  const mediaType = request.contentType;
  switch (mediaType) {
    case "application/merge-patch+json": {
      const patch = decodeBody(request);
      if (!isObject(patch)) throw badRequest("a merge patch must be a JSON object");
      return mergePatch(current, patch);
    }
    case "application/json-patch+json":
      try {
        return applyJsonPatch(current, decodeJsonPatch(decodeBody(request)));
      } catch (error) {
        if (!(error instanceof JsonPatchError)) throw error;
        if (error.kind === "decode") throw badRequest(error.message);
        throw new KubeStatusError(422, "Invalid", error.message);
      }
    case "application/strategic-merge-patch+json":
    case "application/apply-patch+yaml": {
      if (mediaType === "application/strategic-merge-patch+json" && !type.strategic) {
        throw unsupportedMediaType(PATCH_TYPES.filter((t) => t !== "application/strategic-merge-patch+json"));
      }
      const patch = decodeBody(request);
      if (!isObject(patch)) throw badRequest("a strategic merge patch must be a JSON object");
      return type.strategic ? strategicMergePatch(current, patch) : mergePatch(current, patch);
    }
    default:
      throw unsupportedMediaType(
        type.strategic ? PATCH_TYPES : PATCH_TYPES.filter((t) => !t.includes("strategic")),
      );
  }
}

/**
 * The write a patch makes: the patched object must keep its name, and a `resourceVersion` the
 * patch sets (a patch conditional on what its author read) must be the stored one.
 */
function checkPatched(type: ResourceType, current: KubeObject, result: Json): KubeObject {
  if (!isObject(result) || !isObject(result.metadata))
    throw badRequest("the patch removed the object's metadata");
  const object = result as unknown as KubeObject;
  if (object.metadata.name !== current.metadata.name) {
    throw badRequest(
      `the name of the object (${String(object.metadata.name)}) does not match the name on the URL (${current.metadata.name})`,
    );
  }
  if (object.metadata.resourceVersion !== current.metadata.resourceVersion) {
    throw conflict(type, current.metadata.name);
  }
  return object;
}

/** Answers one resource request from the store. */
export function handleResource(store: KubeStore, path: ResourcePath, request: RestRequest): RestResponse {
  const { type, namespace, name, subresource } = path;
  const method = request.method;
  const options = { dryRun: dryRun(request.query) };
  if (subresource !== undefined && subresource !== "status" && !(subresource === "scale" && type.scale)) {
    throw pathNotFound();
  }
  if (subresource === "status" && !type.status) throw pathNotFound();
  if (name === undefined) {
    if (method === "GET") {
      const filter = listFilter(path, request.query);
      const items = store.list(type, namespace, filter.labels).filter(filter.fields);
      return {
        status: 200,
        body: {
          kind: `${type.kind}List`,
          apiVersion: groupVersion(type),
          metadata: { resourceVersion: store.resourceVersion() },
          items,
        },
      };
    }
    if (method === "POST") {
      if (type.readOnly) throw methodNotAllowed();
      if (type.namespaced && namespace === undefined) throw methodNotAllowed();
      requireBodyType(request);
      const object = checkBody(type, decodeBody(request), { namespace });
      validate(type, object);
      return { status: 201, body: store.create(type, namespace, object, options) };
    }
    throw methodNotAllowed();
  }
  if (type.namespaced && namespace === undefined) throw pathNotFound();
  if (method === "GET") {
    const object = store.get(type, namespace, name);
    return { status: 200, body: subresource === "scale" ? scaleOf(object) : object };
  }
  if (method === "DELETE") {
    if (subresource !== undefined) throw methodNotAllowed();
    const current = store.get(type, namespace, name);
    const preconditions = request.body.trim()
      ? (decodeBody(request) as { preconditions?: { resourceVersion?: string } }).preconditions
      : undefined;
    const rv = preconditions?.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion) {
      throw preconditionFailed(type, name, rv, current.metadata.resourceVersion ?? "");
    }
    return { status: 200, body: store.delete(type, namespace, name, options) };
  }
  if (method !== "PUT" && method !== "PATCH") throw methodNotAllowed();
  if (type.readOnly) throw methodNotAllowed();
  if (subresource === "scale")
    return { status: 200, body: writeScale(store, path as Required<ResourcePath>, request, options) };
  const part: UpdatePart = subresource === "status" ? "status" : "object";
  if (method === "PUT") {
    requireBodyType(request);
    const object = checkBody(type, decodeBody(request), { namespace, name });
    validate(type, object);
    return { status: 200, body: store.update(type, namespace, object, part, options) };
  }
  const current = store.find(type, namespace, name);
  if (!current) {
    if (request.contentType === "application/apply-patch+yaml" && part === "object") {
      const object = checkBody(type, decodeBody(request), { namespace, name });
      validate(type, object);
      return { status: 201, body: store.create(type, namespace, object, options) };
    }
    throw notFound(type, name);
  }
  const object = checkPatched(type, current, patched(type, current as unknown as Json, request));
  validate(type, object);
  return { status: 200, body: store.update(type, namespace, object, part, options) };
}

function writeScale(
  store: KubeStore,
  path: Required<ResourcePath>,
  request: RestRequest,
  options: { dryRun: boolean },
): Record<string, unknown> {
  const { type, namespace, name } = path;
  const current = store.get(type, namespace, name);
  const scale = scaleOf(current);
  let next: Json;
  if (request.method === "PUT") {
    requireBodyType(request);
    next = decodeBody(request) as Json;
  } else {
    next = patched({ ...type, strategic: true }, scale as Json, request);
  }
  if (!isObject(next) || !isObject(next.spec)) throw badRequest("a Scale needs spec.replicas");
  const replicas = next.spec.replicas;
  const rv = isObject(next.metadata) ? next.metadata.resourceVersion : undefined;
  if (rv !== undefined && rv !== "" && rv !== current.metadata.resourceVersion) throw conflict(type, name);
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
    throw new KubeStatusError(
      422,
      "Invalid",
      `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0`,
    );
  }
  const updated = store.update(
    type,
    namespace,
    { ...current, spec: { ...current.spec, replicas } },
    "object",
    options,
  );
  return scaleOf(updated);
}

/** Answers a request: a discovery document or a resource, or the Status of what went wrong. */
export function handle(store: KubeStore, request: RestRequest): RestResponse {
  try {
    const resolved = resolvePath(request.path);
    if (resolved.kind === "document") {
      if (request.method !== "GET") throw methodNotAllowed();
      return { status: 200, body: resolved.body };
    }
    return handleResource(store, resolved.path, request);
  } catch (error) {
    if (error instanceof KubeStatusError) return { status: error.code, body: error.body };
    throw error;
  }
}
