import { Duration, type RemovalPolicy } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { acknowledge } from "./nag.ts";

/** A dead-letter queue and the alarm that says something landed in it. */
export interface DeadLetters {
  readonly queue: sqs.Queue;
  /** `ApproximateNumberOfMessagesVisible > 0`: a firing or an event was lost after all retries. */
  readonly alarm: cloudwatch.Alarm;
}

/**
 * Where a delivery goes once its retries are exhausted, instead of nowhere: an SQS queue
 * (encrypted with SQS-managed keys, which EventBridge and Scheduler can write to without a key
 * policy; TLS only; kept 14 days, SQS's longest) and an alarm on its visible messages. A message
 * there is a rollout step that did not happen (a pause that never ended, a tick never taken, a
 * push that started nothing): read it, then redrive it to the resume or trigger function.
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
