import { RolloutsError } from "../../statemachine/errors.ts";
import { qualifiedName, type ResourceType } from "./resources.ts";

/**
 * The API server's `kind: Status` failures, with the codes, reasons and message shapes clients
 * match on (`@kubernetes/client-node`, client-go's `errors.IsConflict`, kubectl's output).
 */

export type StatusReason =
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Invalid"
  | "BadRequest"
  | "UnsupportedMediaType"
  | "MethodNotAllowed"
  | "Forbidden"
  | "RequestEntityTooLarge"
  | "NotAcceptable"
  | "InternalError";

export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/** The JSON body of a failure. */
export interface StatusBody {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason: StatusReason;
  details?: { name?: string; group?: string; kind?: string; causes?: StatusCause[] };
  code: number;
}

/** A failure a handler throws; the router answers it as its Status body. */
export class KubeStatusError extends RolloutsError {
  override readonly name = "KubeStatusError";
  readonly body: StatusBody;

  constructor(code: number, reason: StatusReason, message: string, details?: StatusBody["details"]) {
    super(message);
    this.body = {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      ...(details ? { details } : {}),
      code,
    };
  }

  get code(): number {
    return this.body.code;
  }
}

function detailsOf(type: ResourceType, name: string): StatusBody["details"] {
  return { name, group: type.group, kind: type.resource };
}

export function notFound(type: ResourceType, name: string): KubeStatusError {
  return new KubeStatusError(
    404,
    "NotFound",
    `${qualifiedName(type)} "${name}" not found`,
    detailsOf(type, name),
  );
}

export function alreadyExists(type: ResourceType, name: string): KubeStatusError {
  return new KubeStatusError(
    409,
    "AlreadyExists",
    `${qualifiedName(type)} "${name}" already exists`,
    detailsOf(type, name),
  );
}

/** A write whose `metadata.resourceVersion` is not the stored one. */
export function conflict(type: ResourceType, name: string): KubeStatusError {
  return new KubeStatusError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedName(type)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    detailsOf(type, name),
  );
}

/** A delete whose `preconditions.resourceVersion` is not the stored one. */
export function preconditionFailed(
  type: ResourceType,
  name: string,
  asked: string,
  stored: string,
): KubeStatusError {
  return new KubeStatusError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedName(type)} "${name}": Precondition failed: ResourceVersion in precondition: ${asked}, ResourceVersion in object meta: ${stored}`,
    detailsOf(type, name),
  );
}

/** `Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be …` */
export function invalid(type: ResourceType, name: string, causes: StatusCause[]): KubeStatusError {
  const kind = type.group === "" ? type.kind : `${type.kind}.${type.group}`;
  const list = causes.map((c) => `${c.field}: ${c.message}`);
  const text = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return new KubeStatusError(422, "Invalid", `${kind} "${name}" is invalid: ${text}`, {
    name,
    group: type.group,
    kind: type.kind,
    causes,
  });
}

export function badRequest(message: string): KubeStatusError {
  return new KubeStatusError(400, "BadRequest", message);
}

export const PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
] as const;

export function unsupportedMediaType(accepted: readonly string[]): KubeStatusError {
  return new KubeStatusError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`,
  );
}

export function methodNotAllowed(): KubeStatusError {
  return new KubeStatusError(
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
  );
}

export function pathNotFound(): KubeStatusError {
  return new KubeStatusError(404, "NotFound", "the server could not find the requested resource");
}
