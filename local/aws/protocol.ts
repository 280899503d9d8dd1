import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import { RolloutsError } from "../../statemachine/errors.ts";
import { formatIssues } from "../../statemachine/problems.ts";

/**
 * An error the façade answers in the AWS shape the SDK parses: `x-amzn-errortype` header and a
 * body with `__type` and `message`, so the SDK raises its modeled exception class (e.g.
 * `TaskDoesNotExist`, `ExecutionAlreadyExists`) and the project's `instanceof` checks work.
 */
export class AwsApiError extends RolloutsError {
  override readonly name: string;
  readonly status: number;

  constructor(name: string, message: string, status = 400) {
    super(message);
    this.name = name;
    this.status = status;
  }
}

/** Reads a request body in full. */
export async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Parses a JSON body with a zod schema; a bad body is a `ValidationException` like AWS's. */
export function parseJson<T extends z.ZodType>(schema: T, body: Buffer): z.infer<T> {
  let raw: unknown;
  try {
    raw = body.length === 0 ? {} : JSON.parse(body.toString("utf8"));
  } catch {
    throw new AwsApiError("SerializationException", "the request body is not JSON");
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new AwsApiError("ValidationException", formatIssues(parsed.error, "(body)"));
  }
  return parsed.data;
}

/** Sends a JSON answer. */
export function sendJson(response: ServerResponse, status: number, body: unknown, contentType: string): void {
  const text = JSON.stringify(body ?? {});
  response.writeHead(status, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(text),
    "x-amzn-requestid": crypto.randomUUID(),
  });
  response.end(text);
}

/** Sends an error in the AWS JSON shape. */
export function sendError(response: ServerResponse, error: AwsApiError, contentType: string): void {
  const text = JSON.stringify({ __type: error.name, message: error.message, Message: error.message });
  response.writeHead(error.status, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(text),
    "x-amzn-errortype": error.name,
    "x-amzn-requestid": crypto.randomUUID(),
  });
  response.end(text);
}

/** Epoch ms → the epoch seconds the AWS JSON protocols use for timestamps. */
export function epochSeconds(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : ms / 1000;
}

/** Wraps a domain error (anything with a `name`) as an `AwsApiError`, keeping its name. */
export function asApiError(error: unknown, known: readonly string[], status = 400): AwsApiError {
  if (error instanceof AwsApiError) return error;
  const name = (error as Error)?.name;
  if (typeof name === "string" && known.includes(name))
    return new AwsApiError(name, (error as Error).message, status);
  return new AwsApiError("InternalFailure", (error as Error)?.message ?? String(error), 500);
}
