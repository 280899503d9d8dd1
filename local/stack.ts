import type { MemoryAlarms } from "../functions/alarms/memory.ts";
import type { AlarmValue } from "../functions/alarms/port.ts";
import type { Clock } from "../functions/clock.ts";
import type { HandlerName } from "../functions/config.ts";
import type { DynamoRolloutStore } from "../functions/store/dynamodb.ts";
import type { RolloutItem } from "../functions/store/schema.ts";
import type { RecordingMetricsSink } from "../functions/workflow/metrics.ts";
import type { ModelRouterOptions } from "../infra/model-router.ts";
import type { NotificationsProps } from "../infra/notifications.ts";
import type { RolloutTarget } from "../infra/props.ts";
import { LOCAL_ACCOUNT, LOCAL_REGION } from "./asl/intrinsics.ts";
import type { LambdaHandler } from "./aws/lambda.ts";
import { embeddedApp, specPath, startController } from "./controller.ts";
import type { LocalDynamo } from "./dynamo.ts";
import { putEcrPush } from "./events/ecr-push.ts";
import type { Runtime } from "./runtime.ts";

export interface EmbeddedStackOptions {
  /** Rollout files (Argo objects or a native spec), as `addRollout` takes them. */
  specFiles: string[];
  /**
   * The rollout's target: the local proxy's plugin (`localProxyTarget` of `proxy/target.ts`: its
   * admin URL and the upstream each pushed tag runs), or another target the runtime reaches (the
   * local Kubernetes API's).
   */
  target: RolloutTarget;
  /** The ECR repository whose pushes start the rollout. */
  repository?: string;
  /** A `ManualClock` runs everything in virtual time; the default runs in real time. */
  clock?: Clock;
  /** DynamoDB engine (started and stopped with the stack), or one already running (left running). */
  dynamo?: LocalDynamo["engine"] | LocalDynamo;
  /** The table's name (several stacks can share one DynamoDB); default the construct's. */
  tableName?: string;
  /** Wraps each handler (tests use it to inject a failure). */
  wrap?: (name: HandlerName, handler: LambdaHandler) => LambdaHandler;
  /** The controller's notifications: their rules deliver here as on AWS (webhooks by HTTP POST). */
  notifications?: NotificationsProps;
  /**
   * Local functions a rollout's hooks name, by function name: each is registered in the
   * runtime's Lambda service as `arn:aws:lambda:local:000000000000:function:<name>`.
   */
  hookFunctions?: Record<string, LambdaHandler>;
  /** The model router's Function URL (`addRollout`'s `modelRouter`), for a target with `router: {type: model}`. */
  modelRouter?: ModelRouterOptions;
}

/** What the `rollouts` CLI needs to reach a local stack: its table, endpoints and dummy credentials. */
export const CLI_ENV_KEYS = [
  "ROLLOUTS_TABLE",
  "AWS_ENDPOINT_URL_DYNAMODB",
  "AWS_ENDPOINT_URL_SFN",
  "AWS_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
] as const;

/** The synthesized stack running on this machine, with what tests and the demo drive it with. */
export interface EmbeddedStack {
  runtime: Runtime;
  dynamo: LocalDynamo;
  rollout: string;
  stateMachineArn: string;
  tableName: string;
  /** Env for the CLI and SDK clients: the façade's endpoints, the table, dummy credentials. */
  env: Record<string, string>;
  /** Lifecycle and CloudWatch data the handlers produced. */
  metrics: RecordingMetricsSink;
  /** Puts an `ECR Image Action` push on the local bus, as ECR does on AWS. */
  push(tag: string, digest: string, at?: Date): Promise<void>;
  /** The local CloudWatch alarms the step boundaries read. */
  alarms: MemoryAlarms;
  /**
   * Sets a local alarm's state and, when it changes, puts the `CloudWatch Alarm State Change`
   * event on the local bus, as CloudWatch does on AWS.
   */
  setAlarm(name: string, value: AlarmValue, reason?: string): Promise<void>;
  item(): Promise<RolloutItem | undefined>;
  store: DynamoRolloutStore;
  /**
   * The rollout's model router (a sagemaker target with `router: {type: model}`): its Function URL
   * as the embedded runtime serves it, with the trailing slash, what `{{rollout.modelRouter}}` reads.
   */
  modelRouterUrl?: string;
  /** The synthesized CloudFormation template the runtime runs (its roles and policies included). */
  template: unknown;
  close(): Promise<void>;
}

/**
 * Synthesizes the app (a `RolloutController` with one rollout, on the local proxy) in-process,
 * creates its table on a local DynamoDB, and runs its state machines, functions and ECR rule in
 * the embedded runtime with the real handlers (`startController`). Handlers are built by their
 * `createHandler` factories over the same adapters as on AWS (SDK clients pointed at the runtime's
 * façade), with the runtime's clock so a whole rollout can run in virtual time.
 */
export async function startEmbeddedStack(options: EmbeddedStackOptions): Promise<EmbeddedStack> {
  const repository = options.repository ?? "demo";
  const { template, rollout } = await synthesizeStack(options, repository);
  const controller = await startController({
    template,
    clock: options.clock,
    dynamo: options.dynamo,
    wrap: options.wrap,
    functions: options.hookFunctions,
  });
  const { runtime, stack } = controller;
  const tableName = stack.tables[0]?.name;
  if (!tableName) {
    await controller.close();
    throw new Error("the synthesized stack has no table");
  }
  const stateMachineArn = runtime.stateMachineArn(
    stack.stateMachines.find((m) => m.logicalId.includes("Rollout") && !m.logicalId.includes("Ticker"))
      ?.logicalId ?? "",
  );
  const store = controller.store(tableName);
  const modelRouterUrl = controller.functionUrl("router");
  return {
    ...(modelRouterUrl ? { modelRouterUrl } : {}),
    runtime,
    template,
    dynamo: controller.dynamo,
    rollout,
    stateMachineArn,
    tableName,
    env: controller.env(tableName),
    metrics: controller.metrics,
    store,
    item: () => store.get(rollout),
    push: (tag, digest, at) => putEcrPush(runtime, { repository, digest, tag, at }),
    alarms: controller.alarms,
    setAlarm: alarmSetter(runtime, controller.alarms),
    close: controller.close,
  };
}

/**
 * The app in-process: a stack holding a `RolloutController` (the given table name and
 * notifications) with one rollout, on the given target, started by pushes to `repository`.
 * Returns the stack's template and the rollout's name.
 */
async function synthesizeStack(
  options: EmbeddedStackOptions,
  repository: string,
): Promise<{ template: unknown; rollout: string }> {
  const [{ app, cdk, infra }, ecr] = await Promise.all([embeddedApp(), import("aws-cdk-lib/aws-ecr")]);
  const stack = new cdk.Stack(app, "SfnRolloutsLocal");
  const controller = new infra.RolloutController(stack, "Controller", {
    ...(options.tableName ? { tableName: options.tableName } : {}),
    ...(options.notifications ? { notifications: options.notifications } : {}),
  });
  const added = controller.addRollout("Rollout", {
    spec: { files: options.specFiles.map(specPath) },
    target: options.target,
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repository", repository) },
    ...(options.modelRouter ? { modelRouter: options.modelRouter } : {}),
  });
  return { template: app.synth().getStackByName(stack.stackName).template as unknown, rollout: added.name };
}

/**
 * `EmbeddedStack.setAlarm`: sets a local alarm's state and, when it changes, puts the `CloudWatch
 * Alarm State Change` event on the local bus, as CloudWatch does on AWS.
 */
function alarmSetter(runtime: Runtime, alarms: MemoryAlarms): EmbeddedStack["setAlarm"] {
  return async (name, value, reason = "") => {
    const [previous] = await alarms.describe([name]);
    alarms.set(name, value, reason);
    if (previous?.value === value) return;
    const time = runtime.clock.now();
    const result = await runtime.putEvents([
      {
        Source: "aws.cloudwatch",
        DetailType: "CloudWatch Alarm State Change",
        Time: time,
        Resources: [`arn:aws:cloudwatch:${LOCAL_REGION}:${LOCAL_ACCOUNT}:alarm:${name}`],
        Detail: JSON.stringify({
          alarmName: name,
          state: { value, reason, timestamp: new Date(time).toISOString() },
          previousState: { value: previous?.value ?? "INSUFFICIENT_DATA", reason: previous?.reason ?? "" },
          configuration: {},
        }),
      },
    ]);
    if (result.FailedEntryCount)
      throw new Error(`the state change of ${name} was not accepted: ${JSON.stringify(result)}`);
  };
}
