import type { DescribeEndpointOutput, SageMakerClient } from "@aws-sdk/client-sagemaker";
import { z } from "zod";
import { pushedArtifact } from "./artifact.ts";
import { TargetConfigurationError, TargetNotReadyError, TargetStateError } from "./errors.ts";
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
  TargetState,
  TrafficTarget,
  WeightChange,
} from "./port.ts";
import { EndpointConfigs } from "./sagemaker/configs.ts";
import { hasFailed, SageMakerEndpoint } from "./sagemaker/endpoint.ts";
import { candidateHash, containerOf, Models } from "./sagemaker/models.ts";
import { EndpointWaits } from "./sagemaker/readiness.ts";
import { resourcePrefix, union } from "./sagemaker/resources.ts";
import { mirroredMessage, requireNoLiveTraffic, shadowVariants } from "./sagemaker/shadow.ts";
import { candidateVariant, VariantSchema, variantInput } from "./sagemaker/variants.ts";
import {
  carriesAll,
  describeVariants,
  driftMessage,
  matches,
  observeWeights,
  shareOf,
  weightOf,
} from "./sagemaker/weights.ts";
import { parseTargetSettings, type SageMakerSettings, SageMakerSettingsSchema } from "./settings.ts";
import { appliedWeight, parseTargetState, requirePercent, SHARE_EPSILON, secondsUntil } from "./state.ts";

export { shareOf } from "./sagemaker/weights.ts";

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
 *
 * The adapter composes the endpoint (`sagemaker/endpoint.ts`), its configs
 * (`sagemaker/configs.ts`) and the candidate's model (`sagemaker/models.ts`), with the variants'
 * shapes (`sagemaker/variants.ts`), their weights and drift (`sagemaker/weights.ts`), the shadow
 * of a mirror (`sagemaker/shadow.ts`) and the waits for the endpoint (`sagemaker/readiness.ts`),
 * and keeps the rollout's state between calls.
 */

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

/** The SDK client this adapter drives. */
export interface SageMakerClients {
  readonly sagemaker: SageMakerClient;
}

/** Drives the production and shadow variants of one endpoint. */
export class SageMakerTraffic implements TrafficTarget {
  readonly type = "sagemaker" as const;

  artifactFor(pushed: Pushed): CandidateArtifact {
    return pushedArtifact(pushed);
  }
  readonly #settings: SageMakerSettings;
  readonly #endpoint: SageMakerEndpoint;
  readonly #configs: EndpointConfigs;
  readonly #models: Models;
  readonly #waits: EndpointWaits;

  constructor(
    clients: SageMakerClients,
    settings: unknown,
    private readonly clock: Clock,
  ) {
    this.#settings = parseTargetSettings(SageMakerSettingsSchema, settings, "sagemaker settings");
    const name = this.#settings.endpointName;
    this.#endpoint = new SageMakerEndpoint(clients.sagemaker, name);
    this.#configs = new EndpointConfigs(clients.sagemaker, name);
    this.#models = new Models(clients.sagemaker, this.#settings.executionRoleArn);
    this.#waits = new EndpointWaits(name, this.#settings, clock);
  }

  async prepare(): Promise<Prepared> {
    const endpoint = await this.#endpoint.describe();
    if (endpoint.EndpointStatus !== "InService" && !this.#deploying(endpoint)) {
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
    const serving = await this.#configs.serving(configName, weighted[0]?.VariantName);
    const state: SageMakerState = {
      type: "sagemaker",
      phase: "prepared",
      stableConfig: configName,
      stableVariant: serving.variant,
      configExtras: serving.extras,
      canaryWeight: 0,
      created: { configs: [], models: [] },
    };
    return {
      state,
      firstRelease: false,
      stable: `endpoint ${this.#name()} → variant ${serving.variant.VariantName} (model ${serving.variant.ModelName}, config ${configName})`,
    };
  }

  async deployCandidate(input: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const state = this.#state(input);
    if (!["prepared", "deploying", "ready"].includes(state.phase)) {
      throw new TargetStateError(`cannot deploy a candidate in phase ${state.phase}`);
    }
    const container = containerOf(artifact, this.#name());
    const hash = candidateHash(container, state.stableConfig);
    const modelName = this.#resource(hash);
    await this.#models.create(modelName, container);
    const variant = candidateVariant(state.stableVariant, `candidate-${hash}`, modelName, this.#settings);
    const deployConfig = this.#resource(hash, "-d");
    await this.#configs.create(
      deployConfig,
      { ProductionVariants: [variantInput(state.stableVariant, 1), variantInput(variant, 0)] },
      state.configExtras,
    );
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

  async checkReadiness(input: TargetState): Promise<Readiness> {
    const state = this.#state(input);
    const pending = state.pending;
    if (!pending) return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
    const endpoint = await this.#endpoint.describe();
    const status = endpoint.EndpointStatus;
    if (hasFailed(endpoint)) {
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} is ${status} (${pending.what}): ${endpoint.FailureReason ?? "no failure reason given"}`,
      );
    }
    if (status !== "InService") {
      return this.#waits.notYet(state, pending.deadlineAt, `${pending.what}: endpoint ${status}`);
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

  async readWeights(input: TargetState): Promise<ObservedWeights> {
    const state = this.#state(input);
    return this.#observe(state, await this.#endpoint.describe());
  }

  async setWeight(
    input: TargetState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const state = this.#state(input);
    requirePercent(percent, "weight");
    const candidate = state.candidate;
    if (state.phase !== "ready" || !candidate) {
      throw new TargetStateError(
        `cannot send traffic to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const endpoint = await this.#endpoint.describe();
    const observed = this.#observe(state, endpoint);
    const names = (endpoint.ProductionVariants ?? []).map((v) => v.VariantName);
    if (state.mirror && !names.includes(candidate.variant.VariantName)) {
      throw new TargetStateError(
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
        message: driftMessage(this.#name(), observed, state.canaryWeight),
      };
    }
    this.#endpoint.requireInService(endpoint, `setting the weight to ${percent}%`);
    for (const name of [state.stableVariant.VariantName, candidate.variant.VariantName]) {
      if (!names.includes(name)) {
        throw new TargetConfigurationError(
          `endpoint ${this.#name()} no longer has variant ${name} (it serves config ${endpoint.EndpointConfigName}, changed outside the rollout)`,
        );
      }
    }
    await this.#endpoint.setWeights(endpoint, {
      [candidate.variant.VariantName]: percent,
      [state.stableVariant.VariantName]: 100 - percent,
    });
    const next: SageMakerState = {
      ...state,
      canaryWeight: percent,
      pending: { what: `weight ${percent}%`, deadlineAt: this.#waits.deadline() },
    };
    return appliedWeight(
      next,
      percent,
      `${state.stableVariant.VariantName}=${100 - percent}, ${candidate.variant.VariantName}=${percent}`,
    );
  }

  async setMirrorRoute(input: TargetState, route: MirrorRoute): Promise<MirrorRouteChange> {
    const state = this.#state(input);
    const candidate = state.candidate;
    if (state.phase !== "ready" || !candidate) {
      throw new TargetStateError(
        `cannot mirror requests to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    requirePercent(route.percentage, "mirror percentage");
    const endpoint = await this.#endpoint.describe();
    if (route.percentage === 0) return this.#removeMirror(state, candidate, route, endpoint);
    requireNoLiveTraffic(this.#name(), state.canaryWeight, this.#observe(state, endpoint).canary);
    const config = this.#resource(candidate.hash, `-m${route.percentage}`);
    await this.#configs.create(
      config,
      shadowVariants(state.stableVariant, candidate.variant, route.percentage),
      state.configExtras,
    );
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
    return { state: next, message: mirroredMessage(route, candidate.variant.VariantName, config) };
  }

  async setHeaderRoute(input: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    const variant = state.candidate?.variant.VariantName ?? "the candidate variant (once created)";
    return {
      state,
      applied: false,
      message: `a SageMaker endpoint cannot route by header (${route.name}): testers invoke ${this.#name()} with TargetVariant=${variant}`,
    };
  }

  async removeHeaderRoute(input: TargetState, name: string): Promise<HeaderRouteChange> {
    return {
      state: this.#state(input),
      applied: false,
      message: `no header routes on a SageMaker endpoint (${name})`,
    };
  }

  async promote(input: TargetState, options: PromoteOptions): Promise<TargetState> {
    const state = this.#state(input);
    if (state.phase === "promoted") return state;
    const candidate = state.candidate;
    if (state.phase !== "ready" || !candidate) {
      throw new TargetStateError(`cannot promote in phase ${state.phase}; the candidate must be ready`);
    }
    const endpoint = await this.#endpoint.describe();
    const promotedConfig = this.#resource(candidate.hash, "-p");
    const production = (endpoint.ProductionVariants ?? []).map((v) => v.VariantName);
    const next: SageMakerState = {
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
      if (!carriesAll(shareOf(endpoint), candidate.variant.VariantName)) {
        this.#endpoint.requireInService(endpoint, "promoting");
        await this.#endpoint.setWeights(endpoint, { [candidate.variant.VariantName]: 100 });
      }
      return {
        ...next,
        pending: { what: "promotion (all traffic to the candidate)", deadlineAt: this.#waits.deadline() },
      };
    }
    // The candidate is a shadow (promoted from a mirror step): it takes over in one update.
    await this.#configs.create(
      promotedConfig,
      { ProductionVariants: [variantInput(candidate.variant, 1)] },
      state.configExtras,
    );
    return this.#update(next, promotedConfig, "promotion (the candidate alone)", endpoint);
  }

  async abort(input: TargetState, options: AbortOptions): Promise<Readiness> {
    const state = this.#state(input);
    const back =
      state.phase === "promoted" && state.previous
        ? state.previous
        : { config: state.stableConfig, variant: state.stableVariant };
    const deadlineAt = state.abortDeadlineAt ?? this.#waits.deadline(options.progressDeadlineSeconds);
    const waiting: SageMakerState = { ...state, abortDeadlineAt: deadlineAt };
    const endpoint = await this.#endpoint.describe();
    const status = endpoint.EndpointStatus;
    if (hasFailed(endpoint)) {
      throw new TargetNotReadyError(
        `endpoint ${this.#name()} is ${status}, the abort cannot put the traffic back: ${endpoint.FailureReason ?? "no failure reason given"}`,
      );
    }
    if (status !== "InService") return this.#waits.notYet(waiting, deadlineAt, `abort: endpoint ${status}`);
    const shares = shareOf(endpoint);
    const name = back.variant.VariantName;
    if (carriesAll(shares, name)) {
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
      await this.#endpoint.setWeights(endpoint, { [name]: 100 });
      return this.#waits.notYet(waiting, deadlineAt, `abort: all traffic back to variant ${name}`);
    }
    // The variant is gone from the endpoint (scaled down after a promotion): its config comes back.
    const next = await this.#update(waiting, back.config, `abort: back to config ${back.config}`, endpoint);
    return this.#waits.notYet(next, deadlineAt, `abort: endpoint moving back to config ${back.config}`);
  }

  async scaleDown(input: TargetState): Promise<Readiness> {
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
    const endpoint = await this.#endpoint.describe();
    const kept = state.stableVariant.VariantName;
    const others = [...shareOf(endpoint).entries()].filter(
      ([v, share]) => v !== kept && share > SHARE_EPSILON,
    );
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
      if (hasFailed(endpoint)) {
        throw new TargetNotReadyError(
          `endpoint ${this.#name()} is ${endpoint.EndpointStatus}: ${endpoint.FailureReason ?? "no failure reason given"}`,
        );
      }
      return this.#waits.notYet(waiting, deadlineAt, `scale-down: endpoint ${endpoint.EndpointStatus}`);
    }
    if (endpoint.EndpointConfigName !== plan.config || (endpoint.ShadowProductionVariants ?? []).length > 0) {
      if (state.phase === "promoted") {
        // The candidate alone: created now, when it replaces the config with both variants.
        await this.#configs.create(
          plan.config,
          { ProductionVariants: [variantInput(state.stableVariant, 1)] },
          state.configExtras,
        );
      }
      const next = await this.#update(waiting, plan.config, `scale-down to config ${plan.config}`, endpoint);
      return this.#waits.notYet(
        next,
        deadlineAt,
        `scale-down: endpoint moving to config ${plan.config} (${kept} alone)`,
      );
    }
    return this.#deleteLeftovers(state, plan);
  }

  /**
   * Removes a mirror route: the endpoint goes back to the config with both production variants,
   * the candidate's at 0%.
   */
  async #removeMirror(
    state: SageMakerState,
    candidate: NonNullable<SageMakerState["candidate"]>,
    route: MirrorRoute,
    endpoint: DescribeEndpointOutput,
  ): Promise<MirrorRouteChange> {
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

  /**
   * The endpoint serves the final config alone: what this rollout created for the way there goes
   * (after an abort, its models too). After a promotion the previous model and config stay.
   */
  async #deleteLeftovers(
    state: SageMakerState,
    plan: NonNullable<SageMakerState["scaleDown"]>,
  ): Promise<Readiness> {
    const configs = state.created.configs.filter((c) => c !== plan.config);
    const models = state.phase === "aborted" ? state.created.models : [];
    for (const config of configs) await this.#configs.delete(config);
    for (const model of models) await this.#models.delete(model);
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
        `endpoint ${this.#name()} serves config ${plan.config} (variant ${state.stableVariant.VariantName} alone); deleted ` +
        `${[...configs, ...models].join(", ") || "nothing"}${keptNote}`,
    };
  }

  #state(input: unknown): SageMakerState {
    return parseTargetState(SageMakerStateSchema, input, "sagemaker");
  }

  #name(): string {
    return this.#settings.endpointName;
  }

  /** The name of a resource this target creates for the candidate `hash` (`-d`, `-m<percent>`, `-p` configs). */
  /**
   * Whether the endpoint is moving to a candidate's deploy config this target created (both
   * production variants, the candidate at 0): a Begin tried again after its `UpdateEndpoint`
   * landed and its answer was lost. The endpoint still serves the stable config, which is read as
   * before, so the retry derives the same candidate and finds the update in progress.
   */
  #deploying(endpoint: DescribeEndpointOutput): boolean {
    const pending = endpoint.PendingDeploymentSummary?.EndpointConfigName;
    return (
      endpoint.EndpointStatus === "Updating" &&
      pending !== undefined &&
      pending.startsWith(resourcePrefix(this.#name())) &&
      pending.endsWith("-d")
    );
  }

  #resource(hash: string, suffix = ""): string {
    return `${resourcePrefix(this.#name())}${hash}${suffix}`;
  }

  /** Moves the endpoint to `config` (see `SageMakerEndpoint.moveTo`) and records the wait for it. */
  async #update(
    state: SageMakerState,
    config: string,
    what: string,
    known?: DescribeEndpointOutput,
  ): Promise<SageMakerState> {
    const endpoint = known ?? (await this.#endpoint.describe());
    const pending = { what, config, deadlineAt: this.#waits.deadline() };
    await this.#endpoint.moveTo(endpoint, config, what);
    return { ...state, pending };
  }

  #observe(state: SageMakerState, endpoint: DescribeEndpointOutput): ObservedWeights {
    // After promotion the candidate is the stable variant: nothing is a canary any more.
    const candidate = state.phase === "promoted" ? undefined : state.candidate;
    return observeWeights(endpoint, {
      candidate: candidate?.variant.VariantName,
      stable: state.stableVariant.VariantName,
      expected: state.canaryWeight,
    });
  }
}
