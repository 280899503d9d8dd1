import { isObject, type Json } from "./patch.ts";
import type { ResourceType } from "./resources.ts";
import { fromLabelSelector, matches } from "./selector.ts";
import { badRequest, invalid, type StatusCause } from "./status.ts";
import type { KubeObject } from "./store.ts";

/**
 * What the local API refuses before it stores an object, with the API server's messages: a body
 * that is not an object of the resource's kind, a name that is not a DNS name, for
 * Deployments the rules a controller depends on (a selector that matches the template's labels,
 * replicas ≥ 0, containers with names and images), and for Jobs a pod template that ends
 * (`restartPolicy` Never or OnFailure, containers with names and images, a name of at most 63). It does not check fields against the kinds'
 * schemas: an unknown field is stored as sent.
 */

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Kinds whose names must be DNS labels (≤ 63, no dots) rather than subdomains. */
const LABEL_NAMED = new Set(["namespaces", "services"]);

/** Checks that a request body is an object of `type` for the URL's namespace and name. */
export function checkBody(
  type: ResourceType,
  body: unknown,
  url: { namespace?: string; name?: string },
): KubeObject {
  if (!isObject(body)) throw badRequest(`the body of a ${type.kind} must be a JSON object`);
  const kind = body.kind;
  if (kind !== undefined && kind !== type.kind) {
    throw badRequest(`the kind of the object (${String(kind)}) does not match the resource (${type.kind})`);
  }
  const meta = body.metadata;
  if (meta !== undefined && !isObject(meta)) throw badRequest("metadata must be an object");
  const name = meta?.name;
  if (url.name !== undefined && name !== undefined && name !== url.name) {
    throw badRequest(
      `the name of the object (${String(name)}) does not match the name on the URL (${url.name})`,
    );
  }
  const namespace = meta?.namespace;
  if (type.namespaced && namespace !== undefined && namespace !== "" && namespace !== url.namespace) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
  const object = structuredClone(body) as unknown as KubeObject;
  object.metadata = { ...(meta ?? {}), name: (name ?? url.name) as string };
  return object;
}

/** The Invalid (422) answer for an object the API server would refuse; nothing when it is valid. */
export function validate(type: ResourceType, object: KubeObject): void {
  const name = object.metadata.name;
  const causes: StatusCause[] = [];
  const bad = (field: string, message: string) =>
    causes.push({ reason: "FieldValueInvalid", message, field });
  if (typeof name !== "string" || name === "") {
    causes.push({
      reason: "FieldValueRequired",
      message: "Required value: name or generateName is required",
      field: "metadata.name",
    });
  } else {
    const label = LABEL_NAMED.has(type.resource);
    const pattern = label ? DNS_LABEL : DNS_SUBDOMAIN;
    const max = label ? 63 : 253;
    if (!pattern.test(name) || name.length > max) {
      bad(
        "metadata.name",
        `Invalid value: "${name}": a lowercase RFC 1123 ${label ? "label" : "subdomain"} must consist of lower case alphanumeric characters, '-'${label ? "" : " or '.'"}, and must start and end with an alphanumeric character`,
      );
    }
  }
  for (const field of ["labels", "annotations"] as const) {
    const map = object.metadata[field];
    if (map === undefined) continue;
    if (!isObject(map) || Object.values(map).some((v) => typeof v !== "string")) {
      bad(`metadata.${field}`, "Invalid value: must be a map of strings");
    }
  }
  if (type.resource === "deployments") validateDeployment(object, bad);
  if (type.resource === "jobs") validateJob(object, bad);
  if (causes.length > 0) throw invalid(type, typeof name === "string" ? name : "", causes);
}

function validateDeployment(object: KubeObject, bad: (field: string, message: string) => void): void {
  const spec = object.spec ?? {};
  const replicas = spec.replicas;
  if (
    replicas !== undefined &&
    (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0)
  ) {
    bad("spec.replicas", `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`);
  }
  const deadline = spec.progressDeadlineSeconds;
  if (
    deadline !== undefined &&
    (typeof deadline !== "number" || !Number.isInteger(deadline) || deadline <= 0)
  ) {
    bad("spec.progressDeadlineSeconds", `Invalid value: ${JSON.stringify(deadline)}: must be greater than 0`);
  }
  const selector = spec.selector;
  if (
    !isObject(selector) ||
    (Object.keys(selector.matchLabels ?? {}).length === 0 && !selector.matchExpressions)
  ) {
    bad("spec.selector", "Required value");
  }
  const template = spec.template;
  const labels = isObject(template) && isObject(template.metadata) ? template.metadata.labels : undefined;
  if (
    isObject(selector) &&
    !matches(labels as Record<string, string> | undefined, fromLabelSelector(selector))
  ) {
    bad(
      "spec.template.metadata.labels",
      `Invalid value: ${JSON.stringify(labels ?? {})}: \`selector\` does not match template \`labels\``,
    );
  }
  const containers = isObject(template) && isObject(template.spec) ? template.spec.containers : undefined;
  if (!Array.isArray(containers) || containers.length === 0) {
    bad("spec.template.spec.containers", "Required value");
    return;
  }
  containers.forEach((c: Json, i) => {
    if (!isObject(c) || typeof c.name !== "string" || c.name === "") {
      bad(`spec.template.spec.containers[${i}].name`, "Required value");
    }
    if (!isObject(c) || typeof c.image !== "string" || c.image === "") {
      bad(`spec.template.spec.containers[${i}].image`, "Required value");
    }
  });
}

/**
 * A Job's pod template as the API server requires it: containers with names and images, and a
 * `restartPolicy` of `Never` or `OnFailure` (a Job's pods must end).
 */
function validateJob(object: KubeObject, bad: (field: string, message: string) => void): void {
  // The Job controller labels its pods with the Job's name, and a label value has at most 63.
  const name = object.metadata.name;
  if (typeof name === "string" && name.length > 63) {
    bad("spec.template.labels", `Invalid value: "${name}": must be no more than 63 characters`);
  }
  const template = object.spec?.template;
  const spec = isObject(template) && isObject(template.spec) ? template.spec : undefined;
  const policy = spec?.restartPolicy;
  if (policy === undefined || policy === "") {
    bad("spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"');
  } else if (policy !== "Never" && policy !== "OnFailure") {
    bad(
      "spec.template.spec.restartPolicy",
      `Unsupported value: ${JSON.stringify(policy)}: supported values: "OnFailure", "Never"`,
    );
  }
  const containers = spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    bad("spec.template.spec.containers", "Required value");
    return;
  }
  containers.forEach((c: Json, i) => {
    if (!isObject(c) || typeof c.name !== "string" || c.name === "") {
      bad(`spec.template.spec.containers[${i}].name`, "Required value");
    }
    if (!isObject(c) || typeof c.image !== "string" || c.image === "") {
      bad(`spec.template.spec.containers[${i}].image`, "Required value");
    }
  });
}
