import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { AwsApiError, epochSeconds } from "./protocol.ts";
import type { LocalSageMaker, ResolvedVariant } from "./sagemaker.ts";

type Parse = <T extends z.ZodType>(schema: T) => z.infer<T>;

const Name = z.string().min(1).max(63);
const Variant = z
  .object({ VariantName: Name, ModelName: Name, InitialVariantWeight: z.number().min(0).optional() })
  .catchall(z.unknown());
const EndpointName = z.object({ EndpointName: Name });
const ConfigName = z.object({ EndpointConfigName: Name });
const ModelName = z.object({ ModelName: Name });

/**
 * The SageMaker control plane (AWS JSON 1.1, `X-Amz-Target: SageMaker.<Op>`): the operations the
 * SageMaker target calls, and `CreateEndpoint`/`DescribeModel` to set an endpoint up.
 */
export function handleSageMaker(sagemaker: LocalSageMaker, operation: string, parse: Parse): unknown {
  switch (operation) {
    case "CreateModel":
      return sagemaker.createModel(
        parse(
          z.object({
            ModelName: Name,
            ExecutionRoleArn: z.string().optional(),
            PrimaryContainer: z
              .object({ Image: z.string().optional(), ModelPackageName: z.string().optional() })
              .catchall(z.unknown())
              .optional(),
          }),
        ),
      );
    case "DescribeModel": {
      const model = sagemaker.describeModel(parse(ModelName).ModelName);
      return {
        ModelName: model.ModelName,
        ModelArn: model.ModelArn,
        ExecutionRoleArn: model.ExecutionRoleArn,
        PrimaryContainer: model.PrimaryContainer,
        CreationTime: epochSeconds(model.CreationTime),
      };
    }
    case "DeleteModel":
      sagemaker.deleteModel(parse(ModelName).ModelName);
      return {};
    case "CreateEndpointConfig": {
      const input = parse(
        z
          .object({
            EndpointConfigName: Name,
            ProductionVariants: z.array(Variant),
            ShadowProductionVariants: z.array(Variant).optional(),
            KmsKeyId: z.string().optional(),
            DataCaptureConfig: z.unknown().optional(),
          })
          .catchall(z.unknown()),
      );
      return sagemaker.createEndpointConfig(input);
    }
    case "DescribeEndpointConfig": {
      const config = sagemaker.describeEndpointConfig(parse(ConfigName).EndpointConfigName);
      return { ...config, CreationTime: epochSeconds(config.CreationTime) };
    }
    case "DeleteEndpointConfig":
      sagemaker.deleteEndpointConfig(parse(ConfigName).EndpointConfigName);
      return {};
    case "CreateEndpoint":
      return sagemaker.createEndpoint(parse(EndpointName.extend({ EndpointConfigName: Name })));
    case "DescribeEndpoint":
      return describeEndpoint(sagemaker.describeEndpoint(parse(EndpointName).EndpointName));
    case "UpdateEndpoint":
      return sagemaker.updateEndpoint(parse(EndpointName.extend({ EndpointConfigName: Name })));
    case "UpdateEndpointWeightsAndCapacities":
      return sagemaker.updateWeights(
        parse(
          EndpointName.extend({
            DesiredWeightsAndCapacities: z
              .array(
                z.object({
                  VariantName: Name,
                  DesiredWeight: z.number().optional(),
                  DesiredInstanceCount: z.number().int().min(0).optional(),
                }),
              )
              .min(1),
          }),
        ),
      );
    default:
      throw new AwsApiError("UnknownOperationException", `SageMaker.${operation} is not supported locally`);
  }
}

/** `DescribeEndpoint`'s answer for `endpoint`. */
function describeEndpoint(endpoint: ReturnType<LocalSageMaker["describeEndpoint"]>): unknown {
  return {
    EndpointName: endpoint.name,
    EndpointArn: endpoint.arn,
    EndpointStatus: endpoint.status,
    ...(endpoint.config === undefined ? {} : { EndpointConfigName: endpoint.config }),
    ProductionVariants: endpoint.variants,
    ...(endpoint.shadows.length > 0 ? { ShadowProductionVariants: endpoint.shadows } : {}),
    ...(endpoint.failureReason === undefined ? {} : { FailureReason: endpoint.failureReason }),
    // While the endpoint is created or moves to another config, as SageMaker shows it.
    ...(endpoint.pending?.config === undefined
      ? {}
      : {
          PendingDeploymentSummary: {
            EndpointConfigName: endpoint.pending.config,
            StartTime: epochSeconds(endpoint.modified),
          },
        }),
    CreationTime: epochSeconds(endpoint.created),
    LastModifiedTime: epochSeconds(endpoint.modified),
  };
}

/** `POST /endpoints/{name}/invocations`, the SageMaker Runtime's `InvokeEndpoint`. */
export const INVOKE_ENDPOINT_PATH = /^\/endpoints\/([^/]+)\/invocations\/?$/;

/**
 * `InvokeEndpoint` (REST JSON): the body goes to the answering variant's model server as
 * `POST /invocations` with its content type; the answer comes back with
 * `X-Amzn-Invoked-Production-Variant`. A model that answers an error status is a `ModelError`
 * (424, with `OriginalStatusCode` and `OriginalMessage`), as SageMaker reports it. A request copied
 * to a shadow variant is sent in the background and its answer discarded.
 */
export async function handleInvokeEndpoint(
  sagemaker: LocalSageMaker,
  endpointName: string,
  request: IncomingMessage,
  body: Buffer,
  response: ServerResponse,
): Promise<void> {
  const header = (name: string) => {
    const value = request.headers[name];
    return typeof value === "string" ? value : undefined;
  };
  const { answer, shadows } = sagemaker.resolve(endpointName, header("x-amzn-sagemaker-target-variant"));
  const contentType = header("content-type") ?? "application/octet-stream";
  const accept = header("accept");
  for (const shadow of shadows) void callModel(shadow, body, contentType, accept).catch(() => {});
  let result: { status: number; type: string | null; text: Buffer };
  try {
    result = await callModel(answer, body, contentType, accept);
  } catch (error) {
    throw new AwsApiError(
      "ModelError",
      `Received server error from primary with message "${(error as Error).message}". See the local model server of variant ${answer.variant}.`,
      424,
    );
  }
  if (result.status < 200 || result.status >= 300) {
    const message = result.text.toString("utf8");
    const text = JSON.stringify({
      __type: "ModelError",
      message: `Received client error (${result.status}) from primary with message "${message}".`,
      OriginalStatusCode: result.status,
      OriginalMessage: message,
      LogStreamArn: `local:/aws/sagemaker/Endpoints/${endpointName}`,
    });
    response.writeHead(424, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      "x-amzn-errortype": "ModelError",
      "x-amzn-requestid": crypto.randomUUID(),
    });
    response.end(text);
    return;
  }
  response.writeHead(200, {
    "content-type": result.type ?? "application/octet-stream",
    "content-length": result.text.length,
    "x-amzn-invoked-production-variant": answer.variant,
    "x-amzn-requestid": crypto.randomUUID(),
  });
  response.end(result.text);
}

async function callModel(
  variant: ResolvedVariant,
  body: Buffer,
  contentType: string,
  accept: string | undefined,
): Promise<{ status: number; type: string | null; text: Buffer }> {
  const res = await fetch(`${variant.url}/invocations`, {
    method: "POST",
    headers: { "content-type": contentType, ...(accept ? { accept } : {}) },
    body: new Uint8Array(body),
  });
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    text: Buffer.from(await res.arrayBuffer()),
  };
}
