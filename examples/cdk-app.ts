import { App, Stack, Validations } from "aws-cdk-lib";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as iam from "aws-cdk-lib/aws-iam";
import { AwsSolutionsChecks } from "cdk-nag";
import { RolloutController } from "sfn-rollouts/infra";

const app = new App();
const stack = new Stack(app, "Rollouts");

const controller = new RolloutController(stack, "Controller", {
  prometheus: { workspace: "arn:aws:aps:eu-west-1:123456789012:workspace/ws-1234abcd" },
});

controller.addRollout("Shop", {
  // An Argo Rollout + its AnalysisTemplates (YAML/JSON), or a native spec, or a parsed RolloutSpec.
  spec: { files: ["deploy/rollout.yaml", "deploy/analysis.yaml"] },
  target: {
    type: "alb-ecs",
    listenerArn:
      "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2",
    targetGroupA: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-a/73e2d6bc24d8a067",
    targetGroupB: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-b/09a1f2c3d4e5f607",
    cluster: "shop",
    serviceA: "shop-a",
    serviceB: "shop-b",
    containerName: "app",
    passRoles: [
      iam.Role.fromRoleArn(stack, "TaskRole", "arn:aws:iam::123456789012:role/shop-task", { mutable: false }),
      iam.Role.fromRoleArn(stack, "ExecRole", "arn:aws:iam::123456789012:role/shop-exec", { mutable: false }),
    ],
  },
  trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop"), tagPattern: "v*" },
});

controller.grantOperate(iam.Role.fromRoleArn(stack, "OnCall", "arn:aws:iam::123456789012:role/on-call"));

Validations.of(app).addPlugins(new AwsSolutionsChecks(app)); // fails the synth on any unacknowledged finding
