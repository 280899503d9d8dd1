import type { ModelRouterConfig, ModelRouterConfigInput } from "../router/config.ts";
import { pushedArtifact } from "./artifact.ts";
import { TargetStateError } from "./errors.ts";
import type {
  AbortOptions,
  CandidateArtifact,
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
import type { SageMakerState, SageMakerTraffic } from "./sagemaker.ts";
import type { SageMakerSettings } from "./settings.ts";
import { appliedWeight, requirePercent } from "./state.ts";

/** Where the target writes the model router's configuration (the table's `MODEL#<endpoint>/CONFIG` item). */
export interface RouterConfigStore {
  /** The configuration now, read past any cache; null before the first write. */
  read(): Promise<ModelRouterConfig | null>;
  write(config: ModelRouterConfigInput): Promise<unknown>;
}

/**
 * A SageMaker endpoint behind the model router (`router: {type: model}` on the target). The
 * endpoint's variants are the SageMaker target's (the candidate a production variant at weight 0,
 * promotion and abort as it does them), but who answers is the router's: it calls a variant with
 * `TargetVariant`, so the target writes the router's configuration instead of SageMaker weights:
 * - prepare and deploy: the stable variant as the primary, then the candidate at weight 0;
 * - a weight: the candidate's sticky cohort (the endpoint's own weights stay on the stable side);
 * - a mirror: the router's comparing shadow (mirror percentage and match), not a SageMaker shadow
 *   variant, which throws the answers away;
 * - promote: the candidate as the primary, alone; abort: the side traffic goes back to, first,
 *   so the router stops calling the candidate before the endpoint has moved.
 */
export class ModelRouterTraffic implements TrafficTarget {
  readonly type = "sagemaker" as const;

  artifactFor(pushed: Pushed): CandidateArtifact {
    return pushedArtifact(pushed);
  }

  constructor(
    private readonly endpoint: SageMakerTraffic,
    private readonly settings: SageMakerSettings,
    private readonly config: RouterConfigStore,
  ) {}

  async prepare(): Promise<Prepared> {
    const prepared = await this.endpoint.prepare();
    await this.#write(sm(prepared.state), { candidate: null, weight: 0, mirrorPercent: 0, mirrorMatch: [] });
    return prepared;
  }

  async deployCandidate(state: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const next = await this.endpoint.deployCandidate(state, artifact);
    await this.#write(sm(next), { weight: 0, mirrorPercent: 0, mirrorMatch: [] });
    return next;
  }

  checkReadiness(state: TargetState): Promise<Readiness> {
    return this.endpoint.checkReadiness(state);
  }

  async readWeights(input: TargetState): Promise<ObservedWeights> {
    const state = sm(input);
    const config = await this.config.read();
    const canary = config?.candidate ? config.weight : 0;
    return {
      canary,
      stable: 100 - canary,
      expectedCanary: state.canaryWeight,
      drift: canary !== state.canaryWeight,
      detail: `model router: ${config ? `${config.primary.name}=${100 - canary}${config.candidate ? `, ${config.candidate.name}=${canary}` : ""}` : "no configuration"}`,
    };
  }

  async setWeight(
    input: TargetState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const state = this.#ready(input, "send traffic to the candidate");
    requirePercent(percent, "weight");
    const observed = await this.readWeights(state);
    if (observed.drift && !options.overwriteDrift) {
      return {
        outcome: "drift",
        state,
        weights: observed,
        message: `the model router's configuration changed outside the rollout: the candidate receives ${observed.canary}% instead of ${state.canaryWeight}% (${observed.detail})`,
      };
    }
    const current = await this.config.read();
    await this.#write(state, {
      weight: percent,
      mirrorPercent: current?.mirrorPercent ?? 0,
      mirrorMatch: current?.mirrorMatch ?? [],
    });
    const next: SageMakerState = { ...state, canaryWeight: percent };
    return appliedWeight(
      next,
      percent,
      `model router: ${state.stableVariant.VariantName}=${100 - percent}, ${state.candidate?.variant.VariantName}=${percent}`,
    );
  }

  setHeaderRoute(state: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    return this.endpoint.setHeaderRoute(state, route);
  }

  removeHeaderRoute(state: TargetState, name: string): Promise<HeaderRouteChange> {
    return this.endpoint.removeHeaderRoute(state, name);
  }

  async setMirrorRoute(input: TargetState, route: MirrorRoute): Promise<MirrorRouteChange> {
    requirePercent(route.percentage, "mirror percentage");
    const state = route.percentage > 0 ? this.#ready(input, "mirror requests to the candidate") : sm(input);
    await this.#write(state, {
      weight: state.candidate ? state.canaryWeight : 0,
      mirrorPercent: state.candidate ? route.percentage : 0,
      mirrorMatch: route.percentage > 0 ? [...(route.match ?? [])] : [],
    });
    const next: SageMakerState = {
      ...state,
      mirror:
        route.percentage > 0
          ? { name: route.name, percentage: route.percentage, config: "model-router" }
          : undefined,
    };
    return {
      state: next,
      message:
        route.percentage > 0
          ? `mirror route ${route.name}: the model router copies ${route.percentage}% of ${route.match ? "the matching" : "the"} requests to variant ${state.candidate?.variant.VariantName} and compares the answers`
          : `mirror route ${route.name} removed from the model router`,
    };
  }

  async promote(input: TargetState, options: PromoteOptions): Promise<TargetState> {
    const next = await this.endpoint.promote(input, options);
    // After the endpoint's promotion the stable variant is the candidate's.
    await this.#write(sm(next), { candidate: null, weight: 0, mirrorPercent: 0, mirrorMatch: [] });
    return next;
  }

  async abort(input: TargetState, options: AbortOptions): Promise<Readiness> {
    const state = sm(input);
    const back = state.phase === "promoted" && state.previous ? state.previous.variant : state.stableVariant;
    await this.config.write({
      ...this.#base(),
      primary: this.#backend(back.VariantName),
      candidate: null,
    });
    return this.endpoint.abort(input, options);
  }

  scaleDown(state: TargetState): Promise<Readiness> {
    return this.endpoint.scaleDown(state);
  }

  #ready(input: TargetState, what: string): SageMakerState {
    const state = sm(input);
    if (state.phase !== "ready" || !state.candidate) {
      throw new TargetStateError(`cannot ${what} in phase ${state.phase}; it must be ready`);
    }
    return state;
  }

  /** Writes the whole configuration: the state's variants, the settings', and `fields`. */
  async #write(state: SageMakerState, fields: Partial<ModelRouterConfigInput>): Promise<void> {
    await this.config.write({
      ...this.#base(),
      primary: this.#backend(state.stableVariant.VariantName),
      candidate: state.candidate ? this.#backend(state.candidate.variant.VariantName) : null,
      ...fields,
    });
  }

  #base(): Omit<ModelRouterConfigInput, "primary"> {
    const router = this.settings.router;
    return {
      sticky: router?.sticky ?? true,
      ...(router?.salt !== undefined ? { salt: router.salt } : {}),
      ...(router ? { key: router.key, compare: router.compare } : {}),
    };
  }

  #backend(variant: string) {
    return { name: variant, sagemaker: { endpoint: this.settings.endpointName, variant } };
  }
}

const sm = (state: TargetState): SageMakerState => state as SageMakerState;
