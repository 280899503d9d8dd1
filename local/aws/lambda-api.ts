import type { ServerResponse } from "node:http";
import type { LocalLambda } from "./lambda.ts";
import { AwsApiError } from "./protocol.ts";

/**
 * Lambda `Invoke` (REST: `POST /2015-03-31/functions/{name}/invocations`): `RequestResponse`
 * answers the function's JSON, with `X-Amz-Function-Error: Unhandled` and the error payload when
 * it threw (the SDK puts that in `FunctionError`/`Payload`); `Event` answers 202 at once and runs
 * the function in the background; `DryRun` answers 204.
 */
export async function handleInvoke(
  lambda: LocalLambda,
  functionName: string,
  invocationType: string | undefined,
  body: Buffer,
  response: ServerResponse,
): Promise<void> {
  if (!lambda.has(functionName)) {
    throw new AwsApiError("ResourceNotFoundException", `Function not found: ${functionName}`, 404);
  }
  let event: unknown;
  try {
    event = body.length === 0 ? {} : JSON.parse(body.toString("utf8"));
  } catch {
    throw new AwsApiError("InvalidRequestContentException", "Could not parse request body into json", 400);
  }
  const headers = { "x-amz-executed-version": "$LATEST", "x-amzn-requestid": crypto.randomUUID() };
  if (invocationType === "DryRun") {
    response.writeHead(204, headers);
    response.end();
    return;
  }
  if (invocationType === "Event") {
    void lambda.invoke(functionName, event);
    response.writeHead(202, headers);
    response.end();
    return;
  }
  const outcome = await lambda.invoke(functionName, event);
  const text = JSON.stringify(outcome.ok ? outcome.payload : outcome.error);
  response.writeHead(200, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...(outcome.ok ? {} : { "x-amz-function-error": "Unhandled" }),
  });
  response.end(text);
}
