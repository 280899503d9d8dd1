import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ECSClient } from "@aws-sdk/client-ecs";
import { ElasticLoadBalancingV2Client } from "@aws-sdk/client-elastic-load-balancing-v2";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { SageMakerClient } from "@aws-sdk/client-sagemaker";
import { SchedulerClient } from "@aws-sdk/client-scheduler";
import { SFNClient } from "@aws-sdk/client-sfn";
import { SfnTaskTokens } from "../abort/task-tokens.ts";
import { CloudWatchAlarms } from "../alarms/cloudwatch.ts";
import { clientConfig } from "../aws-clients.ts";
import { type Clock, systemClock } from "../clock.ts";
import { ENV } from "../config.ts";
import { EventBridgePublisher } from "../events/eventbridge.ts";
import { LambdaHookInvoker } from "../hooks/lambda.ts";
import { defaultProviders, maxBodyBytesFrom, metricSecretsFrom } from "../metrics/index.ts";
import { traced } from "../observability/tracing.ts";
import { createRegistry } from "../registry/index.ts";
import { DynamoRouterConfig } from "../router/dynamodb-config.ts";
import { DynamoRolloutStore } from "../store/dynamodb.ts";
import { RoutingTimer } from "../timer/routing.ts";
import { SchedulerTimer } from "../timer/scheduler.ts";
import { TickerTimer } from "../timer/ticker.ts";
import { createTrafficTarget, type TrafficClients } from "../traffic/index.ts";
import type { WorkflowDeps } from "../workflow/deps.ts";
import { PowertoolsMetricsSink } from "../workflow/metrics.ts";

/** A required environment variable, or a configuration error that names it. */
export function env(name: string, source: NodeJS.ProcessEnv = process.env): string {
  const value = source[name];
  if (!value)
    throw new Error(`environment variable ${name} is not set: the construct sets it on every function`);
  return value;
}

/**
 * The composition root: the adapters a Lambda uses, built once per cold start from the
 * environment the construct sets (and, locally, from the `AWS_ENDPOINT_URL_*` variables the SDK
 * reads by itself). Target clients are created on first use, so a rollout on a Lambda alias never
 * loads the ECS client.
 */
export function depsFromEnv(
  source: NodeJS.ProcessEnv = process.env,
  overrides: { clock?: Clock } = {},
): WorkflowDeps {
  // Timeouts and bounded retries on every client: a hung endpoint is an error, not a hang.
  const config = clientConfig(source);
  const sfn = traced(new SFNClient(config), source);
  const clock = overrides.clock ?? systemClock;
  const lazy: {
    elbv2?: ElasticLoadBalancingV2Client;
    ecs?: ECSClient;
    lambda?: LambdaClient;
    alarms?: CloudWatchAlarms;
    hooks?: LambdaHookInvoker;
    sagemaker?: SageMakerClient;
    routerTable?: DynamoDBClient;
  } = {};
  const clients: TrafficClients = {
    get elbv2() {
      lazy.elbv2 ??= traced(new ElasticLoadBalancingV2Client(config), source);
      return lazy.elbv2;
    },
    get ecs() {
      lazy.ecs ??= traced(new ECSClient(config), source);
      return lazy.ecs;
    },
    get lambda() {
      lazy.lambda ??= traced(new LambdaClient(config), source);
      return lazy.lambda;
    },
    get sagemaker() {
      lazy.sagemaker ??= traced(new SageMakerClient(config), source);
      return lazy.sagemaker;
    },
    // The target writes the model router's configuration item; the router reads it.
    modelRouterConfig: (router) => {
      lazy.routerTable ??= traced(new DynamoDBClient(config), source);
      return new DynamoRouterConfig({
        client: lazy.routerTable,
        tableName: env(ENV.tableName, source),
        router,
        cacheMs: 0,
      });
    },
  };
  return {
    store: new DynamoRolloutStore({
      client: traced(new DynamoDBClient(config), source),
      tableName: env(ENV.tableName, source),
      clock,
    }),
    tokens: new SfnTaskTokens(sfn),
    timer: new RoutingTimer({
      clock,
      scheduler: new SchedulerTimer({
        client: traced(new SchedulerClient(config), source),
        groupName: env(ENV.scheduleGroup, source),
        targetArn: env(ENV.resumeFunctionArn, source),
        roleArn: env(ENV.schedulerRoleArn, source),
        ...(source[ENV.timerDeadLetterArn] ? { deadLetterArn: source[ENV.timerDeadLetterArn] } : {}),
        clock,
      }),
      ticker: new TickerTimer({
        client: sfn,
        stateMachineArn: env(ENV.tickerStateMachineArn, source),
        clock,
      }),
    }),
    events: new EventBridgePublisher({
      client: traced(new EventBridgeClient(config), source),
      ...(source[ENV.eventBusName] ? { eventBusName: source[ENV.eventBusName] } : {}),
    }),
    clock,
    targetFor: (settings) => createTrafficTarget(settings, clients, clock),
    registryFor: (settings) =>
      createRegistry(settings, settings.type === "sagemaker" ? { sagemaker: clients.sagemaker } : {}),
    providers: defaultProviders({
      clientConfig: config,
      clock,
      maxBodyBytes: maxBodyBytesFrom(source[ENV.metricMaxBodyBytes], ENV.metricMaxBodyBytes),
      metricSecrets: metricSecretsFrom(source),
      ...(source[ENV.prometheusUrl]
        ? {
            prometheus: {
              url: source[ENV.prometheusUrl] as string,
              ...(source[ENV.prometheusSigv4Region]
                ? { sigv4Region: source[ENV.prometheusSigv4Region] }
                : {}),
            },
          }
        : {}),
    }),
    metrics: new PowertoolsMetricsSink(),
    get alarms() {
      lazy.alarms ??= new CloudWatchAlarms(traced(new CloudWatchClient(config), source));
      return lazy.alarms;
    },
    get hooks() {
      lazy.lambda ??= traced(new LambdaClient(config), source);
      lazy.hooks ??= new LambdaHookInvoker(lazy.lambda);
      return lazy.hooks;
    },
  };
}

let cached: WorkflowDeps | undefined;

/** The process-wide deps, built on the first invocation (not at import: tests import handlers). */
export function rootDeps(): WorkflowDeps {
  cached ??= depsFromEnv();
  return cached;
}
