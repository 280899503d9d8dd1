/**
 * The SageMaker control plane the SageMaker target's tests run against: a small in-memory world
 * behind aws-sdk-client-mock, reset before each test by {@link useSageMakerWorld}.
 */
import {
  CreateEndpointConfigCommand,
  type CreateEndpointConfigInput,
  CreateModelCommand,
  type CreateModelInput,
  DeleteEndpointConfigCommand,
  DeleteModelCommand,
  DescribeEndpointCommand,
  DescribeEndpointConfigCommand,
  type ProductionVariant,
  SageMakerClient,
  UpdateEndpointCommand,
  UpdateEndpointWeightsAndCapacitiesCommand,
  type UpdateEndpointWeightsAndCapacitiesInput,
} from "@aws-sdk/client-sagemaker";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach } from "vitest";
import { ManualClock } from "../../functions/clock.ts";

export const ROLE = "arn:aws:iam::123456789012:role/ranker-sagemaker";
export const PACKAGE = "arn:aws:sagemaker:eu-west-1:123456789012:model-package/ranker/7";
export const sagemaker = mockClient(SageMakerClient);
export const validation = (message: string) =>
  Object.assign(new Error(message), { name: "ValidationException" });

/**
 * A small in-memory SageMaker: endpoint configs, models and one endpoint whose updates stay
 * `Updating` until the test calls {@link settle}, as on AWS where they take minutes.
 */
export interface World {
  models: Record<string, CreateModelInput>;
  configs: Record<string, CreateEndpointConfigInput>;
  endpoint: {
    EndpointConfigName: string;
    EndpointStatus: string;
    FailureReason?: string;
    ProductionVariants: { VariantName: string; CurrentWeight: number; DesiredWeight: number }[];
    ShadowProductionVariants?: { VariantName: string; CurrentWeight: number; DesiredWeight: number }[];
    PendingDeploymentSummary?: { EndpointConfigName: string };
  };
  /** What the update in progress does when it settles. */
  next?: () => void;
}
export let world: World;
export let clock: ManualClock;

function variants(list: ProductionVariant[] | undefined) {
  return (list ?? []).map((v) => ({
    VariantName: v.VariantName ?? "",
    CurrentWeight: v.InitialVariantWeight ?? 1,
    DesiredWeight: v.InitialVariantWeight ?? 1,
  }));
}

/** Finishes the update in progress; `fail` rolls it back with a reason, as SageMaker does. */
export function settle(fail?: string): void {
  const next = world.next;
  world.next = undefined;
  world.endpoint.PendingDeploymentSummary = undefined;
  if (fail) {
    world.endpoint.EndpointStatus = "InService";
    world.endpoint.FailureReason = fail;
    return;
  }
  next?.();
  world.endpoint.EndpointStatus = "InService";
}

/** Registers the world's reset before each test of the calling file. */
export function useSageMakerWorld(): void {
  beforeEach(resetWorld);
}

function resetWorld(): void {
  sagemaker.reset();
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  world = {
    models: { "ranker-v6": { ModelName: "ranker-v6" } },
    configs: {
      "ranker-config-v6": {
        EndpointConfigName: "ranker-config-v6",
        ProductionVariants: [
          {
            VariantName: "v6",
            ModelName: "ranker-v6",
            InstanceType: "ml.m5.large",
            InitialInstanceCount: 2,
            InitialVariantWeight: 1,
          },
        ],
        DataCaptureConfig: {
          InitialSamplingPercentage: 10,
          DestinationS3Uri: "s3://captures/ranker",
          CaptureOptions: [{ CaptureMode: "Input" }],
        },
      },
    },
    endpoint: {
      EndpointConfigName: "ranker-config-v6",
      EndpointStatus: "InService",
      ProductionVariants: [{ VariantName: "v6", CurrentWeight: 1, DesiredWeight: 1 }],
    },
  };
  sagemaker.on(DescribeEndpointCommand).callsFake((input: { EndpointName?: string }) => {
    if (input.EndpointName !== "ranker") throw validation(`Could not find endpoint "${input.EndpointName}".`);
    return structuredClone({ EndpointName: "ranker", ...world.endpoint });
  });
  sagemaker.on(DescribeEndpointConfigCommand).callsFake((input: { EndpointConfigName?: string }) => {
    const config = world.configs[input.EndpointConfigName ?? ""];
    if (!config) throw validation("Could not find endpoint configuration");
    return structuredClone(config);
  });
  sagemaker.on(CreateModelCommand).callsFake((input: CreateModelInput) => {
    if (world.models[input.ModelName ?? ""]) throw validation("Cannot create already existing model");
    world.models[input.ModelName ?? ""] = input;
    return { ModelArn: `arn:aws:sagemaker:eu-west-1:123456789012:model/${input.ModelName}` };
  });
  sagemaker.on(CreateEndpointConfigCommand).callsFake((input: CreateEndpointConfigInput) => {
    if (world.configs[input.EndpointConfigName ?? ""])
      throw validation("Cannot create already existing endpoint configuration");
    world.configs[input.EndpointConfigName ?? ""] = input;
    return {};
  });
  sagemaker.on(UpdateEndpointCommand).callsFake((input: { EndpointConfigName?: string }) => {
    if (world.endpoint.EndpointStatus !== "InService") throw validation("Cannot update in-progress endpoint");
    const config = world.configs[input.EndpointConfigName ?? ""];
    if (!config) throw validation("Could not find endpoint configuration");
    world.endpoint.EndpointStatus = "Updating";
    world.endpoint.FailureReason = undefined;
    world.endpoint.PendingDeploymentSummary = { EndpointConfigName: input.EndpointConfigName ?? "" };
    world.next = () => {
      world.endpoint.EndpointConfigName = input.EndpointConfigName ?? "";
      world.endpoint.ProductionVariants = variants(config.ProductionVariants);
      world.endpoint.ShadowProductionVariants = config.ShadowProductionVariants
        ? variants(config.ShadowProductionVariants)
        : undefined;
    };
    return {};
  });
  sagemaker
    .on(UpdateEndpointWeightsAndCapacitiesCommand)
    .callsFake((input: UpdateEndpointWeightsAndCapacitiesInput) => {
      if (world.endpoint.EndpointStatus !== "InService")
        throw validation("Cannot update in-progress endpoint");
      for (const d of input.DesiredWeightsAndCapacities ?? []) {
        const v = world.endpoint.ProductionVariants.find((p) => p.VariantName === d.VariantName);
        if (!v) throw validation(`The variant name(s) [${d.VariantName}] is/are not present`);
        v.DesiredWeight = d.DesiredWeight ?? v.DesiredWeight;
      }
      world.endpoint.EndpointStatus = "Updating";
      world.next = () => {
        for (const v of world.endpoint.ProductionVariants) v.CurrentWeight = v.DesiredWeight;
      };
      return {};
    });
  sagemaker.on(DeleteEndpointConfigCommand).callsFake((input: { EndpointConfigName?: string }) => {
    delete world.configs[input.EndpointConfigName ?? ""];
    return {};
  });
  sagemaker.on(DeleteModelCommand).callsFake((input: { ModelName?: string }) => {
    delete world.models[input.ModelName ?? ""];
    return {};
  });
}
