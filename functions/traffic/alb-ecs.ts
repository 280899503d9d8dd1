import type { ECSClient } from "@aws-sdk/client-ecs";
import type { ElasticLoadBalancingV2Client } from "@aws-sdk/client-elastic-load-balancing-v2";
import { z } from "zod";
import { AlbListener, type ListenerView, observeWeights } from "./alb-ecs/listener.ts";
import { EcsSlots } from "./alb-ecs/services.ts";
import { describeWeights, other, SlotSchema, slotWeights } from "./alb-ecs/slots.ts";
import { pushedArtifact } from "./artifact.ts";
import { TargetConfigurationError, TargetStateError } from "./errors.ts";
import type {
  AbortOptions,
  CandidateArtifact,
  Clock,
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
import { type AlbEcsSettings, AlbEcsSettingsSchema, parseTargetSettings } from "./settings.ts";
import { appliedWeight, parseTargetState, requirePercent, secondsUntil } from "./state.ts";

export { slotWeights } from "./alb-ecs/slots.ts";

/**
 * ALB weighted target groups with two ECS services as slots a and b (the `aws-alb` router). The
 * adapter composes the two halves — the listener's weights (`alb-ecs/listener.ts`) and the
 * services' replica sets (`alb-ecs/services.ts`), as Argo Rollouts keeps traffic routing apart
 * from ReplicaSets — and keeps the rollout's state between calls.
 *
 * The candidate is deployed on the free slot with no traffic, traffic moves by rewriting the
 * weights of one forward action, and promotion only flips which slot is stable: the old slot
 * stays up for `scaleDownDelaySeconds`, so an abort in that window is a weight change and not a
 * redeployment. Every write first checks the listener's fingerprint taken at `prepare`
 * (`ListenerChangedError` when someone else changed it); changed weights are drift (a `drift`
 * outcome), never overwritten unless asked.
 */

/** What this target remembers between calls; the caller stores it on the rollout item. */
export const AlbEcsStateSchema = z
  .object({
    type: z.literal("alb-ecs"),
    /** The slot serving the stable version; the other one is the candidate's. */
    stableSlot: SlotSchema,
    /** Percent of traffic this rollout last sent to the non-stable slot. */
    canaryWeight: z.number().int().min(0).max(100),
    /** Fingerprint of the listener's rules (or the rule) without the managed weights. */
    snapshot: z.string(),
    phase: z.enum(["prepared", "deploying", "ready", "promoted", "aborting", "aborted"]),
    deployment: z
      .object({
        slot: SlotSchema,
        taskDefinitionArn: z.string(),
        image: z.string(),
        desiredCount: z.number().int().nonnegative(),
        deadlineAt: z.number(),
      })
      .strict()
      .optional(),
    /** An abort after the scale-down: the old slot is being scaled back up. */
    restore: z
      .object({ slot: SlotSchema, desiredCount: z.number().int().nonnegative(), deadlineAt: z.number() })
      .strict()
      .optional(),
    testerRule: z.object({ name: z.string(), ruleArn: z.string(), created: z.boolean() }).strict().optional(),
    /** A slot to scale down once `at` (ms) has passed. */
    pendingScaleDown: z.object({ slot: SlotSchema, at: z.number() }).strict().optional(),
    /** The last slot this rollout scaled down, with its task count, to bring it back on abort. */
    scaledDown: z
      .object({ slot: SlotSchema, desiredCount: z.number().int().nonnegative() })
      .strict()
      .optional(),
  })
  .strict();

export type AlbEcsState = z.infer<typeof AlbEcsStateSchema>;

/** The SDK clients this adapter drives. */
export interface AlbEcsClients {
  readonly elbv2: ElasticLoadBalancingV2Client;
  readonly ecs: ECSClient;
}

/** Drives one ALB listener (or rule) and two ECS services. */
export class AlbEcsTraffic implements TrafficTarget {
  readonly type = "alb-ecs" as const;

  artifactFor(pushed: Pushed): CandidateArtifact {
    return pushedArtifact(pushed);
  }
  readonly #settings: AlbEcsSettings;
  readonly #listener: AlbListener;
  readonly #services: EcsSlots;

  constructor(
    clients: AlbEcsClients,
    settings: unknown,
    private readonly clock: Clock,
  ) {
    this.#settings = parseTargetSettings(AlbEcsSettingsSchema, settings, "alb-ecs settings");
    this.#listener = new AlbListener(clients.elbv2, this.#settings);
    this.#services = new EcsSlots(clients.ecs, this.#settings, clock);
  }

  async prepare(): Promise<Prepared> {
    const view = await this.#listener.read();
    const services = await this.#services.describe();
    let stableSlot: AlbEcsState["stableSlot"];
    if (view.weights.a !== view.weights.b) {
      stableSlot = view.weights.a > view.weights.b ? "a" : "b";
    } else {
      // A tie (or nothing configured): the slot with tasks is stable; the first release goes to a.
      stableSlot = services.a.desiredCount && !services.b.desiredCount ? "a" : "b";
    }
    const candidate = other(stableSlot);
    const firstRelease = !services[stableSlot].desiredCount && !services[stableSlot].runningCount;
    if (!firstRelease && view.weights[candidate] > 0) {
      throw new TargetConfigurationError(
        `the free slot ${candidate} still receives traffic (weights a=${view.weights.a}, b=${view.weights.b}); ` +
          "finish or abort the rollout that left it there first",
      );
    }
    const state: AlbEcsState = {
      type: "alb-ecs",
      stableSlot,
      canaryWeight: 0,
      snapshot: view.fingerprint,
      phase: "prepared",
    };
    return {
      state,
      firstRelease,
      stable: `slot ${stableSlot} (${this.#services.service(stableSlot)}, ${services[stableSlot].taskDefinition ?? "no task definition"})`,
    };
  }

  async deployCandidate(input: TargetState, artifact: CandidateArtifact): Promise<TargetState> {
    const state = this.#state(input);
    if (!("image" in artifact)) {
      throw new TargetConfigurationError("an alb-ecs candidate is a container image: give artifact.image");
    }
    if (!["prepared", "deploying", "ready"].includes(state.phase)) {
      throw new TargetStateError(`cannot deploy a candidate in phase ${state.phase}`);
    }
    const slot = other(state.stableSlot);
    const services = await this.#services.describe();
    const baseTaskDefinition = services[slot].taskDefinition;
    if (!baseTaskDefinition) {
      throw new TargetConfigurationError(
        `service ${this.#services.service(slot)} has no task definition to base on`,
      );
    }
    const taskDefinitionArn = await this.#services.registerCandidate(baseTaskDefinition, artifact.image);
    // The candidate runs at the stable side's size, so that any weight (and a blue/green switch)
    // lands on enough capacity.
    const desiredCount = services[state.stableSlot].desiredCount || this.#settings.desiredCount;
    await this.#services.update(slot, desiredCount, taskDefinitionArn);
    const next: AlbEcsState = {
      ...state,
      phase: "deploying",
      deployment: {
        slot,
        taskDefinitionArn,
        image: artifact.image,
        desiredCount,
        deadlineAt: this.clock.now() + this.#settings.progressDeadlineSeconds * 1000,
      },
      // A slot redeployed by this rollout is no longer one to scale down later.
      pendingScaleDown: state.pendingScaleDown?.slot === slot ? undefined : state.pendingScaleDown,
    };
    return next;
  }

  async checkReadiness(input: TargetState): Promise<Readiness> {
    const state = this.#state(input);
    if (state.phase === "deploying" && state.deployment) {
      const d = state.deployment;
      const poll = await this.#services.poll(d.slot, d.taskDefinitionArn, d.deadlineAt, "the candidate");
      if (!poll.ready)
        return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
      return { ready: true, state: { ...state, phase: "ready" }, message: poll.message };
    }
    if (state.phase === "aborting" && state.restore) {
      const r = state.restore;
      const poll = await this.#services.poll(r.slot, undefined, r.deadlineAt, "the old stable slot");
      return poll.ready
        ? { ready: true, state, message: `${poll.message}; call abort again to move the traffic` }
        : { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
    }
    return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
  }

  async readWeights(input: TargetState): Promise<ObservedWeights> {
    const state = this.#state(input);
    const view = await this.#read(state);
    return this.#observe(state, view);
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
    const view = await this.#readUnchanged(state);
    const observed = this.#observe(state, view);
    if (observed.drift && !options.overwriteDrift) {
      return {
        outcome: "drift",
        state,
        weights: observed,
        message:
          `weights changed outside the rollout: the candidate slot ${other(state.stableSlot)} receives ` +
          `${formatPercent(observed.canary)}% instead of ${state.canaryWeight}% (${observed.detail})`,
      };
    }
    const weights = slotWeights(other(state.stableSlot), percent);
    await this.#listener.writeWeights(view, weights);
    const next: AlbEcsState = { ...state, canaryWeight: percent };
    return appliedWeight(next, percent, describeWeights(weights));
  }

  async setHeaderRoute(input: TargetState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    if (state.phase !== "ready") {
      throw new TargetStateError(
        `cannot route testers to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const view = await this.#readUnchanged(state);
    const { testerRule, message } = await this.#listener.routeTesters(
      view,
      route,
      state.testerRule,
      other(state.stableSlot),
    );
    return { state: { ...state, testerRule }, applied: true, message };
  }

  async removeHeaderRoute(input: TargetState, name: string): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    if (!state.testerRule || state.testerRule.name !== name) {
      return { state, applied: true, message: `no header route named ${name}` };
    }
    return {
      state: await this.#removeTesterRule(state),
      applied: true,
      message: `header route ${name} removed`,
    };
  }

  async promote(input: TargetState, options: PromoteOptions): Promise<TargetState> {
    const state = this.#state(input);
    if (state.phase === "promoted") return state;
    if (state.phase !== "ready") {
      throw new TargetStateError(`cannot promote in phase ${state.phase}; the candidate must be ready`);
    }
    const view = await this.#readUnchanged(state);
    const candidate = other(state.stableSlot);
    await this.#listener.writeWeights(view, slotWeights(candidate, 100));
    const withoutRoute = await this.#removeTesterRule(state);
    const next: AlbEcsState = {
      ...withoutRoute,
      phase: "promoted",
      stableSlot: candidate,
      canaryWeight: 0,
      pendingScaleDown: {
        slot: state.stableSlot,
        at: this.clock.now() + options.scaleDownDelaySeconds * 1000,
      },
    };
    return next;
  }

  async abort(input: TargetState, options: AbortOptions): Promise<Readiness> {
    let state = this.#state(input);
    const now = this.clock.now();
    if (state.phase === "aborted") return { ready: true, state, message: "already aborted" };

    if (state.phase === "promoted") {
      // Back to the slot that was stable before the promotion.
      const previous = other(state.stableSlot);
      if (state.scaledDown?.slot === previous) {
        const desiredCount = state.scaledDown.desiredCount || this.#settings.desiredCount;
        await this.#services.update(previous, desiredCount);
        const deadlineSeconds = options.progressDeadlineSeconds ?? this.#settings.progressDeadlineSeconds;
        const next: AlbEcsState = {
          ...state,
          phase: "aborting",
          restore: { slot: previous, desiredCount, deadlineAt: now + deadlineSeconds * 1000 },
        };
        return {
          ready: false,
          state: next,
          retryAfterSeconds: this.#settings.pollSeconds,
          message: `slot ${previous} was scaled down: scaling ${this.#services.service(previous)} back to ${desiredCount} tasks`,
        };
      }
      state = { ...state, phase: "ready", stableSlot: previous, canaryWeight: 100 };
    } else if (state.phase === "aborting" && state.restore) {
      const r = state.restore;
      const poll = await this.#services.poll(r.slot, undefined, r.deadlineAt, "the old stable slot");
      if (!poll.ready) {
        return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
      }
      state = { ...state, phase: "ready", stableSlot: r.slot, canaryWeight: 100, restore: undefined };
    }

    const view = await this.#readUnchanged(state);
    const candidate = other(state.stableSlot);
    const target = slotWeights(candidate, 0);
    if (view.weights.a !== target.a || view.weights.b !== target.b) {
      await this.#listener.writeWeights(view, target);
    }
    const withoutRoute = await this.#removeTesterRule(state);
    const next: AlbEcsState = {
      ...withoutRoute,
      phase: "aborted",
      canaryWeight: 0,
      deployment: undefined,
      pendingScaleDown: { slot: candidate, at: now + options.abortScaleDownDelaySeconds * 1000 },
    };
    return {
      ready: true,
      state: next,
      message: `all traffic on slot ${state.stableSlot} (${this.#services.service(state.stableSlot)}); slot ${candidate} scales down in ${options.abortScaleDownDelaySeconds}s`,
    };
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
        message: `slot ${pending.slot} scales down at ${new Date(pending.at).toISOString()}`,
      };
    }
    const view = await this.#read(state);
    if (view.weights[pending.slot] > 0) {
      return {
        ready: true,
        state: { ...state, pendingScaleDown: undefined },
        message: `slot ${pending.slot} receives traffic again (${describeWeights(view.weights)}): another release made it stable, touching nothing`,
      };
    }
    const services = await this.#services.describe();
    const desiredCount = services[pending.slot].desiredCount ?? 0;
    if (desiredCount > 0) await this.#services.update(pending.slot, 0);
    const next: AlbEcsState = {
      ...state,
      pendingScaleDown: undefined,
      scaledDown: { slot: pending.slot, desiredCount },
    };
    return {
      ready: true,
      state: next,
      message: `slot ${pending.slot} (${this.#services.service(pending.slot)}) scaled down from ${desiredCount} tasks`,
    };
  }

  #state(input: unknown): AlbEcsState {
    return parseTargetState(AlbEcsStateSchema, input, "alb-ecs");
  }

  #read(state: AlbEcsState): Promise<ListenerView> {
    return this.#listener.read(state.testerRule?.ruleArn);
  }

  /** Reads the listener and refuses to go on if someone else changed it since `prepare`. */
  async #readUnchanged(state: AlbEcsState): Promise<ListenerView> {
    const view = await this.#read(state);
    this.#listener.assertUnchanged(state.snapshot, view);
    return view;
  }

  #observe(state: AlbEcsState, view: ListenerView): ObservedWeights {
    return observeWeights(view, other(state.stableSlot), state.canaryWeight);
  }

  async #removeTesterRule(state: AlbEcsState): Promise<AlbEcsState> {
    if (!state.testerRule) return state;
    await this.#listener.removeTesterRule(state.testerRule, state.stableSlot);
    return { ...state, testerRule: undefined };
  }
}

function formatPercent(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}
