import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { z } from "zod";
import {
  contentTypeRefusal,
  crossOriginRefusal,
  hasBody,
  hostRefusal,
  ownHosts,
} from "../../cli/http-guard.ts";
import type { Activity } from "../asl/activity.ts";
import type { LocalStepFunctions } from "../asl/engine.ts";
import type { LocalEventBus } from "../events/bus.ts";
import { handleEvents } from "./events-api.ts";
import type { LocalLambda } from "./lambda.ts";
import { handleInvoke } from "./lambda-api.ts";
import { AwsApiError, parseJson, readBody, sendError, sendJson } from "./protocol.ts";
import type { LocalSageMaker } from "./sagemaker.ts";
import { handleInvokeEndpoint, handleSageMaker, INVOKE_ENDPOINT_PATH } from "./sagemaker-api.ts";
import type { LocalScheduler } from "./scheduler.ts";
import { handleScheduler } from "./scheduler-api.ts";
import { handleSfn } from "./sfn-api.ts";

export interface FacadeServices {
  sfn: LocalStepFunctions;
  bus: LocalEventBus;
  lambda: LocalLambda;
  scheduler: LocalScheduler;
  /** SageMaker (control plane and `InvokeEndpoint`), when the runtime has one. */
  sagemaker?: LocalSageMaker;
  /** Requests count as activity, so virtual time never moves while one is being answered. */
  activity?: Activity;
  /** Sees every request before it is answered, and may answer it with an error instead. */
  intercept?: FacadeInterceptor;
}

/** One call to the façade: the API (`AWSStepFunctions`, `AWSEvents`, `Lambda`, `Scheduler`, `SageMaker`) and its operation. */
export interface FacadeCall {
  api: string;
  operation: string;
  /** The request's headers, as received (what the caller said about itself beyond the call). */
  headers: IncomingHttpHeaders;
}

/**
 * Counts or refuses a call: an `AwsApiError` returned is the answer (a `ThrottlingException`
 * injected by a soak test, say), in the protocol of the call's API; `undefined` lets it through.
 */
export type FacadeInterceptor = (call: FacadeCall) => AwsApiError | undefined;

/** A running façade. */
export interface Facade {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  close(): Promise<void>;
}

const JSON_10 = "application/x-amz-json-1.0";
const JSON_11 = "application/x-amz-json-1.1";
const REST_JSON = "application/json";
/** What the SDK sends as an `Invoke` payload (a blob); JSON is accepted too. */
const BLOB = "application/octet-stream";
const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations\/?$/;
/** What a model is sent through `InvokeEndpoint`: none of them goes out of a page without a preflight. */
const MODEL_INPUT = [REST_JSON, BLOB, "text/csv", "application/jsonlines", "application/x-npy"];

/**
 * The local AWS API: one HTTP server on 127.0.0.1 (ephemeral port) that answers the Step
 * Functions (AWS JSON 1.0), EventBridge (AWS JSON 1.1), Lambda `Invoke` and EventBridge Scheduler
 * (REST JSON) calls the project makes, so the handlers and the CLI run unchanged with the real SDK
 * clients and `AWS_ENDPOINT_URL_SFN`/`_EVENTBRIDGE`/`_LAMBDA`/`_SCHEDULER` pointing here.
 * Signatures are not checked; instead, what a web page could send is refused before anything
 * runs ({@link guard}).
 */
export async function startFacade(services: FacadeServices): Promise<Facade> {
  let ownOrigin = "";
  let hosts: readonly string[] = [];
  const server = createServer((request, response) => {
    const end = services.activity?.begin();
    guard(request, ownOrigin, hosts)
      .then(() => route(services, request, response))
      .catch((error: unknown) => {
        const api =
          error instanceof AwsApiError
            ? error
            : new AwsApiError("InternalFailure", (error as Error)?.message ?? String(error), 500);
        if (!response.headersSent) sendError(response, api, contentTypeOf(request));
        else response.end();
      })
      .finally(() => end?.());
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  ownOrigin = `http://127.0.0.1:${port}`;
  hosts = ownHosts(port);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}

/**
 * Refuses, before the body is read or anything runs, a request whose `Host` does not name the
 * façade (DNS rebinding) or that comes from another origin (403 `AccessDeniedException`) and a body whose type is not the one the AWS protocol of its API uses
 * (415 `UnsupportedMediaTypeException`): AWS JSON 1.0 for Step Functions, 1.1 for EventBridge,
 * `application/octet-stream` (or JSON) for a Lambda `Invoke`, JSON for Scheduler. A browser sends
 * none of these without a CORS preflight, which the façade never answers, so a page cannot start
 * an execution or run a Lambda (`local/http-guard.ts`).
 */
async function guard(request: IncomingMessage, ownOrigin: string, hosts: readonly string[]): Promise<void> {
  const crossOrigin = hostRefusal(request, hosts) ?? crossOriginRefusal(request, ownOrigin);
  if (crossOrigin !== undefined) throw new AwsApiError("AccessDeniedException", crossOrigin.message, 403);
  const method = request.method ?? "GET";
  if (!hasBody(request) && (method === "GET" || method === "DELETE" || method === "HEAD")) return;
  const wrongType = contentTypeRefusal(request, mediaTypesFor(request));
  if (wrongType !== undefined) {
    throw new AwsApiError("UnsupportedMediaTypeException", wrongType.message, 415);
  }
}

/** The body types the AWS protocol of the request's API uses. */
function mediaTypesFor(request: IncomingMessage): readonly string[] {
  const target = request.headers["x-amz-target"];
  if (typeof target === "string") {
    if (target.startsWith("AWSStepFunctions.")) return [JSON_10];
    if (target.startsWith("AWSEvents.")) return [JSON_11];
    return [JSON_10, JSON_11];
  }
  const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
  if (INVOKE_PATH.test(path)) return [BLOB, REST_JSON];
  if (INVOKE_ENDPOINT_PATH.test(path)) return MODEL_INPUT;
  return [REST_JSON];
}

function contentTypeOf(request: IncomingMessage): string {
  const target = request.headers["x-amz-target"];
  if (typeof target === "string" && target.startsWith("AWSStepFunctions.")) return JSON_10;
  if (typeof target === "string" && target.startsWith("AWSEvents.")) return JSON_11;
  if (typeof target === "string" && target.startsWith("SageMaker.")) return JSON_11;
  return REST_JSON;
}

/**
 * The region a request is signed for (SigV4's credential scope, `Credential=<key>/<date>/<region>/…`),
 * which is the region of the client that sent it; undefined when it is not signed.
 */
function signedRegion(request: IncomingMessage): string | undefined {
  const authorization = request.headers.authorization;
  const match =
    typeof authorization === "string" ? /Credential=[^/,]+\/\d{8}\/([^/,]+)\//.exec(authorization) : null;
  return match?.[1];
}

/** The API and operation a request calls, as the interceptor sees it. */
function callOf(request: IncomingMessage, url: URL): FacadeCall {
  const target = request.headers["x-amz-target"];
  if (typeof target === "string") {
    const [api = "", operation = ""] = target.split(".");
    return { api, operation, headers: request.headers };
  }
  const headers = request.headers;
  if (INVOKE_PATH.test(url.pathname)) return { api: "Lambda", operation: "Invoke", headers };
  if (INVOKE_ENDPOINT_PATH.test(url.pathname))
    return { api: "SageMakerRuntime", operation: "InvokeEndpoint", headers };
  const method = request.method ?? "GET";
  const verb: Record<string, string> = { POST: "Create", PUT: "Update", GET: "Get", DELETE: "Delete" };
  const operation = `${Object.hasOwn(verb, method) ? verb[method] : method}Schedule`;
  return { api: "Scheduler", operation, headers };
}

async function route(
  services: FacadeServices,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const body = await readBody(request);
  const url = new URL(request.url ?? "/", "http://127.0.0.1");
  const refused = services.intercept?.(callOf(request, url));
  if (refused !== undefined) throw refused;
  const parse = <T extends z.ZodType>(schema: T): z.infer<T> => parseJson(schema, body);
  const target = request.headers["x-amz-target"];
  if (typeof target === "string") {
    const [service, operation = ""] = target.split(".");
    if (service === "AWSStepFunctions") {
      sendJson(response, 200, handleSfn(services.sfn, operation, parse, signedRegion(request)), JSON_10);
      return;
    }
    if (service === "AWSEvents") {
      sendJson(response, 200, await handleEvents(services.bus, operation, parse), JSON_11);
      return;
    }
    if (service === "SageMaker" && services.sagemaker) {
      sendJson(response, 200, handleSageMaker(services.sagemaker, operation, parse), JSON_11);
      return;
    }
    throw new AwsApiError("UnknownOperationException", `${target} is not supported locally`);
  }
  const invoke = INVOKE_PATH.exec(url.pathname);
  if (invoke?.[1] !== undefined && request.method === "POST") {
    const name = decodeURIComponent(invoke[1]);
    const qualifier = url.searchParams.get("Qualifier");
    const invocationType = request.headers["x-amz-invocation-type"];
    await handleInvoke(
      services.lambda,
      qualifier === null ? name : `${name}:${qualifier}`,
      typeof invocationType === "string" ? invocationType : undefined,
      body,
      response,
    );
    return;
  }
  const endpoint = INVOKE_ENDPOINT_PATH.exec(url.pathname);
  if (endpoint?.[1] !== undefined && request.method === "POST" && services.sagemaker) {
    await handleInvokeEndpoint(services.sagemaker, decodeURIComponent(endpoint[1]), request, body, response);
    return;
  }
  const schedule = /^\/schedules\/([^/]+)\/?$/.exec(url.pathname);
  if (schedule?.[1] !== undefined) {
    const result = await handleScheduler(
      services.scheduler,
      request.method ?? "GET",
      decodeURIComponent(schedule[1]),
      url.searchParams,
      parse,
    );
    sendJson(response, 200, result, REST_JSON);
    return;
  }
  throw new AwsApiError(
    "UnknownOperationException",
    `${request.method} ${url.pathname} is not supported locally`,
    404,
  );
}
