import type { Writable } from "node:stream";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { clientConfig } from "../aws-clients.ts";
import { ENV } from "../config.ts";
import {
  type FunctionUrlEvent,
  fromFunctionUrlEvent,
  MalformedEventError,
  type ResponseMetadata,
  toResponseMetadata,
} from "../router/function-url.ts";
import type { RouterResponse } from "../router/router.ts";
import { backendCaller } from "../router/sagemaker-backend.ts";
import { SharedModelRouter } from "../router/shared.ts";

/** What Lambda's Node.js runtime gives a streaming handler (the `awslambda` global), or a local stand-in. */
export interface StreamingRuntime {
  streamifyResponse<T>(handler: T): T;
  HttpResponseStream: { from(stream: Writable, metadata: ResponseMetadata): Writable };
}

export type StreamingHandler = (
  event: FunctionUrlEvent,
  responseStream: Writable,
  context?: unknown,
) => Promise<void>;

/**
 * The model router behind a Function URL in `RESPONSE_STREAM` mode: the event becomes the router's
 * request, the answer is written and the stream ended (the caller has the whole answer then), and
 * only after that does the invocation wait for the mirror copies the answer queued, so a slow
 * shadow never delays the caller. A malformed event is a 400, a failure of the store a 503, each
 * naming the cause.
 */
export function createHandler(router: () => SharedModelRouter, runtime: StreamingRuntime): StreamingHandler {
  return async (event, responseStream) => {
    const shared = router();
    let answer: RouterResponse;
    try {
      answer = await shared.handle(fromFunctionUrlEvent(event));
    } catch (error) {
      const malformed = error instanceof MalformedEventError;
      answer = {
        status: malformed ? 400 : 503,
        headers: { "content-type": "application/json" },
        body: `${JSON.stringify({ error: `the model router could not answer: ${(error as Error).message}` })}\n`,
      };
    }
    const stream = runtime.HttpResponseStream.from(responseStream, toResponseMetadata(answer));
    await new Promise<void>((resolve) => stream.end(answer.body, () => resolve()));
    // The caller has its answer; the shadow's copies are sent and recorded within this invocation.
    await shared.router.idle();
  };
}

/** A required environment variable, or an error naming it (the construct sets them). */
function env(name: string, source: NodeJS.ProcessEnv): string {
  const value = source[name];
  if (!value)
    throw new Error(`environment variable ${name} is not set: the construct sets it on the router function`);
  return value;
}

/**
 * The router the construct names (its endpoint), over the controller's table; `now` is the clock
 * its observations and configuration cache read (the embedded runtime's, in virtual time).
 */
export function routerFromEnv(
  source: NodeJS.ProcessEnv = process.env,
  options: { now?: () => number } = {},
): SharedModelRouter {
  const config = clientConfig(source);
  return new SharedModelRouter({
    ...(options.now ? { now: options.now } : {}),
    client: new DynamoDBClient(config),
    tableName: env(ENV.tableName, source),
    router: env(ENV.routerName, source),
    call: backendCaller(new SageMakerRuntimeClient(config)),
  });
}

let cached: SharedModelRouter | undefined;
// Powertools also keeps state on `globalThis.awslambda`: only Lambda's runtime gives it streamifyResponse.
const awslambda = (globalThis as { awslambda?: Partial<StreamingRuntime> }).awslambda;
const runtime =
  typeof awslambda?.streamifyResponse === "function" ? (awslambda as StreamingRuntime) : undefined;

/** On Lambda, the streaming handler; elsewhere (tests, the embedded runtime) use {@link createHandler}. */
export const handler: StreamingHandler | undefined = runtime
  ? runtime.streamifyResponse(
      createHandler(() => {
        cached ??= routerFromEnv();
        return cached;
      }, runtime),
    )
  : undefined;
