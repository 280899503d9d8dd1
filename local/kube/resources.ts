/**
 * The kinds the local Kubernetes API serves, as the discovery documents and the REST paths name
 * them. One table: the router resolves a path through it, discovery lists it, the store keys
 * objects by its `key`.
 */

/** One REST resource (`deployments` in `apps/v1`). */
export interface ResourceType {
  /** `""` for the core group. */
  group: string;
  version: string;
  /** The plural path segment: `deployments`. */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  /** Whether `…/status` is a subresource: writes to the main resource then keep `status`. */
  status: boolean;
  /** Whether `…/scale` is a subresource (autoscaling/v1 Scale over `spec.replicas`). */
  scale?: boolean;
  /**
   * Objects only the controller writes (pods, replica sets): clients may read and delete them,
   * not create, replace or patch them.
   */
  readOnly?: boolean;
  /**
   * Whether strategic merge patch applies: it does for the built-in kinds; a custom resource
   * (HTTPRoute, VirtualService) refuses it with 415, as the API server does.
   */
  strategic: boolean;
}

/** `group/version`, or `v1` for the core group. */
export function groupVersion(type: Pick<ResourceType, "group" | "version">): string {
  return type.group === "" ? type.version : `${type.group}/${type.version}`;
}

/**
 * The name the API server uses for a resource in its messages: `deployments.apps`, `services`.
 */
export function qualifiedName(type: Pick<ResourceType, "group" | "resource">): string {
  return type.group === "" ? type.resource : `${type.resource}.${type.group}`;
}

/**
 * The store's key of a resource: its group and plural, version-free, so `v1beta1` and `v1` of
 * Istio's VirtualService are the same objects (as the API server stores one version of each).
 */
export function storeKey(type: Pick<ResourceType, "group" | "resource">): string {
  return `${type.group}/${type.resource}`;
}

const ALL_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"];
const READ_ONLY_VERBS = ["delete", "get", "list", "watch"];

/** The verbs discovery lists for a resource. */
export function verbsOf(type: ResourceType): string[] {
  return type.readOnly ? READ_ONLY_VERBS : ALL_VERBS;
}

export const RESOURCE_TYPES: readonly ResourceType[] = [
  {
    group: "",
    version: "v1",
    resource: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    namespaced: false,
    shortNames: ["ns"],
    status: true,
    strategic: true,
  },
  {
    group: "",
    version: "v1",
    resource: "services",
    singular: "service",
    kind: "Service",
    namespaced: true,
    shortNames: ["svc"],
    categories: ["all"],
    status: true,
    strategic: true,
  },
  {
    group: "",
    version: "v1",
    resource: "pods",
    singular: "pod",
    kind: "Pod",
    namespaced: true,
    shortNames: ["po"],
    categories: ["all"],
    status: true,
    readOnly: true,
    strategic: true,
  },
  {
    group: "apps",
    version: "v1",
    resource: "deployments",
    singular: "deployment",
    kind: "Deployment",
    namespaced: true,
    shortNames: ["deploy"],
    categories: ["all"],
    status: true,
    scale: true,
    strategic: true,
  },
  {
    group: "apps",
    version: "v1",
    resource: "replicasets",
    singular: "replicaset",
    kind: "ReplicaSet",
    namespaced: true,
    shortNames: ["rs"],
    categories: ["all"],
    status: true,
    strategic: true,
  },
  {
    group: "batch",
    version: "v1",
    resource: "jobs",
    singular: "job",
    kind: "Job",
    namespaced: true,
    categories: ["all"],
    status: true,
    strategic: true,
  },
  {
    group: "networking.k8s.io",
    version: "v1",
    resource: "ingresses",
    singular: "ingress",
    kind: "Ingress",
    namespaced: true,
    shortNames: ["ing"],
    status: true,
    strategic: true,
  },
  {
    group: "gateway.networking.k8s.io",
    version: "v1",
    resource: "httproutes",
    singular: "httproute",
    kind: "HTTPRoute",
    namespaced: true,
    categories: ["gateway-api"],
    status: true,
    strategic: false,
  },
  {
    group: "networking.istio.io",
    version: "v1",
    resource: "virtualservices",
    singular: "virtualservice",
    kind: "VirtualService",
    namespaced: true,
    shortNames: ["vs"],
    categories: ["istio-io", "networking-istio-io"],
    status: true,
    strategic: false,
  },
  {
    group: "networking.istio.io",
    version: "v1beta1",
    resource: "virtualservices",
    singular: "virtualservice",
    kind: "VirtualService",
    namespaced: true,
    shortNames: ["vs"],
    categories: ["istio-io", "networking-istio-io"],
    status: true,
    strategic: false,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "roles",
    singular: "role",
    kind: "Role",
    namespaced: true,
    status: false,
    strategic: true,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "rolebindings",
    singular: "rolebinding",
    kind: "RoleBinding",
    namespaced: true,
    status: false,
    strategic: true,
  },
];

/** The resource a REST path names, or `undefined` when this server does not serve it. */
export function findResource(group: string, version: string, resource: string): ResourceType | undefined {
  return RESOURCE_TYPES.find((t) => t.group === group && t.version === version && t.resource === resource);
}

/** The group versions served, each with its resources, in the order discovery lists them. */
export function servedGroupVersions(): Array<{ group: string; version: string; types: ResourceType[] }> {
  const out: Array<{ group: string; version: string; types: ResourceType[] }> = [];
  for (const type of RESOURCE_TYPES) {
    let entry = out.find((e) => e.group === type.group && e.version === type.version);
    if (!entry) {
      entry = { group: type.group, version: type.version, types: [] };
      out.push(entry);
    }
    entry.types.push(type);
  }
  return out;
}

/** The preferred (first listed: newest) version of a group. */
export function preferredVersion(group: string): string | undefined {
  return RESOURCE_TYPES.find((t) => t.group === group)?.version;
}
