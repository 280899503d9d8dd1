/**
 * The ALB + ECS target against moto: the real adapter, real SDK clients, and the listener's
 * weights, the testers' rule and the services read back from moto after each step. The SDK-mock
 * twin is `test/traffic/alb-ecs.test.ts`.
 *
 * moto's ECS adds no deployment on `UpdateService` (the service keeps the one it was created
 * with), so `checkReadiness` cannot see the candidate's deployment become steady there: these
 * tests read the service's task definition and count from moto instead, and take the candidate
 * as ready (`docs/runtime.md`, "The AWS peer: moto").
 */
import {
  CreateClusterCommand,
  CreateServiceCommand,
  DescribeServicesCommand,
  DescribeTaskDefinitionCommand,
  ECSClient,
  RegisterTaskDefinitionCommand,
} from "@aws-sdk/client-ecs";
import {
  CreateListenerCommand,
  CreateLoadBalancerCommand,
  CreateRuleCommand,
  CreateTargetGroupCommand,
  DescribeRulesCommand,
  ElasticLoadBalancingV2Client,
} from "@aws-sdk/client-elastic-load-balancing-v2";
import { createVpc, type Moto, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { type AlbEcsState, AlbEcsTraffic } from "../../functions/traffic/alb-ecs.ts";
import { ListenerChangedError } from "../../functions/traffic/errors.ts";
import type { TargetState } from "../../functions/traffic/port.ts";

const STABLE_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop@sha256:1111";
const CANDIDATE_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop@sha256:2222";

let moto: Moto;
let elbv2: ElasticLoadBalancingV2Client;
let ecs: ECSClient;
const clock = new ManualClock(Date.UTC(2026, 0, 1));

beforeAll(async () => {
  moto = await startMoto();
  elbv2 = new ElasticLoadBalancingV2Client(moto.config);
  ecs = new ECSClient(moto.config);
});
afterAll(async () => {
  elbv2?.destroy();
  ecs?.destroy();
  await moto?.close();
});

interface World {
  listenerArn: string;
  tgA: string;
  tgB: string;
}
let world: World;

/**
 * An ALB whose listener forwards everything to target group a (slot a, weight 100), and two ECS
 * services: shop-a running 3 tasks of the stable image, shop-b none.
 */
beforeEach(async () => {
  await moto.reset();
  const { vpcId, subnetIds } = await createVpc(moto);
  const lb = await elbv2.send(new CreateLoadBalancerCommand({ Name: "shop", Subnets: subnetIds }));
  const tg = async (name: string) => {
    const out = await elbv2.send(
      new CreateTargetGroupCommand({
        Name: name,
        Protocol: "HTTP",
        Port: 8080,
        VpcId: vpcId,
        TargetType: "ip",
      }),
    );
    return out.TargetGroups?.[0]?.TargetGroupArn as string;
  };
  const tgA = await tg("shop-a");
  const tgB = await tg("shop-b");
  const listener = await elbv2.send(
    new CreateListenerCommand({
      LoadBalancerArn: lb.LoadBalancers?.[0]?.LoadBalancerArn,
      Protocol: "HTTP",
      Port: 80,
      DefaultActions: [
        {
          Type: "forward",
          ForwardConfig: {
            TargetGroups: [
              { TargetGroupArn: tgA, Weight: 100 },
              { TargetGroupArn: tgB, Weight: 0 },
            ],
          },
        },
      ],
    }),
  );
  world = { listenerArn: listener.Listeners?.[0]?.ListenerArn as string, tgA, tgB };

  await ecs.send(new CreateClusterCommand({ clusterName: "shop" }));
  const td = await ecs.send(
    new RegisterTaskDefinitionCommand({
      family: "shop",
      networkMode: "awsvpc",
      requiresCompatibilities: ["FARGATE"],
      cpu: "256",
      memory: "512",
      containerDefinitions: [
        { name: "web", image: STABLE_IMAGE, essential: true, portMappings: [{ containerPort: 8080 }] },
        { name: "sidecar", image: "public.ecr.aws/envoy:v1.31", essential: false },
      ],
    }),
  );
  const stableTd = td.taskDefinition?.taskDefinitionArn as string;
  for (const [name, count] of [
    ["shop-a", 3],
    ["shop-b", 0],
  ] as const) {
    await ecs.send(
      new CreateServiceCommand({
        cluster: "shop",
        serviceName: name,
        taskDefinition: stableTd,
        desiredCount: count,
      }),
    );
  }
});

function target(where: Record<string, string> = { listenerArn: world.listenerArn }): AlbEcsTraffic {
  return new AlbEcsTraffic(
    { elbv2, ecs },
    {
      type: "alb-ecs",
      ...where,
      targetGroupA: world.tgA,
      targetGroupB: world.tgB,
      cluster: "shop",
      serviceA: "shop-a",
      serviceB: "shop-b",
      containerName: "web",
      progressDeadlineSeconds: 600,
    },
    clock,
  );
}

/** The listener's default forward action's weights, by target group, as moto keeps them. */
async function listenerWeights(): Promise<Record<string, number | undefined>> {
  const { Rules } = await elbv2.send(new DescribeRulesCommand({ ListenerArn: world.listenerArn }));
  const rule = Rules?.find((r) => r.IsDefault);
  const forward = rule?.Actions?.find((a) => a.Type === "forward");
  return Object.fromEntries(
    (forward?.ForwardConfig?.TargetGroups ?? []).map((t) => [
      t.TargetGroupArn === world.tgA ? "a" : "b",
      t.Weight,
    ]),
  );
}

async function service(name: string) {
  const { services } = await ecs.send(new DescribeServicesCommand({ cluster: "shop", services: [name] }));
  return services?.[0];
}

/** Prepare and deploy the candidate image on slot b; moto's state is checked, and the candidate taken as ready. */
async function deployed(t: AlbEcsTraffic): Promise<TargetState> {
  const { state, firstRelease } = await t.prepare();
  expect(firstRelease).toBe(false);
  expect((state as AlbEcsState).stableSlot).toBe("a");
  const deploying = (await t.deployCandidate(state, { image: CANDIDATE_IMAGE })) as AlbEcsState;
  const b = await service("shop-b");
  expect(b?.taskDefinition).toBe(deploying.deployment?.taskDefinitionArn);
  expect(b?.desiredCount).toBe(3);
  const { taskDefinition } = await ecs.send(
    new DescribeTaskDefinitionCommand({ taskDefinition: b?.taskDefinition as string }),
  );
  const images = Object.fromEntries(
    (taskDefinition?.containerDefinitions ?? []).map((c) => [c.name, c.image]),
  );
  expect(images).toEqual({ web: CANDIDATE_IMAGE, sidecar: "public.ecr.aws/envoy:v1.31" });
  expect(taskDefinition?.family).toBe("shop");
  expect(taskDefinition?.revision).toBe(2);
  // moto adds no deployment for the update (see above): the candidate is ready by assumption.
  return { ...deploying, phase: "ready" };
}

describe("alb-ecs against moto", () => {
  it("registers the candidate on the free slot and moves the listener's weights", async () => {
    const t = target();
    const ready = await deployed(t);
    expect(await listenerWeights()).toEqual({ a: 100, b: 0 });

    const change = await t.setWeight(ready, 25);
    expect(change.outcome).toBe("applied");
    expect(await listenerWeights()).toEqual({ a: 75, b: 25 });
    const observed = await t.readWeights(change.state);
    expect([observed.canary, observed.stable, observed.drift]).toEqual([25, 75, false]);

    const promoted = await t.promote(change.state, { scaleDownDelaySeconds: 30 });
    expect(await listenerWeights()).toEqual({ a: 0, b: 100 });
    expect((promoted as AlbEcsState).stableSlot).toBe("b");

    // After the delay, the old slot is scaled down to no tasks.
    clock.advance(31_000);
    await t.scaleDown(promoted);
    expect((await service("shop-a"))?.desiredCount).toBe(0);
  });

  it("aborts a canary: all the traffic back on the stable slot", async () => {
    const t = target();
    const { state } = await t.setWeight(await deployed(t), 40);
    expect(await listenerWeights()).toEqual({ a: 60, b: 40 });
    const aborted = await t.abort(state, { abortScaleDownDelaySeconds: 0 });
    expect(aborted.ready).toBe(true);
    expect(await listenerWeights()).toEqual({ a: 100, b: 0 });
  });

  it("routes testers by header through a rule it creates, and deletes it", async () => {
    const t = target();
    const route = await t.setHeaderRoute(await deployed(t), {
      name: "testers",
      match: [{ headerName: "X-Canary", headerValue: { exact: "always" } }],
    });
    expect(route.applied).toBe(true);
    const rules = async () =>
      ((await elbv2.send(new DescribeRulesCommand({ ListenerArn: world.listenerArn }))).Rules ?? []).filter(
        (r) => !r.IsDefault,
      );
    const [rule] = await rules();
    expect(rule?.Priority).toBe("1");
    expect(rule?.Conditions?.[0]?.HttpHeaderConfig).toEqual({
      HttpHeaderName: "X-Canary",
      Values: ["always"],
    });
    expect(rule?.Actions?.[0]?.ForwardConfig?.TargetGroups?.map((g) => g.TargetGroupArn)).toEqual([
      world.tgB,
    ]);
    await t.removeHeaderRoute(route.state, "testers");
    expect(await rules()).toEqual([]);
  });

  it("refuses to write over a listener changed outside the rollout", async () => {
    const t = target();
    const { state } = await t.setWeight(await deployed(t), 10);
    // Someone else adds a rule to the listener: its fingerprint is no longer the one prepared.
    await elbv2.send(
      new CreateRuleCommand({
        ListenerArn: world.listenerArn,
        Priority: 7,
        Conditions: [{ Field: "path-pattern", PathPatternConfig: { Values: ["/admin/*"] } }],
        Actions: [{ Type: "fixed-response", FixedResponseConfig: { StatusCode: "403" } }],
      }),
    );
    await expect(t.setWeight(state, 30)).rejects.toThrow(ListenerChangedError);
    expect(await listenerWeights()).toEqual({ a: 90, b: 10 });
  });

  it("moves the weights of a listener rule, and points the user's testers' rule at the candidate and back", async () => {
    const forward = (weightA: number, weightB: number) => ({
      Type: "forward" as const,
      ForwardConfig: {
        TargetGroups: [
          { TargetGroupArn: world.tgA, Weight: weightA },
          { TargetGroupArn: world.tgB, Weight: weightB },
        ],
      },
    });
    const rule = async (priority: number, path: string, weights: [number, number]) =>
      (
        await elbv2.send(
          new CreateRuleCommand({
            ListenerArn: world.listenerArn,
            Priority: priority,
            Conditions: [{ Field: "path-pattern", PathPatternConfig: { Values: [path] } }],
            Actions: [forward(...weights)],
          }),
        )
      ).Rules?.[0]?.RuleArn as string;
    const apiRule = await rule(10, "/api/*", [100, 0]);
    const testerRule = await rule(5, "/api/test/*", [1, 0]);
    const t = target({ ruleArn: apiRule, testerRuleArn: testerRule });
    const groupsOf = async (arn: string) => {
      const { Rules } = await elbv2.send(new DescribeRulesCommand({ RuleArns: [arn] }));
      return Object.fromEntries(
        (Rules?.[0]?.Actions?.[0]?.ForwardConfig?.TargetGroups ?? []).map((g) => [
          g.TargetGroupArn === world.tgA ? "a" : "b",
          g.Weight,
        ]),
      );
    };
    const { state } = await t.setWeight(await deployed(t), 20);
    expect(await groupsOf(apiRule)).toEqual({ a: 80, b: 20 });
    expect(await listenerWeights()).toEqual({ a: 100, b: 0 });

    const route = await t.setHeaderRoute(state, {
      name: "qa",
      match: [{ headerName: "X-Team", headerValue: { exact: "qa" } }],
    });
    expect(await groupsOf(testerRule)).toEqual({ b: 1 });
    await t.removeHeaderRoute(route.state, "qa");
    expect(await groupsOf(testerRule)).toEqual({ a: 1 });
  });
});
