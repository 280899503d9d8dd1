import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { METRICS } from "../functions/config.ts";
import { EXECUTION_SUPERSEDED } from "../statemachine/compile.ts";

/** Argo's phases of an analysis run and of a measurement: one line each. */
const PHASES = ["Successful", "Failed", "Error", "Inconclusive"] as const;

/**
 * One dashboard per rollout, so the on-call engineer sees in one place what `rollouts get` says:
 * the weight the handlers last set, how analysis runs and measurements ended (from the metrics
 * the handlers publish, `METRICS`), and the state machine's executions. The alarm fires on a
 * failed execution: an aborted rollout fails its execution, and someone should read why.
 *
 * A superseded execution (a newer push took the rollout over) also ends failed, with the error
 * `ExecutionSuperseded` (even when its Abort ran before the newer execution took over), and nobody
 * needs to act on it. Step Functions' `ExecutionsFailed` has no
 * dimension for the error, so when the state machine's log group is given the alarm counts the
 * log's `ExecutionFailed` events whose error is not `ExecutionSuperseded` (a metric filter),
 * instead of `ExecutionsFailed`. With `alarmTopic` the alarm notifies it (and again when it is OK).
 */
export function rolloutDashboard(
  scope: Construct,
  rollout: string,
  stateMachine: sfn.StateMachine,
  options: { logGroup?: logs.ILogGroup; alarmTopic?: sns.ITopic } = {},
): { dashboard: cloudwatch.Dashboard; alarm: cloudwatch.Alarm } {
  const own = new Construct(scope, "Monitoring");
  const alarm = failedExecutionsAlarm(own, rollout, stateMachine, options);
  const dashboard = new cloudwatch.Dashboard(own, "Dashboard", {
    defaultInterval: Duration.hours(3),
    widgets: [
      [
        new cloudwatch.TextWidget({
          markdown: `# Rollout ${rollout}\nWeights, analysis and executions. \`rollouts get ${rollout} --watch\` shows the same live.`,
          width: 24,
          height: 2,
        }),
      ],
      weightsAndExecutions(rollout, stateMachine),
      analysisWidgets(rollout),
      judgeWidgets(rollout),
      [new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: [alarm], width: 24, height: 3 })],
    ],
  });
  return { dashboard, alarm };
}

/**
 * The alarm on a failed execution, notifying `alarmTopic` when given. With the state machine's log
 * group it counts the failures that are not `ExecutionSuperseded` (a metric filter on the log),
 * else Step Functions' `ExecutionsFailed`, which cannot tell them apart.
 */
function failedExecutionsAlarm(
  own: Construct,
  rollout: string,
  stateMachine: sfn.StateMachine,
  options: { logGroup?: logs.ILogGroup; alarmTopic?: sns.ITopic },
): cloudwatch.Alarm {
  const failed = options.logGroup
    ? new logs.MetricFilter(own, "FailedNotSuperseded", {
        logGroup: options.logGroup,
        filterPattern: logs.FilterPattern.all(
          logs.FilterPattern.stringValue("$.type", "=", "ExecutionFailed"),
          logs.FilterPattern.stringValue("$.details.error", "!=", EXECUTION_SUPERSEDED),
        ),
        metricNamespace: METRICS.namespace,
        metricName: `ExecutionsFailed-${rollout}`,
        metricValue: "1",
      }).metric({ period: Duration.minutes(5), statistic: "Sum" })
    : stateMachine.metricFailed({ period: Duration.minutes(5), statistic: "Sum" });
  const alarm = new cloudwatch.Alarm(own, "ExecutionsFailed", {
    alarmDescription: `Rollout ${rollout}: an execution failed (aborted, or the abort itself failed). The rollout's status message says why.`,
    metric: failed,
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  if (options.alarmTopic) {
    alarm.addAlarmAction(new actions.SnsAction(options.alarmTopic));
    alarm.addOkAction(new actions.SnsAction(options.alarmTopic));
  }
  return alarm;
}

/** One of the metrics the handlers publish for this rollout (`METRICS`), per minute. */
function rolloutMetric(
  rollout: string,
  metricName: string,
  statistic: string,
  extra: Record<string, string> = {},
  label?: string,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS.namespace,
    metricName,
    dimensionsMap: { [METRICS.dimension]: rollout, ...extra },
    statistic,
    period: Duration.minutes(1),
    ...(label ? { label } : {}),
  });
}

/** A metric counted by phase: one line per phase of `PHASES`. */
function byPhase(rollout: string, metricName: string): cloudwatch.Metric[] {
  return PHASES.map((phase) => rolloutMetric(rollout, metricName, "Sum", { Phase: phase }, phase));
}

/** A judge's metric over all its checks: a search, since each check is its own dimension value. */
function judgeMetric(rollout: string, metricName: string, label: string): cloudwatch.MathExpression {
  return new cloudwatch.MathExpression({
    expression: `SEARCH('{${METRICS.namespace},${METRICS.dimension},Metric} MetricName="${metricName}" ${METRICS.dimension}="${rollout}"', 'Average', 60)`,
    label,
    period: Duration.minutes(1),
  });
}

/** The first row of graphs: the canary's and the stable's weights, and the executions by how they ended. */
function weightsAndExecutions(rollout: string, stateMachine: sfn.StateMachine): cloudwatch.IWidget[] {
  const weight = rolloutMetric(rollout, METRICS.canaryWeight, "Maximum", {}, "canary");
  return [
    new cloudwatch.GraphWidget({
      title: "Weights over time (%)",
      left: [
        weight,
        new cloudwatch.MathExpression({
          expression: "100 - FILL(w, REPEAT)",
          usingMetrics: { w: weight },
          label: "stable",
          period: Duration.minutes(1),
        }),
      ],
      leftYAxis: { min: 0, max: 100 },
      width: 12,
    }),
    new cloudwatch.GraphWidget({
      title: "Executions",
      left: [
        stateMachine.metricStarted({ label: "started" }),
        stateMachine.metricSucceeded({ label: "promoted" }),
        stateMachine.metricFailed({ label: "failed (aborted)" }),
        stateMachine.metricAborted({ label: "stopped" }),
        stateMachine.metricTimedOut({ label: "timed out" }),
      ],
      width: 12,
    }),
  ];
}

/** The row of how analysis runs and measurements ended, and of promotions and aborts. */
function analysisWidgets(rollout: string): cloudwatch.IWidget[] {
  return [
    new cloudwatch.GraphWidget({
      title: "Analysis runs by phase",
      left: byPhase(rollout, METRICS.analysisRuns),
      stacked: true,
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: "Measurements by phase",
      left: byPhase(rollout, METRICS.measurements),
      stacked: true,
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: "Promotions and aborts",
      left: [
        rolloutMetric(rollout, METRICS.promotions, "Sum", {}, "promoted"),
        rolloutMetric(rollout, METRICS.aborts, "Sum", {}, "aborted"),
      ],
      width: 8,
    }),
  ];
}

/** The row of the judges' readings: p-values, Bayes factors, and the candidate against the stable. */
function judgeWidgets(rollout: string): cloudwatch.IWidget[] {
  return [
    new cloudwatch.GraphWidget({
      title: "Judges: p-value (sequential tests: always valid)",
      left: [judgeMetric(rollout, METRICS.judgePValue, "p-value")],
      leftYAxis: { min: 0, max: 1 },
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: "Judges: Bayes factor",
      left: [judgeMetric(rollout, METRICS.judgeBayesFactor, "Bayes factor")],
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: "Judges: candidate vs stable",
      left: [
        judgeMetric(rollout, METRICS.judgeCandidate, "candidate"),
        judgeMetric(rollout, METRICS.judgeStable, "stable"),
      ],
      width: 8,
    }),
  ];
}
