/**
 * Every kind of stack the infra tests synthesize, by name: the example app, each target (ALB +
 * ECS, Lambda alias with an AMP workspace and a customer key, Kubernetes with and without a VPC,
 * a kubeconfig secret, SageMaker with and without the model router, the Model Registry, a target
 * plugin), notifications, alarms and hooks, CloudWatch metrics and waves (a coordinator alone and
 * the whole `RolloutWaves` app). `test/infra/cfn-lint.test.ts` lints each template.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Duration, SecretValue, Stack } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { EXAMPLE_CONTEXT, EXAMPLE_FILES, RolloutsExampleStack } from "../../infra/example-stack.ts";
import { RolloutController, RolloutWaves, WaveCoordinator } from "../../infra/index.ts";
import type { RolloutTarget } from "../../infra/props.ts";
import { parseRollout, readSourcesSync } from "../../statemachine/index.ts";

/** No bundling and no built-in CloudFormation validation, as in the infra tests. */
const testApp = () =>
  new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });

const ENV = { account: "111122223333", region: "eu-west-1" };

function specFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "stacks-")), "rollout.yaml");
  writeFileSync(file, text);
  return file;
}

/** One controller with one rollout on `target`, in its own stack. */
function controllerStack(
  id: string,
  target: RolloutTarget,
  options: { files?: string[]; props?: ConstructorParameters<typeof RolloutController>[2] } = {},
): { stack: Stack; controller: RolloutController } {
  const stack = new Stack(testApp(), id, { env: ENV });
  const controller = new RolloutController(stack, "Controller", options.props);
  controller.addRollout("Service", {
    spec: { files: options.files ?? EXAMPLE_FILES },
    target,
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "service") },
  });
  return { stack, controller };
}

const KUBERNETES = {
  type: "kubernetes" as const,
  namespace: "shop",
  stableDeployment: "shop-stable",
  canaryDeployment: "shop-canary",
  router: {
    type: "gateway-api" as const,
    httpRoute: "shop",
    stableService: "shop-stable",
    canaryService: "shop-canary",
  },
};

const CLUSTER = {
  clusterName: "prod",
  clusterEndpoint: "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
  clusterCertificateAuthorityData: "LS0tLS1CRUdJTg==",
};

const SAGEMAKER = {
  type: "sagemaker" as const,
  endpointName: "Ranker-Prod",
  executionRoleArn: "arn:aws:iam::111122223333:role/ranker-sagemaker",
};

function example(): Stack[] {
  return [new RolloutsExampleStack(testApp(), "Example", { ...EXAMPLE_CONTEXT })];
}

function lambdaAlias(): Stack[] {
  const stack = new Stack(testApp(), "Alias", { env: ENV });
  const key = new kms.Key(stack, "Key", { enableKeyRotation: true });
  const controller = new RolloutController(stack, "Controller", {
    prometheus: { workspace: "arn:aws:aps:eu-west-1:111122223333:workspace/ws-1234abcd" },
    encryptionKey: key,
    cloudWatchMetrics: true,
  });
  controller.grantOperate(new iam.Role(stack, "Operator", { assumedBy: new iam.AccountRootPrincipal() }));
  controller.addRollout("Api", {
    spec: { files: EXAMPLE_FILES },
    target: { type: "lambda-alias", functionName: "api", alias: "live", s3Bucket: "api-artifacts" },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "api"), tagPattern: "v*" },
  });
  return [stack];
}

function kubernetes(): Stack[] {
  const plain = controllerStack("Eks", { ...KUBERNETES, cluster: CLUSTER }).stack;
  const inVpc = new Stack(testApp(), "EksVpc", { env: ENV });
  // The cluster's VPC exists before the controller, as it does for a user: imported, not created
  // (a VPC created in a stack with a fixed region and no context lookup gets CDK's placeholder
  // zones, `dummy1a`, which cfn-lint rightly calls hard-coded: W3010).
  const vpc = ec2.Vpc.fromVpcAttributes(inVpc, "Vpc", {
    vpcId: "vpc-0a1b2c3d4e5f60718",
    availabilityZones: ["eu-west-1a", "eu-west-1b"],
    privateSubnetIds: ["subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c4b5a60718"],
  });
  new RolloutController(inVpc, "Controller").addRollout("Shop", {
    spec: { files: EXAMPLE_FILES },
    target: { ...KUBERNETES, cluster: CLUSTER, vpc },
    trigger: { repository: ecr.Repository.fromRepositoryName(inVpc, "Repo", "shop") },
  });
  const secret = new Stack(testApp(), "EksSecret", { env: ENV });
  const kubeconfig = secretsmanager.Secret.fromSecretCompleteArn(
    secret,
    "Kubeconfig",
    "arn:aws:secretsmanager:eu-west-1:111122223333:secret:shop-kubeconfig-AbCdEf",
  );
  new RolloutController(secret, "Controller").addRollout("Shop", {
    spec: { files: EXAMPLE_FILES },
    target: { ...KUBERNETES, kubeconfigSecret: kubeconfig },
    trigger: { repository: ecr.Repository.fromRepositoryName(secret, "Repo", "shop") },
  });
  return [plain, inVpc, secret];
}

function sageMaker(): Stack[] {
  const files = ["examples/model-shadow.yaml"];
  const routed = new Stack(testApp(), "ModelRouter", { env: ENV });
  const encryptionKey = new kms.Key(routed, "Key", { enableKeyRotation: true });
  new RolloutController(routed, "Controller", { cloudWatchMetrics: false, encryptionKey }).addRollout(
    "Ranker",
    {
      spec: { files },
      target: { ...SAGEMAKER, router: { type: "model", key: { header: "x-customer" } } },
      trigger: { repository: ecr.Repository.fromRepositoryName(routed, "Repo", "ranker") },
    },
  );
  const registry = controllerStack(
    "ModelRegistry",
    { ...SAGEMAKER, modelPackageGroupName: "ranker" },
    { files, props: { cloudWatchMetrics: false } },
  ).stack;
  return [routed, registry];
}

function plugin(): Stack[] {
  const target = {
    type: "plugin" as const,
    name: "mesh",
    functionArn: "arn:aws:lambda:eu-west-1:111122223333:function:mesh-router",
  };
  return [controllerStack("Plugin", target, { files: ["examples/model-shadow.yaml"] }).stack];
}

function notifications(): Stack[] {
  const spec = specFile(`name: shop
image: shop:1
steps: [50, 100]
notifications:
  - {trigger: on-rollout-aborted, service: slack, recipients: ["#deploys"]}
  - {trigger: on-rollout-completed, service: teams}
  - {trigger: on-analysis-run-failed, service: hook}
  - {trigger: on-rollout-paused, service: mail}
`);
  const services = {
    slack: {
      type: "slack" as const,
      webhookUrl: SecretValue.secretsManager("rollouts/slack", { jsonField: "url" }),
    },
    teams: { type: "teams" as const, webhookUrl: "https://example.webhook.office.com/webhookb2/abc" },
    hook: {
      type: "webhook" as const,
      url: "https://hooks.example.com/rollouts",
      headers: { Authorization: SecretValue.secretsManager("rollouts/hook", { jsonField: "token" }) },
    },
    mail: { type: "email" as const, addresses: ["oncall@example.com"] },
  };
  const target = { type: "lambda-alias" as const, functionName: "shop", alias: "live" };
  return [controllerStack("Notify", target, { files: [spec], props: { notifications: { services } } }).stack];
}

function alarmsAndHooks(): Stack[] {
  const smoke = "arn:aws:lambda:eu-west-1:111122223333:function:smoke";
  const load = "arn:aws:lambda:eu-west-1:111122223333:function:load-test:live";
  const stack = new Stack(testApp(), "Guarded", { env: ENV });
  const errors = new cloudwatch.Alarm(stack, "Errors", {
    alarmName: "api-errors",
    metric: new cloudwatch.Metric({
      namespace: "AWS/Lambda",
      metricName: "Errors",
      period: Duration.minutes(1),
    }),
    threshold: 5,
    evaluationPeriods: 1,
  });
  new RolloutController(stack, "Controller").addRollout("Api", {
    spec: {
      files: [
        specFile(`name: api
image: api:1
steps: [10, 100]
alarms: [api-errors, "arn:aws:cloudwatch:eu-west-1:111122223333:alarm:api-p99"]
hooks: {beforeTraffic: "${smoke}", afterTraffic: {function: "${load}", timeoutSeconds: 1800}}
`),
      ],
    },
    target: { type: "lambda-alias", functionName: "api", alias: "live" },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "api") },
    alarms: [errors, "api-throttles"],
  });
  return [stack];
}

function waves(): Stack[] {
  const spec = parseRollout(readSourcesSync(["examples/waves.yaml"], [])).spec;
  const sm = (region: string, account: string) =>
    `arn:aws:states:${region}:${account}:stateMachine:shop-rollout`;
  const home = new Stack(testApp(), "Home", { env: { account: "111111111111", region: "eu-west-1" } });
  new WaveCoordinator(home, "Waves", {
    spec,
    targets: [
      { region: "eu-west-1", stateMachineArn: sm("eu-west-1", "111111111111") },
      {
        region: "us-east-1",
        account: "222222222222",
        stateMachineArn: sm("us-east-1", "222222222222"),
        roleArn: "arn:aws:iam::222222222222:role/shop-waves",
      },
    ],
  });
  const target = {
    type: "alb-ecs" as const,
    listenerArn: EXAMPLE_CONTEXT.listenerArn,
    targetGroupA: EXAMPLE_CONTEXT.targetGroupA,
    targetGroupB: EXAMPLE_CONTEXT.targetGroupB,
    cluster: EXAMPLE_CONTEXT.cluster,
    serviceA: EXAMPLE_CONTEXT.serviceA,
    serviceB: EXAMPLE_CONTEXT.serviceB,
    containerName: EXAMPLE_CONTEXT.containerName,
  };
  const release = new RolloutWaves(testApp(), "Shop", {
    spec,
    home: { account: "111111111111", region: "eu-west-1" },
    repository: "shop",
    tagPattern: "v*",
    targets: [
      { region: "eu-west-1", target },
      {
        region: "us-east-1",
        account: "222222222222",
        target,
        roleArn: "arn:aws:iam::222222222222:role/shop-waves",
      },
    ],
  });
  return [home, ...release.regionStacks, release.homeStack];
}

/** Each kind of stack, by name; each call synthesizes new stacks. */
export const STACKS: Readonly<Record<string, () => Stack[]>> = {
  example,
  "lambda-alias": lambdaAlias,
  kubernetes,
  sagemaker: sageMaker,
  plugin,
  notifications,
  "alarms and hooks": alarmsAndHooks,
  waves,
};
