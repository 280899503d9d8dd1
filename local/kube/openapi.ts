import { groupVersion, type ResourceType, servedGroupVersions } from "./resources.ts";

/**
 * The OpenAPI v3 documents `kubectl apply` reads before it writes: `/openapi/v3` lists one
 * document per group version, and each document describes the PATCH operation of every kind with
 * its `x-kubernetes-group-version-kind` and the `fieldValidation` query parameter. kubectl reads
 * that parameter as "the server validates fields" and sends `fieldValidation=Strict` instead of
 * validating against schemas it would otherwise download (as protobuf, from `/openapi/v2`).
 *
 * The documents carry no schemas: this server stores the fields it is sent and does not enforce
 * `fieldValidation` (an unknown field is kept, not refused). `kubectl explain` has nothing to say.
 */

function hashOf(gv: string): string {
  let hash = 0;
  for (const c of gv) hash = (Math.imul(hash, 31) + c.charCodeAt(0)) >>> 0;
  return hash.toString(16).padStart(8, "0").toUpperCase();
}

function docPath(group: string, version: string): string {
  return group === "" ? `api/${version}` : `apis/${group}/${version}`;
}

/** `/openapi/v3`: where each group version's document is. */
export function openApiRoot(): Record<string, unknown> {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of servedGroupVersions()) {
    const path = docPath(gv.group, gv.version);
    paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hashOf(groupVersion(gv))}` };
  }
  return { paths };
}

const FIELD_VALIDATION = {
  name: "fieldValidation",
  in: "query",
  description: "accepted; this server does not enforce it",
  schema: { type: "string", uniqueItems: true },
};

function operations(type: ResourceType): Record<string, unknown> {
  const base = docPath(type.group, type.version);
  const collection = type.namespaced
    ? `/${base}/namespaces/{namespace}/${type.resource}`
    : `/${base}/${type.resource}`;
  const gvk = { group: type.group, version: type.version, kind: type.kind };
  const op = (action: string) => ({
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk,
    parameters: action === "get" ? [] : [FIELD_VALIDATION],
    responses: { "200": { description: "OK" } },
  });
  const item: Record<string, unknown> = { get: op("get") };
  if (!type.readOnly) {
    item.put = op("put");
    item.patch = op("patch");
  }
  return {
    [collection]: { get: op("list"), ...(type.readOnly ? {} : { post: op("post") }) },
    [`${collection}/{name}`]: item,
  };
}

/** The document of one group version (`api/v1`, `apis/apps/v1`), `undefined` when not served. */
export function openApiDocument(path: string): Record<string, unknown> | undefined {
  const gv = servedGroupVersions().find((g) => docPath(g.group, g.version) === path);
  if (!gv) return undefined;
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: "v1.32.0" },
    paths: Object.assign({}, ...gv.types.map(operations)),
    components: { schemas: {} },
  };
}
