import {
  CreateEndpointConfigCommand,
  type CreateEndpointConfigInput,
  DeleteEndpointConfigCommand,
  DescribeEndpointConfigCommand,
  type SageMakerClient,
} from "@aws-sdk/client-sagemaker";
import { TargetConfigurationError } from "../errors.ts";
import { createOnce, deleteIfPresent } from "./resources.ts";
import { json, type Variant } from "./variants.ts";

/**
 * The endpoint's configs: the serving one read once, at `prepare` (its stable variant, and what
 * every config created copies from it: the KMS key and the data capture), and the ones the
 * rollout creates on its way (both variants, a shadow, the candidate alone) and deletes after.
 */

/** The variants of a config this target creates. */
export type ConfigVariants = Pick<
  CreateEndpointConfigInput,
  "ProductionVariants" | "ShadowProductionVariants"
>;

/** The serving config's stable variant and what every config created copies from it. */
export interface ServingConfig {
  readonly variant: Variant;
  /** `KmsKeyId`, `DataCaptureConfig`. */
  readonly extras: Record<string, unknown>;
}

export class EndpointConfigs {
  constructor(
    private readonly sagemaker: SageMakerClient,
    private readonly endpointName: string,
  ) {}

  /** Reads config `name`: its variant `variantName` (the one the endpoint serves) and its extras. */
  async serving(name: string, variantName: string | undefined): Promise<ServingConfig> {
    const config = await this.sagemaker.send(new DescribeEndpointConfigCommand({ EndpointConfigName: name }));
    const stable = (config.ProductionVariants ?? []).find((v) => v.VariantName === variantName);
    if (!stable) {
      throw new TargetConfigurationError(
        `endpoint config ${name} has no variant ${variantName} that endpoint ${this.endpointName} serves`,
      );
    }
    const extras: Record<string, unknown> = {};
    if (config.KmsKeyId) extras.KmsKeyId = config.KmsKeyId;
    if (config.DataCaptureConfig) extras.DataCaptureConfig = json(config.DataCaptureConfig);
    return { variant: json(stable) as Variant, extras };
  }

  /** Creates config `name` with `variants` and the serving config's extras, unless a first attempt did. */
  async create(name: string, variants: ConfigVariants, extras: Record<string, unknown>): Promise<void> {
    await createOnce(
      () =>
        this.sagemaker.send(
          new CreateEndpointConfigCommand({
            EndpointConfigName: name,
            ...variants,
            ...(extras as Partial<CreateEndpointConfigInput>),
          }),
        ),
      `endpoint config ${name}`,
    );
  }

  async delete(name: string): Promise<void> {
    await deleteIfPresent(() =>
      this.sagemaker.send(new DeleteEndpointConfigCommand({ EndpointConfigName: name })),
    );
  }
}
