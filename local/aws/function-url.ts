import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough, type Writable } from "node:stream";
import type { StreamingHandler, StreamingRuntime } from "../../functions/handlers/router.ts";
import type { FunctionUrlEvent, ResponseMetadata } from "../../functions/router/function-url.ts";
import { streamingHandler } from "./lambda.ts";
import { type LocalCredentials, sigv4Problem } from "./sigv4-verify.ts";

/**
 * A Lambda Function URL in `RESPONSE_STREAM` mode on this machine, for a streaming handler: each
 * HTTP request becomes a payload format 2.0 event; the handler writes to a response stream whose
 * first bytes are, as on Lambda, the JSON prelude (status, headers, cookies) and eight NUL bytes
 * that `HttpResponseStream.from` writes; the server sends the status and headers when the prelude
 * is complete, then the body as it comes, and ends the HTTP response when the handler ends the
 * stream, even while the invocation goes on (as Lambda does). A request whose event would be over
 * Lambda's 6 MB invocation payload is refused as Lambda refuses it (413), before the handler runs.
 */
export interface LocalFunctionUrl {
  readonly url: string;
  /** Resolves when every invocation started so far has returned. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

const DELIMITER = Buffer.alloc(8);

/** `awslambda` as Lambda's Node.js runtime provides it, for handlers run here. */
export const localStreamingRuntime: StreamingRuntime = {
  // Marked as Lambda's runtime marks it, so the embedded runtime's Function URLs can invoke it.
  streamifyResponse: (handler) => streamingHandler(handler as StreamingHandler) as typeof handler,
  HttpResponseStream: {
    from(stream: Writable, metadata: ResponseMetadata): Writable {
      stream.write(JSON.stringify(metadata));
      stream.write(DELIMITER);
      return stream;
    },
  },
};

/**
 * The URL's auth: `NONE` (the default here) serves every request; `AWS_IAM` serves only a request
 * signed with SigV4 for service `lambda` in `region` with `credentials`, and answers any other as
 * a Function URL does: 403 `{"Message":"Forbidden"}` (IAM policies are not evaluated here).
 */
export type FunctionUrlAuth =
  | { type: "NONE" }
  | { type: "AWS_IAM"; credentials: LocalCredentials; region: string };

/**
 * Lambda's limit on a synchronous invocation's request payload (6 MB: 6,291,456 bytes), which a
 * Function URL's event counts whole, and what Lambda answers past it.
 */
export const MAX_INVOKE_PAYLOAD_BYTES = 6 * 1024 * 1024;
export const PAYLOAD_TOO_LARGE_TYPE = "RequestEntityTooLargeException";
export const PAYLOAD_TOO_LARGE_BODY = `{"Message":"Request must be smaller than ${MAX_INVOKE_PAYLOAD_BYTES} bytes for the InvokeFunction operation"}`;

/** The answer of a Function URL to a request it does not authorize. */
export const FORBIDDEN_BODY = '{"Message":"Forbidden"}';

export async function startFunctionUrl(
  handler: StreamingHandler,
  port = 0,
  auth: FunctionUrlAuth = { type: "NONE" },
): Promise<LocalFunctionUrl> {
  const invocations = new Set<Promise<void>>();
  const server = http.createServer((req, res) => {
    const invocation = serve(handler, req, res, auth);
    invocations.add(invocation);
    void invocation.finally(() => invocations.delete(invocation));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    settled: async () => {
      while (invocations.size > 0) await Promise.allSettled([...invocations]);
    },
    close: async () => {
      while (invocations.size > 0) await Promise.allSettled([...invocations]);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function serve(
  handler: StreamingHandler,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  auth: FunctionUrlAuth,
): Promise<void> {
  const body = await readBounded(req, MAX_INVOKE_PAYLOAD_BYTES);
  const event = body === null ? null : toEvent(req, body);
  // Lambda measures the invocation's payload: the event, whose body may be base64, with its headers.
  if (event === null || Buffer.byteLength(JSON.stringify(event)) > MAX_INVOKE_PAYLOAD_BYTES) {
    res.writeHead(413, { "content-type": "application/json", "x-amzn-errortype": PAYLOAD_TOO_LARGE_TYPE });
    res.end(PAYLOAD_TOO_LARGE_BODY);
    return;
  }
  if (auth.type === "AWS_IAM") {
    const problem = await sigv4Problem(req, body as Buffer, { ...auth, service: "lambda" });
    if (problem) {
      res.writeHead(403, {
        "content-type": "application/json",
        "x-amzn-errortype": "AccessDeniedException",
        "x-rollouts-auth-problem": problem.replace(/[^\x20-\x7e]/g, "?"),
      });
      res.end(FORBIDDEN_BODY);
      return;
    }
  }
  const stream = new PassThrough();
  let prelude: Buffer | null = Buffer.alloc(0);
  const start = (metadata: ResponseMetadata | null) => {
    const headers: http.OutgoingHttpHeaders = { ...(metadata?.headers ?? {}) };
    if (metadata?.cookies?.length) headers["set-cookie"] = metadata.cookies;
    res.writeHead(metadata?.statusCode ?? 200, headers);
  };
  stream.on("data", (chunk: Buffer) => {
    if (prelude === null) {
      res.write(chunk);
      return;
    }
    prelude = Buffer.concat([prelude, chunk]);
    const at = prelude.indexOf(DELIMITER);
    if (at < 0) return;
    start(JSON.parse(prelude.subarray(0, at).toString("utf8")) as ResponseMetadata);
    const rest = prelude.subarray(at + DELIMITER.length);
    prelude = null;
    if (rest.length > 0) res.write(rest);
  });
  stream.on("end", () => {
    if (prelude !== null) {
      // No prelude: Lambda answers 200 with whatever was written.
      start(null);
      res.write(prelude);
    }
    res.end();
  });
  try {
    await handler(event, stream, { awsRequestId: randomUUID() });
    if (!stream.writableEnded) stream.end();
  } catch (error) {
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "application/json" });
      res.end(`${JSON.stringify({ message: "Internal Server Error", error: (error as Error).message })}\n`);
    } else res.destroy(error as Error);
  }
}

/**
 * The body, or null once it is larger than `limit` bytes: from then on the rest is read and thrown
 * away, never kept, so a large body costs no memory (a declared `content-length` over the limit is
 * refused before any byte is read).
 */
function readBounded(req: http.IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > limit;
    if (over) resolve(null);
    req.on("data", (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        resolve(null);
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(over ? null : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** An HTTP request as a Function URL's payload format 2.0 event. */
export function toEvent(req: http.IncomingMessage, body: Buffer): FunctionUrlEvent {
  const url = new URL(req.url ?? "/", "http://function-url");
  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (name === "cookie") cookies = String(value).split(/;\s*/);
    else headers[name] = Array.isArray(value) ? value.join(",") : value;
  }
  const contentType = headers["content-type"] ?? "";
  const text =
    body.length === 0 || /^(text\/|application\/(json|x-www-form-urlencoded|xml))/.test(contentType);
  return {
    version: "2.0",
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ""),
    headers,
    ...(cookies ? { cookies } : {}),
    ...(body.length > 0
      ? { body: text ? body.toString("utf8") : body.toString("base64"), isBase64Encoded: !text }
      : {}),
    requestContext: { http: { method: req.method ?? "GET" }, requestId: randomUUID() },
  };
}
