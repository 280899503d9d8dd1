import { ArnFormat, Fn, Stack, Token } from "aws-cdk-lib";
import type * as ecr from "aws-cdk-lib/aws-ecr";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import type { HandlerName } from "../functions/config.ts";
import { kubernetesGrants } from "./kubernetes.ts";
import type {
  AlbEcsTarget,
  LambdaAliasTarget,
  PluginTarget,
  RolloutTarget,
  SageMakerTarget,
} from "./props.ts";

/**
 * The IAM one traffic target needs, for the functions that move traffic (begin, set-weight,
 * check-ready, promote, abort, resume). Every wildcard is listed with why, so the construct can
 * suppress exactly those cdk-nag findings and say why in the suppression.
 */
export interface TargetGrants {
  readonly statements: iam.PolicyStatement[];
  /** `*` or ARN patterns with `*` used in `statements`, each with why (for the cdk-nag acknowledgement). */
  readonly wildcards: { readonly resource: string; readonly reason: string }[];
  /**
   * The functions that call a statement's actions, for a statement only some of them call (which
   * port methods each handler calls, and which requests each method makes); a statement not in
   * here is granted to every function that moves traffic.
   */
  readonly callers?: ReadonlyMap<iam.PolicyStatement, readonly HandlerName[]>;
}

/** The handlers that call each port method of `TrafficTarget` (`functions/workflow/`). */
const CALLERS = {
  /** `prepare`, `deployCandidate` (and `setWeight(0)` when it takes over a superseded candidate). */
  deploy: ["begin"],
  /** `checkReadiness`. */
  readiness: ["checkReady"],
  /** What moves traffic or scales a side: `setWeight`, `promote`, `abort` and the Timer's `abort`/`scaleDown`. */
  traffic: ["begin", "setWeight", "promote", "abort", "resume"],
  /** `setHeaderRoute` (the testers' rule). */
  testers: ["setWeight"],
  /** The services' side (ECS): deploying, readiness, rolling back and the delayed scale-down. */
  services: ["begin", "checkReady", "abort", "resume"],
} as const satisfies Record<string, readonly HandlerName[]>;

/** Records which functions call a statement; answers the statement. */
function calledBy(
  callers: Map<iam.PolicyStatement, readonly HandlerName[]>,
  statement: iam.PolicyStatement,
  handlers: readonly HandlerName[],
): iam.PolicyStatement {
  callers.set(statement, handlers);
  return statement;
}

/** The statements for a target; `Resource::*` only for actions that have no resource-level permissions. */
export function targetGrants(
  scope: Construct,
  target: RolloutTarget,
  repository: ecr.IRepository,
): TargetGrants {
  switch (target.type) {
    case "alb-ecs":
      return albEcsGrants(scope, target);
    case "lambda-alias":
      return lambdaAliasGrants(scope, target, repository);
    case "kubernetes":
      // The cluster is reached with an EKS access entry (no IAM action) or a kubeconfig secret.
      return kubernetesGrants(scope, target);
    case "sagemaker":
      return sageMakerGrants(scope, target);
    case "plugin":
      return pluginGrants(target);
  }
}

/**
 * A target plugin: invoking its function, exactly as named. A qualified ARN (a version or an
 * alias) is granted as it is, so the workflow can invoke that qualifier and no other.
 */
function pluginGrants(target: PluginTarget): TargetGrants {
  return {
    statements: [
      new iam.PolicyStatement({
        sid: "TargetPlugin",
        actions: ["lambda:InvokeFunction"],
        resources: [target.functionArn],
      }),
    ],
    wildcards: [],
  };
}

/**
 * A SageMaker endpoint: the endpoint itself, the configs and models the target creates (named
 * `<endpoint>-r-…`), reading any config (the one serving before the rollout is the user's), and
 * passing the execution role to SageMaker. SageMaker ARNs name resources in lower case.
 */
function sageMakerGrants(scope: Construct, target: SageMakerTarget): TargetGrants {
  const stack = Stack.of(scope);
  const arn = (resource: string, name: string) =>
    stack.formatArn({ service: "sagemaker", resource, resourceName: name });
  const endpointName = Token.isUnresolved(target.endpointName)
    ? target.endpointName
    : target.endpointName.toLowerCase();
  const prefix = Token.isUnresolved(target.endpointName)
    ? `${target.endpointName}-r-*`
    : `${target.endpointName.slice(0, 40).replace(/-+$/, "").toLowerCase()}-r-*`;
  const endpoint = arn("endpoint", endpointName);
  const configs = arn("endpoint-config", "*");
  const created = { configs: arn("endpoint-config", prefix), models: arn("model", prefix) };
  const callers = new Map<iam.PolicyStatement, readonly HandlerName[]>();
  const statement = (handlers: readonly HandlerName[], props: iam.PolicyStatementProps) =>
    calledBy(callers, new iam.PolicyStatement(props), handlers);
  const statements = [
    // Every function that moves traffic reads the endpoint (readiness only reads it).
    new iam.PolicyStatement({
      sid: "SageMakerEndpoint",
      actions: ["sagemaker:DescribeEndpoint"],
      resources: [endpoint],
    }),
    statement(CALLERS.traffic, {
      sid: "SageMakerEndpointUpdates",
      actions: ["sagemaker:UpdateEndpoint", "sagemaker:UpdateEndpointWeightsAndCapacities"],
      resources: [endpoint],
    }),
    // The config that serves before the rollout (the user's, any name) is read when it begins.
    statement(CALLERS.deploy, {
      sid: "SageMakerEndpointConfigs",
      actions: ["sagemaker:DescribeEndpointConfig"],
      resources: [configs],
    }),
    // UpdateEndpoint is authorized on the config too: the target's own, or the user's one on an
    // abort after promotion.
    statement(CALLERS.traffic, {
      sid: "SageMakerEndpointConfigUpdates",
      actions: ["sagemaker:UpdateEndpoint"],
      resources: [configs],
    }),
    // Created to deploy, mirror, promote and scale down.
    statement(["begin", "setWeight", "promote", "resume"], {
      sid: "SageMakerCreatedConfigs",
      actions: ["sagemaker:CreateEndpointConfig"],
      resources: [created.configs],
    }),
    // The candidate's model, created when it begins.
    statement(CALLERS.deploy, {
      sid: "SageMakerCreatedModels",
      actions: ["sagemaker:CreateModel"],
      resources: [created.models],
    }),
    // The scale-down deletes the configs and models the rollout left behind.
    statement(["resume"], {
      sid: "SageMakerDeleteLeftovers",
      actions: ["sagemaker:DeleteEndpointConfig", "sagemaker:DeleteModel"],
      resources: [created.configs, created.models],
    }),
    statement(CALLERS.deploy, {
      sid: "SageMakerPassExecutionRole",
      actions: ["iam:PassRole"],
      resources: [target.executionRoleArn],
      conditions: { StringEquals: { "iam:PassedToService": "sagemaker.amazonaws.com" } },
    }),
  ];
  const wildcards = [
    {
      resource: configs,
      reason:
        "the endpoint config serving before the rollout is the user's, whose name is only known when the rollout starts",
    },
    {
      resource: created.configs,
      reason: "the endpoint configs the target creates are named <endpoint>-r-<hash of the pushed model>",
    },
    {
      resource: created.models,
      reason: "the models the target creates are named <endpoint>-r-<hash of the pushed model>",
    },
  ];
  if (target.modelPackageGroupName !== undefined) {
    const registry = modelPackageGrants(arn, target.modelPackageGroupName);
    statements.push(...registry.statements);
    wildcards.push(...registry.wildcards);
  }
  return { statements, wildcards, callers };
}

/**
 * The model registry of a SageMaker target: CreateModel from a package of the group reads it, and
 * the release's outcome is recorded on the package and the group (every function that moves
 * traffic may record it: the effect is flushed by whichever handler runs next).
 */
function modelPackageGrants(
  arn: (resource: string, name: string) => string,
  group: string,
): Pick<TargetGrants, "statements" | "wildcards"> {
  const name = Token.isUnresolved(group) ? group : group.toLowerCase();
  const packages = arn("model-package", `${name}/*`);
  return {
    statements: [
      new iam.PolicyStatement({
        sid: "SageMakerModelPackages",
        actions: ["sagemaker:DescribeModelPackage", "sagemaker:UpdateModelPackage", "sagemaker:AddTags"],
        resources: [packages],
      }),
      new iam.PolicyStatement({
        sid: "SageMakerModelPackageGroup",
        // The group's `production` tag names the version that serves.
        actions: ["sagemaker:AddTags"],
        resources: [arn("model-package-group", name)],
      }),
    ],
    wildcards: [
      {
        resource: packages,
        reason: "the versions of the model package group are registered after deployment",
      },
    ],
  };
}

function albEcsGrants(scope: Construct, target: AlbEcsTarget): TargetGrants {
  const stack = Stack.of(scope);
  const { listener, rules } = albArns(target.listenerArn ?? target.ruleArn ?? "");
  const taskDefinitions = stack.formatArn({ service: "ecs", resource: "task-definition", resourceName: "*" });
  const services = [target.serviceA, target.serviceB].map((s) => serviceArn(stack, target.cluster, s));
  const callers = new Map<iam.PolicyStatement, readonly HandlerName[]>();
  const statement = (handlers: readonly HandlerName[], props: iam.PolicyStatementProps) =>
    calledBy(callers, new iam.PolicyStatement(props), handlers);
  const statements = [
    statement(CALLERS.traffic, {
      sid: "TrafficDescribe",
      actions: ["elasticloadbalancing:DescribeRules", "elasticloadbalancing:DescribeListeners"],
      resources: ["*"],
    }),
    statement(CALLERS.traffic, {
      sid: "TrafficModifyRules",
      // The forward rule, the testers' rule (given or created by the target) — all under this listener.
      actions: ["elasticloadbalancing:ModifyRule", "elasticloadbalancing:DeleteRule"],
      resources: [rules],
    }),
    statement(CALLERS.testers, {
      sid: "TrafficCreateTestersRule",
      actions: ["elasticloadbalancing:CreateRule"],
      resources: [listener, rules],
    }),
    statement(CALLERS.testers, {
      sid: "TrafficTagTestersRule",
      // CreateRule tags the rule it creates.
      actions: ["elasticloadbalancing:AddTags"],
      resources: [rules],
      conditions: { StringEquals: { "elasticloadbalancing:CreateAction": "CreateRule" } },
    }),
    statement(CALLERS.services, {
      sid: "EcsServices",
      // Readiness polls the services; deploying, rolling back and scaling down also update them.
      actions: ["ecs:DescribeServices"],
      resources: services,
    }),
    statement(["begin", "abort", "resume"], {
      sid: "EcsUpdateServices",
      actions: ["ecs:UpdateService"],
      resources: services,
    }),
    statement(CALLERS.deploy, {
      sid: "EcsTaskDefinitions",
      actions: ["ecs:RegisterTaskDefinition", "ecs:DescribeTaskDefinition"],
      resources: ["*"],
    }),
    statement(CALLERS.deploy, {
      sid: "EcsTagTaskDefinitions",
      // The candidate's task definition copies the stable one's tags, which needs TagResource on create.
      actions: ["ecs:TagResource"],
      resources: [taskDefinitions],
      conditions: { StringEquals: { "ecs:CreateAction": "RegisterTaskDefinition" } },
    }),
  ];
  if (target.listenerArn !== undefined) {
    statements.push(
      statement(CALLERS.traffic, {
        sid: "TrafficModifyListener",
        actions: ["elasticloadbalancing:ModifyListener"],
        resources: [listener],
      }),
    );
  }
  const roles = target.passRoles ?? [];
  if (roles.length > 0) {
    statements.push(
      statement(CALLERS.deploy, {
        sid: "EcsPassTaskRoles",
        actions: ["iam:PassRole"],
        resources: roles.map((r) => r.roleArn),
        conditions: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
      }),
    );
  }
  return {
    statements,
    callers,
    wildcards: [
      {
        resource: "*",
        reason:
          "elasticloadbalancing:DescribeRules/DescribeListeners and ecs:RegisterTaskDefinition/DescribeTaskDefinition have no resource-level permissions",
      },
      {
        resource: rules,
        reason:
          "the testers' rule is created at run time, so its ARN is only known to be under this listener (listener-rule/<listener path>/*)",
      },
      {
        resource: taskDefinitions,
        reason:
          "ecs:TagResource on the task definitions the target registers (ARN unknown before), only with ecs:CreateAction = RegisterTaskDefinition",
      },
    ],
  };
}

function lambdaAliasGrants(
  scope: Construct,
  target: LambdaAliasTarget,
  repository: ecr.IRepository,
): TargetGrants {
  const stack = Stack.of(scope);
  const fn = functionArn(stack, target.functionName);
  const callers = new Map<iam.PolicyStatement, readonly HandlerName[]>();
  const statement = (handlers: readonly HandlerName[], props: iam.PolicyStatementProps) =>
    calledBy(callers, new iam.PolicyStatement(props), handlers);
  const statements = [
    statement(CALLERS.deploy, {
      sid: "LambdaCode",
      actions: ["lambda:UpdateFunctionCode"],
      resources: [fn],
    }),
    statement(CALLERS.readiness, {
      sid: "LambdaPublish",
      // Readiness waits for the code update, then publishes the version.
      actions: ["lambda:GetFunctionConfiguration", "lambda:PublishVersion"],
      resources: [fn],
    }),
    statement(CALLERS.readiness, {
      sid: "LambdaVersions",
      // Readiness polls the published version's configuration (`Qualifier: <version>`).
      actions: ["lambda:GetFunctionConfiguration"],
      resources: [`${fn}:*`],
    }),
    statement(CALLERS.traffic, {
      sid: "LambdaAlias",
      // The Service Authorization Reference: both authorize against the `function` resource type,
      // the unqualified ARN; a `function:NAME:ALIAS` resource matches no request and denies them.
      actions: ["lambda:GetAlias", "lambda:UpdateAlias"],
      resources: [fn],
    }),
  ];
  const wildcards: { resource: string; reason: string }[] = [
    {
      resource: `${fn}:*`,
      reason: "readiness reads the configuration of the version the target publishes, unknown before",
    },
  ];
  if ((target.packageType ?? "Image") === "Image") {
    statements.push(
      statement(CALLERS.deploy, {
        sid: "LambdaImage",
        // UpdateFunctionCode with an image URI: the caller must be able to read the pushed image.
        actions: ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
        resources: [repository.repositoryArn],
      }),
    );
  }
  if (target.s3Bucket !== undefined) {
    const objects = `arn:${stack.partition}:s3:::${target.s3Bucket}/*`;
    statements.push(
      statement(CALLERS.deploy, {
        sid: "LambdaZipArtifacts",
        actions: ["s3:GetObject", "s3:GetObjectVersion"],
        resources: [objects],
      }),
    );
    wildcards.push({
      resource: objects,
      reason: "UpdateFunctionCode reads the pushed zip, whose key is only known when it is pushed",
    });
  }
  return { statements, wildcards, callers };
}

/**
 * The listener's ARN and the pattern of its rules' ARNs, from a listener or a listener-rule ARN.
 * A token (an ARN from another construct) is taken apart with `Fn::Split`.
 */
export function albArns(arn: string): { listener: string; rules: string } {
  if (!Token.isUnresolved(arn)) {
    const listener = arn.includes(":listener-rule/")
      ? arn.replace(":listener-rule/", ":listener/").replace(/\/[^/]+$/, "")
      : arn;
    return { listener, rules: `${listener.replace(":listener/", ":listener-rule/")}/*` };
  }
  const parts = Fn.split("/", arn);
  const head = Fn.split(":", Fn.select(0, parts));
  const prefix = (kind: string) =>
    `arn:${Fn.select(1, head)}:elasticloadbalancing:${Fn.select(3, head)}:${Fn.select(4, head)}:${kind}`;
  const path = [1, 2, 3, 4].map((i) => Fn.select(i, parts)).join("/");
  return { listener: `${prefix("listener")}/${path}`, rules: `${prefix("listener-rule")}/${path}/*` };
}

/** An ECS service's ARN from a name or ARN (a token service is taken to be an ARN). */
export function serviceArn(stack: Stack, cluster: string, service: string): string {
  if (Token.isUnresolved(service) || service.startsWith("arn:")) return service;
  const clusterName = Token.isUnresolved(cluster)
    ? Fn.select(1, Fn.split("/", cluster))
    : cluster.startsWith("arn:")
      ? cluster.slice(cluster.indexOf("cluster/") + "cluster/".length)
      : cluster;
  return stack.formatArn({ service: "ecs", resource: "service", resourceName: `${clusterName}/${service}` });
}

/** A function's unqualified ARN from a name or ARN (a token is taken to be a name). */
export function functionArn(stack: Stack, nameOrArn: string): string {
  if (!Token.isUnresolved(nameOrArn) && nameOrArn.startsWith("arn:")) return nameOrArn;
  return stack.formatArn({
    service: "lambda",
    resource: "function",
    resourceName: nameOrArn,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}
