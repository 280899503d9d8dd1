import { InvokeEndpointCommand, type SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { awsErrorName } from "../aws-errors.ts";
import { describeBackend } from "./config.ts";
import { type CallBackend, fetchBackend } from "./router.ts";

/**
 * The router function's {@link CallBackend}: an HTTP backend is fetched, a SageMaker backend is an
 * `InvokeEndpoint` on its endpoint with `TargetVariant`, so the router, not SageMaker's weights,
 * chooses the variant that answers (the sticky cohort, the comparing shadow). The request's body
 * and content type go to the model; its `x-request-id` as `InferenceId`. A model that fails
 * (`ModelError`) answers with its own status and message; a call that does not complete in time is
 * a timeout (the router's 504).
 */
export function backendCaller(client: SageMakerRuntimeClient, http: CallBackend = fetchBackend): CallBackend {
  return async (backend, request, timeoutMs) => {
    if (backend.sagemaker === undefined) return http(backend, request, timeoutMs);
    const signal = AbortSignal.timeout(timeoutMs);
    // The deadline holds even if the client does not stop at the signal: the answer does not wait.
    const deadline = new Promise<never>((_resolve, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    deadline.catch(() => {});
    try {
      const call = client.send(
        new InvokeEndpointCommand({
          EndpointName: backend.sagemaker.endpoint,
          TargetVariant: backend.sagemaker.variant,
          Body: new TextEncoder().encode(request.body),
          ContentType: request.headers["content-type"] ?? "application/json",
          Accept: request.headers.accept ?? "application/json",
          ...(request.headers["x-request-id"]
            ? { InferenceId: request.headers["x-request-id"].slice(0, 64) }
            : {}),
        }),
        { abortSignal: signal },
      );
      call.catch(() => {}); // a call that fails after the deadline is not unhandled
      const out = await Promise.race([call, deadline]);
      return {
        status: 200,
        headers: {
          "content-type": out.ContentType ?? "application/json",
          ...(out.InvokedProductionVariant ? { "x-sagemaker-variant": out.InvokedProductionVariant } : {}),
        },
        body: out.Body === undefined ? "" : new TextDecoder().decode(out.Body),
      };
    } catch (error) {
      if (signal.aborted) {
        const timeout = new Error(`${describeBackend(backend)} did not answer within ${timeoutMs} ms`);
        timeout.name = "TimeoutError";
        throw timeout;
      }
      if (awsErrorName(error) === "ModelError") {
        const e = error as { OriginalStatusCode?: number; OriginalMessage?: string; message: string };
        const status = e.OriginalStatusCode && e.OriginalStatusCode >= 400 ? e.OriginalStatusCode : 502;
        return {
          status,
          headers: { "content-type": "application/json" },
          body: `${JSON.stringify({ error: `${backend.name} (${describeBackend(backend)}): ${e.OriginalMessage ?? e.message}` })}\n`,
        };
      }
      throw error;
    }
  };
}
