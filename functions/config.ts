/**
 * The contract between the CDK construct (which sets these) and the Lambda handlers (which read
 * them), in one place so neither side can drift from the other.
 */

/** EventBridge `source` of every lifecycle event: what a team's rule (and the notifications') matches on. */
export const EVENT_SOURCE = "sfn-rollouts";

/** Handler entry files under `functions/handlers/`, each exporting `handler`. */
export const HANDLERS = {
  trigger: "trigger",
  begin: "begin",
  setWeight: "set-weight",
  checkReady: "check-ready",
  await: "await",
  startAnalysis: "start-analysis",
  resume: "resume",
  promote: "promote",
  abort: "abort",
  checkAlarms: "check-alarms",
  hook: "hook",
} as const;

export type HandlerName = keyof typeof HANDLERS;

/**
 * Handler entry files of the functions a rollout gets of its own (not one per controller):
 * the model router, created by `addRollout` for a target with `router: {type: model}`.
 */
export const ROLLOUT_HANDLERS = {
  router: "router",
} as const;

export type RolloutHandlerName = keyof typeof ROLLOUT_HANDLERS;

/** Environment variables the construct sets on every function. */
export const ENV = {
  /** The DynamoDB table of rollout items, runs and measurements. */
  tableName: "ROLLOUTS_TABLE",
  /** EventBridge bus for lifecycle events (`default` when unset). */
  eventBusName: "ROLLOUTS_EVENT_BUS",
  /** EventBridge Scheduler group for one-time `at()` schedules. */
  scheduleGroup: "ROLLOUTS_SCHEDULE_GROUP",
  /** Role EventBridge Scheduler assumes to invoke the resume function. */
  schedulerRoleArn: "ROLLOUTS_SCHEDULER_ROLE_ARN",
  /** The resume function the Timer invokes. */
  resumeFunctionArn: "ROLLOUTS_RESUME_FUNCTION_ARN",
  /** The ticker state machine for delays under a minute. */
  tickerStateMachineArn: "ROLLOUTS_TICKER_STATE_MACHINE_ARN",
  /** The SQS queue where Scheduler puts a timer firing it could not deliver (optional). */
  timerDeadLetterArn: "ROLLOUTS_TIMER_DEAD_LETTER_ARN",
  /**
   * JSON: `[{"rollout", "stateMachineArn", "repository", "tagPattern"?}]`, the rollouts the trigger
   * starts on an ECR push.
   */
  rollouts: "ROLLOUTS_ROUTES",
  /** Default Prometheus address and SigV4 region for metrics that do not name one. */
  prometheusUrl: "ROLLOUTS_PROMETHEUS_URL",
  prometheusSigv4Region: "ROLLOUTS_PROMETHEUS_SIGV4_REGION",
  /**
   * Most bytes of a web, samples or Prometheus response a measurement reads (default 1 MiB): a
   * larger body is an Error measurement. Not set by the construct; add it to the measuring
   * functions to change it.
   */
  metricMaxBodyBytes: "ROLLOUTS_METRIC_MAX_BODY_BYTES",
  /** The Secrets Manager secret (ARN) of the Datadog provider's keys: `api-key`, `app-key`, `address`. */
  datadogSecret: "ROLLOUTS_DATADOG_SECRET",
  /** The Secrets Manager secret (ARN) of the New Relic provider's account: `personal-api-key`, `account-id`, `region`. */
  newRelicSecret: "ROLLOUTS_NEWRELIC_SECRET",
  /** The Secrets Manager secret (ARN) of the InfluxDB provider's server: `address`, `authToken`, `org`. */
  influxdbSecret: "ROLLOUTS_INFLUXDB_SECRET",
  /** The Secrets Manager secret (ARN) of the Wavefront provider's API tokens, by Wavefront address. */
  wavefrontSecret: "ROLLOUTS_WAVEFRONT_SECRET",
  /** JSON: the metric secrets by the names templates give them (`secretRef.name`, `profile`), `{"name": "arn"}`. */
  metricSecrets: "ROLLOUTS_METRIC_SECRETS",
  /** The router function's name (its target's endpoint): its configuration and observations are `MODEL#<name>` items. */
  routerName: "ROLLOUTS_ROUTER_NAME",
} as const;

/**
 * The tag on each rollout's state machine naming its controller's table: `rollouts get` and
 * `rollouts waves` find each pass's table of a release in waves through it.
 */
export const TABLE_TAG = "sfn-rollouts:table";

/**
 * The tag on each pass's state machine of a release in waves naming its coordinator's ARN
 * (`RolloutWaves` sets it): `rollouts waves` and `rollouts get` find the coordinator through it
 * from any pass's region, not only from the home region.
 */
export const COORDINATOR_TAG = "sfn-rollouts:coordinator";

/**
 * CloudWatch metrics the handlers publish (Embedded Metric Format in their logs) and the
 * construct's dashboard and alarms read. Every metric has the dimension `Rollout`.
 */
export const METRICS = {
  namespace: "SfnRollouts",
  dimension: "Rollout",
  /** Percent of traffic on the candidate, after each weight change. */
  canaryWeight: "CanaryWeight",
  /** One per finished analysis run, with the dimension `Phase` as well. */
  analysisRuns: "AnalysisRuns",
  /** One per measurement taken, with the dimension `Phase` as well. */
  measurements: "Measurements",
  /** One per abort. */
  aborts: "RolloutsAborted",
  /** One per promotion. */
  promotions: "RolloutsPromoted",
  /**
   * A judge's figures at each look, with the dimension `Metric` (the analysis metric) as well:
   * its p-value (always-valid for the sequential tests), its Bayes factor, and each side's value
   * in the test's terms (an error rate, a median latency). Absent figures are not published.
   */
  judgePValue: "JudgePValue",
  judgeBayesFactor: "JudgeBayesFactor",
  judgeCandidate: "JudgeCandidateValue",
  judgeStable: "JudgeStableValue",
} as const;

/** How a Timer firing reaches the resume function (the bounds live with the workflow, which waits on them). */
export { TIMER_DELIVERY } from "../statemachine/timer-delivery.ts";

/** The Model Registry's event that starts a model's rollout: an approved model package version. */
export const MODEL_PACKAGE_DETAIL_TYPE = "SageMaker Model Package State Change";

/** The trigger route key of a model package group: a colon never appears in an ECR repository name. */
export const modelPackageRoute = (group: string): string => `sagemaker:${group}`;
