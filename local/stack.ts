import { fileURLToPath } from "node:url";
import { MemoryAlarms } from "../functions/alarms/memory.ts";
import type { AlarmValue } from "../functions/alarms/port.ts";
import type { Clock } from "../functions/clock.ts";
import {
  HANDLERS,
  type HandlerName,
  ROLLOUT_HANDLERS,
  type RolloutHandlerName,
} from "../functions/config.ts";
import { depsFromEnv } from "../functions/handlers/root.ts";
import { triggerDepsFromEnv } from "../functions/handlers/trigger.ts";
import { DynamoRolloutStore } from "../functions/store/dynamodb.ts";
import type { RolloutItem } from "../functions/store/schema.ts";
import type { LocalProxySettingsSchema } from "../functions/traffic/settings.ts";
import { RecordingMetricsSink } from "../functions/workflow/metrics.ts";
import type { ModelRouterOptions } from "../infra/model-router.ts";
import type { NotificationsProps } from "../infra/notifications.ts";
import type { KubernetesTarget } from "../infra/props.ts";
import { handlerNameFor } from "./asl/extract.ts";
import { LOCAL_ACCOUNT, LOCAL_REGION } from "./asl/intrinsics.ts";
import type { LambdaHandler } from "./aws/lambda.ts";
import { createTableFromTemplate, type LocalDynamo, startDynamo } from "./dynamo.ts";
import { putEcrPush } from "./events/ecr-push.ts";
import { type HandlerDeps, handlerFactories, once, rolloutHandlerFactories } from "./handler-factories.ts";
import { type Runtime, type RuntimeFunction, startRuntime } from "./runtime.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

type LocalProxyInput = Parameters<(typeof LocalProxySettingsSchema)["parse"]>[0] & { type: "local-proxy" };

export interface LocalStackOptions {
  /** Rollout files (Argo objects or a native spec), as `addRollout` takes them. */
  specFiles: string[];
  /**
   * The local proxy target: its admin URL (`RunningProxy.adminUrl`) and the upstream each pushed
   * tag runs; or another target's settings with their `type` (the local Kubernetes API's).
   */
  target: Omit<LocalProxyInput, "type"> | KubernetesTarget;
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
export interface LocalStack {
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
  close(): Promise<void>;
}

/**
 * Synthesizes the app (a `RolloutController` with one rollout on the local proxy) in-process,
 * creates its table on a local DynamoDB, and runs its state machines, functions and ECR rule in
 * the embedded runtime with the real handlers. Handlers are built by their `createHandler`
 * factories over the same adapters as on AWS (SDK clients pointed at the runtime's façade), with
 * the runtime's clock so a whole rollout can run in virtual time.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  // aws-cdk-lib costs seconds to import: only the embedded stack pays for it, on first use.
  const [{ App, Stack }, ecr, { RolloutController, EMBEDDED_CONTEXT }] = await Promise.all([
    import("aws-cdk-lib"),
    import("aws-cdk-lib/aws-ecr"),
    import("../infra/index.ts"),
  ]);
  const repository = options.repository ?? "demo";
  const app = new App({
    context: {
      "aws:cdk:bundling-stacks": [],
      "aws:cdk:enable-path-metadata": true,
      [EMBEDDED_CONTEXT]: true,
    },
    builtinCloudFormationValidation: false,
    outdir: undefined,
  });
  const stack = new Stack(app, "SfnRolloutsLocal");
  const controller = new RolloutController(stack, "Controller", {
    ...(options.tableName ? { tableName: options.tableName } : {}),
    ...(options.notifications ? { notifications: options.notifications } : {}),
  });
  const added = controller.addRollout("Rollout", {
    spec: { files: options.specFiles.map((f) => (f.startsWith("/") ? f : `${ROOT}${f}`)) },
    target: ("type" in options.target ? options.target : { type: "local-proxy", ...options.target }) as never,
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repository", repository) },
    ...(options.modelRouter ? { modelRouter: options.modelRouter } : {}),
  });
  const template = app.synth().getStackByName(stack.stackName).template as unknown;

  const ownDynamo = typeof options.dynamo !== "object";
  const dynamo =
    typeof options.dynamo === "object" ? options.dynamo : await startDynamo(options.dynamo ?? "dynalite");
  const metrics = new RecordingMetricsSink();
  const alarms = new MemoryAlarms();
  const clock = options.clock;
  const handlerNames = Object.values(HANDLERS);
  const byFile = Object.fromEntries(Object.entries(HANDLERS).map(([k, v]) => [v, k])) as Record<
    string,
    HandlerName
  >;
  function depsFor(env: Record<string, string>): HandlerDeps {
    return {
      // CloudWatch's alarms are not part of the façade: the functions read the local ones.
      workflow: once(() => ({ ...depsFromEnv(env, clock ? { clock } : {}), metrics, alarms })),
      trigger: once(() => triggerDepsFromEnv(env, clock ? { clock } : {})),
    };
  }

  // A first extraction (without running anything) to learn the functions and the table.
  const { extractStack } = await import("./asl/extract.ts");
  const extracted = extractStack(template);
  const functions = new Map<string, RuntimeFunction>();
  const rolloutFactories = rolloutHandlerFactories(clock ? { now: () => clock.now() } : {});
  const byRolloutFile = Object.fromEntries(
    Object.entries(ROLLOUT_HANDLERS).map(([k, v]) => [v, k]),
  ) as Record<string, RolloutHandlerName>;
  const rolloutFunctions = new Map<string, RolloutHandlerName>();
  for (const fn of extracted.functions) {
    const file = handlerNameFor(fn, handlerNames);
    const own = file ? undefined : handlerNameFor(fn, Object.values(ROLLOUT_HANDLERS));
    if (own) {
      const name = byRolloutFile[own] as RolloutHandlerName;
      rolloutFunctions.set(fn.arn, name);
      functions.set(fn.logicalId, { factory: (env) => rolloutFactories[name]({ ...env }) });
      continue;
    }
    if (!file) continue;
    const name = byFile[file] as HandlerName;
    functions.set(fn.logicalId, {
      factory: (env) => {
        const handler = handlerFactories[name](depsFor({ ...env }));
        return options.wrap ? options.wrap(name, handler) : handler;
      },
    });
  }
  const table = extracted.tables[0];
  if (!table) throw new Error("the synthesized stack has no table");
  const admin = dynamo.client();
  await createTableFromTemplate(admin, table.name, table.properties);

  for (const [name, handler] of Object.entries(options.hookFunctions ?? {})) {
    functions.set(name, { handler });
  }
  const runtime = await startRuntime({
    template,
    functions,
    ...(clock ? { clock } : {}),
    env: { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint },
  });
  const rollout = added.name;
  const stateMachineArn = runtime.stateMachineArn(
    extracted.stateMachines.find((m) => m.logicalId.includes("Rollout") && !m.logicalId.includes("Ticker"))
      ?.logicalId ?? "",
  );
  const store = new DynamoRolloutStore({ client: dynamo.client(), tableName: table.name });
  const env = { ...runtime.env, AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, ROLLOUTS_TABLE: table.name };
  const modelRouterUrl = runtime.functionUrls.find(
    (u) => rolloutFunctions.get(u.functionArn) === "router",
  )?.url;
  return {
    ...(modelRouterUrl ? { modelRouterUrl } : {}),
    runtime,
    dynamo,
    rollout,
    stateMachineArn,
    tableName: table.name,
    env,
    metrics,
    store,
    item: () => store.get(rollout),
    push: (tag, digest, at) => putEcrPush(runtime, { repository, digest, tag, at }),
    alarms,
    setAlarm: async (name, value, reason = "") => {
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
    },
    close: async () => {
      await runtime.close();
      admin.destroy();
      if (ownDynamo) await dynamo.close();
    },
  };
}
