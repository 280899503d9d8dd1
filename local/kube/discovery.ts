import {
  groupVersion,
  preferredVersion,
  RESOURCE_TYPES,
  type ResourceType,
  servedGroupVersions,
  verbsOf,
} from "./resources.ts";

/**
 * The discovery documents kubectl and client libraries read before anything else: `/version`,
 * `/api` (APIVersions), `/api/v1` and `/apis/<group>/<version>` (APIResourceList), `/apis`
 * (APIGroupList) and `/apis/<group>` (APIGroup). They are the unaggregated (v1) forms: a client
 * that asks for aggregated discovery (`as=APIGroupDiscoveryList`) gets these and falls back, as it
 * does with an API server that predates aggregation.
 */

/** The Kubernetes version this server speaks. */
export const KUBE_VERSION = { major: "1", minor: "32", gitVersion: "v1.32.0" } as const;

export function versionInfo(): Record<string, string> {
  return {
    major: KUBE_VERSION.major,
    minor: KUBE_VERSION.minor,
    gitVersion: KUBE_VERSION.gitVersion,
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "go1.23.0",
    compiler: "gc",
    platform: `${process.platform}/${process.arch === "x64" ? "amd64" : process.arch}`,
  };
}

function serverAddresses(): Array<{ clientCIDR: string; serverAddress: string }> {
  return [{ clientCIDR: "0.0.0.0/0", serverAddress: "127.0.0.1" }];
}

export function apiVersions(): Record<string, unknown> {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: serverAddresses() };
}

function resourceEntries(types: ResourceType[]): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const type of types) {
    out.push({
      name: type.resource,
      singularName: type.singular,
      namespaced: type.namespaced,
      kind: type.kind,
      verbs: verbsOf(type),
      ...(type.shortNames ? { shortNames: type.shortNames } : {}),
      ...(type.categories ? { categories: type.categories } : {}),
    });
    if (type.status) {
      out.push({
        name: `${type.resource}/status`,
        singularName: "",
        namespaced: type.namespaced,
        kind: type.kind,
        verbs: type.readOnly ? ["get"] : ["get", "patch", "update"],
      });
    }
    if (type.scale) {
      out.push({
        name: `${type.resource}/scale`,
        singularName: "",
        namespaced: type.namespaced,
        group: "autoscaling",
        version: "v1",
        kind: "Scale",
        verbs: ["get", "patch", "update"],
      });
    }
  }
  return out;
}

/** The APIResourceList of one group version, `undefined` when it is not served. */
export function apiResourceList(group: string, version: string): Record<string, unknown> | undefined {
  const served = servedGroupVersions().find((g) => g.group === group && g.version === version);
  if (!served) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: groupVersion(served),
    resources: resourceEntries(served.types),
  };
}

function apiGroup(group: string): Record<string, unknown> {
  const versions = servedGroupVersions()
    .filter((g) => g.group === group)
    .map((g) => ({ groupVersion: groupVersion(g), version: g.version }));
  const preferred = preferredVersion(group)!;
  return {
    name: group,
    versions,
    preferredVersion: { groupVersion: `${group}/${preferred}`, version: preferred },
  };
}

/** The APIGroupList of every named group (the core group is under `/api`). */
export function apiGroupList(): Record<string, unknown> {
  const groups = [...new Set(RESOURCE_TYPES.map((t) => t.group).filter((g) => g !== ""))];
  return { kind: "APIGroupList", apiVersion: "v1", groups: groups.map(apiGroup) };
}

/** The APIGroup of one named group, `undefined` when it is not served. */
export function apiGroupOf(group: string): Record<string, unknown> | undefined {
  if (group === "" || !RESOURCE_TYPES.some((t) => t.group === group)) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", ...apiGroup(group) };
}
