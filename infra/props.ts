import type { RemovalPolicy } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as ec2 from "aws-cdk-lib/aws-ec2";
import type * as ecr from "aws-cdk-lib/aws-ecr";
import type * as events from "aws-cdk-lib/aws-events";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import type * as logs from "aws-cdk-lib/aws-logs";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type { TargetSettingsInput } from "../functions/traffic/settings.ts";
import type { RolloutSpec } from "../statemachine/index.ts";
import type { NotificationSubscriptionInput } from "../statemachine/notifications.ts";
import type { ModelRouterOptions } from "./model-router.ts";
import type { NotificationsProps } from "./notifications.ts";

/**
 * A Prometheus server reachable over HTTP(S) from the functions. Metrics whose `address` is empty
 * or absent use it; the functions get no extra IAM (the server is not an AWS API).
 */
export interface PrometheusUrlProps {
  /** Base address, e.g. `http://prometheus.internal:9090` (the provider appends `/api/v1/query`). */
  readonly url: string;
}

/**
 * An Amazon Managed Service for Prometheus workspace: the functions sign their queries with SigV4
 * and get `aps:QueryMetrics` on this workspace only.
 */
export interface PrometheusWorkspaceProps {
  /** The workspace's ARN (`arn:aws:aps:REGION:ACCOUNT:workspace/ws-…`) or its ID (`ws-…`). */
  readonly workspace: string;
  /**
   * The workspace's region.
   * @default the region in the ARN, else the stack's region
   */
  readonly region?: string;
}

/** Where analysis metrics come from by default: a plain Prometheus URL or an AMP workspace. */
export type PrometheusProps = PrometheusUrlProps | PrometheusWorkspaceProps;

/**
 * The Secrets Manager secrets of the Datadog, New Relic, InfluxDB and Wavefront metric providers: each a JSON object
 * with the keys of Argo's Kubernetes Secret of that provider. The measuring functions may read
 * exactly these secrets.
 */
export interface MetricSecretsProps {
  /** `{"api-key": …, "app-key": …, "address"?: "https://api.datadoghq.eu"}` (Argo's `datadog` Secret). */
  readonly datadog?: secretsmanager.ISecret;
  /**
   * `{"personal-api-key": …, "account-id": …, "region"?: "eu", "base-url-nerdgraph"?: …}` (Argo's
   * `newrelic` Secret).
   */
  readonly newRelic?: secretsmanager.ISecret;
  /** `{"address": "https://…:8086", "authToken": …, "org": …}` (Argo's `influxdb` Secret). */
  readonly influxdb?: secretsmanager.ISecret;
  /**
   * `{"example.wavefront.com": "<token>", …}`: an API token by Wavefront address (Argo's
   * `wavefront-api-tokens` Secret).
   */
  readonly wavefront?: secretsmanager.ISecret;
  /**
   * Secrets by the name of the Kubernetes Secret an Argo template names: a Datadog
   * `secretRef.name`, a New Relic or InfluxDB `profile` (each with that provider's keys).
   * @default none: a template naming a secret other than Argo's default is refused
   */
  readonly named?: Readonly<Record<string, secretsmanager.ISecret>>;
}

/** What every rollout of one controller shares: the table, the functions, the timer, the bus. */
export interface RolloutControllerProps {
  /**
   * Where the handlers publish lifecycle events (`RolloutStepCompleted`, `RolloutPaused`,
   * `AnalysisRunFailed`, `RolloutAborted`, `RolloutCompleted`); the functions get
   * `events:PutEvents` on this bus only.
   * @default the account's default event bus
   */
  readonly eventBus?: events.IEventBus;
  /**
   * The default Prometheus of analysis metrics (`ROLLOUTS_PROMETHEUS_URL`), and with a workspace
   * the SigV4 region and `aps:QueryMetrics` on it for the analysis functions.
   * @default none: every Prometheus metric names its own address, no `aps` permission
   */
  readonly prometheus?: PrometheusProps;
  /**
   * Grants `cloudwatch:GetMetricData` to the analysis functions (the action has no resource-level
   * permissions, so it is `*`). `false` with a rollout whose analysis uses the `cloudWatch`
   * provider is an error, since its measurements could only fail.
   * @default granted as soon as one rollout's analysis uses the `cloudWatch` provider
   */
  readonly cloudWatchMetrics?: boolean;
  /**
   * The keys of the `datadog`, `newRelic`, `influxdb` and `wavefront` analysis providers, in Secrets Manager
   * (where Argo reads a Kubernetes Secret). A rollout whose analysis uses one without its secret is refused.
   * @default none: the datadog, newRelic, influxdb and wavefront providers cannot be used
   */
  readonly metricSecrets?: MetricSecretsProps;
  /**
   * Retention of the functions' and the state machines' log groups.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to the table and the log groups when they leave the stack. The table holds every
   * rollout's history, so it is kept unless told otherwise.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * The DynamoDB table's physical name (3–255 characters of `[A-Za-z0-9_.-]`).
   * @default a name CloudFormation generates
   */
  readonly tableName?: string;
  /**
   * A customer-managed KMS key for the table; the functions and `grantOperate` principals get
   * encrypt/decrypt on it.
   * @default the AWS-managed key `aws/dynamodb`
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * Argo Notifications: the services (Slack, Teams, a webhook, email), the templates and the
   * subscriptions every rollout gets (docs/notifications.md).
   * @default none: a subscription in a spec is then an error
   */
  readonly notifications?: NotificationsProps;
}

/**
 * An ALB with weighted target groups in front of two ECS services: the settings the `alb-ecs`
 * target reads (`functions/traffic/settings.ts`), plus the roles its task definitions pass.
 */
export type AlbEcsTarget = Extract<TargetSettingsInput, { type: "alb-ecs" }> & {
  /**
   * The task role and execution role of the services' task definitions: registering the
   * candidate's task definition passes them, so the functions get `iam:PassRole` on exactly
   * these (to `ecs-tasks.amazonaws.com`). Not embedded in the workflow.
   * @default none (a warning: RegisterTaskDefinition fails if the task definition names a role)
   */
  readonly passRoles?: readonly iam.IRole[];
};

/** A weighted Lambda alias (`functions/traffic/settings.ts`). */
export type LambdaAliasTarget = Extract<TargetSettingsInput, { type: "lambda-alias" }>;

/**
 * A SageMaker real-time endpoint (`functions/traffic/settings.ts`): the functions get the endpoint,
 * the configs and models the target creates (`<endpoint>-r-*`), `iam:PassRole` on
 * `executionRoleArn` (to `sagemaker.amazonaws.com`) and, with `modelPackageGroupName`, the
 * packages of that group.
 */
export type SageMakerTarget = Extract<TargetSettingsInput, { type: "sagemaker" }>;

/**
 * A target plugin (`functions/traffic/settings.ts`; `docs/traffic.md`, "Target plugins"): a traffic
 * target implemented by your own Lambda function, written with `servePlugin` of
 * `sfn-rollouts/plugin`. The functions that move traffic get `lambda:InvokeFunction` on exactly
 * `functionArn` (qualified, when it names a version or an alias).
 */
export type PluginTarget = Extract<TargetSettingsInput, { type: "plugin" }>;

/** An EKS cluster as the kubernetes target reaches it; an `eks.ICluster` fits. */
export interface KubernetesClusterRef {
  readonly clusterName: string;
  /** The API server's URL, `https://…`. */
  readonly clusterEndpoint: string;
  /** The cluster's CA, base64 of the PEM (EKS's `certificateAuthority.data`). */
  readonly clusterCertificateAuthorityData: string;
}

/**
 * Deployments on Kubernetes (`functions/traffic/kubernetes/settings.ts`): the settings of the
 * `kubernetes` target, with the cluster given as an EKS cluster or a kubeconfig secret instead of
 * `server`, `certificateAuthority` and `auth` (which only the embedded runtime takes as they are).
 */
export type KubernetesTarget = Omit<
  Extract<TargetSettingsInput, { type: "kubernetes" }>,
  "auth" | "server" | "certificateAuthority"
> & {
  /**
   * An EKS cluster: its endpoint and CA are embedded, the functions authenticate with their role
   * (an EKS token), and the construct creates an access entry per target-calling role, in the
   * Kubernetes groups `kubernetesGroups`.
   */
  readonly cluster?: KubernetesClusterRef;
  /** A kubeconfig (server, CA, token) in Secrets Manager; the functions may read exactly it. */
  readonly kubeconfigSecret?: secretsmanager.ISecret;
  /**
   * The Kubernetes groups of the access entries, which the RBAC binds
   * (`examples/kubernetes-rbac.yaml`).
   * @default ["sfn-rollouts"]
   */
  readonly kubernetesGroups?: readonly string[];
  /**
   * The cluster's VPC, for a private endpoint: the target-calling functions (shared by every
   * rollout of the controller) get network interfaces in it. Its subnets must reach the AWS APIs
   * the functions call (NAT, or VPC endpoints for DynamoDB, Step Functions, EventBridge,
   * Scheduler, STS and Secrets Manager).
   * @default not in a VPC (a public endpoint)
   */
  readonly vpc?: ec2.IVpc;
  /** @default the VPC's private subnets with egress */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /** @default one security group created, all outbound allowed */
  readonly securityGroups?: readonly ec2.ISecurityGroup[];
  /** Embedded runtime only: the local API's URL. */
  readonly server?: string;
  /** Embedded runtime only: a bearer token. */
  readonly auth?: { readonly type: "token"; readonly token: string };
  readonly certificateAuthority?: string;
};

/** The context key the embedded runtime sets when it synthesizes an app to run it locally. */
export const EMBEDDED_CONTEXT = "sfn-rollouts:embedded";

/**
 * The traffic target of one rollout, discriminated by `type`. It is embedded in the compiled
 * workflow (steps carry their own parameters) and decides the IAM the target-moving functions get.
 */
export type RolloutTarget =
  | AlbEcsTarget
  | LambdaAliasTarget
  | KubernetesTarget
  | SageMakerTarget
  | PluginTarget;

/** What starts a rollout: a successful push to an ECR repository. */
export interface RolloutTrigger {
  /** The repository whose `ECR Image Action` PUSH/SUCCESS events start the rollout. */
  readonly repository: ecr.IRepository;
  /**
   * Which tags start it: an exact tag (`stable`), a prefix (`v*`) or a wildcard (`release-*-eu`);
   * `*` is the only special character.
   * @default every tag
   */
  readonly tagPattern?: string;
  /**
   * Whether the rollout's own ECR rule starts it on a push. `false` for a pass of a release in
   * waves: the wave coordinator starts it (`RolloutWaves`), a push in its region does not.
   * @default true
   */
  readonly pushRule?: boolean;
}

/** The spec of one rollout: already parsed, or files to parse at synth time. */
export type RolloutSpecSource = RolloutSpec | { readonly files: readonly string[] };

/** One service's rollout: its spec, the traffic it moves and the pushes that start it. */
export interface RolloutOptions {
  /**
   * The rollout: a normalized `RolloutSpec` or the files holding an Argo `Rollout` with its
   * `AnalysisTemplate`s (YAML or JSON) or a native spec. Files are read when the app synthesizes.
   */
  readonly spec: RolloutSpecSource;
  readonly target: RolloutTarget;
  readonly trigger: RolloutTrigger;
  /**
   * The rollout state machine's name, so another region's stack can name its ARN without a
   * cross-stack reference (a wave coordinator).
   * @default a name CloudFormation generates
   */
  readonly stateMachineName?: string;
  /** Subscriptions of this rollout, added to its spec's (`notifications` / Argo's annotations). */
  readonly notifications?: readonly NotificationSubscriptionInput[];
  /**
   * CloudWatch alarms that abort the rollout when one goes to ALARM while it runs, added to the
   * spec's `alarms`: alarms of this app (checked to be in this stack's account and region) or
   * names and ARNs of alarms that exist already.
   * @default the spec's alarms only
   */
  readonly alarms?: ReadonlyArray<cloudwatch.IAlarm | string>;
  /**
   * The rollout's false-rollback budget: the chance that an identical release is rolled back by
   * any of its statistical gates, shared between them (docs/judges.md, "The rollout's error
   * budget"). Overrides the spec's (`rollouts.sfn/error-budget`, `errorBudget`).
   * @default the spec's, else 0.05
   */
  readonly errorBudget?: number;
  /**
   * The model router's Function URL, for a target with `router: {type: model}`.
   * @default authType AWS_IAM
   */
  readonly modelRouter?: ModelRouterOptions;
}
