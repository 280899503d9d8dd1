import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { SFNClient } from "@aws-sdk/client-sfn";
import { SfnTaskTokens } from "../abort/task-tokens.ts";
import { abortOnAlarm, isAlarmEvent, type OnAlarmResult } from "../alarms/index.ts";
import { clientConfig } from "../aws-clients.ts";
import { type Clock, systemClock } from "../clock.ts";
import { ENV } from "../config.ts";
import { EventBridgePublisher } from "../events/eventbridge.ts";
import { logged } from "../observability/logging.ts";
import { traced } from "../observability/tracing.ts";
import { DynamoRolloutStore } from "../store/dynamodb.ts";
import { SfnExecutions } from "../trigger/executions.ts";
import { TriggerRoutesSchema } from "../trigger/routes.ts";
import { startRollout, type TriggerDeps, type TriggerResult } from "../trigger/start-rollout.ts";
import { env } from "./root.ts";

/** The trigger's adapters, from the environment the construct sets. */
export function triggerDepsFromEnv(
  source: NodeJS.ProcessEnv = process.env,
  overrides: { clock?: Clock } = {},
): TriggerDeps {
  const config = clientConfig(source);
  const sfn = traced(new SFNClient(config), source);
  const routes = TriggerRoutesSchema.parse(JSON.parse(env(ENV.rollouts, source)));
  return {
    store: new DynamoRolloutStore({
      client: traced(new DynamoDBClient(config), source),
      tableName: env(ENV.tableName, source),
      clock: overrides.clock ?? systemClock,
    }),
    executions: new SfnExecutions(sfn),
    tokens: new SfnTaskTokens(sfn),
    clock: overrides.clock ?? systemClock,
    routes,
    events: new EventBridgePublisher({
      client: traced(new EventBridgeClient(config), source),
      ...(source[ENV.eventBusName] ? { eventBusName: source[ENV.eventBusName] } : {}),
    }),
  };
}

/**
 * The ECR push rule's target: validates the `ECR Image Action` event, finds the rollouts it
 * triggers and starts each one's execution with an idempotent name (a duplicate starts nothing),
 * superseding an older running revision through the abort channel. The alarm rules' target too:
 * a `CloudWatch Alarm State Change` to ALARM aborts the running rollouts that watch the alarm.
 */
export function createHandler(
  deps: () => TriggerDeps,
): (event: unknown) => Promise<TriggerResult | OnAlarmResult> {
  return logged(
    "trigger",
    (event): Promise<TriggerResult | OnAlarmResult> =>
      isAlarmEvent(event) ? abortOnAlarm(deps(), event) : startRollout(deps(), event),
  );
}

let cached: TriggerDeps | undefined;
export const handler = createHandler(() => {
  cached ??= triggerDepsFromEnv();
  return cached;
});
