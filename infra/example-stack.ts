import { App, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as iam from "aws-cdk-lib/aws-iam";
import { AwsSolutionsChecks } from "cdk-nag";
import type { Construct } from "constructs";
import { PROJECT_ROOT } from "./functions.ts";
import { RolloutController } from "./rollout-controller.ts";

/**
 * The example app: the reference canary (`examples/rollout.yaml` + the success-rate template)
 * against an ALB with two weighted target groups in front of two ECS services. The existing
 * resources are imported by ARN from context values (`cdk synth -c listenerArn=…`); the defaults
 * are examples so that `cdk synth` works offline with no configuration.
 */
export const EXAMPLE_CONTEXT = {
  listenerArn:
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/demo/50dc6c495c0c9188/f2f7dc8efc522ab2",
  targetGroupA: "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/demo-a/73e2d6bc24d8a067",
  targetGroupB: "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/demo-b/09a1f2c3d4e5f607",
  cluster: "demo",
  serviceA: "demo-a",
  serviceB: "demo-b",
  containerName: "app",
  taskRoleArn: "arn:aws:iam::123456789012:role/demo-task",
  executionRoleArn: "arn:aws:iam::123456789012:role/demo-task-execution",
  repositoryName: "demo",
  tagPattern: "v*",
  operatorRoleArn: "arn:aws:iam::123456789012:role/rollouts-operator",
} as const;

/** The reference canary and its AnalysisTemplate, read when the app synthesizes. */
export const EXAMPLE_FILES = ["examples/rollout.yaml", "examples/analysis-success-rate.yaml"].map(
  (f) => `${PROJECT_ROOT.replace(/\/$/, "")}/${f}`,
);

type ExampleContext = { -readonly [K in keyof typeof EXAMPLE_CONTEXT]: string };

/** The one stack of the example: a controller and the demo rollout. */
export class RolloutsExampleStack extends Stack {
  readonly controller: RolloutController;

  constructor(scope: Construct, id: string, context: ExampleContext, props?: StackProps) {
    super(scope, id, props);
    this.controller = new RolloutController(this, "Controller", {
      prometheus: { url: "http://prometheus.internal:9090" },
    });
    const role = (name: string, arn: string) => iam.Role.fromRoleArn(this, name, arn, { mutable: false });
    this.controller.addRollout("Demo", {
      spec: { files: EXAMPLE_FILES },
      target: {
        type: "alb-ecs",
        listenerArn: context.listenerArn,
        targetGroupA: context.targetGroupA,
        targetGroupB: context.targetGroupB,
        cluster: context.cluster,
        serviceA: context.serviceA,
        serviceB: context.serviceB,
        containerName: context.containerName,
        passRoles: [role("TaskRole", context.taskRoleArn), role("ExecutionRole", context.executionRoleArn)],
      },
      trigger: {
        repository: ecr.Repository.fromRepositoryName(this, "Repository", context.repositoryName),
        tagPattern: context.tagPattern,
      },
    });
    // Mutable import: the operate policy is attached to the existing role.
    this.controller.grantOperate(iam.Role.fromRoleArn(this, "Operator", context.operatorRoleArn));
  }
}

/** Builds the app from context values (each defaulting to `EXAMPLE_CONTEXT`). */
export function exampleApp(app = new App()): App {
  const context = Object.fromEntries(
    Object.entries(EXAMPLE_CONTEXT).map(([key, fallback]) => [
      key,
      String(app.node.tryGetContext(key) ?? fallback),
    ]),
  ) as ExampleContext;
  new RolloutsExampleStack(app, "SfnRolloutsExample", context, {
    description: "sfn-rollouts example: the reference canary on an ALB + ECS service",
  });
  // cdk-nag runs on every synth: a finding without an acknowledged reason fails the synth.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return app;
}
