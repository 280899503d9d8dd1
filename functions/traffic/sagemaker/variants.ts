import type { ProductionVariant } from "@aws-sdk/client-sagemaker";
import { z } from "zod";
import type { SageMakerSettings } from "../settings.ts";

/**
 * The production variants a rollout puts in endpoint configs: the stable one as the serving
 * config has it (stored on the item, so JSON), the candidate sized like it, and either as the
 * input of `CreateEndpointConfig`.
 */

/** A production variant as `DescribeEndpointConfig` returns it (JSON: it is stored on the item). */
export const VariantSchema = z
  .object({ VariantName: z.string(), ModelName: z.string().optional() })
  .catchall(z.unknown());

export type Variant = z.infer<typeof VariantSchema>;

/**
 * The candidate's variant: `modelName` on the settings' instances, or else the stable variant's
 * (its instance type, count and volume, or its serverless config).
 */
export function candidateVariant(
  stable: Variant,
  variantName: string,
  modelName: string,
  settings: Pick<SageMakerSettings, "instanceType" | "initialInstanceCount">,
): Variant {
  const { InstanceType, InitialInstanceCount, ServerlessConfig, VolumeSizeInGB } = stable as Variant &
    ProductionVariant;
  const variant: Record<string, unknown> = { VariantName: variantName, ModelName: modelName };
  const instanceType = settings.instanceType ?? InstanceType;
  if (instanceType) {
    variant.InstanceType = instanceType;
    variant.InitialInstanceCount = settings.initialInstanceCount ?? InitialInstanceCount ?? 1;
    if (VolumeSizeInGB !== undefined) variant.VolumeSizeInGB = VolumeSizeInGB;
  } else if (ServerlessConfig) variant.ServerlessConfig = ServerlessConfig;
  return variant as Variant;
}

/** A stored variant as a `CreateEndpointConfig` production (or shadow) variant with `weight`. */
export function variantInput(variant: Variant, weight: number): ProductionVariant {
  return { ...(variant as ProductionVariant), InitialVariantWeight: weight };
}

/** An SDK output as plain JSON (dates become strings, undefined fields go). */
export function json<T>(value: T): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}
