import { z } from "zod";
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
import {
  describeIssues,
  type LocalProxySettings,
  LocalProxySettingsSchema,
  parseTargetSettings,
} from "./settings.ts";
import { appliedWeight, parseTargetState, requirePercent } from "./state.ts";

/**
 * The local proxy (`local/proxy`) as a traffic target, driven through its admin API, so the
 * embedded runtime and the demo run the same handlers and the same `TrafficTarget` calls as AWS.
 * The candidate is an upstream that is already running (the demo starts it); "deploying" it means
 * registering it with weight 0 and probing it until it answers.
 */

/** What this target remembers between calls. */
export const LocalProxyStateSchema = z
  .object({
    type: z.literal("local-proxy"),
    stable: z.string().nullable(),
    stableVersion: z.string(),
    canary: z.string().optional(),
    canaryVersion: z.string().optional(),
    canaryWeight: z.number().int().min(0).max(100),
    phase: z.enum(["prepared", "deploying", "ready", "promoted", "aborted"]),
    deadlineAt: z.number().optional(),
    previous: z.object({ url: z.string(), version: z.string() }).strict().optional(),
  })
  .strict();

export type LocalProxyState = z.infer<typeof LocalProxyStateSchema>;

/** The proxy's `GET /admin/config` answer, validated because it crosses a process boundary. */
const AdminConfigSchema = z.object({
  config: z
    .object({
      stable: z.string(),
      canary: z.string().nullable(),
      weight: z.number(),
      stableVersion: z.string(),
      canaryVersion: z.string(),
      headerRoutes: z.array(z.object({ name: z.string(), match: z.array(z.unknown()) }).passthrough()),
    })
    .passthrough()
    .nullable(),
});
type AdminConfig = z.infer<typeof AdminConfigSchema>["config"];

/** What promote and abort write so no copy goes on to a candidate that is gone. */
const MIRROR_OFF = { mirrorPercent: 0, mirrorMatch: [] } as const;

/** The "client" of this adapter: `fetch`, injectable for tests. */
export interface LocalProxyClients {
  readonly fetch?: typeof fetch;
}

/** Drives one local proxy. */
export class LocalProxyTraffic implements TrafficTarget {
  readonly type = "local-proxy" as const;
  readonly #settings: LocalProxySettings;
  readonly #fetch: typeof fetch;

  constructor(
    clients: LocalProxyClients,
    settings: unknown,
    private readonly clock: Clock,
  ) {
    this.#settings = parseTargetSettings(LocalProxySettingsSchema, settings, "local-proxy settings");
    this.#fetch = clients.fetch ?? fetch;
  }

  /** The running upstream the settings map the pushed tag (or digest, or `*`) to. */
  artifactFor(pushed: Pushed): CandidateArtifact {
    const upstreams = this.#settings.upstreams;
    const upstream = upstreams?.[pushed.tag ?? ""] ?? upstreams?.[pushed.digest] ?? upstreams?.["*"];
    if (!upstream) {
      throw new RangeError(
        `the local proxy target has no upstream for image tag "${pushed.tag}" or digest "${pushed.digest}": add it to upstreams (or a "*" upstream for any other image)`,
      );
    }
    return { upstream, version: pushed.tag ?? pushed.digest };
  }

  async prepare(): Promise<Prepared> {
    const config = await this.#read();
    if (config && config.weight > 0) {
      throw new TargetConfigurationError(
        `the proxy already sends ${config.weight}% to ${config.canary}; finish or abort that rollout first`,
      );
    }
    const state: LocalProxyState = {
      type: "local-proxy",
      stable: config?.stable ?? null,
      stableVersion: config?.stableVersion ?? "stable",
      canaryWeight: 0,
      phase: "prepared",
    };
    return {
      state,
      firstRelease: config === null,
      stable: config ? `${config.stableVersion} at ${config.stable}` : "nothing yet",
    };
  }

  async deployCandidate(input: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const state = this.#state(input);
    if (!("upstream" in artifact)) {
      throw new TargetConfigurationError(
        "a local-proxy candidate is a running upstream: give artifact.upstream",
      );
    }
    const version = artifact.version ?? "canary";
    if (state.stable !== null) {
      await this.#write({ canary: artifact.upstream, canaryVersion: version, weight: 0, ...this.#model() });
    }
    const next: LocalProxyState = {
      ...state,
      phase: "deploying",
      canary: artifact.upstream,
      canaryVersion: version,
      canaryWeight: 0,
      deadlineAt: this.clock.now() + this.#settings.progressDeadlineSeconds * 1000,
    };
    return next;
  }

  async checkReadiness(input: TargetState): Promise<Readiness> {
    const state = this.#state(input);
    if (state.phase !== "deploying" || !state.canary) {
      return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
    }
    const probe = new URL(this.#settings.readinessPath, state.canary).toString();
    let problem: string;
    try {
      const res = await this.#fetch(probe);
      await res.body?.cancel();
      if (res.status < 500) {
        return {
          ready: true,
          state: { ...state, phase: "ready" },
          message: `${probe} answered ${res.status}`,
        };
      }
      problem = `${probe} answered ${res.status}`;
    } catch (err) {
      problem = `${probe} is unreachable: ${(err as Error).message}`;
    }
    if (this.clock.now() >= (state.deadlineAt ?? 0)) {
      throw new TargetNotReadyError(`the candidate was not ready before its progress deadline: ${problem}`);
    }
    return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: problem };
  }

  async readWeights(input: TargetState): Promise<ObservedWeights> {
    const state = this.#state(input);
    return this.#observe(state, await this.#read());
  }

  async setWeight(
    input: TargetState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const state = this.#state(input);
    requirePercent(percent, "weight");
    if (percent > 0 && state.phase !== "ready") {
      throw new TargetStateError(
        `cannot send traffic to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const observed = this.#observe(state, await this.#read());
    if (observed.drift && !options.overwriteDrift) {
      return {
        outcome: "drift",
        state,
        weights: observed,
        message: `proxy weights changed outside the rollout: the candidate receives ${observed.canary}% instead of ${state.canaryWeight}% (${observed.detail})`,
      };
    }
    await this.#write({ canary: state.canary ?? null, canaryVersion: state.canaryVersion, weight: percent });
    return appliedWeight({ ...state, canaryWeight: percent }, percent, `proxy weight ${percent}`);
  }

  async setHeaderRoute(input: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    const config = await this.#read();
    if (!config) throw new TargetStateError("the proxy has no configuration: nothing to route");
    const routes = config.headerRoutes.filter((r) => r.name !== route.name);
    await this.#write({ headerRoutes: [...routes, { name: route.name, match: route.match }] });
    return {
      state,
      applied: true,
      message: `header route ${route.name} sends matching requests to the candidate`,
    };
  }

  async removeHeaderRoute(input: TargetState, name: string): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    const config = await this.#read();
    if (config?.headerRoutes.some((r) => r.name === name)) {
      await this.#write({ headerRoutes: config.headerRoutes.filter((r) => r.name !== name) });
    }
    return { state, applied: true, message: `header route ${name} removed` };
  }

  /**
   * Mirrors `percentage` of the stable side's matching requests to the candidate through the
   * proxy's model router (`local/proxy/model.ts`): the copy is sent after the answer, compared with
   * it and recorded for `/compare`; 0 removes the mirror. The proxy validates the match.
   */
  async setMirrorRoute(input: TargetState, route: MirrorRoute): Promise<MirrorRouteChange> {
    const state = this.#state(input);
    if (route.percentage > 0 && (state.phase !== "ready" || !state.canary)) {
      throw new TargetStateError(
        `cannot mirror to the candidate in phase ${state.phase}; it must be deployed and ready`,
      );
    }
    await this.#write({ mirrorPercent: route.percentage, mirrorMatch: route.match ?? [] });
    return {
      state,
      message:
        route.percentage > 0
          ? `mirror ${route.name}: ${route.percentage}% of ${route.match ? "matching" : "all"} requests copied to ${state.canaryVersion ?? "the candidate"}`
          : `mirror ${route.name} removed`,
    };
  }

  async promote(input: TargetState, _options: PromoteOptions): Promise<TargetState> {
    const state = this.#state(input);
    if (state.phase === "promoted") return state;
    if (state.phase !== "ready" || !state.canary) {
      throw new TargetStateError(`cannot promote in phase ${state.phase}; the candidate must be ready`);
    }
    const version = state.canaryVersion ?? "canary";
    await this.#write({
      stable: state.canary,
      stableVersion: version,
      canary: null,
      weight: 0,
      headerRoutes: [],
      ...MIRROR_OFF,
      ...this.#model(),
    });
    const next: LocalProxyState = {
      type: "local-proxy",
      phase: "promoted",
      stable: state.canary,
      stableVersion: version,
      canaryWeight: 0,
      ...(state.stable !== null ? { previous: { url: state.stable, version: state.stableVersion } } : {}),
    };
    return next;
  }

  async abort(input: TargetState, _options: AbortOptions): Promise<Readiness> {
    const state = this.#state(input);
    if (state.phase === "aborted") return { ready: true, state, message: "already aborted" };
    if (state.phase === "promoted" && state.previous) {
      const { url, version } = state.previous;
      await this.#write({
        stable: url,
        stableVersion: version,
        canary: null,
        weight: 0,
        headerRoutes: [],
        ...MIRROR_OFF,
      });
      const next: LocalProxyState = {
        type: "local-proxy",
        phase: "aborted",
        stable: url,
        stableVersion: version,
        canaryWeight: 0,
      };
      return { ready: true, state: next, message: `all traffic back on ${version} at ${url}` };
    }
    if (state.stable !== null)
      await this.#write({ canary: null, weight: 0, headerRoutes: [], ...MIRROR_OFF });
    const next: LocalProxyState = {
      type: "local-proxy",
      phase: "aborted",
      stable: state.stable,
      stableVersion: state.stableVersion,
      canaryWeight: 0,
    };
    return { ready: true, state: next, message: `all traffic back on ${state.stableVersion}` };
  }

  async scaleDown(input: TargetState): Promise<Readiness> {
    return {
      ready: true,
      state: this.#state(input),
      message: "nothing to scale down: the demo owns its upstream processes",
    };
  }

  /** The proxy's model settings when the target asks for a model router; nothing otherwise. */
  #model(): { model?: Record<string, unknown> } {
    const router = this.#settings.router;
    if (!router) return {};
    const { type: _type, ...model } = router;
    return { model };
  }

  #state(input: unknown): LocalProxyState {
    return parseTargetState(LocalProxyStateSchema, input, "local-proxy");
  }

  #observe(state: LocalProxyState, config: AdminConfig): ObservedWeights {
    const canary = config === null || config.canary === null ? 0 : config.weight;
    // Someone else's candidate, or a different stable upstream, is drift even at the same weight.
    const foreign = config !== null && config.canary !== null && config.canary !== state.canary;
    const stableMoved = config !== null && state.stable !== null && config.stable !== state.stable;
    return {
      canary,
      stable: 100 - canary,
      expectedCanary: state.canaryWeight,
      drift: canary !== state.canaryWeight || foreign || stableMoved,
      detail: config
        ? `proxy stable=${config.stable}, canary=${config.canary ?? "none"}, weight=${config.weight}`
        : "proxy not configured",
    };
  }

  /** One admin API call, bounded by `requestTimeoutSeconds`. */
  async #admin(method: "GET" | "POST", url: string, init: RequestInit = {}): Promise<Response> {
    const seconds = this.#settings.requestTimeoutSeconds;
    try {
      return await this.#fetch(url, { ...init, method, signal: AbortSignal.timeout(seconds * 1000) });
    } catch (error) {
      if ((error as Error)?.name === "TimeoutError") {
        throw new TargetNotReadyError(`${method} ${url} did not answer within ${seconds} s`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  async #read(): Promise<AdminConfig> {
    const url = new URL("/admin/config", this.#settings.adminUrl).toString();
    const res = await this.#admin("GET", url);
    if (!res.ok) throw new TargetNotReadyError(`GET ${url} answered ${res.status}: ${await res.text()}`);
    const parsed = AdminConfigSchema.safeParse(await res.json());
    if (!parsed.success) {
      throw new TargetConfigurationError(describeIssues(parsed.error, `answer of GET ${url}`));
    }
    return parsed.data.config;
  }

  async #write(update: Record<string, unknown>): Promise<void> {
    const url = new URL("/admin/config", this.#settings.adminUrl).toString();
    const res = await this.#admin("POST", url, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify(Object.fromEntries(Object.entries(update).filter(([, v]) => v !== undefined))),
    });
    if (!res.ok)
      throw new TargetConfigurationError(`POST ${url} answered ${res.status}: ${await res.text()}`);
    await res.body?.cancel();
  }
}
