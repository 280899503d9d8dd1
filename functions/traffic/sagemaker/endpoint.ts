import {
  DescribeEndpointCommand,
  type DescribeEndpointOutput,
  type SageMakerClient,
  UpdateEndpointCommand,
  UpdateEndpointWeightsAndCapacitiesCommand,
} from "@aws-sdk/client-sagemaker";
import { awsErrorName } from "../../aws-errors.ts";
import { TargetConfigurationError, TargetNotReadyError } from "../errors.ts";

/**
 * The endpoint itself: read with `DescribeEndpoint`, moved to another config with
 * `UpdateEndpoint`, its production variants weighted with `UpdateEndpointWeightsAndCapacities`.
 * Both writes put the endpoint in `Updating`; they are refused unless it is `InService`.
 */
export class SageMakerEndpoint {
  constructor(
    private readonly sagemaker: SageMakerClient,
    readonly name: string,
  ) {}

  async describe(): Promise<DescribeEndpointOutput> {
    try {
      return await this.sagemaker.send(new DescribeEndpointCommand({ EndpointName: this.name }));
    } catch (err) {
      if (awsErrorName(err) === "ValidationException" && /could not find/i.test((err as Error).message)) {
        throw new TargetConfigurationError(`endpoint ${this.name} does not exist`, { cause: err });
      }
      throw err;
    }
  }

  /** Refuses `doing` while the endpoint is not `InService` (an update runs, or it failed). */
  requireInService(endpoint: DescribeEndpointOutput, doing: string): void {
    if (endpoint.EndpointStatus !== "InService") {
      throw new TargetNotReadyError(
        `endpoint ${this.name} is ${endpoint.EndpointStatus}: ${doing} waits for InService`,
      );
    }
  }

  /** `UpdateEndpoint` to `config` unless the endpoint serves it or is already moving to it. */
  async moveTo(endpoint: DescribeEndpointOutput, config: string, what: string): Promise<void> {
    const moving = endpoint.PendingDeploymentSummary?.EndpointConfigName === config;
    const serving = endpoint.EndpointConfigName === config && endpoint.EndpointStatus === "InService";
    if (moving || serving) return;
    this.requireInService(endpoint, what);
    await this.sagemaker.send(
      new UpdateEndpointCommand({ EndpointName: this.name, EndpointConfigName: config }),
    );
  }

  /** `UpdateEndpointWeightsAndCapacities`: `weights` by variant, every other production variant 0. */
  async setWeights(endpoint: DescribeEndpointOutput, weights: Record<string, number>): Promise<void> {
    const desired = (endpoint.ProductionVariants ?? []).map((v) => ({
      VariantName: v.VariantName ?? "",
      DesiredWeight: weights[v.VariantName ?? ""] ?? 0,
    }));
    await this.sagemaker.send(
      new UpdateEndpointWeightsAndCapacitiesCommand({
        EndpointName: this.name,
        DesiredWeightsAndCapacities: desired,
      }),
    );
  }
}

/** An endpoint that failed, or whose update failed and could not roll back: waiting cannot help. */
export function hasFailed(endpoint: DescribeEndpointOutput): boolean {
  return endpoint.EndpointStatus === "Failed" || endpoint.EndpointStatus === "UpdateRollbackFailed";
}
