import { createHash } from "node:crypto";
import {
  type ContainerDefinition,
  CreateEndpointConfigCommand,
  type CreateEndpointConfigInput,
  CreateModelCommand,
  DeleteEndpointConfigCommand,
  DeleteModelCommand,
  DescribeEndpointCommand,
  DescribeEndpointConfigCommand,
  type DescribeEndpointOutput,
  type ProductionVariant,
  type SageMakerClient,
  UpdateEndpointCommand,
  UpdateEndpointWeightsAndCapacitiesCommand,
} from "@aws-sdk/client-sagemaker";
import { z } from "zod";
import { awsErrorName } from "../aws-errors.ts";
import { pushedArtifact } from "./artifact.ts";
import { RouterStateError, TargetConfigurationError, TargetNotReadyError } from "./errors.ts";
import type {
  AbortOptions,
  CandidateArtifact,
  Clock,
  HeaderRoute,
  HeaderRouteChange,
  MirrorRoute,
  MirrorRouteChange,
  ObservedWeights,
  Prepared,
  PromoteOptions,
  Pushed,
  Readiness,
  RouterState,
  TrafficRouter,
  WeightChange,
} from "./port.ts";
import { parseTargetSettings, type SageMakerSettings, SageMakerSettingsSchema } from "./settings.ts";
import {
  appliedWeight,
  parseRouterState,
  requirePercent,
  SHARE_EPSILON,
  secondsUntil,
  sharesMatch,
} from "./state.ts";

/**
 * A SageMaker real-time endpoint (production variants of one endpoint).
 *
 * - The candidate is a model created from the pushed model package (or image) with `CreateModel`,
 *   added as a second production variant with weight 0 in a new endpoint config (`CreateEndpointConfig`
 *   copies the stable variant, the data capture and the KMS key of the serving config), and the
 *   endpoint moved to it with `UpdateEndpoint`; readiness polls `DescribeEndpoint` until `InService`.
 * - Weights are `UpdateEndpointWeightsAndCapacities` (`DesiredWeight` per variant, the percentages
 *   themselves). That call puts the endpoint in `Updating` too, so readiness is polled after it.
 * - A mirror step moves the endpoint to a config whose only production variant is the stable one
 *   and whose shadow variant (`ShadowProductionVariants`) is the candidate, weighted at
 *   `percentage`/100 of the production variant: SageMaker copies that share of the requests to the
 *   shadow and discards its answers. A shadow needs the endpoint's only production variant, so it
 *   is refused while the candidate has live traffic.
 * - Promotion sends all the traffic to the candidate at once (weights, so an abort inside the
 *   scale-down window is a weight change too); the scale-down moves the endpoint to a config with
 *   the candidate alone, and only once that config is `InService` deletes the configs this rollout
 *   created. The previous model and its config are kept: an abort after promotion moves the
 *   endpoint back to them, and the first release's config may belong to CloudFormation.
 *
 * Every resource this target creates is named `<endpoint>-r-<hash of the artifact and the stable
 * config>…`, so a retried call finds what its first attempt created instead of creating it twice.
 * Drift is data: weights that differ from what this rollout set are a `drift` outcome.
 */

/** A production variant as `DescribeEndpointConfig` returns it (JSON: it is stored on the item). */
const VariantSchema = z
  .object({ VariantName: z.string(), ModelName: z.string().optional() })
  .catchall(z.unknown());

/** What this target remembers between calls; the caller stores it on the rollout item. */
export const SageMakerStateSchema = z
  .object({
    type: z.literal("sagemaker"),
    phase: z.enum(["prepared", "deploying", "ready", "promoted", "aborted"]),
    /** The endpoint config serving the stable variant (before the rollout; after it, the new one). */
    stableConfig: z.string(),
    stableVariant: VariantSchema,
    /** `KmsKeyId`, `DataCaptureConfig` of the serving config, copied into every config created. */
    configExtras: z.record(z.string(), z.unknown()),
    candidate: z
      .object({
        hash: z.string(),
        modelName: z.string(),
        variant: VariantSchema,
        /** The config with both production variants (stable, candidate at 0). */
        deployConfig: z.string(),
      })
      .strict()
      .optional(),
    /** Percent of the requests this rollout last sent to the candidate. */
    canaryWeight: z.number().int().min(0).max(100),
    mirror: z.object({ name: z.string(), percentage: z.number(), config: z.string() }).strict().optional(),
    /** An endpoint update in progress, polled by `checkReadiness`. */
    pending: z
      .object({ what: z.string(), config: z.string().optional(), deadlineAt: z.number() })
      .strict()
      .optional(),
    /** Endpoint configs and models this rollout created (deleted once they serve nothing). */
    created: z.object({ configs: z.array(z.string()), models: z.array(z.string()) }).strict(),
    /** After promotion: the side it replaced, for an abort. */
    previous: z.object({ config: z.string(), variant: VariantSchema }).strict().optional(),
    /** After promotion or abort: when the replaced side goes, and what the endpoint ends on. */
    scaleDown: z
      .object({ at: z.number(), config: z.string(), done: z.boolean(), deadlineAt: z.number().optional() })
      .strict()
      .optional(),
    abortDeadlineAt: z.number().optional(),
  })
  .strict();

export type SageMakerState = z.infer<typeof SageMakerStateSchema>;
type Variant = z.infer<typeof VariantSchema>;

/** The SDK client this adapter drives. */
export interface SageMakerClients {
  readonly sagemaker: SageMakerClient;
}

/** Drives the production and shadow variants of one endpoint. */
export class SageMakerRouter implements TrafficRouter {
  readonly type = "sagemaker" as const;

  artifactFor(pushed: Pushed): CandidateArtifact {
    return pushedArtifact(pushed);
  }
  readonly #settings: SageMakerSettings;

  constructor(
    private readonly clients: SageMakerClients,
    settings: unknown,
    private readonly clock: Clock,
  ) {
    this.#settings = parseTargetSettings(SageMakerSettingsSchema, settings, "sagemaker settings");
  }

  async prepare(): Promise<Prepared> {
    const endpoint = await this.#describe();
    if (endpoint.EndpointStatus !== "InService") {
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} is ${endpoint.EndpointStatus}: a rollout starts from an InService endpoint`,
      );
    }
    const shadows = endpoint.ShadowProductionVariants ?? [];
    if (shadows.length > 0) {
      throw new TargetConfigurationError(
        `endpoint ${this.#name()} already mirrors requests to shadow variant ${shadows.map((v) => v.VariantName).join(", ")}; ` +
          "finish or abort the rollout that set it first",
      );
    }
    const variants = endpoint.ProductionVariants ?? [];
    const weighted = variants.filter((v) => weightOf(v) > 0);
    if (weighted.length !== 1) {
      throw new TargetConfigurationError(
        weighted.length === 0
          ? `endpoint ${this.#name()} has no production variant with traffic`
          : `endpoint ${this.#name()} already splits traffic (${describeVariants(endpoint)}); finish or abort the rollout that set it first`,
      );
    }
    const configName = endpoint.EndpointConfigName ?? "";
    const config = await this.clients.sagemaker.send(
      new DescribeEndpointConfigCommand({ EndpointConfigName: configName }),
    );
    const stable = (config.ProductionVariants ?? []).find((v) => v.VariantName === weighted[0]?.VariantName);
    if (!stable) {
      throw new TargetConfigurationError(
        `endpoint config ${configName} has no variant ${weighted[0]?.VariantName} that endpoint ${this.#name()} serves`,
      );
    }
    const extras: Record<string, unknown> = {};
    if (config.KmsKeyId) extras.KmsKeyId = config.KmsKeyId;
    if (config.DataCaptureConfig) extras.DataCaptureConfig = json(config.DataCaptureConfig);
    const state: SageMakerState = {
      type: "sagemaker",
      phase: "prepared",
      stableConfig: configName,
      stableVariant: json(stable) as Variant,
      configExtras: extras,
      canaryWeight: 0,
      created: { configs: [], models: [] },
    };
    return {
      state,
      firstRelease: false,
      stable: `endpoint ${this.#name()} → variant ${stable.VariantName} (model ${stable.ModelName}, config ${configName})`,
    };
  }

  async deployCandidate(input: RouterState, artifact: CandidateArtifact): Promise<RouterState> {
    const state = this.#state(input);
    if (!["prepared", "deploying", "ready"].includes(state.phase)) {
      throw new RouterStateError(`cannot deploy a candidate in phase ${state.phase}`);
    }
    let container: ContainerDefinition;
    if ("modelPackage" in artifact) container = { ModelPackageName: artifact.modelPackage };
    else if ("image" in artifact) container = { Image: artifact.image };
    else {
      throw new TargetConfigurationError(
        `endpoint ${this.#name()} runs a model: give artifact.modelPackage (a model package ARN) or artifact.image`,
      );
    }
    const hash = createHash("sha256")
      .update(JSON.stringify([container, state.stableConfig]))
      .digest("hex")
      .slice(0, 10);
    const modelName = `${this.#prefix()}${hash}`;
    await this.#ignoreExisting(
      () =>
        this.clients.sagemaker.send(
          new CreateModelCommand({
            ModelName: modelName,
            ExecutionRoleArn: this.#settings.executionRoleArn,
            PrimaryContainer: container,
          }),
        ),
      `model ${modelName}`,
    );
    const variant = this.#candidateVariant(state.stableVariant, `candidate-${hash}`, modelName);
    const deployConfig = `${this.#prefix()}${hash}-d`;
    await this.#createConfig(state, deployConfig, {
      ProductionVariants: [variantInput(state.stableVariant, 1), variantInput(variant, 0)],
    });
    const next: SageMakerState = {
      ...state,
      phase: "deploying",
      candidate: { hash, modelName, variant, deployConfig },
      canaryWeight: 0,
      created: {
        configs: union(state.created.configs, [deployConfig]),
        models: union(state.created.models, [modelName]),
      },
    };
    return this.#update(next, deployConfig, "the candidate variant");
  }

  async checkReadiness(input: RouterState): Promise<Readiness> {
    const state = this.#state(input);
    const pending = state.pending;
    if (!pending) return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
    const endpoint = await this.#describe();
    const status = endpoint.EndpointStatus;
    if (status === "Failed" || status === "UpdateRollbackFailed") {
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} is ${status} (${pending.what}): ${endpoint.FailureReason ?? "no failure reason given"}`,
      );
    }
    if (status !== "InService") {
      return this.#notYet(state, pending.deadlineAt, `${pending.what}: endpoint ${status}`);
    }
    if (pending.config !== undefined && endpoint.EndpointConfigName !== pending.config) {
      // A failed update returns the endpoint to its previous config, InService, with a reason.
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} did not take config ${pending.config} (${pending.what}): it serves ` +
          `${endpoint.EndpointConfigName}: ${endpoint.FailureReason ?? "changed outside the rollout"}`,
      );
    }
    const next: SageMakerState = {
      ...state,
      pending: undefined,
      phase: state.phase === "deploying" ? "ready" : state.phase,
    };
    return {
      ready: true,
      state: next,
      message: `endpoint ${this.#name()} is InService (${pending.what}; ${describeVariants(endpoint)})`,
    };
  }

  async readWeights(input: RouterState): Promise<ObservedWeights> {
    const state = this.#state(input);
    return this.#observe(state, await this.#describe());
  }

  async setWeight(
    input: RouterState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const state = this.#state(input);
    requirePercent(percent, "weight");
    const candidate = state.candidate;
    if (state.phase !== "ready" || !candidate) {
      throw new RouterStateError(
        `cannot send traffic to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const endpoint = await this.#describe();
    const observed = this.#observe(state, endpoint);
    const names = (endpoint.ProductionVariants ?? []).map((v) => v.VariantName);
    if (state.mirror && !names.includes(candidate.variant.VariantName)) {
      throw new RouterStateError(
        `the candidate is the shadow of mirror route "${state.mirror.name}": remove the mirror route ` +
          "(setMirrorRoute with only its name) before giving the candidate live traffic",
      );
    }
    // A retry after the write landed: the weights already are what this call sets.
    if (names.includes(candidate.variant.VariantName) && matches(observed, percent)) {
      const next: SageMakerState = { ...state, canaryWeight: percent };
      return {
        outcome: "applied",
        state: next,
        weights: { ...observed, expectedCanary: percent, drift: false },
      };
    }
    if (observed.drift && !options.overwriteDrift) {
      return {
        outcome: "drift",
        state,
        weights: observed,
        message:
          `endpoint ${this.#name()} changed outside the rollout: the candidate receives ` +
          `${round(observed.canary)}% instead of ${state.canaryWeight}% (${observed.detail})`,
      };
    }
    this.#requireInService(endpoint, `setting the weight to ${percent}%`);
    for (const name of [state.stableVariant.VariantName, candidate.variant.VariantName]) {
      if (!names.includes(name)) {
        throw new TargetConfigurationError(
          `endpoint ${this.#name()} no longer has variant ${name} (it serves config ${endpoint.EndpointConfigName}, changed outside the rollout)`,
        );
      }
    }
    await this.#weights(endpoint, {
      [candidate.variant.VariantName]: percent,
      [state.stableVariant.VariantName]: 100 - percent,
    });
    const next: SageMakerState = {
      ...state,
      canaryWeight: percent,
      pending: { what: `weight ${percent}%`, deadlineAt: this.#deadline() },
    };
    return appliedWeight(
      next,
      percent,
      `${state.stableVariant.VariantName}=${100 - percent}, ${candidate.variant.VariantName}=${percent}`,
    );
  }

  async setMirrorRoute(input: RouterState, route: MirrorRoute): Promise<MirrorRouteChange> {
    const state = this.#state(input);
    const candidate = state.candidate;
    if (state.phase !== "ready" || !candidate) {
      throw new RouterStateError(
        `cannot mirror requests to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    requirePercent(route.percentage, "mirror percentage");
    const endpoint = await this.#describe();
    if (route.percentage === 0) {
      if (!state.mirror) {
        return {
          state,
          message: `no mirror route ${route.name} on endpoint ${this.#name()}: nothing to remove`,
        };
      }
      const next = await this.#update(
        { ...state, mirror: undefined },
        candidate.deployConfig,
        `removing mirror route ${route.name}`,
        endpoint,
      );
      return {
        state: next,
        message: `mirror route ${route.name} removed: endpoint ${this.#name()} back to config ${candidate.deployConfig} (candidate variant at 0%)`,
      };
    }
    const observed = this.#observe(state, endpoint);
    if (state.canaryWeight > 0 || observed.canary > SHARE_EPSILON) {
      throw new RouterStateError(
        `endpoint ${this.#name()} can mirror only while the candidate has no live traffic (it has ${round(observed.canary)}%): ` +
          "a shadow variant needs the endpoint's only production variant; set the weight to 0 first",
      );
    }
    const config = `${this.#prefix()}${candidate.hash}-m${route.percentage}`;
    await this.#createConfig(state, config, {
      ProductionVariants: [variantInput(state.stableVariant, 1)],
      ShadowProductionVariants: [variantInput(candidate.variant, route.percentage / 100)],
    });
    const next = await this.#update(
      {
        ...state,
        mirror: { name: route.name, percentage: route.percentage, config },
        created: { ...state.created, configs: union(state.created.configs, [config]) },
      },
      config,
      `mirror route ${route.name} (${route.percentage}%)`,
      endpoint,
    );
    const unmatched = route.match?.length
      ? `; SageMaker samples every invocation, the match (${JSON.stringify(route.match)}) is not evaluated`
      : "";
    return {
      state: next,
      message: `mirror route ${route.name}: ${route.percentage}% of the requests copied to shadow variant ${candidate.variant.VariantName} (config ${config})${unmatched}`,
    };
  }

  async setHeaderRoute(input: RouterState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    const variant = state.candidate?.variant.VariantName ?? "the candidate variant (once created)";
    return {
      state,
      applied: false,
      message: `a SageMaker endpoint cannot route by header (${route.name}): testers invoke ${this.#name()} with TargetVariant=${variant}`,
    };
  }

  async removeHeaderRoute(input: RouterState, name: string): Promise<HeaderRouteChange> {
    return {
      state: this.#state(input),
      applied: false,
      message: `no header routes on a SageMaker endpoint (${name})`,
    };
  }

  async promote(input: RouterState, options: PromoteOptions): Promise<RouterState> {
    const state = this.#state(input);
    if (state.phase === "promoted") return state;
    const candidate = state.candidate;
    if (state.phase !== "ready" || !candidate) {
      throw new RouterStateError(`cannot promote in phase ${state.phase}; the candidate must be ready`);
    }
    const endpoint = await this.#describe();
    const promotedConfig = `${this.#prefix()}${candidate.hash}-p`;
    const production = (endpoint.ProductionVariants ?? []).map((v) => v.VariantName);
    let next: SageMakerState = {
      ...state,
      phase: "promoted",
      stableConfig: promotedConfig,
      stableVariant: candidate.variant,
      previous: { config: state.stableConfig, variant: state.stableVariant },
      canaryWeight: 0,
      mirror: undefined,
      created: { ...state.created, configs: union(state.created.configs, [promotedConfig]) },
      scaleDown: {
        at: this.clock.now() + options.scaleDownDelaySeconds * 1000,
        config: promotedConfig,
        done: false,
      },
    };
    if (production.includes(candidate.variant.VariantName)) {
      const shares = shareOf(endpoint);
      if (Math.abs((shares.get(candidate.variant.VariantName) ?? 0) - 100) > SHARE_EPSILON) {
        this.#requireInService(endpoint, "promoting");
        await this.#weights(endpoint, { [candidate.variant.VariantName]: 100 });
      }
      return {
        ...next,
        pending: { what: "promotion (all traffic to the candidate)", deadlineAt: this.#deadline() },
      };
    }
    // The candidate is a shadow (promoted from a mirror step): it takes over in one update.
    await this.#createConfig(state, promotedConfig, {
      ProductionVariants: [variantInput(candidate.variant, 1)],
    });
    next = await this.#update(next, promotedConfig, "promotion (the candidate alone)", endpoint);
    return next;
  }

  async abort(input: RouterState, options: AbortOptions): Promise<Readiness> {
    const state = this.#state(input);
    const back =
      state.phase === "promoted" && state.previous
        ? state.previous
        : { config: state.stableConfig, variant: state.stableVariant };
    const deadlineAt =
      state.abortDeadlineAt ??
      this.clock.now() + (options.progressDeadlineSeconds ?? this.#settings.progressDeadlineSeconds) * 1000;
    const waiting: SageMakerState = { ...state, abortDeadlineAt: deadlineAt };
    const endpoint = await this.#describe();
    const status = endpoint.EndpointStatus;
    if (status === "Failed" || status === "UpdateRollbackFailed") {
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} is ${status}, the abort cannot put the traffic back: ${endpoint.FailureReason ?? "no failure reason given"}`,
      );
    }
    if (status !== "InService") return this.#notYet(waiting, deadlineAt, `abort: endpoint ${status}`);
    const shares = shareOf(endpoint);
    const name = back.variant.VariantName;
    if (Math.abs((shares.get(name) ?? 0) - 100) <= SHARE_EPSILON) {
      const next: SageMakerState = {
        ...state,
        phase: "aborted",
        stableConfig: back.config,
        stableVariant: back.variant,
        previous: undefined,
        canaryWeight: 0,
        mirror: undefined,
        pending: undefined,
        abortDeadlineAt: undefined,
        scaleDown: {
          at: this.clock.now() + options.abortScaleDownDelaySeconds * 1000,
          config: back.config,
          done: false,
        },
      };
      return {
        ready: true,
        state: next,
        message: `endpoint ${this.#name()}: all traffic on variant ${name} (${describeVariants(endpoint)})`,
      };
    }
    if (shares.has(name)) {
      await this.#weights(endpoint, { [name]: 100 });
      return this.#notYet(waiting, deadlineAt, `abort: all traffic back to variant ${name}`);
    }
    // The variant is gone from the endpoint (scaled down after a promotion): its config comes back.
    const next = await this.#update(waiting, back.config, `abort: back to config ${back.config}`, endpoint);
    return this.#notYet(next, deadlineAt, `abort: endpoint moving back to config ${back.config}`);
  }

  async scaleDown(input: RouterState): Promise<Readiness> {
    const state = this.#state(input);
    const plan = state.scaleDown;
    if (!plan || plan.done) return { ready: true, state, message: "nothing to scale down" };
    const now = this.clock.now();
    if (now < plan.at) {
      return {
        ready: false,
        state,
        retryAfterSeconds: secondsUntil(plan.at, now),
        message: `scale-down of endpoint ${this.#name()} in ${secondsUntil(plan.at, now)} s`,
      };
    }
    const endpoint = await this.#describe();
    const kept = state.stableVariant.VariantName;
    const shares = shareOf(endpoint);
    const others = [...shares.entries()].filter(([v, share]) => v !== kept && share > SHARE_EPSILON);
    if (others.length > 0) {
      const done: SageMakerState = { ...state, scaleDown: { ...plan, done: true } };
      return {
        ready: true,
        state: done,
        message: `endpoint ${this.#name()}: variant ${others.map(([v]) => v).join(", ")} carries traffic again; nothing scaled down`,
      };
    }
    const deadlineAt = plan.deadlineAt ?? now + this.#settings.progressDeadlineSeconds * 1000;
    const waiting: SageMakerState = { ...state, scaleDown: { ...plan, deadlineAt } };
    if (endpoint.EndpointStatus !== "InService") {
      if (endpoint.EndpointStatus === "Failed" || endpoint.EndpointStatus === "UpdateRollbackFailed") {
        throw new TargetNotReadyError(
          `endpoint ${this.#name()} is ${endpoint.EndpointStatus}: ${endpoint.FailureReason ?? "no failure reason given"}`,
        );
      }
      return this.#notYet(waiting, deadlineAt, `scale-down: endpoint ${endpoint.EndpointStatus}`);
    }
    if (endpoint.EndpointConfigName !== plan.config || (endpoint.ShadowProductionVariants ?? []).length > 0) {
      if (state.phase === "promoted") {
        // The candidate alone: created now, when it replaces the config with both variants.
        await this.#createConfig(state, plan.config, {
          ProductionVariants: [variantInput(state.stableVariant, 1)],
        });
      }
      const next = await this.#update(waiting, plan.config, `scale-down to config ${plan.config}`, endpoint);
      return this.#notYet(
        next,
        deadlineAt,
        `scale-down: endpoint moving to config ${plan.config} (${kept} alone)`,
      );
    }
    // The endpoint serves the final config alone: what this rollout created for the way there goes.
    const configs = state.created.configs.filter((c) => c !== plan.config);
    const models = state.phase === "aborted" ? state.created.models : [];
    for (const config of configs)
      await this.#delete(() => new DeleteEndpointConfigCommand({ EndpointConfigName: config }));
    for (const model of models) await this.#delete(() => new DeleteModelCommand({ ModelName: model }));
    const next: SageMakerState = {
      ...state,
      pending: undefined,
      scaleDown: { ...plan, done: true },
      created: {
        configs: state.created.configs.filter((c) => !configs.includes(c)),
        models: state.created.models.filter((m) => !models.includes(m)),
      },
    };
    const keptNote =
      state.phase === "promoted" && state.previous
        ? `; kept model ${state.previous.variant.ModelName} and config ${state.previous.config} for a return`
        : "";
    return {
      ready: true,
      state: next,
      message:
        `endpoint ${this.#name()} serves config ${plan.config} (variant ${kept} alone); deleted ` +
        `${[...configs, ...models].join(", ") || "nothing"}${keptNote}`,
    };
  }

  #state(input: unknown): SageMakerState {
    return parseRouterState(SageMakerStateSchema, input, "sagemaker");
  }

  #name(): string {
    return this.#settings.endpointName;
  }

  /** The prefix of every resource this target creates for the endpoint (≤ 43 characters). */
  #prefix(): string {
    return `${this.#settings.endpointName.slice(0, 40).replace(/-+$/, "")}-r-`;
  }

  #deadline(): number {
    return this.clock.now() + this.#settings.progressDeadlineSeconds * 1000;
  }

  #candidateVariant(stable: Variant, variantName: string, modelName: string): Variant {
    const { InstanceType, InitialInstanceCount, ServerlessConfig, VolumeSizeInGB } = stable as Variant &
      ProductionVariant;
    const variant: Record<string, unknown> = { VariantName: variantName, ModelName: modelName };
    const instanceType = this.#settings.instanceType ?? InstanceType;
    if (instanceType) {
      variant.InstanceType = instanceType;
      variant.InitialInstanceCount = this.#settings.initialInstanceCount ?? InitialInstanceCount ?? 1;
      if (VolumeSizeInGB !== undefined) variant.VolumeSizeInGB = VolumeSizeInGB;
    } else if (ServerlessConfig) variant.ServerlessConfig = ServerlessConfig;
    return variant as Variant;
  }

  async #describe(): Promise<DescribeEndpointOutput> {
    try {
      return await this.clients.sagemaker.send(new DescribeEndpointCommand({ EndpointName: this.#name() }));
    } catch (err) {
      if (awsErrorName(err) === "ValidationException" && /could not find/i.test((err as Error).message)) {
        throw new TargetConfigurationError(`endpoint ${this.#name()} does not exist`, { cause: err });
      }
      throw err;
    }
  }

  #requireInService(endpoint: DescribeEndpointOutput, doing: string): void {
    if (endpoint.EndpointStatus !== "InService") {
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} is ${endpoint.EndpointStatus}: ${doing} waits for InService`,
      );
    }
  }

  async #createConfig(
    state: SageMakerState,
    name: string,
    variants: Pick<CreateEndpointConfigInput, "ProductionVariants" | "ShadowProductionVariants">,
  ): Promise<void> {
    await this.#ignoreExisting(
      () =>
        this.clients.sagemaker.send(
          new CreateEndpointConfigCommand({
            EndpointConfigName: name,
            ...variants,
            ...(state.configExtras as Partial<CreateEndpointConfigInput>),
          }),
        ),
      `endpoint config ${name}`,
    );
  }

  /** `UpdateEndpoint` to `config` unless the endpoint serves it or is already moving to it. */
  async #update(
    state: SageMakerState,
    config: string,
    what: string,
    known?: DescribeEndpointOutput,
  ): Promise<SageMakerState> {
    const endpoint = known ?? (await this.#describe());
    const pending = { what, config, deadlineAt: this.#deadline() };
    const moving = endpoint.PendingDeploymentSummary?.EndpointConfigName === config;
    const serving = endpoint.EndpointConfigName === config && endpoint.EndpointStatus === "InService";
    if (!moving && !serving) {
      this.#requireInService(endpoint, what);
      await this.clients.sagemaker.send(
        new UpdateEndpointCommand({ EndpointName: this.#name(), EndpointConfigName: config }),
      );
    }
    return { ...state, pending };
  }

  /** `UpdateEndpointWeightsAndCapacities`: `weights` by variant, every other production variant 0. */
  async #weights(endpoint: DescribeEndpointOutput, weights: Record<string, number>): Promise<void> {
    const desired = (endpoint.ProductionVariants ?? []).map((v) => ({
      VariantName: v.VariantName ?? "",
      DesiredWeight: weights[v.VariantName ?? ""] ?? 0,
    }));
    await this.clients.sagemaker.send(
      new UpdateEndpointWeightsAndCapacitiesCommand({
        EndpointName: this.#name(),
        DesiredWeightsAndCapacities: desired,
      }),
    );
  }

  async #ignoreExisting(create: () => Promise<unknown>, what: string): Promise<void> {
    try {
      await create();
    } catch (err) {
      // A retry finds what its first attempt created (the names are derived from the artifact).
      if (awsErrorName(err) === "ValidationException" && /already exist/i.test((err as Error).message))
        return;
      throw new TargetNotReadyError(
        `creating ${what} was refused: ${awsErrorName(err) ?? "error"}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  async #delete(command: () => DeleteEndpointConfigCommand | DeleteModelCommand): Promise<void> {
    try {
      await this.clients.sagemaker.send(command() as DeleteModelCommand);
    } catch (err) {
      if (awsErrorName(err) === "ValidationException" && /could not find/i.test((err as Error).message))
        return;
      throw err;
    }
  }

  #observe(state: SageMakerState, endpoint: DescribeEndpointOutput): ObservedWeights {
    const shares = shareOf(endpoint);
    // After promotion the candidate is the stable variant: nothing is a canary any more.
    const candidate = state.phase === "promoted" ? undefined : state.candidate;
    const canary = candidate ? (shares.get(candidate.variant.VariantName) ?? 0) : 0;
    const stable = shares.get(state.stableVariant.VariantName) ?? 0;
    const drift = !sharesMatch(canary, stable, state.canaryWeight);
    return { canary, stable, expectedCanary: state.canaryWeight, drift, detail: describeVariants(endpoint) };
  }

  #notYet(state: SageMakerState, deadlineAt: number, progress: string): Readiness {
    if (this.clock.now() >= deadlineAt) {
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} was not ready before its progress deadline ` +
          `(${new Date(deadlineAt).toISOString()}): ${progress}`,
      );
    }
    return {
      ready: false,
      state,
      retryAfterSeconds: this.#settings.pollSeconds,
      message: `endpoint ${this.#name()}: ${progress}`,
    };
  }
}

/** A variant's weight: the one asked for (`DesiredWeight`) while an update runs, else the current one. */
function weightOf(v: { DesiredWeight?: number; CurrentWeight?: number }): number {
  return v.DesiredWeight ?? v.CurrentWeight ?? 0;
}

/** Percent of the requests each production variant receives. */
export function shareOf(endpoint: DescribeEndpointOutput): Map<string, number> {
  const variants = endpoint.ProductionVariants ?? [];
  const total = variants.reduce((sum, v) => sum + weightOf(v), 0);
  return new Map(variants.map((v) => [v.VariantName ?? "", total > 0 ? (100 * weightOf(v)) / total : 0]));
}

function matches(observed: ObservedWeights, percent: number): boolean {
  return sharesMatch(observed.canary, observed.stable, percent);
}

function describeVariants(endpoint: DescribeEndpointOutput): string {
  const production = (endpoint.ProductionVariants ?? []).map((v) => `${v.VariantName}=${weightOf(v)}`);
  const shadow = (endpoint.ShadowProductionVariants ?? []).map(
    (v) => `shadow ${v.VariantName}=${weightOf(v)}`,
  );
  return `config ${endpoint.EndpointConfigName}: ${[...production, ...shadow].join(", ") || "no variants"}`;
}

/** A stored variant as a `CreateEndpointConfig` production (or shadow) variant with `weight`. */
function variantInput(variant: Variant, weight: number): ProductionVariant {
  return { ...(variant as ProductionVariant), InitialVariantWeight: weight };
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}

/** An SDK output as plain JSON (dates become strings, undefined fields go). */
function json<T>(value: T): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

function round(value: number): string {
  return String(Math.round(value * 100) / 100);
}
