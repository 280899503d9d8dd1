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
import { canonicalJson } from "../../../statemachine/revision.ts";
import { awsErrorName } from "../../aws-errors.ts";
import { ListenerChangedError, TargetConfigurationError } from "../errors.ts";
import type { HeaderRoute, ObservedWeights } from "../port.ts";
import type { AlbEcsSettings } from "../settings.ts";
import { describeWeights, type Slot } from "./slots.ts";

/**
 * The ALB half of the alb-ecs target: one listener's default forward action (or one rule's)
 * weighted between target groups a and b, and the testers' header rule.
 *
 * ELBv2 has no conditional write (no ETag), so every write re-reads the listener or rule first
 * and compares a fingerprint of everything but the managed weights with the one taken when the
 * rollout started: a change refuses the write with `ListenerChangedError`.
 */

/** What one read of the listener (or rule) saw. */
export interface ListenerView {
  /** The rule holding the forward action (the default rule in listener mode). */
  readonly forwardRule: Rule;
  readonly weights: Readonly<Record<Slot, number>>;
  /** Every rule but the testers' one, without the managed weights, as canonical JSON. */
  readonly fingerprint: string;
}

/** The testers' rule a rollout points at the candidate: created by it, or configured by the user. */
export interface TesterRule {
  readonly name: string;
  readonly ruleArn: string;
  readonly created: boolean;
}

export class AlbListener {
  constructor(
    private readonly elbv2: ElasticLoadBalancingV2Client,
    private readonly settings: AlbEcsSettings,
  ) {}

  /** Where the forward action is, for messages. */
  get where(): string {
    return this.settings.listenerArn ?? this.settings.ruleArn ?? "";
  }

  targetGroup(slot: Slot): string {
    return slot === "a" ? this.settings.targetGroupA : this.settings.targetGroupB;
  }

  listenerArn(): string {
    if (this.settings.listenerArn) return this.settings.listenerArn;
    // arn:…:listener-rule/app/NAME/LB/LISTENER/RULE → arn:…:listener/app/NAME/LB/LISTENER
    const ruleArn = this.settings.ruleArn ?? "";
    return ruleArn.replace(":listener-rule/", ":listener/").replace(/\/[^/]+$/, "");
  }

  /** Reads the rules, the weights and the fingerprint; `testerRuleArn` is left out of the fingerprint. */
  async read(testerRuleArn?: string): Promise<ListenerView> {
    const rules: Rule[] = [];
    if (this.settings.listenerArn) {
      let marker: string | undefined;
      do {
        const page = await this.elbv2.send(
          new DescribeRulesCommand({
            ListenerArn: this.settings.listenerArn,
            Marker: marker,
            PageSize: 400,
          }),
        );
        rules.push(...(page.Rules ?? []));
        marker = page.NextMarker;
      } while (marker);
    } else {
      const page = await this.elbv2.send(
        new DescribeRulesCommand({ RuleArns: [this.settings.ruleArn ?? ""] }),
      );
      rules.push(...(page.Rules ?? []));
    }
    const forwardRule = this.settings.listenerArn
      ? rules.find((r) => r.IsDefault)
      : rules.find((r) => r.RuleArn === this.settings.ruleArn);
    const where = this.settings.listenerArn ?? this.settings.ruleArn;
    if (!forwardRule)
      throw new TargetConfigurationError(
        `no ${this.settings.listenerArn ? "default rule" : "rule"} found for ${where}`,
      );
    const forward = (forwardRule.Actions ?? []).filter((a) => a.Type === "forward");
    if (forward.length !== 1 || !forward[0]) {
      throw new TargetConfigurationError(
        `${where} has ${forward.length} forward actions; exactly one is needed`,
      );
    }
    const weights = this.#weightsOf(forward[0], where ?? "");
    const skip = new Set([this.settings.testerRuleArn, testerRuleArn].filter((x) => x !== undefined));
    const fingerprint = canonicalJson(
      rules
        .filter((r) => !skip.has(r.RuleArn ?? ""))
        .map((r) => ({
          arn: r.RuleArn,
          priority: r.Priority,
          isDefault: r.IsDefault ?? false,
          conditions: r.Conditions ?? [],
          transforms: r.Transforms ?? [],
          actions: (r.Actions ?? []).map((a) =>
            r === forwardRule && a.Type === "forward" ? withoutWeights(a) : withoutSecretFlags(a),
          ),
        }))
        .sort((x, y) => String(x.arn).localeCompare(String(y.arn))),
    );
    return { forwardRule, weights, fingerprint };
  }

  /** Refuses to go on when the listener changed since `snapshot` was taken. */
  assertUnchanged(snapshot: string, view: ListenerView): void {
    if (view.fingerprint !== snapshot) {
      throw new ListenerChangedError(
        `${this.where} changed since the rollout read it (rules, conditions, actions or stickiness); ` +
          "refusing to overwrite it: check the change, then retry or abort the rollout",
      );
    }
  }

  /** Rewrites the forward action with `weights`, keeping every other action as it is. */
  async writeWeights(view: ListenerView, weights: Record<Slot, number>): Promise<void> {
    const actions: Action[] = (view.forwardRule.Actions ?? []).map((a) => {
      if (a.Type === "forward") {
        const { TargetGroupArn: _single, ...rest } = a;
        return {
          ...rest,
          ForwardConfig: {
            TargetGroups: [
              { TargetGroupArn: this.settings.targetGroupA, Weight: weights.a },
              { TargetGroupArn: this.settings.targetGroupB, Weight: weights.b },
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
    if (this.settings.listenerArn) {
      await this.elbv2.send(
        new ModifyListenerCommand({ ListenerArn: this.settings.listenerArn, DefaultActions: actions }),
      );
    } else {
      await this.elbv2.send(new ModifyRuleCommand({ RuleArn: this.settings.ruleArn, Actions: actions }));
    }
  }

  /**
   * Points the testers' rule at `candidate`: the user's `testerRuleArn` keeps its conditions and
   * only moves its target; otherwise a rule with the route's header conditions is created (or the
   * one this rollout created is updated).
   */
  async routeTesters(
    view: ListenerView,
    route: HeaderRoute,
    current: TesterRule | undefined,
    candidate: Slot,
  ): Promise<{ testerRule: TesterRule | undefined; message: string }> {
    const candidateTg = this.targetGroup(candidate);
    const forward: Action = {
      Type: "forward",
      ForwardConfig: { TargetGroups: [{ TargetGroupArn: candidateTg, Weight: 1 }] },
    };
    if (this.settings.testerRuleArn) {
      await this.elbv2.send(
        new ModifyRuleCommand({ RuleArn: this.settings.testerRuleArn, Actions: [forward] }),
      );
      return {
        testerRule: { name: route.name, ruleArn: this.settings.testerRuleArn, created: false },
        message: `rule ${this.settings.testerRuleArn} forwards to ${candidateTg}`,
      };
    }
    const conditions: RuleCondition[] = [
      ...(view.forwardRule.IsDefault ? [] : (view.forwardRule.Conditions ?? []).map(stripConditionValues)),
      ...route.match.map(headerCondition),
    ];
    if (current?.created) {
      await this.elbv2.send(
        new ModifyRuleCommand({ RuleArn: current.ruleArn, Conditions: conditions, Actions: [forward] }),
      );
      return { testerRule: current, message: `rule ${current.ruleArn} updated for ${route.name}` };
    }
    let created: string | undefined;
    try {
      const out = await this.elbv2.send(
        new CreateRuleCommand({
          ListenerArn: this.listenerArn(),
          Priority: this.settings.testerRulePriority,
          Conditions: conditions,
          Actions: [forward],
          Tags: [{ Key: "sfn-rollouts:route", Value: route.name }],
        }),
      );
      created = out.Rules?.[0]?.RuleArn;
    } catch (err) {
      if (awsErrorName(err) === "PriorityInUseException") {
        throw new TargetConfigurationError(
          `priority ${this.settings.testerRulePriority} is taken on ${this.listenerArn()}: set testerRulePriority`,
          { cause: err },
        );
      }
      throw err;
    }
    if (!created) throw new TargetConfigurationError("CreateRule returned no rule ARN");
    return {
      testerRule: { name: route.name, ruleArn: created, created: true },
      message: `rule ${created} forwards ${route.name} to ${candidateTg}`,
    };
  }

  /** Deletes the rule this rollout created, or points the user's rule back at `stable`. */
  async removeTesterRule(rule: TesterRule, stable: Slot): Promise<void> {
    if (rule.created) {
      try {
        await this.elbv2.send(new DeleteRuleCommand({ RuleArn: rule.ruleArn }));
      } catch (err) {
        if (awsErrorName(err) !== "RuleNotFoundException") throw err;
      }
      return;
    }
    await this.elbv2.send(
      new ModifyRuleCommand({
        RuleArn: rule.ruleArn,
        Actions: [
          {
            Type: "forward",
            ForwardConfig: { TargetGroups: [{ TargetGroupArn: this.targetGroup(stable), Weight: 1 }] },
          },
        ],
      }),
    );
  }

  #weightsOf(action: Action, where: string): Record<Slot, number> {
    const tuples =
      action.ForwardConfig?.TargetGroups ??
      (action.TargetGroupArn ? [{ TargetGroupArn: action.TargetGroupArn, Weight: 1 }] : []);
    const weights: Record<Slot, number> = { a: 0, b: 0 };
    for (const t of tuples) {
      if (t.TargetGroupArn === this.settings.targetGroupA) weights.a = t.Weight ?? 1;
      else if (t.TargetGroupArn === this.settings.targetGroupB) weights.b = t.Weight ?? 1;
      else {
        throw new TargetConfigurationError(
          `the forward action of ${where} sends to ${t.TargetGroupArn}, which is neither targetGroupA nor targetGroupB`,
        );
      }
    }
    return weights;
  }
}

/**
 * The weights a view shows against those the rollout set: drift is any difference (and a
 * listener sending nowhere).
 */
export function observeWeights(view: ListenerView, candidate: Slot, canaryWeight: number): ObservedWeights {
  const sum = view.weights.a + view.weights.b;
  const canary = sum === 0 ? 0 : (100 * view.weights[candidate]) / sum;
  const drift = sum === 0 || view.weights[candidate] * 100 !== canaryWeight * sum;
  return {
    canary,
    stable: sum === 0 ? 0 : 100 - canary,
    expectedCanary: canaryWeight,
    drift,
    detail: describeWeights(view.weights),
  };
}

function withoutWeights(action: Action): unknown {
  return {
    Type: action.Type,
    Order: action.Order,
    // ALB may describe "no stickiness" as absent or as {Enabled: false}: the same configuration.
    stickiness: action.ForwardConfig?.TargetGroupStickinessConfig?.Enabled
      ? action.ForwardConfig.TargetGroupStickinessConfig
      : null,
  };
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
