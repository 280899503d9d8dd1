import { Duration, type RemovalPolicy } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as lambdaEvents from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { TIMER_DELIVERY } from "../functions/config.ts";
import { ANALYSIS_FUNCTION_TIMEOUT_SECONDS } from "../statemachine/limits.ts";
import { acknowledge } from "./nag.ts";

/** A dead-letter queue and the alarm that says something landed in it. */
export interface DeadLetters {
  readonly queue: sqs.Queue;
  /** `ApproximateNumberOfMessagesVisible > 0`: a firing or an event was lost after all retries. */
  readonly alarm: cloudwatch.Alarm;
}

/**
 * Where a delivery goes once its retries are exhausted, instead of nowhere: an SQS queue
 * (encrypted with SQS-managed keys, which EventBridge, Scheduler and Lambda can write to without
 * a key policy; TLS only; kept 14 days, SQS's longest) and an alarm on its visible messages. A
 * message there is a rollout step that did not happen (a pause that never ended, a tick never
 * taken, a push whose rollout did not start because of an error): read it, then redrive it to the
 * resume or trigger function. What each queue receives is listed in docs/cdk.md ("Dead-letter
 * queues").
 */
export function deadLetters(
  scope: Construct,
  id: string,
  options: { what: string; removalPolicy: RemovalPolicy },
): DeadLetters {
  const queue = new sqs.Queue(scope, id, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
    removalPolicy: options.removalPolicy,
  });
  acknowledge(
    queue,
    "AwsSolutions-SQS3",
    `this queue is itself a dead-letter queue: ${options.what} that could not be delivered`,
  );
  const alarm = new cloudwatch.Alarm(scope, `${id}Alarm`, {
    alarmDescription: `sfn-rollouts: ${options.what} could not be delivered after every retry and waits in ${id}. A rollout step did not happen: read the message and redrive it.`,
    metric: queue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(1),
      statistic: "Maximum",
    }),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  return { queue, alarm };
}

/**
 * What a function invoked asynchronously (by Scheduler, or by an EventBridge rule) throws: a
 * rule's or a schedule's dead-letter queue only receives what could not be *delivered* to Lambda;
 * once Lambda has accepted the event, its own retries (`TIMER_DELIVERY.asyncRetryAttempts`,
 * while younger than `asyncMaximumEventAgeSeconds`) are all there is, and then the event goes to
 * `queue` as an invocation record (the event as `requestPayload`, the error as `responsePayload`)
 * instead of being dropped. Lambda writes with the function's role, which gets `sqs:SendMessage`
 * on that queue and nothing more (`SqsDestination` would also grant GetQueueAttributes and
 * GetQueueUrl).
 */
export function onAsyncFailure(fn: lambda.Function, role: iam.IRole, queue: sqs.IQueue): void {
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [queue.queueArn] }),
  );
  fn.configureAsyncInvoke({
    onFailure: { bind: () => ({ destination: queue.queueArn }) },
    retryAttempts: TIMER_DELIVERY.asyncRetryAttempts,
    maxEventAge: Duration.seconds(TIMER_DELIVERY.asyncMaximumEventAgeSeconds),
  });
}

/**
 * The resume function's on-failure destination, instead of the dead-letter queue: a firing resume
 * failed on every asynchronous attempt (three, over about 3 minutes: a burst of DynamoDB
 * throttling is enough) would be lost there, and an analysis waiting on that tick would time out
 * and abort a good rollout. This queue hands the invocation record back to resume through an SQS
 * event source (synchronous invokes, `ReportBatchItemFailures`), up to
 * `TIMER_DELIVERY.redeliveryReceives` times, `redeliveryVisibilitySeconds` apart; then SQS moves
 * it to `deadLetters` (its redrive policy), where it is the lost firing it used to be. The firings
 * are idempotent (docs/state.md, "The Timer"), so one taken twice does nothing the second time. An
 * empty queue costs the event source's long polls (a few hundred thousand requests a month, within
 * SQS's free tier), nothing per rollout.
 */
export function redeliverAsyncFailures(
  scope: Construct,
  id: string,
  options: { fn: lambda.Function; role: iam.IRole; deadLetters: sqs.IQueue; removalPolicy: RemovalPolicy },
): sqs.Queue {
  const queue = new sqs.Queue(scope, id, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    // Lambda requires at least the function's timeout; the dead-letter queue keeps 14 days, longer.
    visibilityTimeout: Duration.seconds(
      Math.max(TIMER_DELIVERY.redeliveryVisibilitySeconds, ANALYSIS_FUNCTION_TIMEOUT_SECONDS),
    ),
    retentionPeriod: Duration.days(4),
    deadLetterQueue: { queue: options.deadLetters, maxReceiveCount: TIMER_DELIVERY.redeliveryReceives },
    removalPolicy: options.removalPolicy,
  });
  onAsyncFailure(options.fn, options.role, queue);
  options.fn.addEventSource(
    new lambdaEvents.SqsEventSource(queue, { batchSize: 10, reportBatchItemFailures: true }),
  );
  return queue;
}
