import { App, type CfnElement, Stack, Validations } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as iam from "aws-cdk-lib/aws-iam";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { EXAMPLE_CONTEXT } from "../../infra/example-stack.ts";
import { PropsError, RolloutWaves, WaveCoordinator, type WaveTargetProps } from "../../infra/index.ts";
import { parseRollout, type RolloutSpec, readSourcesSync } from "../../statemachine/index.ts";

const spec = (): RolloutSpec => parseRollout(readSourcesSync(["examples/waves.yaml"], [])).spec;

const SM = (region: string, account: string) =>
  `arn:aws:states:${region}:${account}:stateMachine:shop-rollout`;
const TARGETS: WaveTargetProps[] = [
  { region: "eu-west-1", stateMachineArn: SM("eu-west-1", "111111111111") },
  {
    region: "us-east-1",
    account: "222222222222",
    stateMachineArn: SM("us-east-1", "222222222222"),
    roleArn: "arn:aws:iam::222222222222:role/shop-waves",
  },
];

function synth(targets: readonly WaveTargetProps[] = TARGETS) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });
  const stack = new Stack(app, "Home", { env: { account: "111111111111", region: "eu-west-1" } });
  const coordinator = new WaveCoordinator(stack, "Waves", { spec: spec(), targets });
  return { stack, coordinator, template: Template.fromStack(stack) };
}

type Statement = { Sid?: string; Action: string | string[]; Resource: unknown };

describe("WaveCoordinator", () => {
  it("deploys the compiled coordinator with each pass's state machine and role substituted", () => {
    const { template, coordinator } = synth();
    expect(coordinator.passes.map((p) => p.pass)).toEqual(["eu", "rest"]);
    const machines = template.findResources("AWS::StepFunctions::StateMachine");
    const [machine] = Object.values(machines) as Array<{ Properties: Record<string, unknown> }>;
    expect(machine?.Properties.DefinitionSubstitutions).toEqual({
      WavePass1StateMachineArn: SM("eu-west-1", "111111111111"),
      WavePass2StateMachineArn: SM("us-east-1", "222222222222"),
      WavePass2RoleArn: "arn:aws:iam::222222222222:role/shop-waves",
    });
    const definition = JSON.parse(machine?.Properties.DefinitionString as string) as {
      States: Record<string, { Resource?: string; Credentials?: unknown }>;
    };
    expect(definition.States["Pass01-eu"]?.Resource).toBe("arn:aws:states:::states:startExecution.sync:2");
    expect(definition.States["Pass02-rest"]?.Credentials).toEqual({ RoleArn: "${WavePass2RoleArn}" });
  });

  it("may start exactly the passes' state machines, follow their executions, and assume the cross-account role", () => {
    const { template } = synth();
    const policies = template.findResources("AWS::IAM::Policy");
    const statements = Object.values(policies).flatMap(
      (p) =>
        (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
          .Statement,
    );
    const bySid = Object.fromEntries(statements.filter((s) => s.Sid).map((s) => [s.Sid, s]));
    expect(bySid.StartPasses).toMatchObject({
      Action: "states:StartExecution",
      Resource: SM("eu-west-1", "111111111111"),
    });
    expect(JSON.stringify(bySid.FollowPasses?.Resource)).toContain("execution");
    expect(JSON.stringify(bySid.FollowPasses?.Resource)).toContain("shop-rollout:*");
    expect(bySid.AssumePassRoles).toMatchObject({
      Action: "sts:AssumeRole",
      Resource: "arn:aws:iam::222222222222:role/shop-waves",
    });
    expect(bySid.SyncRule).toMatchObject({
      Action: ["events:PutTargets", "events:PutRule", "events:DescribeRule"],
    });
    expect(JSON.stringify(bySid.SyncRule?.Resource)).toContain(
      "rule/StepFunctionsGetEventsForStepFunctionsExecutionRule",
    );
    // Nothing else in another account: the role there does it.
    expect(JSON.stringify(statements)).not.toContain("arn:aws:states:us-east-1:222222222222:execution");
  });

  it("passes cdk-nag AwsSolutions with every acknowledgement explained", () => {
    const { stack } = synth();
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
    const acks = stack.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, { reason?: string } | string>));
    for (const [id, value] of acks) {
      const reason = typeof value === "string" ? value : (value.reason ?? "");
      expect(reason.length, id).toBeGreaterThan(30);
    }
    expect(Annotations.fromStack(stack).findError("*", Match.anyValue())).toEqual([]);
  });

  it("grantRead: what rollouts waves reads of the coordinator, and nothing more", () => {
    const app = new App({
      context: { "aws:cdk:bundling-stacks": [] },
      builtinCloudFormationValidation: false,
    });
    const stack = new Stack(app, "Home", { env: { account: "111111111111", region: "eu-west-1" } });
    const coordinator = new WaveCoordinator(stack, "Waves", { spec: spec(), targets: TARGETS });
    const operator = new iam.Role(stack, "Operator", {
      roleName: "rollouts-operator",
      assumedBy: new iam.AccountRootPrincipal(),
    });
    coordinator.grantRead(operator);
    const template = Template.fromStack(stack);
    const operatorId = stack.getLogicalId(operator.node.defaultChild as CfnElement);
    const coordinatorId = stack.getLogicalId(coordinator.stateMachine.node.defaultChild as CfnElement);
    const policies = Object.values(
      template.findResources("AWS::IAM::Policy", { Properties: { Roles: [{ Ref: operatorId }] } }),
    ) as Array<{ Properties: { PolicyDocument: { Statement: unknown[] } } }>;
    expect(policies).toHaveLength(1);
    expect(policies[0]?.Properties.PolicyDocument.Statement).toEqual([
      {
        Action: ["states:DescribeStateMachine", "states:ListExecutions"],
        Effect: "Allow",
        Resource: { Ref: coordinatorId },
      },
      { Action: "states:ListStateMachines", Effect: "Allow", Resource: "*" },
    ]);
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });

  it("refuses a target of another account without a role, and a region in no wave, naming each", () => {
    const [eu, us] = TARGETS as [WaveTargetProps, WaveTargetProps];
    const { roleArn: _role, ...noRole } = us;
    const extra = { region: "ap-south-1", stateMachineArn: SM("ap-south-1", "111111111111") };
    let thrown: unknown;
    try {
      synth([eu, noRole, extra]);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PropsError);
    expect((thrown as PropsError).problems).toEqual([
      "targets[1].roleArn: required: 222222222222/us-east-1 is another account, whose executions the coordinator starts through a role there",
    ]);
    // With the role given, ap-south-1 joins the "rest" wave (select region!=eu-west-1)…
    expect(() => synth([eu, us, extra])).not.toThrow();
    // …but a second eu-west-1 target is in no wave: "eu" names one target, "rest" excludes it.
    expect(() =>
      synth([
        eu,
        us,
        { region: "eu-west-1", account: "111111111111", stateMachineArn: SM("eu-west-1", "111111111111") },
      ]),
    ).toThrow(/the target in 111111111111\/eu-west-1 is in no wave/);
  });
});

describe("RolloutWaves: the whole release in one app", () => {
  const LOCAL = {
    type: "alb-ecs",
    listenerArn: EXAMPLE_CONTEXT.listenerArn,
    targetGroupA: EXAMPLE_CONTEXT.targetGroupA,
    targetGroupB: EXAMPLE_CONTEXT.targetGroupB,
    cluster: EXAMPLE_CONTEXT.cluster,
    serviceA: EXAMPLE_CONTEXT.serviceA,
    serviceB: EXAMPLE_CONTEXT.serviceB,
    containerName: EXAMPLE_CONTEXT.containerName,
  } as const;
  function release(
    roleArn: string | null = "arn:aws:iam::222222222222:role/shop-waves",
    tagPattern: string | null = "v*",
  ) {
    const app = new App({
      context: { "aws:cdk:bundling-stacks": [] },
      builtinCloudFormationValidation: false,
    });
    const waves = new RolloutWaves(app, "Shop", {
      spec: spec(),
      home: { account: "111111111111", region: "eu-west-1" },
      repository: "shop",
      ...(tagPattern === null ? {} : { tagPattern }),
      targets: [
        { region: "eu-west-1", target: LOCAL },
        {
          region: "us-east-1",
          account: "222222222222",
          target: LOCAL,
          ...(roleArn ? { roleArn } : {}),
        },
      ],
    });
    return { app, waves };
  }

  const statementsOf = (template: Template) =>
    Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
      (p) =>
        (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
          .Statement,
    );

  it("deploys one controller stack per region, each rollout started only by the coordinator", () => {
    const { waves } = release();
    expect(waves.regionStacks.map((s: Stack) => [s.region, s.account])).toEqual([
      ["eu-west-1", "111111111111"],
      ["us-east-1", "222222222222"],
    ]);
    for (const [i, stack] of waves.regionStacks.entries()) {
      const template = Template.fromStack(stack);
      const name = ["shop-eu", "shop-rest"][i];
      template.hasResourceProperties("AWS::StepFunctions::StateMachine", { StateMachineName: name });
      // Its tags name the coordinator (by the ARN its name gives, in the home region and account)
      // and the controller's table: rollouts waves finds the release from any region, and each
      // region's table, through them.
      template.hasResourceProperties("AWS::StepFunctions::StateMachine", {
        StateMachineName: name,
        Tags: [
          {
            Key: "sfn-rollouts:coordinator",
            Value: "arn:aws:states:eu-west-1:111111111111:stateMachine:shop-waves",
          },
          { Key: "sfn-rollouts:table", Value: { Ref: Match.stringLikeRegexp("^ControllerTable") } },
        ],
      });
      // No ECR push rule in a region: a push there would start a pass outside the release.
      const rules = Object.values(template.findResources("AWS::Events::Rule")) as Array<{
        Properties: { EventPattern?: { source?: string[] } };
      }>;
      expect(rules.filter((r) => r.Properties.EventPattern?.source?.includes("aws.ecr"))).toEqual([]);
    }
  });

  it("the push in the home region starts the coordinator, which names each region's state machine by its ARN", () => {
    const { waves } = release();
    const home = Template.fromStack(waves.homeStack);
    home.hasResourceProperties("AWS::StepFunctions::StateMachine", { StateMachineName: "shop-waves" });
    const machine = Object.values(home.findResources("AWS::StepFunctions::StateMachine"))[0] as {
      Properties: { DefinitionSubstitutions: Record<string, unknown> };
    };
    expect(JSON.stringify(machine.Properties.DefinitionSubstitutions.WavePass1StateMachineArn)).toContain(
      ":states:eu-west-1:111111111111:stateMachine:shop-eu",
    );
    expect(JSON.stringify(machine.Properties.DefinitionSubstitutions.WavePass2StateMachineArn)).toContain(
      ":states:us-east-1:222222222222:stateMachine:shop-rest",
    );
    home.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: {
        source: ["aws.ecr"],
        "detail-type": ["ECR Image Action"],
        detail: Match.objectLike({ "repository-name": ["shop"], "image-tag": [{ prefix: "v" }] }),
      },
    });
    const rule = Object.values(home.findResources("AWS::Events::Rule"))[0] as {
      Properties: { Targets: Array<{ InputTransformer: { InputPathsMap: Record<string, string> } }> };
    };
    expect(Object.values(rule.Properties.Targets[0]?.InputTransformer.InputPathsMap ?? {})).toEqual(
      expect.arrayContaining(["$.detail.image-digest", "$.detail.image-tag", "$.id", "$.time"]),
    );
    // No cross-stack reference: the region stacks can be deployed in any order, alone.
    expect(JSON.stringify(home.toJSON())).not.toContain("Fn::ImportValue");
  });

  it("without a tagPattern a push by digest only starts the release through its own rule, with tag null", () => {
    const home = Template.fromStack(release(undefined, null).waves.homeStack);
    const rules = Object.values(home.findResources("AWS::Events::Rule")) as Array<{
      Properties: {
        EventPattern: { detail: Record<string, unknown> };
        Targets: Array<{
          InputTransformer: { InputPathsMap: Record<string, string>; InputTemplate: string };
        }>;
      };
    }>;
    expect(rules.map((r) => r.Properties.EventPattern.detail["image-tag"])).toEqual([
      [{ exists: true }],
      [{ exists: false }],
    ]);
    const [tagged, byDigest] = rules.map((r) => r.Properties.Targets[0]?.InputTransformer);
    expect(Object.values(tagged?.InputPathsMap ?? {})).toContain("$.detail.image-tag");
    expect(Object.values(byDigest?.InputPathsMap ?? {})).not.toContain("$.detail.image-tag");
    expect(byDigest?.InputTemplate).toContain('"tag":null');
    // With a tagPattern, a push by digest only has no tag to match: one rule.
    expect(
      Object.keys(Template.fromStack(release().waves.homeStack).findResources("AWS::Events::Rule")),
    ).toHaveLength(1);
  });

  it("creates the role another account's pass is started through: trusting exactly the coordinator's role, allowed exactly that pass", () => {
    const { waves } = release(null);
    const [eu, us] = waves.regionStacks.map((s) => Template.fromStack(s)) as [Template, Template];
    const home = Template.fromStack(waves.homeStack);
    // The coordinator's role has a name known before it is deployed.
    home.hasResourceProperties("AWS::StepFunctions::StateMachine", {
      StateMachineName: "shop-waves",
      RoleArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^CoordinatorRole"), "Arn"] },
    });
    home.hasResourceProperties("AWS::IAM::Role", {
      RoleName: "shop-waves-eu-west-1",
      AssumeRolePolicyDocument: {
        Statement: [
          { Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: "states.amazonaws.com" } },
        ],
        Version: "2012-10-17",
      },
    });
    // In the other account: one role, trusting the home account only as the coordinator's role.
    const roles = Object.values(us.findResources("AWS::IAM::Role")).filter(
      (r) => (r as { Properties: { RoleName?: string } }).Properties.RoleName === "shop-waves-rest",
    ) as Array<{ Properties: Record<string, unknown> }>;
    expect(roles).toHaveLength(1);
    expect(roles[0]?.Properties.AssumeRolePolicyDocument).toEqual({
      Statement: [
        {
          Action: "sts:AssumeRole",
          Effect: "Allow",
          Principal: { AWS: "arn:aws:iam::111111111111:root" },
          Condition: {
            ArnEquals: { "aws:PrincipalArn": "arn:aws:iam::111111111111:role/shop-waves-eu-west-1" },
          },
        },
      ],
      Version: "2012-10-17",
    });
    const rolePolicies = Object.values(us.findResources("AWS::IAM::Policy")).filter((p) =>
      JSON.stringify((p as { Properties: { Roles: unknown } }).Properties.Roles).includes("CoordinatorRole"),
    ) as Array<{ Properties: { PolicyDocument: { Statement: Statement[] } } }>;
    expect(rolePolicies).toHaveLength(1);
    expect(rolePolicies[0]?.Properties.PolicyDocument.Statement).toEqual([
      {
        Sid: "StartPass",
        Action: "states:StartExecution",
        Effect: "Allow",
        Resource: "arn:aws:states:us-east-1:222222222222:stateMachine:shop-rest",
      },
      {
        Sid: "FollowPass",
        Action: ["states:DescribeExecution", "states:StopExecution"],
        Effect: "Allow",
        Resource: "arn:aws:states:us-east-1:222222222222:execution:shop-rest:*",
      },
      {
        Sid: "SyncRule",
        Action: ["events:PutTargets", "events:PutRule", "events:DescribeRule"],
        Effect: "Allow",
        Resource:
          "arn:aws:events:us-east-1:222222222222:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule",
      },
    ]);
    // The same account needs none.
    expect(JSON.stringify(eu.toJSON())).not.toContain("shop-waves-");
    // The coordinator assumes exactly that role, named by its ARN (no cross-stack reference).
    const bySid = Object.fromEntries(
      statementsOf(home)
        .filter((s) => s.Sid)
        .map((s) => [s.Sid, s]),
    );
    expect(bySid.AssumePassRoles).toMatchObject({
      Action: "sts:AssumeRole",
      Resource: "arn:aws:iam::222222222222:role/shop-waves-rest",
    });
    const machine = Object.values(home.findResources("AWS::StepFunctions::StateMachine"))[0] as {
      Properties: { DefinitionSubstitutions: Record<string, unknown> };
    };
    expect(machine.Properties.DefinitionSubstitutions.WavePass2RoleArn).toBe(
      "arn:aws:iam::222222222222:role/shop-waves-rest",
    );
    expect(JSON.stringify(home.toJSON())).not.toContain("Fn::ImportValue");
    for (const stack of [waves.homeStack, ...waves.regionStacks]) {
      const report = new AwsSolutionsChecks().validateScope(stack);
      expect(
        report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
      ).toEqual([]);
      expect(Annotations.fromStack(stack).findError("*", Match.anyValue())).toEqual([]);
    }
  });

  it("a roleArn given wins: no role is created, the coordinator assumes the one given", () => {
    const { waves } = release("arn:aws:iam::222222222222:role/shop-waves");
    const us = Template.fromStack(waves.regionStacks[1] as Stack);
    // No role named after the release (shop-waves-rest): the only mention of shop-waves is the
    // state machine's tag naming its coordinator.
    expect(JSON.stringify(us.toJSON()).replaceAll(":stateMachine:shop-waves", "")).not.toContain(
      "shop-waves",
    );
    const home = Template.fromStack(waves.homeStack);
    const machine = Object.values(home.findResources("AWS::StepFunctions::StateMachine"))[0] as {
      Properties: { DefinitionSubstitutions: Record<string, unknown> };
    };
    expect(machine.Properties.DefinitionSubstitutions.WavePass2RoleArn).toBe(
      "arn:aws:iam::222222222222:role/shop-waves",
    );
  });

  it("passes cdk-nag AwsSolutions in every stack", () => {
    const { waves } = release();
    for (const stack of [waves.homeStack, ...waves.regionStacks]) {
      const report = new AwsSolutionsChecks().validateScope(stack);
      expect(
        report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
      ).toEqual([]);
    }
  });
});
