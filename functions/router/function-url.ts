import { RolloutsError } from "../../statemachine/errors.ts";
import type { RouterRequest, RouterResponse } from "./router.ts";

/**
 * A Lambda Function URL request (payload format 2.0), the fields the router reads. Function URLs
 * send header names in lower case, several values of one header joined by commas, cookies apart,
 * and a body that is base64 when it is not text.
 */
export interface FunctionUrlEvent {
  readonly version?: string;
  readonly rawPath: string;
  readonly rawQueryString?: string;
  readonly headers?: Readonly<Record<string, string | undefined>>;
  readonly cookies?: readonly string[];
  readonly body?: string;
  readonly isBase64Encoded?: boolean;
  readonly requestContext: { readonly http: { readonly method: string }; readonly requestId?: string };
}

/** What a streaming Function URL response starts with: its status and headers. */
export interface ResponseMetadata {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly cookies?: string[];
}

/** An event that is not a Function URL's (payload format 2.0): the router answers it with a 400. */
export class MalformedEventError extends RolloutsError {
  override readonly name = "MalformedEventError";
}

/** The event as the router's request. A malformed event (no method, no path) is an error naming the field. */
export function fromFunctionUrlEvent(event: FunctionUrlEvent): RouterRequest {
  const method = event?.requestContext?.http?.method;
  if (typeof method !== "string" || method.length === 0) {
    throw new MalformedEventError(
      "not a Function URL event (payload format 2.0): requestContext.http.method is missing",
    );
  }
  if (typeof event.rawPath !== "string") {
    throw new MalformedEventError("not a Function URL event (payload format 2.0): rawPath is missing");
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  if (event.cookies && event.cookies.length > 0) headers.cookie = event.cookies.join("; ");
  const body =
    event.body === undefined
      ? ""
      : event.isBase64Encoded
        ? Buffer.from(event.body, "base64").toString("utf8")
        : event.body;
  const query = event.rawQueryString ? `?${event.rawQueryString}` : "";
  return { method, url: `${event.rawPath}${query}`, headers, body };
}

/** The router's answer as the metadata a streaming response starts with (the body follows it). */
export function toResponseMetadata(answer: RouterResponse): ResponseMetadata {
  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  for (const [name, value] of Object.entries(answer.headers)) {
    if (name.toLowerCase() === "set-cookie") cookies = [...(cookies ?? []), value];
    else headers[name] = value;
  }
  return { statusCode: answer.status, headers, ...(cookies ? { cookies } : {}) };
}
