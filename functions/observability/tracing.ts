import { Tracer } from "@aws-lambda-powertools/tracer";
import { inLambda, SERVICE_NAME } from "./logging.ts";

let tracer: Tracer | undefined;

/**
 * An AWS SDK v3 client whose calls are X-Ray subsegments (Powertools' `captureAWSv3Client`) in a
 * Lambda (the functions run with active tracing); the client unchanged anywhere else: the embedded
 * runtime and the tests run the handlers in-process, with no segment to record into.
 */
export function traced<T>(client: T, source: NodeJS.ProcessEnv = process.env): T {
  if (!inLambda(source)) return client;
  tracer ??= new Tracer({ serviceName: SERVICE_NAME });
  return tracer.captureAWSv3Client(client as never) as T;
}
