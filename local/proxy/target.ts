import { z } from "zod";
import { type Clock, systemClock } from "../../functions/clock.ts";
import {
  type AbortOptions,
  type CandidateArtifact,
  type HeaderRoute,
  type HeaderRouteChange,
  type MirrorRoute,
  type MirrorRouteChange,
  type ObservedWeights,
  type PluginHandler,
  type PluginJson,
  type Prepared,
  type PromoteOptions,
  type Readiness,
  servePlugin,
  TargetConfigurationError,
  TargetNotReadyError,
  type TargetPlugin,
  TargetStateError,
  type WeightChange,
  type WithState,
} from "../../functions/plugin/index.ts";
import { ModelRouterSettingsSchema } from "../../functions/router/settings.ts";
import type { PluginTarget } from "../../infra/props.ts";
import { formatIssues } from "../../statemachine/problems.ts";
import { localFunctionArn } from "../asl/intrinsics.ts";

/**
 * The local proxy (`server.ts`) as a target plugin, driven through its admin API: the embedded
 * runtime registers it as a Lambda function ({@link LOCAL_PROXY_FUNCTION_ARN}), so the demo, the
 * embedded stack, `rollouts simulate` and the tests run the product's `plugin` target, its
 * protocol and the same handlers as on AWS. The candidate is an upstream that is already running
 * (the demo starts it); "deploying" it means registering it with weight 0 and probing it until it
 * answers.
 */

/** The plugin's name in a rollout's target, in messages and in its state. */
export const LOCAL_PROXY_PLUGIN = "local-proxy";

/** The function the embedded runtime serves the plugin as (`arn:aws:lambda:local:000000000000:function:…`). */
export const LOCAL_PROXY_FUNCTION_NAME = "sfn-rollouts-local-proxy";

/** Its ARN: what a rollout's `{type: "plugin", name: "local-proxy"}` target names as `functionArn`. */
export const LOCAL_PROXY_FUNCTION_ARN = localFunctionArn(LOCAL_PROXY_FUNCTION_NAME);

/** Seconds of a deadline or a poll: the readiness loop runs inside an execution, at most a year. */
const WaitSeconds = () => z.number().int().positive().max(31_536_000);

/** The plugin's `config`: the proxy and how its candidates are found and probed. */
export const LocalProxyConfigSchema = z
  .object({
    /**
     * Base URL of the proxy's admin listener (`RunningProxy.adminUrl`: its own 127.0.0.1 port,
     * apart from the traffic port); the admin API is under `/admin`.
     */
    adminUrl: z.url(),
    /** Path probed on the candidate upstream to decide it is ready. */
    readinessPath: z.string().startsWith("/").default("/"),
    /**
     * Which upstream runs which pushed image: image tag (or digest) → URL; `*` is the upstream of
     * any other image. The embedded runtime and the demo push "images" whose tags name already
     * running services.
     */
    upstreams: z.record(z.string(), z.url()).optional(),
    progressDeadlineSeconds: WaitSeconds().default(60),
    pollSeconds: WaitSeconds().default(1),
    /**
     * Seconds one admin API call may take before it fails with `TargetNotReadyError` (retried by
     * the workflow), so a proxy that accepts the connection and never answers cannot hold the
     * function until its own timeout. 10 s, the AWS SDK clients' request timeout; shorter, so the
     * plugin answers before the workflow's Lambda client gives up on it.
     */
    requestTimeoutSeconds: z.number().int().positive().max(9).default(5),
    /** Route as a model router: sticky cohorts, mirrored answers compared, feedback (`functions/router`). */
    router: ModelRouterSettingsSchema.optional(),
  })
  .strict();

export type LocalProxyConfig = z.input<typeof LocalProxyConfigSchema>;

/** What the plugin remembers between calls (inside the plugin target's `{type, name, state}`). */
const LocalProxyStateSchema = z
  .object({
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

/** What the plugin runs with: the runtime's clock (virtual in tests), and `fetch` for tests. */
export interface LocalProxyDeps {
  readonly clock?: Clock;
  readonly fetch?: typeof fetch;
}

type Answer<T> = WithState<T, LocalProxyState>;

/** Drives one local proxy. */
export class LocalProxyTarget implements TargetPlugin<LocalProxyState> {
  readonly #config: z.infer<typeof LocalProxyConfigSchema>;
  readonly #fetch: typeof fetch;
  readonly #clock: Clock;

  constructor(config: unknown, deps: LocalProxyDeps = {}) {
    const parsed = LocalProxyConfigSchema.safeParse(config);
    if (!parsed.success) {
      throw new TargetConfigurationError(
        `invalid local proxy config: ${formatIssues(parsed.error, "(root)", ["config"])}`,
      );
    }
    this.#config = parsed.data;
    this.#fetch = deps.fetch ?? fetch;
    this.#clock = deps.clock ?? systemClock;
  }

  async prepare(): Promise<Answer<Prepared>> {
    const config = await this.#read();
    if (config && config.weight > 0) {
      throw new TargetConfigurationError(
        `the proxy already sends ${config.weight}% to ${config.canary}; finish or abort that rollout first`,
      );
    }
    const state: LocalProxyState = {
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

  async deployCandidate(input: LocalProxyState, artifact: CandidateArtifact): Promise<LocalProxyState> {
    const state = this.#state(input);
    const upstream = this.#upstream(artifact);
    const version = artifact.version ?? "canary";
    if (state.stable !== null) {
      await this.#write({ canary: upstream, canaryVersion: version, weight: 0, ...this.#model() });
    }
    return {
      ...state,
      phase: "deploying",
      canary: upstream,
      canaryVersion: version,
      canaryWeight: 0,
      deadlineAt: this.#clock.now() + this.#config.progressDeadlineSeconds * 1000,
    };
  }

  async checkReadiness(input: LocalProxyState): Promise<Answer<Readiness>> {
    const state = this.#state(input);
    if (state.phase !== "deploying" || !state.canary) {
      return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
    }
    const probe = new URL(this.#config.readinessPath, state.canary).toString();
    let problem: string;
    try {
      const res = await this.#fetch(probe, { signal: AbortSignal.timeout(this.#timeoutMs()) });
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
    if (this.#clock.now() >= (state.deadlineAt ?? 0)) {
      throw new TargetNotReadyError(`the candidate was not ready before its progress deadline: ${problem}`);
    }
    return { ready: false, state, retryAfterSeconds: this.#config.pollSeconds, message: problem };
  }

  async readWeights(input: LocalProxyState): Promise<ObservedWeights> {
    return this.#observe(this.#state(input), await this.#read());
  }

  async setWeight(
    input: LocalProxyState,
    percent: number,
    options: { readonly overwriteDrift?: boolean },
  ): Promise<Answer<WeightChange>> {
    const state = this.#state(input);
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
    return {
      outcome: "applied",
      state: { ...state, canaryWeight: percent },
      weights: {
        canary: percent,
        stable: 100 - percent,
        expectedCanary: percent,
        drift: false,
        detail: `proxy weight ${percent}`,
      },
    };
  }

  async setHeaderRoute(input: LocalProxyState, route: HeaderRoute): Promise<Answer<HeaderRouteChange>> {
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

  async removeHeaderRoute(input: LocalProxyState, name: string): Promise<Answer<HeaderRouteChange>> {
    const state = this.#state(input);
    const config = await this.#read();
    if (config?.headerRoutes.some((r) => r.name === name)) {
      await this.#write({ headerRoutes: config.headerRoutes.filter((r) => r.name !== name) });
    }
    return { state, applied: true, message: `header route ${name} removed` };
  }

  /**
   * Mirrors `percentage` of the stable side's matching requests to the candidate through the
   * proxy's model router (`model.ts`): the copy is sent after the answer, compared with it and
   * recorded for `/compare`; 0 removes the mirror. The proxy validates the match.
   */
  async setMirrorRoute(input: LocalProxyState, route: MirrorRoute): Promise<Answer<MirrorRouteChange>> {
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

  async promote(input: LocalProxyState, _options: PromoteOptions): Promise<LocalProxyState> {
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
    return {
      phase: "promoted",
      stable: state.canary,
      stableVersion: version,
      canaryWeight: 0,
      ...(state.stable !== null ? { previous: { url: state.stable, version: state.stableVersion } } : {}),
    };
  }

  async abort(input: LocalProxyState, _options: AbortOptions): Promise<Answer<Readiness>> {
    const state = this.#state(input);
    if (state.phase === "aborted") return { ready: true, state, message: "already aborted" };
    const back = state.phase === "promoted" && state.previous ? state.previous : undefined;
    if (back) {
      const off = { canary: null, weight: 0, headerRoutes: [], ...MIRROR_OFF };
      await this.#write({ stable: back.url, stableVersion: back.version, ...off });
    } else if (state.stable !== null) {
      await this.#write({ canary: null, weight: 0, headerRoutes: [], ...MIRROR_OFF });
    }
    const stable = back ? back.url : state.stable;
    const stableVersion = back ? back.version : state.stableVersion;
    return {
      ready: true,
      state: { phase: "aborted", stable, stableVersion, canaryWeight: 0 },
      message: back
        ? `all traffic back on ${stableVersion} at ${stable}`
        : `all traffic back on ${stableVersion}`,
    };
  }

  async scaleDown(input: LocalProxyState): Promise<Answer<Readiness>> {
    return {
      ready: true,
      state: this.#state(input),
      message: "nothing to scale down: the demo owns its upstream processes",
    };
  }

  /**
   * The running upstream a pushed image is: the image itself when it is an http(s) URL, else the
   * upstream `upstreams` maps its tag (the artifact's version), its digest or `*` to.
   */
  #upstream(artifact: CandidateArtifact): string {
    if (!("image" in artifact)) {
      throw new TargetConfigurationError(
        "a local proxy candidate is a running upstream: the pushed image names it (its URL, or a tag or digest in upstreams)",
      );
    }
    if (/^https?:\/\//.test(artifact.image)) return artifact.image;
    const upstreams = this.#config.upstreams ?? {};
    const digest = /@(sha256:[0-9a-f]+)$/.exec(artifact.image)?.[1];
    const upstream =
      upstreams[artifact.version ?? ""] ?? (digest ? upstreams[digest] : undefined) ?? upstreams["*"];
    if (!upstream) {
      throw new TargetConfigurationError(
        `the local proxy has no upstream for image tag "${artifact.version ?? ""}" or digest "${digest ?? ""}": add it to upstreams (or a "*" upstream for any other image)`,
      );
    }
    return upstream;
  }

  /** The proxy's model settings when the config asks for a model router; nothing otherwise. */
  #model(): { model?: Record<string, unknown> } {
    const router = this.#config.router;
    if (!router) return {};
    const { type: _type, ...model } = router;
    return { model };
  }

  #state(input: unknown): LocalProxyState {
    const parsed = LocalProxyStateSchema.safeParse(input);
    if (!parsed.success) {
      throw new TargetStateError(`invalid local proxy state: ${formatIssues(parsed.error)}`, {
        cause: parsed.error,
      });
    }
    return parsed.data;
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

  #timeoutMs(): number {
    return this.#config.requestTimeoutSeconds * 1000;
  }

  /** One admin API call, bounded by `requestTimeoutSeconds`. */
  async #admin(method: "GET" | "POST", url: string, init: RequestInit = {}): Promise<Response> {
    const seconds = this.#config.requestTimeoutSeconds;
    try {
      return await this.#fetch(url, { ...init, method, signal: AbortSignal.timeout(this.#timeoutMs()) });
    } catch (error) {
      if ((error as Error)?.name === "TimeoutError") {
        throw new TargetNotReadyError(`${method} ${url} did not answer within ${seconds} s`, {
          cause: error,
        });
      }
      throw new TargetNotReadyError(`${method} ${url}: ${(error as Error)?.message ?? String(error)}`, {
        cause: error,
      });
    }
  }

  async #read(): Promise<AdminConfig> {
    const url = new URL("/admin/config", this.#config.adminUrl).toString();
    const res = await this.#admin("GET", url);
    if (!res.ok) throw new TargetNotReadyError(`GET ${url} answered ${res.status}: ${await res.text()}`);
    const parsed = AdminConfigSchema.safeParse(await res.json());
    if (!parsed.success) {
      throw new TargetConfigurationError(`invalid answer of GET ${url}: ${formatIssues(parsed.error)}`);
    }
    return parsed.data.config;
  }

  async #write(update: Record<string, unknown>): Promise<void> {
    const url = new URL("/admin/config", this.#config.adminUrl).toString();
    const res = await this.#admin("POST", url, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify(Object.fromEntries(Object.entries(update).filter(([, v]) => v !== undefined))),
    });
    if (!res.ok)
      throw new TargetConfigurationError(`POST ${url} answered ${res.status}: ${await res.text()}`);
    await res.body?.cancel();
  }
}

/**
 * The plugin's Lambda handler: every request builds a {@link LocalProxyTarget} from its config, on
 * the runtime's clock. The embedded runtime registers it at {@link LOCAL_PROXY_FUNCTION_ARN}.
 */
export function localProxyPlugin(deps: LocalProxyDeps = {}): PluginHandler {
  return servePlugin((config) => new LocalProxyTarget(config, deps));
}

/**
 * A rollout's target on the local proxy: the `plugin` target naming the function the embedded
 * runtime serves, with the proxy's config (and, as any target may, an MLflow server to record the
 * promoted version in).
 */
export function localProxyTarget(
  config: LocalProxyConfig,
  extra: Pick<PluginTarget, "mlflow"> = {},
): PluginTarget {
  const defined = Object.entries(config).filter(([, v]) => v !== undefined);
  return {
    type: "plugin",
    name: LOCAL_PROXY_PLUGIN,
    functionArn: LOCAL_PROXY_FUNCTION_ARN,
    config: Object.fromEntries(defined) as Record<string, PluginJson>,
    ...extra,
  };
}
