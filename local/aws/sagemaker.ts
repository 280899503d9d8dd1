import type { Clock } from "../../functions/clock.ts";
import { AwsApiError } from "./protocol.ts";

/**
 * A local SageMaker: models, endpoint configs and real-time endpoints, with what the SageMaker
 * target and the model router call. An endpoint change (`CreateEndpoint`, `UpdateEndpoint`,
 * `UpdateEndpointWeightsAndCapacities`) puts it in `Creating`/`Updating` for `updateSeconds` of the
 * runtime's clock (virtual time in the embedded runtime), then `InService`; while an update runs
 * the endpoint keeps serving its previous config, as SageMaker does. A model is its container
 * image (or model package): {@link LocalSageMaker.serve} maps it to a local HTTP server that
 * answers `POST /invocations`, the SageMaker container contract. An update to a config whose model
 * has no server fails like a container that does not start: the endpoint goes back to the config
 * it served, `InService`, with a `FailureReason` (a new endpoint ends `Failed`).
 */

/** A production or shadow variant as `CreateEndpointConfig` receives it. */
export interface VariantInput {
  VariantName: string;
  ModelName: string;
  InitialVariantWeight?: number;
  InitialInstanceCount?: number;
  InstanceType?: string;
  [field: string]: unknown;
}

export interface EndpointConfig {
  EndpointConfigName: string;
  EndpointConfigArn: string;
  ProductionVariants: VariantInput[];
  ShadowProductionVariants?: VariantInput[];
  KmsKeyId?: string;
  DataCaptureConfig?: unknown;
  CreationTime: number;
}

export interface Model {
  ModelName: string;
  ModelArn: string;
  ExecutionRoleArn?: string;
  /** The container image, or the model package ARN: what {@link LocalSageMaker.serve} maps. */
  artifact: string;
  PrimaryContainer?: unknown;
  CreationTime: number;
}

/** A variant of an endpoint as `DescribeEndpoint` shows it. */
export interface VariantStatus {
  VariantName: string;
  ModelName: string;
  CurrentWeight: number;
  DesiredWeight: number;
  CurrentInstanceCount: number;
  DesiredInstanceCount: number;
}

interface Pending {
  readonly readyAt: number;
  /** The config the endpoint moves to; absent for a weights update. */
  readonly config?: string;
}

interface Endpoint {
  name: string;
  arn: string;
  status: "Creating" | "Updating" | "InService" | "Failed";
  /** The config served; undefined while a new endpoint is being created. */
  config: string | undefined;
  variants: VariantStatus[];
  shadows: VariantStatus[];
  pending: Pending | undefined;
  failureReason: string | undefined;
  created: number;
  modified: number;
}

/** Where a variant's answer comes from: the model's server. */
export interface ResolvedVariant {
  readonly endpoint: string;
  readonly variant: string;
  readonly url: string;
}

export interface LocalSageMakerOptions {
  clock: Clock;
  /** How long an endpoint change takes (seconds of the clock); 60 by default. */
  updateSeconds?: number;
  /** Container image (or model package ARN) → the URL of the server that serves it. */
  images?: Record<string, string>;
  region?: string;
  account?: string;
}

export class LocalSageMaker {
  readonly #clock: Clock;
  readonly #updateMs: number;
  readonly #images = new Map<string, string>();
  readonly #models = new Map<string, Model>();
  readonly #configs = new Map<string, EndpointConfig>();
  readonly #endpoints = new Map<string, Endpoint>();
  readonly #arnPrefix: string;

  constructor(options: LocalSageMakerOptions) {
    this.#clock = options.clock;
    const seconds = options.updateSeconds ?? 60;
    if (!Number.isFinite(seconds) || seconds < 0) {
      throw new RangeError(`LocalSageMaker: updateSeconds must be a number ≥ 0, got ${seconds}`);
    }
    this.#updateMs = seconds * 1000;
    for (const [image, url] of Object.entries(options.images ?? {})) this.serve(image, url);
    this.#arnPrefix = `arn:aws:sagemaker:${options.region ?? "local"}:${options.account ?? "000000000000"}`;
  }

  /** Serves the models of `image` (a container image or model package ARN) from `url`. */
  serve(image: string, url: string): void {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new RangeError(`LocalSageMaker: the server of image ${image} must be a URL, got ${url}`);
    }
    this.#images.set(image, parsed.href.replace(/\/$/, ""));
  }

  createModel(input: {
    ModelName: string;
    ExecutionRoleArn?: string;
    PrimaryContainer?: { Image?: string; ModelPackageName?: string };
  }): { ModelArn: string } {
    const arn = `${this.#arnPrefix}:model/${input.ModelName.toLowerCase()}`;
    if (this.#models.has(input.ModelName)) {
      throw validation(`Cannot create already existing model "${arn}".`);
    }
    const artifact = input.PrimaryContainer?.Image ?? input.PrimaryContainer?.ModelPackageName;
    if (artifact === undefined) {
      throw validation(
        `Model ${input.ModelName}: PrimaryContainer needs an Image or a ModelPackageName (Containers are not supported locally).`,
      );
    }
    this.#models.set(input.ModelName, {
      ModelName: input.ModelName,
      ModelArn: arn,
      ...(input.ExecutionRoleArn ? { ExecutionRoleArn: input.ExecutionRoleArn } : {}),
      artifact,
      PrimaryContainer: input.PrimaryContainer,
      CreationTime: this.#clock.now(),
    });
    return { ModelArn: arn };
  }

  describeModel(name: string): Model {
    const model = this.#models.get(name);
    if (!model) throw validation(`Could not find model "${this.#arnPrefix}:model/${name.toLowerCase()}".`);
    return model;
  }

  deleteModel(name: string): void {
    this.describeModel(name);
    this.#models.delete(name);
  }

  createEndpointConfig(input: Omit<EndpointConfig, "EndpointConfigArn" | "CreationTime">): {
    EndpointConfigArn: string;
  } {
    const name = input.EndpointConfigName;
    const arn = `${this.#arnPrefix}:endpoint-config/${name.toLowerCase()}`;
    if (this.#configs.has(name)) {
      throw validation(`Cannot create already existing endpoint configuration "${arn}".`);
    }
    const all = [...input.ProductionVariants, ...(input.ShadowProductionVariants ?? [])];
    if (input.ProductionVariants.length === 0) {
      throw validation(`Endpoint configuration ${name}: ProductionVariants must have at least 1 item.`);
    }
    const names = new Set<string>();
    for (const variant of all) {
      if (names.has(variant.VariantName)) {
        throw validation(
          `Endpoint configuration ${name}: the variant name ${variant.VariantName} appears more than once.`,
        );
      }
      names.add(variant.VariantName);
      this.describeModel(variant.ModelName);
    }
    if ((input.ShadowProductionVariants ?? []).length > 0 && input.ProductionVariants.length !== 1) {
      throw validation(
        `Endpoint configuration ${name}: a shadow variant needs exactly one production variant, got ${input.ProductionVariants.length}.`,
      );
    }
    this.#configs.set(name, { ...input, EndpointConfigArn: arn, CreationTime: this.#clock.now() });
    return { EndpointConfigArn: arn };
  }

  describeEndpointConfig(name: string): EndpointConfig {
    const config = this.#configs.get(name);
    if (!config) throw validation(`Could not find endpoint configuration "${name}".`);
    return config;
  }

  deleteEndpointConfig(name: string): void {
    this.describeEndpointConfig(name);
    this.#configs.delete(name);
  }

  createEndpoint(input: { EndpointName: string; EndpointConfigName: string }): { EndpointArn: string } {
    const arn = `${this.#arnPrefix}:endpoint/${input.EndpointName.toLowerCase()}`;
    if (this.#endpoints.has(input.EndpointName)) {
      throw validation(`Cannot create already existing endpoint "${arn}".`);
    }
    this.describeEndpointConfig(input.EndpointConfigName);
    const now = this.#clock.now();
    this.#endpoints.set(input.EndpointName, {
      name: input.EndpointName,
      arn,
      status: "Creating",
      config: undefined,
      variants: [],
      shadows: [],
      pending: { readyAt: now + this.#updateMs, config: input.EndpointConfigName },
      failureReason: undefined,
      created: now,
      modified: now,
    });
    return { EndpointArn: arn };
  }

  describeEndpoint(name: string): Endpoint {
    const endpoint = this.#endpoint(name);
    this.#settle(endpoint);
    return endpoint;
  }

  updateEndpoint(input: { EndpointName: string; EndpointConfigName: string }): { EndpointArn: string } {
    const endpoint = this.#inService(input.EndpointName);
    this.describeEndpointConfig(input.EndpointConfigName);
    const now = this.#clock.now();
    endpoint.status = "Updating";
    endpoint.failureReason = undefined;
    endpoint.pending = { readyAt: now + this.#updateMs, config: input.EndpointConfigName };
    endpoint.modified = now;
    return { EndpointArn: endpoint.arn };
  }

  updateWeights(input: {
    EndpointName: string;
    DesiredWeightsAndCapacities: {
      VariantName: string;
      DesiredWeight?: number;
      DesiredInstanceCount?: number;
    }[];
  }): { EndpointArn: string } {
    const endpoint = this.#inService(input.EndpointName);
    const changes = input.DesiredWeightsAndCapacities;
    for (const change of changes) {
      if (!endpoint.variants.some((v) => v.VariantName === change.VariantName)) {
        throw validation(
          `The variant(s) "[${change.VariantName}]" is/are not present in the endpoint "${endpoint.arn}".`,
        );
      }
      if (change.DesiredWeight !== undefined && !(change.DesiredWeight >= 0)) {
        throw validation(
          `Variant ${change.VariantName}: DesiredWeight must be ≥ 0, got ${change.DesiredWeight}.`,
        );
      }
    }
    for (const change of changes) {
      const variant = endpoint.variants.find((v) => v.VariantName === change.VariantName) as VariantStatus;
      if (change.DesiredWeight !== undefined) variant.DesiredWeight = change.DesiredWeight;
      if (change.DesiredInstanceCount !== undefined)
        variant.DesiredInstanceCount = change.DesiredInstanceCount;
    }
    const now = this.#clock.now();
    endpoint.status = "Updating";
    endpoint.pending = { readyAt: now + this.#updateMs };
    endpoint.modified = now;
    return { EndpointArn: endpoint.arn };
  }

  /**
   * The variant that answers an `InvokeEndpoint`: `target` if given (a production variant), else
   * one drawn by the variants' weights; and the shadow variants the request is copied to.
   */
  resolve(
    name: string,
    target: string | undefined,
    random: () => number = Math.random,
  ): { answer: ResolvedVariant; shadows: ResolvedVariant[] } {
    const endpoint = this.#endpoints.get(name);
    if (!endpoint) throw validation(`Endpoint ${name} of account local not found.`);
    this.#settle(endpoint);
    if (endpoint.config === undefined) {
      throw validation(`Endpoint ${name} is ${endpoint.status}: it has no variant to invoke yet.`);
    }
    let chosen: VariantStatus | undefined;
    if (target !== undefined) {
      chosen = endpoint.variants.find((v) => v.VariantName === target);
      if (!chosen) {
        throw validation(
          `Target variant ${target} is not a production variant of endpoint ${name} (it has ${endpoint.variants.map((v) => v.VariantName).join(", ")}).`,
        );
      }
    } else {
      const total = endpoint.variants.reduce((sum, v) => sum + v.CurrentWeight, 0);
      const draw = random() * total;
      let cumulative = 0;
      chosen = endpoint.variants.find((v) => {
        cumulative += v.CurrentWeight;
        return v.CurrentWeight > 0 && draw < cumulative;
      });
      if (!chosen) throw validation(`Endpoint ${name} has no production variant with a weight above 0.`);
    }
    const production = endpoint.variants.reduce((sum, v) => sum + v.CurrentWeight, 0);
    const shadows = endpoint.shadows
      .filter((s) => production > 0 && random() < s.CurrentWeight / production)
      .map((s) => this.#served(name, s));
    return { answer: this.#served(name, chosen), shadows };
  }

  #served(endpoint: string, variant: VariantStatus): ResolvedVariant {
    const model = this.#models.get(variant.ModelName);
    const url = model ? this.#images.get(model.artifact) : undefined;
    if (!url) {
      throw new AwsApiError(
        "ModelError",
        `Variant ${variant.VariantName} of endpoint ${endpoint}: model ${variant.ModelName} is no longer served`,
        424,
      );
    }
    return { endpoint, variant: variant.VariantName, url };
  }

  #endpoint(name: string): Endpoint {
    const endpoint = this.#endpoints.get(name);
    if (!endpoint) throw validation(`Could not find endpoint "${name}".`);
    return endpoint;
  }

  #inService(name: string): Endpoint {
    const endpoint = this.describeEndpoint(name);
    if (endpoint.status !== "InService") {
      throw validation(`Cannot update in-progress endpoint "${endpoint.arn}".`);
    }
    return endpoint;
  }

  /** Ends the change in progress once its time has come. */
  #settle(endpoint: Endpoint): void {
    const pending = endpoint.pending;
    if (!pending || this.#clock.now() < pending.readyAt) return;
    endpoint.pending = undefined;
    endpoint.modified = pending.readyAt;
    if (pending.config === undefined) {
      for (const v of endpoint.variants) {
        v.CurrentWeight = v.DesiredWeight;
        v.CurrentInstanceCount = v.DesiredInstanceCount;
      }
      endpoint.status = "InService";
      return;
    }
    const config = this.#configs.get(pending.config);
    const variants = [...(config?.ProductionVariants ?? []), ...(config?.ShadowProductionVariants ?? [])];
    const unserved = variants.find((v) => {
      const model = this.#models.get(v.ModelName);
      return !model || !this.#images.has(model.artifact);
    });
    if (!config || unserved) {
      endpoint.failureReason = !config
        ? `The endpoint configuration ${pending.config} was deleted during the update.`
        : `The primary container for production variant ${unserved?.VariantName} did not pass the ping health check: model ${unserved?.ModelName} has no local server (LocalSageMaker.serve).`;
      endpoint.status = endpoint.config === undefined ? "Failed" : "InService";
      return;
    }
    endpoint.config = config.EndpointConfigName;
    endpoint.variants = config.ProductionVariants.map(status);
    endpoint.shadows = (config.ShadowProductionVariants ?? []).map(status);
    endpoint.failureReason = undefined;
    endpoint.status = "InService";
  }
}

function status(v: VariantInput): VariantStatus {
  const weight = v.InitialVariantWeight ?? 1;
  const count = v.InitialInstanceCount ?? 1;
  return {
    VariantName: v.VariantName,
    ModelName: v.ModelName,
    CurrentWeight: weight,
    DesiredWeight: weight,
    CurrentInstanceCount: count,
    DesiredInstanceCount: count,
  };
}

function validation(message: string): AwsApiError {
  return new AwsApiError("ValidationException", message);
}
