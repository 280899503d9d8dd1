import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { METRICS } from "../functions/config.ts";

/** Argo's phases of an analysis run and of a measurement: one line each. */
const PHASES = ["Successful", "Failed", "Error", "Inconclusive"] as const;

/**
 * One dashboard per rollout, so the on-call engineer sees in one place what `rollouts get` says:
 * the weight the handlers last set, how analysis runs and measurements ended (from the metrics
 * the handlers publish, `METRICS`), and the state machine's executions. The alarm fires on any
 * failed execution: an aborted rollout fails its execution, and someone should read why.
 */
export function rolloutDashboard(
  scope: Construct,
  rollout: string,
  stateMachine: sfn.StateMachine,
): { dashboard: cloudwatch.Dashboard; alarm: cloudwatch.Alarm } {
  const own = new Construct(scope, "Monitoring");
  const metric = (
    metricName: string,
    statistic: string,
    extra: Record<string, string> = {},
    label?: string,
  ) =>
    new cloudwatch.Metric({
      namespace: METRICS.namespace,
      metricName,
      dimensionsMap: { [METRICS.dimension]: rollout, ...extra },
      statistic,
      period: Duration.minutes(1),
      ...(label ? { label } : {}),
    });
  const byPhase = (metricName: string) =>
    PHASES.map((phase) => metric(metricName, "Sum", { Phase: phase }, phase));

  const alarm = new cloudwatch.Alarm(own, "ExecutionsFailed", {
    alarmDescription: `Rollout ${rollout}: an execution failed (aborted, or the abort itself failed). The rollout's status message says why.`,
    metric: stateMachine.metricFailed({ period: Duration.minutes(5), statistic: "Sum" }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });

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
      [
        new cloudwatch.GraphWidget({
          title: "Canary weight (%)",
          left: [metric(METRICS.canaryWeight, "Maximum", {}, "weight")],
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
      ],
      [
        new cloudwatch.GraphWidget({
          title: "Analysis runs by phase",
          left: byPhase(METRICS.analysisRuns),
          stacked: true,
          width: 8,
        }),
        new cloudwatch.GraphWidget({
          title: "Measurements by phase",
          left: byPhase(METRICS.measurements),
          stacked: true,
          width: 8,
        }),
        new cloudwatch.GraphWidget({
          title: "Promotions and aborts",
          left: [
            metric(METRICS.promotions, "Sum", {}, "promoted"),
            metric(METRICS.aborts, "Sum", {}, "aborted"),
          ],
          width: 8,
        }),
      ],
      [new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: [alarm], width: 24, height: 3 })],
    ],
  });
  return { dashboard, alarm };
}
