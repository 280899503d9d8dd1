import {
  DescribeServicesCommand,
  DescribeTaskDefinitionCommand,
  type ECSClient,
  RegisterTaskDefinitionCommand,
  type RegisterTaskDefinitionRequest,
  type Service,
  UpdateServiceCommand,
} from "@aws-sdk/client-ecs";
import {
  type Action,
  CreateRuleCommand,
  DeleteRuleCommand,
  DescribeRulesCommand,
  type ElasticLoadBalancingV2Client,
  ModifyListenerCommand,
  ModifyRuleCommand,
  type Rule,
  type RuleCondition,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { z } from "zod";
import {
  ListenerChangedError,
  RouterStateError,
  TargetConfigurationError,
  TargetNotReadyError,
} from "./errors.ts";
import type {
  AbortOptions,
  CandidateArtifact,
  Clock,
  HeaderRoute,
  HeaderRouteChange,
  ObservedWeights,
  Prepared,
  PromoteOptions,
  Readiness,
  RouterState,
  TrafficRouter,
  WeightChange,
} from "./port.ts";
import { type AlbEcsSettings, AlbEcsSettingsSchema, describeIssues } from "./settings.ts";
import { awsErrorName, parseRouterState, secondsUntil } from "./state.ts";

/**
 * ALB weighted target groups with two ECS services as slots a and b (the `aws-alb`
 * router). The candidate is deployed on the free slot with no traffic, traffic moves by
 * rewriting the weights of one forward action, and promotion only flips which slot is stable:
 * the old slot stays up for `scaleDownDelaySeconds`, so an abort in that window is a weight
 * change and not a redeployment.
 *
 * ELBv2 has no conditional write (no ETag), so every write re-reads the listener or rule first
 * and compares a fingerprint of everything but the managed weights with the one taken at
 * `prepare`: a change refuses the write with `ListenerChangedError`. Changed weights are drift
 * (a `drift` outcome), never overwritten unless asked.
 */

const Slot = z.enum(["a", "b"]);
type Slot = z.infer<typeof Slot>;

/** What this target remembers between calls; the caller stores it on the rollout item. */
export const AlbEcsStateSchema = z
  .object({
    type: z.literal("alb-ecs"),
    /** The slot serving the stable version; the other one is the candidate's. */
    stableSlot: Slot,
    /** Percent of traffic this rollout last sent to the non-stable slot. */
    canaryWeight: z.number().int().min(0).max(100),
    /** Fingerprint of the listener's rules (or the rule) without the managed weights. */
    snapshot: z.string(),
    phase: z.enum(["prepared", "deploying", "ready", "promoted", "aborting", "aborted"]),
    deployment: z
      .object({
        slot: Slot,
        taskDefinitionArn: z.string(),
        image: z.string(),
        desiredCount: z.number().int().nonnegative(),
        deadlineAt: z.number(),
      })
      .strict()
      .optional(),
    /** An abort after the scale-down: the old slot is being scaled back up. */
    restore: z
      .object({ slot: Slot, desiredCount: z.number().int().nonnegative(), deadlineAt: z.number() })
      .strict()
      .optional(),
    testerRule: z.object({ name: z.string(), ruleArn: z.string(), created: z.boolean() }).strict().optional(),
    /** A slot to scale down once `at` (ms) has passed. */
    pendingScaleDown: z.object({ slot: Slot, at: z.number() }).strict().optional(),
    /** The last slot this rollout scaled down, with its task count, to bring it back on abort. */
    scaledDown: z.object({ slot: Slot, desiredCount: z.number().int().nonnegative() }).strict().optional(),
  })
  .strict();

export type AlbEcsState = z.infer<typeof AlbEcsStateSchema>;

/** The SDK clients this adapter drives. */
export interface AlbEcsClients {
  readonly elbv2: ElasticLoadBalancingV2Client;
  readonly ecs: ECSClient;
}

interface ListenerView {
  /** The rule holding the forward action (the default rule in listener mode). */
  readonly forwardRule: Rule;
  readonly weights: Readonly<Record<Slot, number>>;
  readonly fingerprint: string;
}

const other = (slot: Slot): Slot => (slot === "a" ? "b" : "a");

/** Drives one ALB listener (or rule) and two ECS services. */
export class AlbEcsRouter implements TrafficRouter {
  readonly type = "alb-ecs" as const;
  readonly #settings: AlbEcsSettings;

  constructor(
    private readonly clients: AlbEcsClients,
    settings: unknown,
    private readonly clock: Clock,
  ) {
    const parsed = AlbEcsSettingsSchema.safeParse(settings);
    if (!parsed.success) {
      throw new TargetConfigurationError(describeIssues(parsed.error, "alb-ecs settings"), {
        cause: parsed.error,
      });
    }
    this.#settings = parsed.data;
  }

  async prepare(): Promise<Prepared> {
    const view = await this.#readListener(undefined);
    const services = await this.#describeServices();
    let stableSlot: Slot;
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
      stable: `slot ${stableSlot} (${this.#service(stableSlot)}, ${services[stableSlot].taskDefinition ?? "no task definition"})`,
    };
  }

  async deployCandidate(input: RouterState, artifact: CandidateArtifact): Promise<RouterState> {
    const state = this.#state(input);
    if (!("image" in artifact)) {
      throw new TargetConfigurationError("an alb-ecs candidate is a container image: give artifact.image");
    }
    if (!["prepared", "deploying", "ready"].includes(state.phase)) {
      throw new RouterStateError(`cannot deploy a candidate in phase ${state.phase}`);
    }
    const slot = other(state.stableSlot);
    const services = await this.#describeServices();
    const candidateService = services[slot];
    if (!candidateService.taskDefinition) {
      throw new TargetConfigurationError(`service ${this.#service(slot)} has no task definition to base on`);
    }
    const { taskDefinition, tags } = await this.clients.ecs.send(
      new DescribeTaskDefinitionCommand({
        taskDefinition: candidateService.taskDefinition,
        include: ["TAGS"],
      }),
    );
    if (!taskDefinition?.family || !taskDefinition.containerDefinitions) {
      throw new TargetConfigurationError(
        `task definition ${candidateService.taskDefinition} could not be read`,
      );
    }
    const containers = taskDefinition.containerDefinitions;
    if (!containers.some((c) => c.name === this.#settings.containerName)) {
      throw new TargetConfigurationError(
        `task definition ${candidateService.taskDefinition} has no container "${this.#settings.containerName}" ` +
          `(it has ${containers.map((c) => c.name).join(", ")})`,
      );
    }
    const request: RegisterTaskDefinitionRequest = {
      family: taskDefinition.family,
      taskRoleArn: taskDefinition.taskRoleArn,
      executionRoleArn: taskDefinition.executionRoleArn,
      networkMode: taskDefinition.networkMode,
      containerDefinitions: containers.map((c) =>
        c.name === this.#settings.containerName ? { ...c, image: artifact.image } : c,
      ),
      volumes: taskDefinition.volumes,
      placementConstraints: taskDefinition.placementConstraints,
      requiresCompatibilities: taskDefinition.requiresCompatibilities,
      cpu: taskDefinition.cpu,
      memory: taskDefinition.memory,
      pidMode: taskDefinition.pidMode,
      ipcMode: taskDefinition.ipcMode,
      proxyConfiguration: taskDefinition.proxyConfiguration,
      inferenceAccelerators: taskDefinition.inferenceAccelerators,
      ephemeralStorage: taskDefinition.ephemeralStorage,
      runtimePlatform: taskDefinition.runtimePlatform,
      enableFaultInjection: taskDefinition.enableFaultInjection,
      ...(tags && tags.length > 0 ? { tags } : {}),
    };
    const registered = await this.clients.ecs.send(new RegisterTaskDefinitionCommand(request));
    const taskDefinitionArn = registered.taskDefinition?.taskDefinitionArn;
    if (!taskDefinitionArn) throw new TargetNotReadyError("RegisterTaskDefinition returned no ARN");
    // The candidate runs at the stable side's size, so that any weight (and a blue/green switch)
    // lands on enough capacity.
    const desiredCount = services[state.stableSlot].desiredCount || this.#settings.desiredCount;
    await this.clients.ecs.send(
      new UpdateServiceCommand({
        cluster: this.#settings.cluster,
        service: this.#service(slot),
        taskDefinition: taskDefinitionArn,
        desiredCount,
      }),
    );
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

  async checkReadiness(input: RouterState): Promise<Readiness> {
    const state = this.#state(input);
    if (state.phase === "deploying" && state.deployment) {
      const d = state.deployment;
      const poll = await this.#pollService(d.slot, d.taskDefinitionArn, d.deadlineAt, "the candidate");
      if (!poll.ready)
        return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
      return { ready: true, state: { ...state, phase: "ready" }, message: poll.message };
    }
    if (state.phase === "aborting" && state.restore) {
      const r = state.restore;
      const poll = await this.#pollService(r.slot, undefined, r.deadlineAt, "the old stable slot");
      return poll.ready
        ? { ready: true, state, message: `${poll.message}; call abort again to move the traffic` }
        : { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
    }
    return { ready: true, state, message: `nothing pending in phase ${state.phase}` };
  }

  async readWeights(input: RouterState): Promise<ObservedWeights> {
    const state = this.#state(input);
    const view = await this.#readListener(state);
    return this.#observe(state, view);
  }

  async setWeight(
    input: RouterState,
    percent: number,
    options: { readonly overwriteDrift?: boolean } = {},
  ): Promise<WeightChange> {
    const state = this.#state(input);
    if (!Number.isInteger(percent) || percent < 0 || percent > 100) {
      throw new RouterStateError(`a weight is an integer percent between 0 and 100, got ${percent}`);
    }
    if (percent > 0 && state.phase !== "ready") {
      throw new RouterStateError(
        `cannot send traffic to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const view = await this.#readListener(state);
    this.#assertUnchanged(state, view);
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
    const canary = other(state.stableSlot);
    const weights = slotWeights(canary, percent);
    await this.#writeWeights(view, weights);
    const next: AlbEcsState = { ...state, canaryWeight: percent };
    return {
      outcome: "applied",
      state: next,
      weights: {
        canary: percent,
        stable: 100 - percent,
        expectedCanary: percent,
        drift: false,
        detail: describe(weights),
      },
    };
  }

  async setHeaderRoute(input: RouterState, route: HeaderRoute): Promise<HeaderRouteChange> {
    const state = this.#state(input);
    if (state.phase !== "ready") {
      throw new RouterStateError(
        `cannot route testers to the candidate in phase ${state.phase}; it must be ready`,
      );
    }
    const view = await this.#readListener(state);
    this.#assertUnchanged(state, view);
    const candidateTg = this.#targetGroup(other(state.stableSlot));
    const forward: Action = {
      Type: "forward",
      ForwardConfig: { TargetGroups: [{ TargetGroupArn: candidateTg, Weight: 1 }] },
    };
    if (this.#settings.testerRuleArn) {
      // A rule configured by the user: its conditions stay as configured, only its target moves.
      await this.clients.elbv2.send(
        new ModifyRuleCommand({ RuleArn: this.#settings.testerRuleArn, Actions: [forward] }),
      );
      const next: AlbEcsState = {
        ...state,
        testerRule: { name: route.name, ruleArn: this.#settings.testerRuleArn, created: false },
      };
      return {
        state: next,
        applied: true,
        message: `rule ${this.#settings.testerRuleArn} forwards to ${candidateTg}`,
      };
    }
    const conditions: RuleCondition[] = [
      ...(view.forwardRule.IsDefault ? [] : (view.forwardRule.Conditions ?? []).map(stripConditionValues)),
      ...route.match.map(headerCondition),
    ];
    if (state.testerRule?.created) {
      await this.clients.elbv2.send(
        new ModifyRuleCommand({
          RuleArn: state.testerRule.ruleArn,
          Conditions: conditions,
          Actions: [forward],
        }),
      );
      return { state, applied: true, message: `rule ${state.testerRule.ruleArn} updated for ${route.name}` };
    }
    let created: string | undefined;
    try {
      const out = await this.clients.elbv2.send(
        new CreateRuleCommand({
          ListenerArn: this.#listenerArn(),
          Priority: this.#settings.testerRulePriority,
          Conditions: conditions,
          Actions: [forward],
          Tags: [{ Key: "sfn-rollouts:route", Value: route.name }],
        }),
      );
      created = out.Rules?.[0]?.RuleArn;
    } catch (err) {
      if (awsErrorName(err) === "PriorityInUseException") {
        throw new TargetConfigurationError(
          `priority ${this.#settings.testerRulePriority} is taken on ${this.#listenerArn()}: set testerRulePriority`,
          { cause: err },
        );
      }
      throw err;
    }
    if (!created) throw new TargetConfigurationError("CreateRule returned no rule ARN");
    const next: AlbEcsState = { ...state, testerRule: { name: route.name, ruleArn: created, created: true } };
    return {
      state: next,
      applied: true,
      message: `rule ${created} forwards ${route.name} to ${candidateTg}`,
    };
  }

  async removeHeaderRoute(input: RouterState, name: string): Promise<HeaderRouteChange> {
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

  async promote(input: RouterState, options: PromoteOptions): Promise<RouterState> {
    const state = this.#state(input);
    if (state.phase === "promoted") return state;
    if (state.phase !== "ready") {
      throw new RouterStateError(`cannot promote in phase ${state.phase}; the candidate must be ready`);
    }
    const view = await this.#readListener(state);
    this.#assertUnchanged(state, view);
    const candidate = other(state.stableSlot);
    await this.#writeWeights(view, slotWeights(candidate, 100));
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

  async abort(input: RouterState, options: AbortOptions): Promise<Readiness> {
    let state = this.#state(input);
    const now = this.clock.now();
    if (state.phase === "aborted") return { ready: true, state, message: "already aborted" };

    if (state.phase === "promoted") {
      // Back to the slot that was stable before the promotion.
      const previous = other(state.stableSlot);
      if (state.scaledDown?.slot === previous) {
        const desiredCount = state.scaledDown.desiredCount || this.#settings.desiredCount;
        await this.clients.ecs.send(
          new UpdateServiceCommand({
            cluster: this.#settings.cluster,
            service: this.#service(previous),
            desiredCount,
          }),
        );
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
          message: `slot ${previous} was scaled down: scaling ${this.#service(previous)} back to ${desiredCount} tasks`,
        };
      }
      state = { ...state, phase: "ready", stableSlot: previous, canaryWeight: 100 };
    } else if (state.phase === "aborting" && state.restore) {
      const r = state.restore;
      const poll = await this.#pollService(r.slot, undefined, r.deadlineAt, "the old stable slot");
      if (!poll.ready) {
        return { ready: false, state, retryAfterSeconds: this.#settings.pollSeconds, message: poll.message };
      }
      state = { ...state, phase: "ready", stableSlot: r.slot, canaryWeight: 100, restore: undefined };
    }

    const view = await this.#readListener(state);
    this.#assertUnchanged(state, view);
    const candidate = other(state.stableSlot);
    const target = slotWeights(candidate, 0);
    if (view.weights.a !== target.a || view.weights.b !== target.b) await this.#writeWeights(view, target);
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
      message: `all traffic on slot ${state.stableSlot} (${this.#service(state.stableSlot)}); slot ${candidate} scales down in ${options.abortScaleDownDelaySeconds}s`,
    };
  }

  async scaleDown(input: RouterState): Promise<Readiness> {
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
    const view = await this.#readListener(state);
    if (view.weights[pending.slot] > 0) {
      return {
        ready: true,
        state: { ...state, pendingScaleDown: undefined },
        message: `slot ${pending.slot} receives traffic again (${describe(view.weights)}): another release made it stable, touching nothing`,
      };
    }
    const services = await this.#describeServices();
    const desiredCount = services[pending.slot].desiredCount ?? 0;
    if (desiredCount > 0) {
      await this.clients.ecs.send(
        new UpdateServiceCommand({
          cluster: this.#settings.cluster,
          service: this.#service(pending.slot),
          desiredCount: 0,
        }),
      );
    }
    const next: AlbEcsState = {
      ...state,
      pendingScaleDown: undefined,
      scaledDown: { slot: pending.slot, desiredCount },
    };
    return {
      ready: true,
      state: next,
      message: `slot ${pending.slot} (${this.#service(pending.slot)}) scaled down from ${desiredCount} tasks`,
    };
  }

  // --- ALB ---------------------------------------------------------------------------------

  #state(input: unknown): AlbEcsState {
    return parseRouterState(AlbEcsStateSchema, input, "alb-ecs");
  }

  #service(slot: Slot): string {
    return slot === "a" ? this.#settings.serviceA : this.#settings.serviceB;
  }

  #targetGroup(slot: Slot): string {
    return slot === "a" ? this.#settings.targetGroupA : this.#settings.targetGroupB;
  }

  #listenerArn(): string {
    if (this.#settings.listenerArn) return this.#settings.listenerArn;
    // arn:…:listener-rule/app/NAME/LB/LISTENER/RULE → arn:…:listener/app/NAME/LB/LISTENER
    const ruleArn = this.#settings.ruleArn ?? "";
    return ruleArn.replace(":listener-rule/", ":listener/").replace(/\/[^/]+$/, "");
  }

  async #readListener(state: AlbEcsState | undefined): Promise<ListenerView> {
    const rules: Rule[] = [];
    if (this.#settings.listenerArn) {
      let marker: string | undefined;
      do {
        const page = await this.clients.elbv2.send(
          new DescribeRulesCommand({
            ListenerArn: this.#settings.listenerArn,
            Marker: marker,
            PageSize: 400,
          }),
        );
        rules.push(...(page.Rules ?? []));
        marker = page.NextMarker;
      } while (marker);
    } else {
      const page = await this.clients.elbv2.send(
        new DescribeRulesCommand({ RuleArns: [this.#settings.ruleArn ?? ""] }),
      );
      rules.push(...(page.Rules ?? []));
    }
    const forwardRule = this.#settings.listenerArn
      ? rules.find((r) => r.IsDefault)
      : rules.find((r) => r.RuleArn === this.#settings.ruleArn);
    const where = this.#settings.listenerArn ?? this.#settings.ruleArn;
    if (!forwardRule)
      throw new TargetConfigurationError(
        `no ${this.#settings.listenerArn ? "default rule" : "rule"} found for ${where}`,
      );
    const forward = (forwardRule.Actions ?? []).filter((a) => a.Type === "forward");
    if (forward.length !== 1 || !forward[0]) {
      throw new TargetConfigurationError(
        `${where} has ${forward.length} forward actions; exactly one is needed`,
      );
    }
    const weights = this.#weightsOf(forward[0], where ?? "");
    const skip = new Set(
      [this.#settings.testerRuleArn, state?.testerRule?.ruleArn].filter((x) => x !== undefined),
    );
    const fingerprint = stableJson(
      rules
        .filter((r) => !skip.has(r.RuleArn ?? ""))
        .map((r) => ({
          arn: r.RuleArn,
          priority: r.Priority,
          isDefault: r.IsDefault ?? false,
          conditions: r.Conditions ?? [],
          transforms: r.Transforms ?? [],
          actions: (r.Actions ?? []).map((a) =>
            r === forwardRule && a.Type === "forward" ? this.#withoutWeights(a) : withoutSecretFlags(a),
          ),
        }))
        .sort((x, y) => String(x.arn).localeCompare(String(y.arn))),
    );
    return { forwardRule, weights, fingerprint };
  }

  #weightsOf(action: Action, where: string): Record<Slot, number> {
    const tuples =
      action.ForwardConfig?.TargetGroups ??
      (action.TargetGroupArn ? [{ TargetGroupArn: action.TargetGroupArn, Weight: 1 }] : []);
    const weights: Record<Slot, number> = { a: 0, b: 0 };
    for (const t of tuples) {
      if (t.TargetGroupArn === this.#settings.targetGroupA) weights.a = t.Weight ?? 1;
      else if (t.TargetGroupArn === this.#settings.targetGroupB) weights.b = t.Weight ?? 1;
      else {
        throw new TargetConfigurationError(
          `the forward action of ${where} sends to ${t.TargetGroupArn}, which is neither targetGroupA nor targetGroupB`,
        );
      }
    }
    return weights;
  }

  #withoutWeights(action: Action): unknown {
    return {
      Type: action.Type,
      Order: action.Order,
      // ALB may describe "no stickiness" as absent or as {Enabled: false}: the same configuration.
      stickiness: action.ForwardConfig?.TargetGroupStickinessConfig?.Enabled
        ? action.ForwardConfig.TargetGroupStickinessConfig
        : null,
    };
  }

  #assertUnchanged(state: AlbEcsState, view: ListenerView): void {
    if (view.fingerprint !== state.snapshot) {
      const where = this.#settings.listenerArn ?? this.#settings.ruleArn;
      throw new ListenerChangedError(
        `${where} changed since the rollout read it (rules, conditions, actions or stickiness); ` +
          "refusing to overwrite it: check the change, then retry or abort the rollout",
      );
    }
  }

  #observe(state: AlbEcsState, view: ListenerView): ObservedWeights {
    const candidate = other(state.stableSlot);
    const sum = view.weights.a + view.weights.b;
    const canary = sum === 0 ? 0 : (100 * view.weights[candidate]) / sum;
    const drift = sum === 0 || view.weights[candidate] * 100 !== state.canaryWeight * sum;
    return {
      canary,
      stable: sum === 0 ? 0 : 100 - canary,
      expectedCanary: state.canaryWeight,
      drift,
      detail: describe(view.weights),
    };
  }

  async #writeWeights(view: ListenerView, weights: Record<Slot, number>): Promise<void> {
    const actions: Action[] = (view.forwardRule.Actions ?? []).map((a) => {
      if (a.Type === "forward") {
        const { TargetGroupArn: _single, ...rest } = a;
        return {
          ...rest,
          ForwardConfig: {
            TargetGroups: [
              { TargetGroupArn: this.#settings.targetGroupA, Weight: weights.a },
              { TargetGroupArn: this.#settings.targetGroupB, Weight: weights.b },
            ],
            ...(a.ForwardConfig?.TargetGroupStickinessConfig
              ? { TargetGroupStickinessConfig: a.ForwardConfig.TargetGroupStickinessConfig }
              : {}),
          },
        };
      }
      if (a.Type === "authenticate-oidc" && a.AuthenticateOidcConfig) {
        // Describe never returns the client secret; keep the one configured.
        return {
          ...a,
          AuthenticateOidcConfig: { ...a.AuthenticateOidcConfig, UseExistingClientSecret: true },
        };
      }
      return a;
    });
    if (this.#settings.listenerArn) {
      await this.clients.elbv2.send(
        new ModifyListenerCommand({ ListenerArn: this.#settings.listenerArn, DefaultActions: actions }),
      );
    } else {
      await this.clients.elbv2.send(
        new ModifyRuleCommand({ RuleArn: this.#settings.ruleArn, Actions: actions }),
      );
    }
  }

  async #removeTesterRule(state: AlbEcsState): Promise<AlbEcsState> {
    const rule = state.testerRule;
    if (!rule) return state;
    if (rule.created) {
      try {
        await this.clients.elbv2.send(new DeleteRuleCommand({ RuleArn: rule.ruleArn }));
      } catch (err) {
        if (awsErrorName(err) !== "RuleNotFoundException") throw err;
      }
    } else {
      await this.clients.elbv2.send(
        new ModifyRuleCommand({
          RuleArn: rule.ruleArn,
          Actions: [
            {
              Type: "forward",
              ForwardConfig: {
                TargetGroups: [{ TargetGroupArn: this.#targetGroup(state.stableSlot), Weight: 1 }],
              },
            },
          ],
        }),
      );
    }
    return { ...state, testerRule: undefined };
  }

  // --- ECS ---------------------------------------------------------------------------------

  async #describeServices(): Promise<Record<Slot, Service>> {
    const out = await this.clients.ecs.send(
      new DescribeServicesCommand({
        cluster: this.#settings.cluster,
        services: [this.#settings.serviceA, this.#settings.serviceB],
      }),
    );
    const find = (name: string): Service => {
      const svc = (out.services ?? []).find((s) => s.serviceName === name || s.serviceArn === name);
      if (!svc) {
        const failure = (out.failures ?? []).find((f) => f.arn?.endsWith(`/${name}`) || f.arn === name);
        throw new TargetConfigurationError(
          `ECS service ${name} not found in cluster ${this.#settings.cluster}${failure?.reason ? ` (${failure.reason})` : ""}`,
        );
      }
      return svc;
    };
    return { a: find(this.#settings.serviceA), b: find(this.#settings.serviceB) };
  }

  /**
   * One poll of a service: steady means a single PRIMARY deployment (of `taskDefinitionArn` when
   * given) whose rollout completed with all its tasks running.
   */
  async #pollService(
    slot: Slot,
    taskDefinitionArn: string | undefined,
    deadlineAt: number,
    what: string,
  ): Promise<{ ready: boolean; message: string }> {
    const name = this.#service(slot);
    const svc = (await this.#describeServices())[slot];
    const deployments = svc.deployments ?? [];
    const ours = taskDefinitionArn
      ? deployments.find((d) => d.taskDefinition === taskDefinitionArn)
      : deployments.find((d) => d.status === "PRIMARY");
    if (!ours) {
      throw new TargetNotReadyError(
        `${what} on ${name}: no deployment of ${taskDefinitionArn ?? "any task definition"} any more ` +
          `(service runs ${svc.taskDefinition}); another deployment replaced it`,
      );
    }
    if (ours.rolloutState === "FAILED") {
      throw new TargetNotReadyError(
        `${what} on ${name} failed: ${ours.rolloutStateReason ?? "rollout state FAILED"} (${ours.failedTasks ?? 0} failed tasks)`,
      );
    }
    const running = ours.runningCount ?? 0;
    const desired = ours.desiredCount ?? 0;
    const steady =
      ours.status === "PRIMARY" &&
      deployments.length === 1 &&
      (ours.rolloutState === undefined || ours.rolloutState === "COMPLETED") &&
      running >= desired;
    const progress = `rollout ${ours.rolloutState ?? "unknown"}, ${running}/${desired} tasks running, ${deployments.length} deployment(s)`;
    if (steady) return { ready: true, message: `${what} on ${name} is steady: ${progress}` };
    const now = this.clock.now();
    if (now >= deadlineAt) {
      const lastEvent = svc.events?.[0]?.message;
      throw new TargetNotReadyError(
        `${what} on ${name} did not become steady before its progress deadline ` +
          `(${new Date(deadlineAt).toISOString()}): ${progress}, ${ours.failedTasks ?? 0} failed tasks` +
          (lastEvent ? `; last service event: ${lastEvent}` : ""),
      );
    }
    return { ready: false, message: `${what} on ${name} is not steady yet: ${progress}` };
  }
}

/** Exact ALB weights for a percentage: `percent` and `100 − percent` are within 0–999 and keep the ratio exact. */
export function slotWeights(candidate: Slot, percent: number): Record<Slot, number> {
  return candidate === "a" ? { a: percent, b: 100 - percent } : { a: 100 - percent, b: percent };
}

function describe(weights: Readonly<Record<Slot, number>>): string {
  return `ALB weights a=${weights.a}, b=${weights.b}`;
}

function formatPercent(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

/** An Argo header match as an ALB `http-header` condition (`prefix` becomes a `*` wildcard). */
function headerCondition(match: HeaderRoute["match"][number]): RuleCondition {
  const v = match.headerValue;
  if (v.regex !== undefined) {
    return {
      Field: "http-header",
      HttpHeaderConfig: { HttpHeaderName: match.headerName, RegexValues: [v.regex] },
    };
  }
  const value = v.exact ?? `${v.prefix ?? ""}*`;
  if (v.exact !== undefined && /[*?]/.test(v.exact)) {
    throw new TargetConfigurationError(
      `header value "${v.exact}" contains * or ?, which ALB treats as wildcards; use a prefix or regex match`,
    );
  }
  return { Field: "http-header", HttpHeaderConfig: { HttpHeaderName: match.headerName, Values: [value] } };
}

/** Describe returns both `Values` and the typed config; CreateRule accepts only one of them. */
function stripConditionValues(condition: RuleCondition): RuleCondition {
  if (condition.Field && condition.Values && Object.keys(condition).some((k) => k.endsWith("Config"))) {
    const { Values: _values, ...rest } = condition;
    return rest;
  }
  return condition;
}

/** `UseExistingClientSecret` is a write-only flag this adapter adds; it must not look like a change. */
function withoutSecretFlags(action: Action): Action {
  if (!action.AuthenticateOidcConfig) return action;
  const { UseExistingClientSecret: _flag, ClientSecret: _secret, ...config } = action.AuthenticateOidcConfig;
  return { ...action, AuthenticateOidcConfig: config as typeof action.AuthenticateOidcConfig };
}

/** JSON with sorted keys and no undefined members, for fingerprints that do not depend on key order. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>)
            .filter(([, x]) => x !== undefined)
            .sort(([x], [y]) => x.localeCompare(y)),
        )
      : v,
  );
}
