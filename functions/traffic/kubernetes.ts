import { z } from "zod";
import {
  canaryCounts,
  effectiveScale,
  routedCanaryCounts,
  scaledCanaryCounts,
} from "../../statemachine/pods.ts";
import { pushedArtifact } from "./artifact.ts";
import { TargetConfigurationError, TargetNotReadyError, TargetStateError } from "./errors.ts";
import { ServiceSelectors } from "./kubernetes/blue-green.ts";
import { type KubeCall, KubeClient, RESOURCES } from "./kubernetes/client.ts";
import { connect, type KubeConnectOptions } from "./kubernetes/connect.ts";
import { Deployments, type DeploymentView } from "./kubernetes/deployments.ts";
import {
  ExperimentSets,
  experimentName,
  experimentReplicaSet,
  routedLabels,
} from "./kubernetes/experiments.ts";
import { GatewayApiRouter } from "./kubernetes/gateway-api.ts";
import { IstioRouter } from "./kubernetes/istio.ts";
import { NginxRouter } from "./kubernetes/nginx.ts";
import { percent } from "./kubernetes/objects.ts";
import type { WeightRouter } from "./kubernetes/router.ts";
import { type KubernetesSettings, KubernetesSettingsSchema } from "./kubernetes/settings.ts";
import type {
  AbortOptions,
  CanaryScale,
  CanaryScaleChange,
  CandidateArtifact,
  Clock,
  Experiment,
  ExperimentChange,
  HeaderRoute,
  HeaderRouteChange,
  ObservedWeights,
  Prepared,
  PromoteOptions,
  Pushed,
  Readiness,
  TargetState,
  TrafficTarget,
  WeightChange,
} from "./port.ts";
import { parseTargetSettings } from "./settings.ts";
import { parseTargetState, requirePercent, secondsUntil } from "./state.ts";

/**
 * Kubernetes: two Deployments and, with a router, the object that splits requests (an HTTPRoute,
 * a VirtualService, an NGINX canary Ingress), or two Services switched by selector (blue/green).
 *
 * - **Basic canary** (`router: pods`): one Service over both Deployments' pods, so a weight is
 *   pods: `setWeight` scales canary and stable to Argo's counts (`canaryCounts`: surge, never an
 *   empty side).
 * - **Routers**: exact weights; the canary Deployment runs `ceil(replicas × weight / 100)` pods
 *   (at least one while the rollout runs, so a weight never lands on no pod), the stable keeps
 *   all of its own. A `setCanaryScale` step decouples the canary's pods from the weight (an
 *   explicit count, or a percent of the replicas) until the next one, promotion or abort; without
 *   a router it changes nothing, as in Argo.
 * - **Promotion** moves the candidate's image to the stable Deployment at full size; once its
 *   `scaleDownDelaySeconds` have passed and the stable Deployment runs it everywhere, the router's
 *   canary weight goes back to 0 and the canary Deployment to 0 pods.
 * - **Blue/green**: the candidate goes to the Deployment the active Service does not select; the
 *   preview Service selects it at once, the active one at promotion; the old side is scaled down
 *   after `scaleDownDelaySeconds`.
 *
 * Every write is conditional on the `resourceVersion` read; a conflict is read again and decided
 * again. Weights or pod counts changed by someone else are drift, never overwritten unless asked.
 */

const Name = z.string().min(1);
const Wait = z
  .object({
    deployment: Name,
    replicas: z.number().int().nonnegative(),
    image: z.string().optional(),
    deadlineAt: z.number(),
  })
  .strict();

export const KubernetesStateSchema = z
  .object({
    type: z.literal("kubernetes"),
    phase: z.enum(["prepared", "deploying", "ready", "promoted", "aborting", "aborted"]),
    /** The rollout's pods. */
    replicas: z.number().int().positive(),
    firstRelease: z.boolean(),
    /** The stable side: its Deployment and the image it runs. */
    stable: z.object({ deployment: Name, image: z.string() }).strict(),
    /** The stable side before a promotion, to go back to on an abort after it. */
    previous: z.object({ deployment: Name, image: z.string() }).strict().optional(),
    /** The candidate: its Deployment and image, once deployed. */
    candidate: z.object({ deployment: Name, image: z.string() }).strict().optional(),
    /** Percent of traffic this rollout last set for the candidate. */
    canaryWeight: z.number().int().min(0).max(100),
    /** With a router: the `setCanaryScale` in force (absent: the canary's pods follow the weight). */
    canaryScale: z
      .object({
        replicas: z.number().int().nonnegative().optional(),
        weight: z.number().int().nonnegative().optional(),
      })
      .strict()
      .optional(),
    /** Basic canary: the pods this rollout last set on each side (what drift is judged against). */
    pods: z
      .object({ canary: z.number().int().nonnegative(), stable: z.number().int().nonnegative() })
      .strict()
      .optional(),
    /** What readiness waits for. */
    wait: Wait.optional(),
    /**
     * The running `experiment` step's ReplicaSets (deleted by its end, promotion and abort);
     * `deadlineAt` while readiness waits for them to be available.
     */
    experiment: z
      .object({
        name: z.string().min(1),
        stepIndex: z.number().int().nonnegative(),
        replicaSets: z.array(
          z
            .object({
              template: z.string().min(1),
              name: Name,
              replicas: z.number().int().nonnegative(),
              podTemplateHash: z.string(),
            })
            .strict(),
        ),
        deadlineAt: z.number().optional(),
      })
      .strict()
      .optional(),
    /** Header routes this rollout set, removed at promotion and abort. */
    headerRoutes: z.array(Name).default([]),
    /**
     * A Deployment to scale to 0 once `at` (ms) has passed and, after a promotion, the stable
     * Deployment runs the candidate everywhere (`afterReady`); `zeroWeight` first sets the
     * router's canary weight to 0. `image` is what it ran: a Deployment given another image since
     * (a newer release) is left alone.
     */
    pendingScaleDown: z
      .object({
        deployment: Name,
        image: z.string(),
        at: z.number(),
        afterReady: Wait.optional(),
        zeroWeight: z.boolean(),
      })
      .strict()
      .optional(),
    /** The last Deployment this rollout scaled down, with its pods, to bring it back on abort. */
    scaledDown: z.object({ deployment: Name, replicas: z.number().int().nonnegative() }).strict().optional(),
  })
  .strict();

export type KubernetesState = z.infer<typeof KubernetesStateSchema>;

/** What the target needs from outside: AWS credentials and region, and a recorder of its calls. */
export interface KubernetesClients extends KubeConnectOptions {
  /** Called with every API call the target makes (its verb and resource, as RBAC names them). */
  readonly onCall?: (call: KubeCall) => void;
}

export class KubernetesTraffic implements TrafficTarget {
  readonly type = "kubernetes" as const;

  artifactFor(pushed: Pushed): CandidateArtifact {
    return pushedArtifact(pushed);
  }
  readonly #settings: KubernetesSettings;
  readonly #deployments: Deployments;
  readonly #experiments: ExperimentSets;
  readonly #client: KubeClient;
  readonly #router: WeightRouter | undefined;
  readonly #selectors: ServiceSelectors | undefined;
  readonly #ns: string;

  constructor(
    clients: KubernetesClients,
    settings: unknown,
    private readonly clock: Clock,
  ) {
    const s = parseTargetSettings(KubernetesSettingsSchema, settings, "kubernetes settings");
    this.#settings = s;
    this.#ns = s.namespace;
    const client = new KubeClient(connect(s, clock, clients), clients.onCall);
    this.#deployments = new Deployments(client, s.namespace, s.container);
    this.#experiments = new ExperimentSets(client, s.namespace);
    this.#client = client;
    const r = s.router;
    this.#router =
      r.type === "gateway-api"
        ? new GatewayApiRouter(client, s.namespace, r)
        : r.type === "istio"
          ? new IstioRouter(client, s.namespace, r)
          : r.type === "nginx"
            ? new NginxRouter(client, s.namespace, r)
            : undefined;
    this.#selectors =
      r.type === "blue-green" ? new ServiceSelectors(client, s.namespace, r.label) : undefined;
  }

  async prepare(): Promise<Prepared> {
    const s = this.#settings;
    const both = [
      await this.#deployments.read(s.stableDeployment),
      await this.#deployments.read(s.canaryDeployment),
    ];
    let stable: DeploymentView = both[0] as DeploymentView;
    if (this.#selectors && s.router.type === "blue-green") {
      this.#selectors.check(both);
      const active = await this.#selectors.selected(s.router.activeService);
      stable = both.find((d) => d.name === active) ?? stable;
    }
    const firstRelease = stable.replicas === 0 && stable.available === 0;
    if (this.#router && !firstRelease) await this.#settleRouter(stable, both[1] as DeploymentView);
    const state: KubernetesState = {
      type: "kubernetes",
      phase: "prepared",
      replicas: s.replicas ?? (stable.replicas || 1),
      firstRelease,
      stable: { deployment: stable.name, image: stable.image },
      canaryWeight: 0,
      headerRoutes: [],
    };
    return {
      state,
      firstRelease,
      stable: `Deployment ${this.#ns}/${stable.name} (${stable.image}, ${stable.replicas} replicas)`,
    };
  }

  /**
   * A router must give the canary nothing before a rollout starts. A promoted release whose
   * scale-down has not run yet still gives its canary a share: once the stable Deployment runs
   * the same image everywhere, that share goes back to 0 here; otherwise the rollout is refused.
   */
  async #settleRouter(stable: DeploymentView, canary: DeploymentView): Promise<void> {
    const router = this.#router as WeightRouter;
    const seen = await router.read();
    if (seen.shares.every((share) => share === 0)) return;
    if (canary.image === stable.image && stable.available >= stable.replicas) {
      await router.write(0, undefined);
      return;
    }
    throw new TargetConfigurationError(
      `the canary still receives traffic (${seen.detail}); finish or abort the rollout that left it there first`,
    );
  }

  async deployCandidate(input: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const state = this.#state(input);
    if (!("image" in artifact)) {
      throw new TargetConfigurationError("a kubernetes candidate is a container image: give artifact.image");
    }
    if (!["prepared", "deploying", "ready"].includes(state.phase)) {
      throw new TargetStateError(`cannot deploy a candidate in phase ${state.phase}`);
    }
    const s = this.#settings;
    const image = artifact.image;
    let deployment: string;
    let replicas: number;
    let pods: KubernetesState["pods"];
    if (s.router.type === "blue-green") {
      deployment = state.stable.deployment === s.stableDeployment ? s.canaryDeployment : s.stableDeployment;
      replicas = state.firstRelease ? state.replicas : (s.router.previewReplicaCount ?? state.replicas);
      await this.#deployments.set(deployment, { replicas, image });
      if (!state.firstRelease) await this.#selectors?.point(s.router.previewService, deployment);
    } else if (state.firstRelease) {
      // Nothing serves yet: the first release goes straight to the stable Deployment.
      deployment = s.stableDeployment;
      replicas = state.replicas;
      await this.#deployments.set(deployment, { replicas, image });
    } else {
      deployment = s.canaryDeployment;
      // Basic canary: any canary pod receives traffic, so none before the first weight. With a
      // router one pod starts now, without traffic, so a broken image fails before any request.
      replicas = this.#router ? 1 : 0;
      await this.#deployments.set(deployment, { replicas, image });
      if (!this.#router) {
        const stable = await this.#deployments.read(s.stableDeployment);
        pods = { canary: 0, stable: stable.replicas };
      }
    }
    return {
      ...state,
      phase: "deploying",
      candidate: { deployment, image },
      ...(pods ? { pods } : {}),
      wait: { deployment, replicas, image, deadlineAt: this.#deadline() },
      // A Deployment redeployed by this rollout is no longer one to scale down later.
      pendingScaleDown:
        state.pendingScaleDown?.deployment === deployment ? undefined : state.pendingScaleDown,
    };
  }

  async checkReadiness(input: TargetState): Promise<Readiness> {
    const state = this.#state(input);
    const experiment = state.experiment;
    if (experiment?.deadlineAt !== undefined) {
      const poll = await this.#experiments.poll(
        experiment.replicaSets,
        experiment.deadlineAt,
        this.clock.now(),
      );
      if (!poll.ready)
        return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
      return {
        ready: true,
        state: { ...state, experiment: { ...experiment, deadlineAt: undefined } },
        message: poll.message,
      };
    }
    if (!state.wait) return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
    const what = state.phase === "aborting" ? "the stable version" : "the candidate";
    const poll = await this.#deployments.poll(state.wait, state.wait.deadlineAt, this.clock.now(), what);
    if (!poll.ready)
      return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
    if (state.phase === "aborting")
      return { ready: true, state, message: `${poll.message}; call abort again to finish` };
    return {
      ready: true,
      state: { ...state, wait: undefined, phase: state.phase === "deploying" ? "ready" : state.phase },
      message: poll.message,
    };
  }

  async readWeights(input: TargetState): Promise<ObservedWeights> {
    return this.#observe(this.#state(input));
  }

  async setWeight(
    input: TargetState,
    weight: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const state = this.#state(input);
    requirePercent(weight, "weight");
    if (weight > 0 && state.phase !== "ready") {
      throw new TargetStateError(
        `cannot send traffic to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const overwrite = options.overwriteDrift === true;
    const observed = await this.#observe(state);
    if (observed.drift && !overwrite) return this.#drift(state, observed);
    const s = this.#settings;
    const candidate = this.#candidate(state);
    if (s.router.type === "blue-green") {
      if (weight !== 0 && weight !== 100) {
        throw new TargetConfigurationError(
          `blue/green switches all traffic at once: setWeight ${weight} is neither 0 nor 100`,
        );
      }
      const to = weight === 100 ? candidate.deployment : state.stable.deployment;
      const from = weight === 100 ? state.stable.deployment : candidate.deployment;
      const moved = await this.#selectors?.point(s.router.activeService, to, overwrite ? undefined : from);
      if (moved?.drift) return this.#drift(state, await this.#observe(state));
      return this.#applied(
        { ...state, canaryWeight: weight },
        weight,
        `Service ${s.router.activeService} selects ${to}`,
      );
    }
    if (!this.#router) {
      const counts = canaryCounts(state.replicas, weight, s.maxSurge);
      const expect = overwrite ? undefined : state.pods;
      // The canary first (with surge, the new pods start before stable ones stop).
      const canary = await this.#deployments.set(candidate.deployment, {
        replicas: counts.canary,
        ...(expect ? { expectReplicas: expect.canary } : {}),
      });
      const stable =
        canary.changed === undefined
          ? await this.#deployments.set(state.stable.deployment, {
              replicas: counts.stable,
              ...(expect ? { expectReplicas: expect.stable } : {}),
            })
          : canary;
      if (stable.changed !== undefined) return this.#drift(state, await this.#observe(state));
      const next: KubernetesState = {
        ...state,
        canaryWeight: weight,
        pods: counts,
        wait: {
          deployment: candidate.deployment,
          replicas: counts.canary,
          image: candidate.image,
          deadlineAt: this.#deadline(),
        },
      };
      // Behind one Service the candidate's share is its share of the pods.
      const share = (counts.canary * 100) / Math.max(1, counts.canary + counts.stable);
      return this.#applied(
        next,
        share,
        `${counts.canary} canary and ${counts.stable} stable pods behind one Service`,
      );
    }
    const replicas = this.#routedCanaryPods(state, weight);
    await this.#deployments.set(candidate.deployment, { replicas });
    const written = await this.#router.write(weight, overwrite ? undefined : state.canaryWeight);
    if (written.outcome === "drift") return this.#drift(state, await this.#observe(state));
    const next: KubernetesState = {
      ...state,
      canaryWeight: weight,
      wait: {
        deployment: candidate.deployment,
        replicas,
        image: candidate.image,
        deadlineAt: this.#deadline(),
      },
    };
    return this.#applied(next, weight, `${written.detail}; ${replicas} canary pods`);
  }

  /**
   * Argo's `setCanaryScale`: with a router the canary Deployment runs the scale's pods whatever
   * the weight, until the next `setCanaryScale`; `matchTrafficWeight` goes back to the weight's.
   * Without a router Argo ignores it (the canary's pods are its share of the traffic).
   */
  async setCanaryScale(input: TargetState, scale: CanaryScale): Promise<CanaryScaleChange> {
    const state = this.#state(input);
    if (state.phase !== "ready") {
      throw new TargetStateError(`cannot scale the candidate in phase ${state.phase}; it must be ready`);
    }
    if (!this.#router) {
      return {
        state,
        message:
          this.#settings.router.type === "blue-green"
            ? "setCanaryScale: blue/green has no canary to scale; nothing changed"
            : "setCanaryScale: without a traffic router the canary's pods are its share of the traffic; nothing changed",
      };
    }
    const candidate = this.#candidate(state);
    const effective = effectiveScale(scale);
    const next: KubernetesState = { ...state, canaryScale: effective };
    const replicas = this.#routedCanaryPods(next, state.canaryWeight);
    await this.#deployments.set(candidate.deployment, { replicas });
    const why =
      effective?.replicas !== undefined
        ? "as set"
        : effective?.weight !== undefined
          ? `for ${effective.weight}% of ${state.replicas} replicas`
          : `following the weight, ${state.canaryWeight}%`;
    return {
      state: {
        ...next,
        wait: {
          deployment: candidate.deployment,
          replicas,
          image: candidate.image,
          deadlineAt: this.#deadline(),
        },
      },
      message: `Deployment ${this.#ns}/${candidate.deployment} runs ${replicas} canary pods (${why})`,
    };
  }

  /**
   * The canary's pods behind a router: the `setCanaryScale` in force, else the weight's (at least
   * one while the rollout runs, so a weight never lands on no pod).
   */
  #routedCanaryPods(state: KubernetesState, weight: number): number {
    if (state.canaryScale) return scaledCanaryCounts(state.replicas, weight, state.canaryScale).canary;
    return Math.max(1, routedCanaryCounts(state.replicas, weight).canary);
  }

  /**
   * Argo's `experiment` step: one ReplicaSet per template, from the stable or the candidate's
   * Deployment; readiness then waits until they are available. A retried start finds its own
   * ReplicaSets and goes on.
   */
  async startExperiment(input: TargetState, experiment: Experiment): Promise<ExperimentChange> {
    const state = this.#state(input);
    if (state.phase !== "ready") {
      throw new TargetStateError(
        `cannot start an experiment in phase ${state.phase}; the candidate must be ready`,
      );
    }
    const candidate = this.#candidate(state);
    const canary = await this.#deployments.object(candidate.deployment);
    const stable = await this.#deployments.object(state.stable.deployment);
    const name = experimentName(canary, experiment.stepIndex);
    const routed = await this.#routedLabels();
    const replicaSets = [];
    for (const template of experiment.templates) {
      const source = template.specRef === "canary" ? canary : stable;
      replicaSets.push(
        await this.#experiments.create(experimentReplicaSet(name, template, source, this.#ns, routed)),
      );
    }
    return {
      state: {
        ...state,
        experiment: { name, stepIndex: experiment.stepIndex, replicaSets, deadlineAt: this.#deadline() },
      },
      message: `experiment ${name}: ReplicaSets ${replicaSets
        .map((r) => `${this.#ns}/${r.name} (${r.replicas} pods)`)
        .join(", ")}`,
    };
  }

  experimentValues(input: TargetState): Record<string, string> {
    const sets = this.#state(input).experiment?.replicaSets ?? [];
    return Object.fromEntries(
      sets.map((r) => [`templates.${r.template}.podTemplateHash`, r.podTemplateHash]),
    );
  }

  async stopExperiment(input: TargetState): Promise<ExperimentChange> {
    const state = this.#state(input);
    if (!state.experiment) return { state, message: "no experiment running" };
    const deleted = await this.#experiments.delete(state.experiment.replicaSets);
    return {
      state: { ...state, experiment: undefined },
      message: `experiment ${state.experiment.name} ended: ${deleted.length > 0 ? `ReplicaSets ${deleted.join(", ")} deleted` : "its ReplicaSets were gone"}`,
    };
  }

  /**
   * Behind a router: the pod labels its stable and canary Services tell their pods apart by (an
   * Istio destination host names its Service by its first label); blue/green's: its label.
   */
  async #routedLabels(): Promise<string[]> {
    const r = this.#settings.router;
    // Blue/green's Services select one side by this label's value.
    if (r.type === "blue-green") return [r.label];
    if (!this.#router || !("stableService" in r) || !("canaryService" in r)) return [];
    const service = (host: string) =>
      this.#client.require(RESOURCES.services, this.#ns, host.split(".")[0] ?? host);
    return routedLabels(await service(r.stableService), await service(r.canaryService));
  }

  /** The experiment's ReplicaSets deleted, when one runs (promotion and abort end it, as Argo's). */
  async #endExperiment(state: KubernetesState): Promise<KubernetesState> {
    if (!state.experiment) return state;
    await this.#experiments.delete(state.experiment.replicaSets);
    return { ...state, experiment: undefined };
  }

  async setHeaderRoute(input: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    if (state.phase !== "ready") {
      throw new TargetStateError(
        `cannot route testers to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    if (!this.#router) {
      return {
        state,
        applied: false,
        message:
          this.#settings.router.type === "blue-green"
            ? `blue/green: testers reach the candidate through the preview Service ${this.#settings.router.previewService}`
            : "no traffic router: one Service cannot route by header (configure gateway-api, istio or nginx)",
      };
    }
    const message = await this.#router.setHeaderRoute(route);
    const headerRoutes = state.headerRoutes.includes(route.name)
      ? state.headerRoutes
      : [...state.headerRoutes, route.name];
    return { state: { ...state, headerRoutes }, applied: true, message };
  }

  async removeHeaderRoute(input: TargetState, name: string): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    if (!this.#router) return { state, applied: true, message: `no header route named ${name}` };
    const message = await this.#router.removeHeaderRoute(name);
    return {
      state: { ...state, headerRoutes: state.headerRoutes.filter((n) => n !== name) },
      applied: true,
      message,
    };
  }

  async promote(input: TargetState, options: PromoteOptions): Promise<TargetState> {
    const read = this.#state(input);
    if (read.phase === "promoted") return read;
    const state = await this.#endExperiment(read);
    if (state.phase !== "ready")
      throw new TargetStateError(`cannot promote in phase ${state.phase}; the candidate must be ready`);
    const s = this.#settings;
    const candidate = this.#candidate(state);
    const at = this.clock.now() + options.scaleDownDelaySeconds * 1000;
    if (state.firstRelease) {
      if (s.router.type === "blue-green") {
        // Nothing served before: both Services go to the Deployment the release was put on.
        await this.#selectors?.point(s.router.activeService, candidate.deployment);
        await this.#selectors?.point(s.router.previewService, candidate.deployment);
      }
      return {
        ...state,
        phase: "promoted",
        stable: candidate,
        candidate: undefined,
        canaryWeight: 0,
        wait: undefined,
      };
    }
    if (s.router.type === "blue-green") {
      await this.#deployments.set(candidate.deployment, { replicas: state.replicas });
      await this.#selectors?.point(s.router.activeService, candidate.deployment);
      await this.#selectors?.point(s.router.previewService, candidate.deployment);
      return {
        ...state,
        phase: "promoted",
        previous: state.stable,
        stable: candidate,
        candidate: undefined,
        canaryWeight: 0,
        wait: undefined,
        pendingScaleDown: { ...state.stable, at, zeroWeight: false },
      };
    }
    const cleared = await this.#removeHeaderRoutes(state);
    await this.#deployments.set(state.stable.deployment, {
      replicas: state.replicas,
      image: candidate.image,
    });
    return {
      ...cleared,
      phase: "promoted",
      canaryScale: undefined,
      previous: state.stable,
      stable: { deployment: state.stable.deployment, image: candidate.image },
      canaryWeight: 0,
      wait: undefined,
      pods: undefined,
      pendingScaleDown: {
        deployment: candidate.deployment,
        image: candidate.image,
        at,
        afterReady: {
          deployment: state.stable.deployment,
          replicas: state.replicas,
          image: candidate.image,
          deadlineAt: at + s.progressDeadlineSeconds * 1000,
        },
        zeroWeight: this.#router !== undefined,
      },
    };
  }

  async abort(input: TargetState, options: AbortOptions): Promise<Readiness> {
    const state = await this.#endExperiment(this.#state(input));
    const s = this.#settings;
    const now = this.clock.now();
    if (state.phase === "aborted") return { ready: true, state, message: "already aborted" };
    const deadlineAt = now + (options.progressDeadlineSeconds ?? s.progressDeadlineSeconds) * 1000;

    if (state.phase === "aborting" && state.wait) {
      const poll = await this.#deployments.poll(state.wait, state.wait.deadlineAt, now, "the stable version");
      if (!poll.ready)
        return { ready: false, state, retryAfterSeconds: s.pollSeconds, message: poll.message };
      return this.#finishAbort({ ...state, wait: undefined }, options);
    }

    if (state.phase === "promoted") {
      const previous = state.previous;
      if (!previous) {
        return {
          ready: true,
          state: { ...state, phase: "aborted" },
          message: "a first release has nothing to go back to",
        };
      }
      if (s.router.type === "blue-green") {
        const old = await this.#deployments.read(previous.deployment);
        const back: KubernetesState = {
          ...state,
          stable: previous,
          candidate: state.stable,
          previous: undefined,
          pendingScaleDown: undefined,
        };
        if (old.replicas < state.replicas || old.image !== previous.image) {
          await this.#deployments.set(previous.deployment, {
            replicas: state.replicas,
            image: previous.image,
          });
          const wait = {
            deployment: previous.deployment,
            replicas: state.replicas,
            image: previous.image,
            deadlineAt,
          };
          return {
            ready: false,
            state: { ...back, phase: "aborting", wait },
            retryAfterSeconds: s.pollSeconds,
            message: `Deployment ${previous.deployment} was scaled down: scaling it back to ${state.replicas} pods`,
          };
        }
        return this.#finishAbort(back, options);
      }
      // The stable Deployment runs the candidate now: its previous image goes back on, and the
      // canary (the same candidate) loses its traffic at once.
      const canary = s.canaryDeployment;
      await this.#deployments.set(state.stable.deployment, {
        replicas: state.replicas,
        image: previous.image,
      });
      if (this.#router) await this.#router.write(0, undefined);
      else await this.#deployments.set(canary, { replicas: 0 });
      const wait = {
        deployment: state.stable.deployment,
        replicas: state.replicas,
        image: previous.image,
        deadlineAt,
      };
      return {
        ready: false,
        state: {
          ...state,
          phase: "aborting",
          stable: previous,
          candidate: { deployment: canary, image: state.stable.image },
          previous: undefined,
          pendingScaleDown: undefined,
          wait,
        },
        retryAfterSeconds: s.pollSeconds,
        message: `rolling Deployment ${state.stable.deployment} back to ${previous.image}`,
      };
    }
    return this.#finishAbort(state, options);
  }

  /** All traffic on the stable side, header routes removed, the candidate's scale-down scheduled. */
  async #finishAbort(state: KubernetesState, options: AbortOptions): Promise<Readiness> {
    const s = this.#settings;
    const at = this.clock.now() + options.abortScaleDownDelaySeconds * 1000;
    const candidate = state.candidate;
    // Argo's abort clears the setCanaryScale in force: what is left of the candidate is scaled down.
    let next: KubernetesState = {
      ...state,
      phase: "aborted",
      canaryWeight: 0,
      wait: undefined,
      canaryScale: undefined,
    };
    let message: string;
    if (s.router.type === "blue-green") {
      await this.#selectors?.point(s.router.activeService, state.stable.deployment);
      await this.#selectors?.point(s.router.previewService, state.stable.deployment);
      message = `Services ${s.router.activeService} and ${s.router.previewService} select ${state.stable.deployment}`;
    } else if (state.firstRelease) {
      message = "a first release has nothing to go back to";
    } else if (this.#router) {
      await this.#router.write(0, undefined);
      next = await this.#removeHeaderRoutes(next);
      message = `all traffic on the stable Service (${this.#router.what})`;
    } else {
      // Basic canary: every canary pod has traffic, so it goes now and the stable is whole again.
      await this.#deployments.set(s.canaryDeployment, { replicas: 0 });
      await this.#deployments.set(state.stable.deployment, { replicas: state.replicas });
      next = { ...next, pods: { canary: 0, stable: state.replicas } };
      return { ready: true, state: next, message: `canary scaled to 0, stable to ${state.replicas} pods` };
    }
    if (candidate && !state.firstRelease) {
      next = { ...next, pendingScaleDown: { ...candidate, at, zeroWeight: false } };
      message += `; ${candidate.deployment} scales down in ${options.abortScaleDownDelaySeconds}s`;
    }
    return { ready: true, state: next, message };
  }

  async scaleDown(input: TargetState): Promise<Readiness> {
    const state = this.#state(input);
    const pending = state.pendingScaleDown;
    if (!pending) return { ready: true, state, message: "nothing to scale down" };
    const now = this.clock.now();
    if (now < pending.at) {
      return {
        ready: false,
        state,
        retryAfterSeconds: secondsUntil(pending.at, now),
        message: `${pending.deployment} scales down at ${new Date(pending.at).toISOString()}`,
      };
    }
    const done = { ...state, pendingScaleDown: undefined };
    if (pending.afterReady) {
      let poll: { ready: boolean; message: string };
      try {
        poll = await this.#deployments.poll(
          pending.afterReady,
          pending.afterReady.deadlineAt,
          now,
          "the promoted version",
        );
      } catch (error) {
        if (!(error instanceof TargetNotReadyError)) throw error;
        return {
          ready: true,
          state: done,
          message: `${error.message}: ${pending.deployment} stays up, check it by hand`,
        };
      }
      if (!poll.ready)
        return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
    }
    const s = this.#settings;
    if (
      s.router.type === "blue-green" &&
      (await this.#selectors?.selected(s.router.activeService)) === pending.deployment
    ) {
      return { ready: true, state: done, message: `${pending.deployment} is active again: touching nothing` };
    }
    const view = await this.#deployments.read(pending.deployment);
    if (view.image !== pending.image) {
      return {
        ready: true,
        state: done,
        message: `${pending.deployment} runs ${view.image} now (another release): touching nothing`,
      };
    }
    if (pending.zeroWeight && this.#router) await this.#router.write(0, undefined);
    if (view.replicas > 0) await this.#deployments.set(pending.deployment, { replicas: 0 });
    return {
      ready: true,
      state: { ...done, scaledDown: { deployment: pending.deployment, replicas: view.replicas } },
      message: `Deployment ${this.#ns}/${pending.deployment} scaled down from ${view.replicas} pods`,
    };
  }

  #state(input: unknown): KubernetesState {
    return parseTargetState(KubernetesStateSchema, input, "kubernetes");
  }

  #candidate(state: KubernetesState): NonNullable<KubernetesState["candidate"]> {
    if (!state.candidate) throw new TargetStateError(`no candidate deployed (phase ${state.phase})`);
    return state.candidate;
  }

  #deadline(): number {
    return this.clock.now() + this.#settings.progressDeadlineSeconds * 1000;
  }

  async #removeHeaderRoutes(state: KubernetesState): Promise<KubernetesState> {
    if (!this.#router) return state;
    for (const name of state.headerRoutes) await this.#router.removeHeaderRoute(name);
    return { ...state, headerRoutes: [] };
  }

  /** What the cluster gives the candidate now, against what this rollout set. */
  async #observe(state: KubernetesState): Promise<ObservedWeights> {
    const s = this.#settings;
    const expected = state.canaryWeight;
    const result = (canary: number, drift: boolean, detail: string): ObservedWeights => ({
      canary,
      stable: 100 - canary,
      expectedCanary: expected,
      drift,
      detail,
    });
    if (s.router.type === "blue-green") {
      const active = await this.#selectors?.selected(s.router.activeService);
      const canary = state.candidate && active === state.candidate.deployment ? 100 : 0;
      const wanted = expected === 100 ? state.candidate?.deployment : state.stable.deployment;
      return result(
        canary,
        active !== wanted,
        `Service ${s.router.activeService} selects ${active ?? "neither Deployment"}`,
      );
    }
    if (this.#router) {
      const seen = await this.#router.read();
      return result(
        seen.canary,
        seen.shares.some((share) => Math.abs(share - expected) > 1e-6),
        seen.detail,
      );
    }
    const stable = await this.#deployments.read(state.stable.deployment);
    const canary = state.candidate ? await this.#deployments.read(state.candidate.deployment) : undefined;
    const c = canary?.replicas ?? 0;
    const total = c + stable.replicas;
    const pods = state.pods;
    const drift = pods !== undefined && (pods.canary !== c || pods.stable !== stable.replicas);
    return result(
      total > 0 ? (c * 100) / total : 0,
      drift,
      `${c} canary and ${stable.replicas} stable pods behind one Service`,
    );
  }

  #drift(state: KubernetesState, observed: ObservedWeights): WeightChange {
    return {
      outcome: "drift",
      state,
      weights: observed,
      message: `weights changed outside the rollout: the candidate receives ${percent(observed.canary)} instead of ${state.canaryWeight}% (${observed.detail})`,
    };
  }

  #applied(state: KubernetesState, share: number, detail: string): WeightChange {
    return {
      outcome: "applied",
      state,
      weights: {
        canary: share,
        stable: 100 - share,
        expectedCanary: state.canaryWeight,
        drift: false,
        detail,
      },
    };
  }
}
