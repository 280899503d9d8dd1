import {
  DescribeServicesCommand,
  DescribeTaskDefinitionCommand,
  ECSClient,
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
  ElasticLoadBalancingV2Client,
  ModifyListenerCommand,
  ModifyRuleCommand,
  type Rule,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { type AlbEcsState, AlbEcsTraffic, slotWeights } from "../../functions/traffic/alb-ecs.ts";
import {
  ListenerChangedError,
  TargetConfigurationError,
  TargetNotReadyError,
  TargetStateError,
} from "../../functions/traffic/errors.ts";
import type { TargetState } from "../../functions/traffic/port.ts";

const PREFIX = "arn:aws:elasticloadbalancing:eu-west-1:123456789012";
const LISTENER = `${PREFIX}:listener/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2`;
const DEFAULT_RULE = `${PREFIX}:listener-rule/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2/default`;
const API_RULE = `${PREFIX}:listener-rule/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee`;
const TG_A = `${PREFIX}:targetgroup/shop-a/73e2d6bc24d8a067`;
const TG_B = `${PREFIX}:targetgroup/shop-b/2453ed029918f21f`;
const TG_OTHER = `${PREFIX}:targetgroup/admin/11112222333344445`;
const TD_A = "arn:aws:ecs:eu-west-1:123456789012:task-definition/shop-a:7";
const TD_B = "arn:aws:ecs:eu-west-1:123456789012:task-definition/shop-b:3";
const IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop@sha256:0f9d1c0a7b";

const elb = mockClient(ElasticLoadBalancingV2Client);
const ecs = mockClient(ECSClient);

/** A tiny in-memory ALB + ECS, so call sequences behave as they would on AWS. */
interface World {
  rules: Rule[];
  services: Record<"a" | "b", Service>;
  registered: number;
}
let world: World;

function forward(weightA: number, weightB: number, stickiness = true): Action {
  return {
    Type: "forward",
    Order: 2,
    ForwardConfig: {
      TargetGroups: [
        { TargetGroupArn: TG_A, Weight: weightA },
        { TargetGroupArn: TG_B, Weight: weightB },
      ],
      TargetGroupStickinessConfig: stickiness ? { Enabled: true, DurationSeconds: 300 } : { Enabled: false },
    },
  };
}

const OIDC: Action = {
  Type: "authenticate-oidc",
  Order: 1,
  AuthenticateOidcConfig: {
    Issuer: "https://idp.example.com",
    AuthorizationEndpoint: "https://idp.example.com/auth",
    TokenEndpoint: "https://idp.example.com/token",
    UserInfoEndpoint: "https://idp.example.com/userinfo",
    ClientId: "shop",
  },
};

function service(name: string, taskDefinition: string, desiredCount: number): Service {
  return {
    serviceName: name,
    serviceArn: `arn:aws:ecs:eu-west-1:123456789012:service/prod/${name}`,
    taskDefinition,
    desiredCount,
    runningCount: desiredCount,
    deployments: [
      {
        id: `ecs-svc/${name}`,
        status: "PRIMARY",
        taskDefinition,
        desiredCount,
        runningCount: desiredCount,
        rolloutState: "COMPLETED",
      },
    ],
    events: [],
  };
}

const clone = <T>(v: T): T => structuredClone(v);
const slotOf = (name: string | undefined): "a" | "b" => (name === "shop-a" ? "a" : "b");

/** Marks the service's newest deployment steady, as ECS does when its tasks are healthy. */
function finishDeployment(slot: "a" | "b"): void {
  const svc = world.services[slot];
  const primary = svc.deployments?.find((d) => d.status === "PRIMARY");
  if (!primary) throw new Error("no primary deployment");
  primary.rolloutState = "COMPLETED";
  primary.runningCount = primary.desiredCount;
  svc.runningCount = primary.desiredCount;
  svc.deployments = [primary];
}

function defaultRule(): Rule {
  const rule = world.rules.find((r) => r.IsDefault);
  if (!rule) throw new Error("no default rule");
  return rule;
}

function settings(extra: Record<string, unknown> = {}) {
  return {
    type: "alb-ecs",
    listenerArn: LISTENER,
    targetGroupA: TG_A,
    targetGroupB: TG_B,
    cluster: "prod",
    serviceA: "shop-a",
    serviceB: "shop-b",
    containerName: "web",
    progressDeadlineSeconds: 600,
    pollSeconds: 15,
    ...extra,
  };
}

let clock: ManualClock;
function router(extra: Record<string, unknown> = {}): AlbEcsTraffic {
  return new AlbEcsTraffic(
    {
      elbv2: new ElasticLoadBalancingV2Client({ region: "eu-west-1" }),
      ecs: new ECSClient({ region: "eu-west-1" }),
    },
    settings(extra),
    clock,
  );
}

const asAlb = (s: TargetState): AlbEcsState => s as AlbEcsState;

beforeEach(() => {
  elb.reset();
  ecs.reset();
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  world = {
    rules: [
      {
        RuleArn: API_RULE,
        Priority: "10",
        IsDefault: false,
        Conditions: [
          { Field: "path-pattern", Values: ["/admin/*"], PathPatternConfig: { Values: ["/admin/*"] } },
        ],
        Actions: [{ Type: "forward", TargetGroupArn: TG_OTHER }],
      },
      {
        RuleArn: DEFAULT_RULE,
        Priority: "default",
        IsDefault: true,
        Conditions: [],
        Actions: [OIDC, forward(100, 0)],
      },
    ],
    services: { a: service("shop-a", TD_A, 3), b: service("shop-b", TD_B, 0) },
    registered: 8,
  };
  elb.on(DescribeRulesCommand).callsFake((input: { RuleArns?: string[] }) => ({
    Rules: clone(
      input.RuleArns ? world.rules.filter((r) => input.RuleArns?.includes(r.RuleArn ?? "")) : world.rules,
    ),
  }));
  elb.on(ModifyListenerCommand).callsFake((input: { DefaultActions: Action[] }) => {
    defaultRule().Actions = clone(input.DefaultActions);
    return {};
  });
  elb.on(ModifyRuleCommand).callsFake((input: { RuleArn: string; Actions?: Action[] }) => {
    const rule = world.rules.find((r) => r.RuleArn === input.RuleArn);
    if (!rule) throw Object.assign(new Error("rule not found"), { name: "RuleNotFoundException" });
    if (input.Actions) rule.Actions = clone(input.Actions);
    return { Rules: [clone(rule)] };
  });
  elb.on(CreateRuleCommand).callsFake((input: Rule & { Priority: number }) => {
    const rule: Rule = {
      RuleArn: `${PREFIX}:listener-rule/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2/tester`,
      Priority: String(input.Priority),
      IsDefault: false,
      Conditions: clone(input.Conditions),
      Actions: clone(input.Actions),
    };
    world.rules.unshift(rule);
    return { Rules: [clone(rule)] };
  });
  elb.on(DeleteRuleCommand).callsFake((input: { RuleArn: string }) => {
    world.rules = world.rules.filter((r) => r.RuleArn !== input.RuleArn);
    return {};
  });
  ecs
    .on(DescribeServicesCommand)
    .callsFake(() => ({ services: clone([world.services.a, world.services.b]) }));
  ecs.on(DescribeTaskDefinitionCommand).callsFake((input: { taskDefinition: string }) => ({
    taskDefinition: {
      taskDefinitionArn: input.taskDefinition,
      family: input.taskDefinition === TD_A ? "shop-a" : "shop-b",
      networkMode: "awsvpc",
      requiresCompatibilities: ["FARGATE"],
      cpu: "256",
      memory: "512",
      executionRoleArn: "arn:aws:iam::123456789012:role/exec",
      containerDefinitions: [
        {
          name: "web",
          image: "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop@sha256:old",
          essential: true,
        },
        { name: "log-router", image: "public.ecr.aws/aws-observability/aws-for-fluent-bit:stable" },
      ],
      status: "ACTIVE",
      revision: 3,
    },
    tags: [{ key: "team", value: "shop" }],
  }));
  ecs.on(RegisterTaskDefinitionCommand).callsFake((input: RegisterTaskDefinitionRequest) => ({
    taskDefinition: {
      taskDefinitionArn: `arn:aws:ecs:eu-west-1:123456789012:task-definition/${input.family}:${world.registered++}`,
    },
  }));
  ecs
    .on(UpdateServiceCommand)
    .callsFake((input: { service: string; taskDefinition?: string; desiredCount?: number }) => {
      const svc = world.services[slotOf(input.service)];
      const desired = input.desiredCount ?? svc.desiredCount ?? 0;
      const taskDefinition = input.taskDefinition ?? svc.taskDefinition ?? "";
      svc.desiredCount = desired;
      svc.taskDefinition = taskDefinition;
      const old = (svc.deployments ?? []).map((d) => ({ ...d, status: "ACTIVE" }));
      svc.deployments = [
        {
          id: `ecs-svc/${world.registered}`,
          status: "PRIMARY",
          taskDefinition,
          desiredCount: desired,
          runningCount: 0,
          rolloutState: "IN_PROGRESS",
        },
        ...old,
      ];
      svc.events = [{ id: "e1", message: "(service shop-b) has started 1 tasks: (task 1f2e)." }];
      return { service: clone(svc) };
    });
});

/** prepare → deploy → ready: the usual start of every scenario. */
async function deployed(r = router()): Promise<TargetState> {
  const { state } = await r.prepare();
  let s = await r.deployCandidate(state, { image: IMAGE });
  finishDeployment("b");
  const ready = await r.checkReadiness(s);
  expect(ready.ready).toBe(true);
  s = ready.state;
  return s;
}

function lastListenerWeights(): Record<string, number | undefined> {
  const calls = elb.commandCalls(ModifyListenerCommand);
  const last = calls[calls.length - 1];
  const fwd = last?.args[0].input.DefaultActions?.find((a) => a.Type === "forward");
  return Object.fromEntries(
    (fwd?.ForwardConfig?.TargetGroups ?? []).map((t) => [t.TargetGroupArn, t.Weight]),
  );
}

describe("weights", () => {
  it("maps every integer percent onto ALB weights (0–999) with the exact ratio", () => {
    for (let p = 0; p <= 100; p++) {
      const w = slotWeights("b", p);
      expect(w.a + w.b).toBe(100);
      expect(w.b).toBe(p);
      expect(Math.max(w.a, w.b)).toBeLessThanOrEqual(999);
      expect(Math.min(w.a, w.b)).toBeGreaterThanOrEqual(0);
    }
    expect(slotWeights("a", 1)).toEqual({ a: 1, b: 99 });
  });
});

describe("AlbEcsTraffic", () => {
  it("prepare reads the stable slot from the larger weight and changes nothing", async () => {
    const { state, firstRelease, stable } = await router().prepare();
    expect(asAlb(state).stableSlot).toBe("a");
    expect(asAlb(state).phase).toBe("prepared");
    expect(firstRelease).toBe(false);
    expect(stable).toContain("shop-a");
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(0);
    expect(ecs.commandCalls(UpdateServiceCommand)).toHaveLength(0);

    defaultRule().Actions = [forward(0, 100)];
    world.services = { a: service("shop-a", TD_A, 0), b: service("shop-b", TD_B, 2) };
    expect(asAlb((await router().prepare()).state).stableSlot).toBe("b");
  });

  it("prepare reports a first release (nothing in service) and picks slot a for the candidate", async () => {
    world.services = { a: service("shop-a", TD_A, 0), b: service("shop-b", TD_B, 0) };
    world.services.a.runningCount = 0;
    world.services.b.runningCount = 0;
    defaultRule().Actions = [
      {
        Type: "forward",
        ForwardConfig: {
          TargetGroups: [
            { TargetGroupArn: TG_A, Weight: 1 },
            { TargetGroupArn: TG_B, Weight: 1 },
          ],
        },
      },
    ];
    const prepared = await router().prepare();
    expect(prepared.firstRelease).toBe(true);
    expect(asAlb(prepared.state).stableSlot).toBe("b");
  });

  it("deploys the digest on the free slot's service with no traffic, then waits until it is steady", async () => {
    const r = router();
    const { state } = await r.prepare();
    const s = await r.deployCandidate(state, { image: IMAGE });

    const register = ecs.commandCalls(RegisterTaskDefinitionCommand);
    expect(register).toHaveLength(1);
    const req = register[0]?.args[0].input;
    expect(req?.family).toBe("shop-b");
    expect(req?.containerDefinitions?.find((c) => c.name === "web")?.image).toBe(IMAGE);
    expect(req?.containerDefinitions?.find((c) => c.name === "log-router")?.image).toContain("fluent-bit");
    expect(req?.tags).toEqual([{ key: "team", value: "shop" }]);
    expect(req?.cpu).toBe("256");

    const update = ecs.commandCalls(UpdateServiceCommand);
    expect(update).toHaveLength(1);
    expect(update[0]?.args[0].input).toEqual({
      cluster: "prod",
      service: "shop-b",
      taskDefinition: "arn:aws:ecs:eu-west-1:123456789012:task-definition/shop-b:8",
      desiredCount: 3,
    });
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(0);

    const waiting = await r.checkReadiness(s);
    expect(waiting.ready).toBe(false);
    expect(waiting.ready === false && waiting.retryAfterSeconds).toBe(15);
    expect(waiting.message).toContain("0/3 tasks running");

    finishDeployment("b");
    const ready = await r.checkReadiness(waiting.state);
    expect(ready.ready).toBe(true);
    expect(asAlb(ready.state).phase).toBe("ready");
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(0);
  });

  it("fails clearly after the progress deadline when the deployment never becomes steady", async () => {
    const r = router();
    const { state } = await r.prepare();
    const s = await r.deployCandidate(state, { image: IMAGE });
    clock.advance(599_000);
    expect((await r.checkReadiness(s)).ready).toBe(false);
    clock.advance(1_000);
    const err = await r.checkReadiness(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TargetNotReadyError);
    expect((err as Error).name).toBe("TargetNotReadyError");
    expect((err as Error).message).toMatch(/shop-b did not become steady before its progress deadline/);
    expect((err as Error).message).toContain("rollout IN_PROGRESS, 0/3 tasks running");
    expect((err as Error).message).toContain("last service event: (service shop-b) has started 1 tasks");
  });

  it("fails at once when the ECS deployment circuit breaker marks the rollout FAILED", async () => {
    const r = router();
    const { state } = await r.prepare();
    const s = await r.deployCandidate(state, { image: IMAGE });
    const primary = world.services.b.deployments?.[0];
    if (primary) {
      primary.rolloutState = "FAILED";
      primary.rolloutStateReason = "ECS deployment circuit breaker: tasks failed to start.";
    }
    await expect(r.checkReadiness(s)).rejects.toThrow(
      /failed: ECS deployment circuit breaker: tasks failed to start/,
    );
  });

  it("refuses a container name that the task definition does not have", async () => {
    const r = router({ containerName: "api" });
    const { state } = await r.prepare();
    await expect(r.deployCandidate(state, { image: IMAGE })).rejects.toBeInstanceOf(TargetConfigurationError);
    expect(ecs.commandCalls(UpdateServiceCommand)).toHaveLength(0);
  });

  it("sets every weight from 1% to 100% exactly, keeping stickiness and the other actions", async () => {
    const r = router();
    let s = await deployed(r);
    for (let p = 1; p <= 100; p++) {
      const change = await r.setWeight(s, p);
      expect(change.outcome).toBe("applied");
      s = change.state;
      expect(lastListenerWeights()).toEqual({ [TG_A]: 100 - p, [TG_B]: p });
    }
    const calls = elb.commandCalls(ModifyListenerCommand);
    expect(calls).toHaveLength(100);
    const last = calls[99]?.args[0].input;
    expect(last?.ListenerArn).toBe(LISTENER);
    expect(last?.DefaultActions?.[0]?.Type).toBe("authenticate-oidc");
    expect(last?.DefaultActions?.[0]?.AuthenticateOidcConfig?.UseExistingClientSecret).toBe(true);
    const fwd = last?.DefaultActions?.[1];
    expect(fwd?.TargetGroupArn).toBeUndefined();
    expect(fwd?.Order).toBe(2);
    expect(fwd?.ForwardConfig?.TargetGroupStickinessConfig).toEqual({ Enabled: true, DurationSeconds: 300 });
    expect((await r.readWeights(s)).drift).toBe(false);
  });

  it("moves the weights of a listener rule with ModifyRule when configured with ruleArn", async () => {
    world.rules.push({
      RuleArn: `${PREFIX}:listener-rule/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2/shoprule`,
      Priority: "20",
      Conditions: [{ Field: "host-header", Values: ["shop.example.com"] }],
      Actions: [forward(100, 0, false)],
    });
    const ruleArn = `${PREFIX}:listener-rule/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2/shoprule`;
    const r = router({ listenerArn: undefined, ruleArn });
    const s = await deployed(r);
    const change = await r.setWeight(s, 25);
    expect(change.outcome).toBe("applied");
    const call = elb.commandCalls(ModifyRuleCommand)[0]?.args[0].input;
    expect(call?.RuleArn).toBe(ruleArn);
    expect(call?.Conditions).toBeUndefined();
    expect(call?.Actions?.[0]?.ForwardConfig?.TargetGroups).toEqual([
      { TargetGroupArn: TG_A, Weight: 75 },
      { TargetGroupArn: TG_B, Weight: 25 },
    ]);
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(0);
  });

  it("refuses traffic to a candidate that is not ready", async () => {
    const r = router();
    const { state } = await r.prepare();
    const s = await r.deployCandidate(state, { image: IMAGE });
    await expect(r.setWeight(s, 5)).rejects.toBeInstanceOf(TargetStateError);
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(0);
  });

  it("reports drift instead of overwriting weights someone else changed", async () => {
    const r = router();
    let s = (await r.setWeight(await deployed(r), 10)).state;
    defaultRule().Actions = [OIDC, forward(50, 50)];
    const observed = await r.readWeights(s);
    expect(observed).toMatchObject({ canary: 50, expectedCanary: 10, drift: true });

    const change = await r.setWeight(s, 25);
    expect(change.outcome).toBe("drift");
    expect(change.outcome === "drift" && change.message).toContain("receives 50% instead of 10%");
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(1);

    // A person decided to continue: the weights are overwritten.
    const forced = await r.setWeight(change.state, 25, { overwriteDrift: true });
    expect(forced.outcome).toBe("applied");
    s = forced.state;
    expect(lastListenerWeights()).toEqual({ [TG_A]: 75, [TG_B]: 25 });
    expect(asAlb(s).canaryWeight).toBe(25);
  });

  it("does not report drift when the same share is expressed with other weights", async () => {
    const r = router();
    const s = (await r.setWeight(await deployed(r), 25)).state;
    defaultRule().Actions = [OIDC, forward(300, 100)];
    expect((await r.readWeights(s)).drift).toBe(false);
  });

  it("refuses to write a listener whose rules changed since they were read", async () => {
    const r = router();
    const s = await deployed(r);
    // Someone adds a rule in front while the rollout waits.
    world.rules.unshift({
      RuleArn: `${PREFIX}:listener-rule/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2/hotfix`,
      Priority: "1",
      Conditions: [{ Field: "path-pattern", Values: ["/*"] }],
      Actions: [{ Type: "fixed-response", FixedResponseConfig: { StatusCode: "503" } }],
    });
    const err = await r.setWeight(s, 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ListenerChangedError);
    expect((err as Error).name).toBe("ListenerChangedError");
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(0);
  });

  it("treats a changed stickiness setting as a listener change, not as drift", async () => {
    const r = router();
    const s = await deployed(r);
    defaultRule().Actions = [OIDC, forward(100, 0, false)];
    await expect(r.setWeight(s, 5)).rejects.toBeInstanceOf(ListenerChangedError);
  });

  it("refuses to start while the free slot still receives traffic", async () => {
    defaultRule().Actions = [OIDC, forward(90, 10)];
    await expect(router().prepare()).rejects.toThrow(/free slot b still receives traffic/);
  });

  it("reads a single-target forward action (TargetGroupArn only) as 100/0 and writes both groups", async () => {
    defaultRule().Actions = [{ Type: "forward", TargetGroupArn: TG_A }];
    const r = router();
    const s = await deployed(r);
    expect((await r.readWeights(s)).drift).toBe(false);
    await r.setWeight(s, 1);
    expect(lastListenerWeights()).toEqual({ [TG_A]: 99, [TG_B]: 1 });
  });

  it("rejects a forward action that sends to a third target group", async () => {
    defaultRule().Actions = [
      {
        Type: "forward",
        ForwardConfig: {
          TargetGroups: [
            { TargetGroupArn: TG_A, Weight: 1 },
            { TargetGroupArn: TG_OTHER, Weight: 1 },
          ],
        },
      },
    ];
    await expect(router().prepare()).rejects.toThrow(/neither targetGroupA nor targetGroupB/);
  });

  it("routes testers with a header rule, removed again on promotion", async () => {
    const r = router();
    let s = await deployed(r);
    const route = await r.setHeaderRoute(s, {
      name: "testers",
      match: [{ headerName: "X-Canary", headerValue: { exact: "always" } }],
    });
    expect(route.applied).toBe(true);
    s = route.state;
    const create = elb.commandCalls(CreateRuleCommand)[0]?.args[0].input;
    expect(create?.ListenerArn).toBe(LISTENER);
    expect(create?.Priority).toBe(1);
    expect(create?.Conditions).toEqual([
      { Field: "http-header", HttpHeaderConfig: { HttpHeaderName: "X-Canary", Values: ["always"] } },
    ]);
    expect(create?.Actions).toEqual([
      { Type: "forward", ForwardConfig: { TargetGroups: [{ TargetGroupArn: TG_B, Weight: 1 }] } },
    ]);
    // The rule the rollout created does not count as a listener change.
    expect((await r.setWeight(s, 10)).outcome).toBe("applied");

    s = await r.promote(s, { scaleDownDelaySeconds: 1800 });
    expect(elb.commandCalls(DeleteRuleCommand)[0]?.args[0].input.RuleArn).toContain("/tester");
    expect(world.rules.some((x) => x.RuleArn?.endsWith("/tester"))).toBe(false);
    expect(asAlb(s).testerRule).toBeUndefined();
  });

  it("repoints a configured tester rule instead of creating one", async () => {
    world.rules.unshift({
      RuleArn: API_RULE.replace("9683b2d02a6cabee", "qa"),
      Priority: "5",
      Conditions: [{ Field: "http-header", HttpHeaderConfig: { HttpHeaderName: "X-Team", Values: ["qa"] } }],
      Actions: [{ Type: "forward", TargetGroupArn: TG_A }],
    });
    const r = router({ testerRuleArn: API_RULE.replace("9683b2d02a6cabee", "qa") });
    let s = await deployed(r);
    s = (
      await r.setHeaderRoute(s, {
        name: "qa",
        match: [{ headerName: "X-Team", headerValue: { exact: "qa" } }],
      })
    ).state;
    expect(elb.commandCalls(CreateRuleCommand)).toHaveLength(0);
    expect(
      elb.commandCalls(ModifyRuleCommand)[0]?.args[0].input.Actions?.[0]?.ForwardConfig?.TargetGroups,
    ).toEqual([{ TargetGroupArn: TG_B, Weight: 1 }]);
    await r.removeHeaderRoute(s, "qa");
    expect(
      elb.commandCalls(ModifyRuleCommand)[1]?.args[0].input.Actions?.[0]?.ForwardConfig?.TargetGroups,
    ).toEqual([{ TargetGroupArn: TG_A, Weight: 1 }]);
  });

  it("promotes by flipping the stable slot, with no second deployment, and scales the old slot down after the delay", async () => {
    const r = router();
    let s = (await r.setWeight(await deployed(r), 50)).state;
    const registered = ecs.commandCalls(RegisterTaskDefinitionCommand).length;
    const updates = ecs.commandCalls(UpdateServiceCommand).length;

    s = await r.promote(s, { scaleDownDelaySeconds: 1800 });
    expect(lastListenerWeights()).toEqual({ [TG_A]: 0, [TG_B]: 100 });
    expect(asAlb(s)).toMatchObject({ phase: "promoted", stableSlot: "b", canaryWeight: 0 });
    expect(ecs.commandCalls(RegisterTaskDefinitionCommand)).toHaveLength(registered);
    expect(ecs.commandCalls(UpdateServiceCommand)).toHaveLength(updates);

    clock.advance(1_799_000);
    const early = await r.scaleDown(s);
    expect(early.ready).toBe(false);
    expect(early.ready === false && early.retryAfterSeconds).toBe(1);
    expect(ecs.commandCalls(UpdateServiceCommand)).toHaveLength(updates);

    clock.advance(1_000);
    const done = await r.scaleDown(early.state);
    expect(done.ready).toBe(true);
    const last = ecs.commandCalls(UpdateServiceCommand).at(-1)?.args[0].input;
    expect(last).toEqual({ cluster: "prod", service: "shop-a", desiredCount: 0 });
    expect(asAlb(done.state).scaledDown).toEqual({ slot: "a", desiredCount: 3 });
  });

  it("touches nothing at scale-down time when the old slot carries traffic again", async () => {
    const r = router();
    let s = await r.promote(await deployed(r), { scaleDownDelaySeconds: 60 });
    defaultRule().Actions = [OIDC, forward(100, 0)];
    clock.advance(60_000);
    const res = await r.scaleDown(s);
    expect(res.ready).toBe(true);
    expect(res.message).toContain("touching nothing");
    s = res.state;
    expect(ecs.commandCalls(UpdateServiceCommand)).toHaveLength(1);
    expect(asAlb(s).pendingScaleDown).toBeUndefined();
  });

  it("aborts before promotion with a weight change and scales the candidate down after abortScaleDownDelaySeconds", async () => {
    const r = router();
    let s = (await r.setWeight(await deployed(r), 25)).state;
    s = (
      await r.setHeaderRoute(s, {
        name: "testers",
        match: [{ headerName: "X-Canary", headerValue: { exact: "always" } }],
      })
    ).state;
    const aborted = await r.abort(s, { abortScaleDownDelaySeconds: 30 });
    expect(aborted.ready).toBe(true);
    expect(lastListenerWeights()).toEqual({ [TG_A]: 100, [TG_B]: 0 });
    expect(elb.commandCalls(DeleteRuleCommand)).toHaveLength(1);
    s = aborted.state;
    expect(asAlb(s)).toMatchObject({ phase: "aborted", stableSlot: "a" });
    expect((await r.scaleDown(s)).ready).toBe(false);
    clock.advance(30_000);
    await r.scaleDown(s);
    expect(ecs.commandCalls(UpdateServiceCommand).at(-1)?.args[0].input).toEqual({
      cluster: "prod",
      service: "shop-b",
      desiredCount: 0,
    });
  });

  it("aborts inside the scale-down window after promotion with a weight change only", async () => {
    const r = router();
    let s = await r.promote(await deployed(r), { scaleDownDelaySeconds: 1800 });
    const ecsCalls = ecs.calls().length;
    clock.advance(600_000);
    const aborted = await r.abort(s, { abortScaleDownDelaySeconds: 30 });
    expect(aborted.ready).toBe(true);
    expect(lastListenerWeights()).toEqual({ [TG_A]: 100, [TG_B]: 0 });
    s = aborted.state;
    expect(asAlb(s)).toMatchObject({ phase: "aborted", stableSlot: "a" });
    expect(asAlb(s).pendingScaleDown).toEqual({ slot: "b", at: clock.now() + 30_000 });
    // No ECS call at all: the old slot was still running.
    expect(ecs.calls().length).toBe(ecsCalls);
  });

  it("aborts after the scale-down window by scaling the old slot back up before moving traffic", async () => {
    const r = router();
    let s = await r.promote(await deployed(r), { scaleDownDelaySeconds: 60 });
    clock.advance(60_000);
    s = (await r.scaleDown(s)).state;
    const listenerWrites = elb.commandCalls(ModifyListenerCommand).length;

    const first = await r.abort(s, { abortScaleDownDelaySeconds: 30 });
    expect(first.ready).toBe(false);
    expect(first.message).toContain("scaling shop-a back to 3 tasks");
    expect(ecs.commandCalls(UpdateServiceCommand).at(-1)?.args[0].input).toEqual({
      cluster: "prod",
      service: "shop-a",
      desiredCount: 3,
    });
    expect(ecs.commandCalls(RegisterTaskDefinitionCommand)).toHaveLength(1);
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(listenerWrites);

    const stillWaiting = await r.abort(first.state, { abortScaleDownDelaySeconds: 30 });
    expect(stillWaiting.ready).toBe(false);
    expect(elb.commandCalls(ModifyListenerCommand)).toHaveLength(listenerWrites);

    finishDeployment("a");
    const done = await r.abort(stillWaiting.state, { abortScaleDownDelaySeconds: 30 });
    expect(done.ready).toBe(true);
    expect(lastListenerWeights()).toEqual({ [TG_A]: 100, [TG_B]: 0 });
    expect(asAlb(done.state)).toMatchObject({
      phase: "aborted",
      stableSlot: "a",
      pendingScaleDown: { slot: "b" },
    });
  });

  it("fails the abort clearly when the old slot does not come back before its deadline", async () => {
    const r = router();
    let s = await r.promote(await deployed(r), { scaleDownDelaySeconds: 0 });
    s = (await r.scaleDown(s)).state;
    const first = await r.abort(s, { abortScaleDownDelaySeconds: 30, progressDeadlineSeconds: 120 });
    clock.advance(120_000);
    await expect(r.abort(first.state, { abortScaleDownDelaySeconds: 30 })).rejects.toThrow(
      /old stable slot on shop-a did not become steady before its progress deadline/,
    );
  });

  it("rejects invalid settings and a state written by another target", async () => {
    expect(() => router({ ruleArn: API_RULE })).toThrow(/exactly one of listenerArn or ruleArn/);
    expect(() => router({ targetGroupB: TG_A })).toThrow(TargetConfigurationError);
    await expect(router().setWeight({ type: "lambda-alias" }, 5)).rejects.toBeInstanceOf(TargetStateError);
  });
});
