import type { GrantUse } from "@sfn-rollouts/test-support/iam-policies";

/**
 * Granted actions no scenario of `iam.test.ts` calls through the SDK, each with why it is granted
 * anyway: the one list of them (`docs/cdk.md` repeats it).
 */
export interface UnusedException {
  /** The action as the statement names it. */
  readonly action: string;
  /** The functions (handler names) it applies to; every function when absent. */
  readonly functions?: readonly string[];
  readonly reason: string;
}

/** Every function but the two that write analysis runs. */
const NOT_ANALYSIS: readonly string[] = [
  "trigger",
  "begin",
  "setWeight",
  "checkReady",
  "await",
  "promote",
  "abort",
  "checkAlarms",
  "hook",
];

/** Why resume's role may read the Timer's redelivery queue though its code never does. */
const REDELIVERY_POLL =
  "Lambda's event source mapping polls the Timer's redelivery queue (TimerRedelivery) with resume's role and deletes what resume took; the handler's code never calls SQS";

export const IAM_UNUSED_EXCEPTIONS: readonly UnusedException[] = [
  {
    action: "logs:CreateLogStream",
    reason: "Lambda's runtime writes the function's logs with its role, not the handler's SDK clients",
  },
  {
    action: "logs:PutLogEvents",
    reason: "Lambda's runtime writes the function's logs with its role, not the handler's SDK clients",
  },
  {
    action: "xray:PutTraceSegments",
    reason: "active tracing: Lambda's X-Ray daemon sends the segments with the function's role",
  },
  {
    action: "xray:PutTelemetryRecords",
    reason: "active tracing: Lambda's X-Ray daemon sends the telemetry with the function's role",
  },
  {
    action: "sqs:SendMessage",
    functions: ["trigger", "resume"],
    reason:
      "Lambda itself sends a failed asynchronous invocation to the OnFailure dead-letter queue with the function's role",
  },
  {
    action: "sqs:ReceiveMessage",
    functions: ["resume"],
    reason: REDELIVERY_POLL,
  },
  {
    action: "sqs:DeleteMessage",
    functions: ["resume"],
    reason: REDELIVERY_POLL,
  },
  {
    action: "sqs:ChangeMessageVisibility",
    functions: ["resume"],
    reason: REDELIVERY_POLL,
  },
  {
    action: "sqs:GetQueueAttributes",
    functions: ["resume"],
    reason: REDELIVERY_POLL,
  },
  {
    action: "sqs:GetQueueUrl",
    functions: ["resume"],
    reason: REDELIVERY_POLL,
  },
  {
    action: "dynamodb:UpdateItem",
    functions: NOT_ANALYSIS,
    reason:
      "one table statement for every function (grantTable); only the analysis writes (start-analysis, resume) update an item in place",
  },
  {
    action: "dynamodb:PutItem",
    functions: ["checkAlarms"],
    reason:
      "one table statement for every function (grantTable); check-alarms writes the item only when an alarm aborts the rollout",
  },
  {
    action: "cloudwatch:DescribeAlarms",
    functions: ["checkAlarms"],
    reason:
      "the embedded runtime has no CloudWatch: check-alarms reads the runtime's local alarms, not through the SDK",
  },
  {
    action: "scheduler:CreateSchedule",
    functions: ["startAnalysis", "resume", "promote", "abort"],
    reason:
      "their delays in the local scenarios (analysis intervals, scale-down delays, an abort's polls) are seconds, under Scheduler's one-minute floor, so the ticker takes them; await's five-minute pause runs the same statement",
  },
  {
    action: "scheduler:DeleteSchedule",
    functions: ["await", "startAnalysis", "resume", "promote", "abort"],
    reason:
      "a schedule is deleted when a wait it timed ends early; the scenarios' Scheduler waits run to their end (the same statement as CreateSchedule)",
  },
  {
    action: "iam:PassRole",
    functions: ["startAnalysis", "resume", "promote", "abort"],
    reason: "passed with CreateSchedule (above): the Scheduler role its schedules run as",
  },
  {
    action: "states:SendTaskSuccess",
    functions: ["trigger", "begin", "startAnalysis", "hook"],
    reason:
      "the task-token statement grants success and failure together (neither has resource-level permissions); these functions end a wait with a failure (supersede, takeover), start-analysis with a success only when a run ends at once, hook only when a retried Task finds the hook function already started",
  },
  {
    action: "states:SendTaskFailure",
    functions: ["startAnalysis", "resume", "hook"],
    reason:
      "the task-token statement grants success and failure together; a run that fails at once (start-analysis), a timed-out hook (hook) and a failing abort channel (resume) are not in these scenarios",
  },
  {
    action: "events:PutEvents",
    functions: ["trigger"],
    reason:
      "the trigger announces a push it refuses (a tag the rollout does not follow, a bad spec), which these scenarios do not make",
  },
  {
    action: "states:DescribeExecution",
    functions: ["trigger"],
    reason:
      "the trigger reads an older execution it supersedes only when its wait cannot be ended through the abort channel",
  },
  {
    action: "states:StopExecution",
    functions: ["trigger"],
    reason:
      "the trigger stops an older execution it supersedes only when its wait cannot be ended through the abort channel",
  },
  {
    action: "sagemaker:UpdateEndpointWeightsAndCapacities",
    functions: ["begin", "resume"],
    reason:
      "begin puts the weight back to 0 only when it takes over a superseded candidate that had traffic; resume only when an abort it polls still has weight to move back",
  },
  {
    action: "sagemaker:UpdateEndpoint",
    functions: ["promote", "abort"],
    reason:
      "promote replaces the config only for a candidate promoted straight from a mirror step (a shadow); abort moves the endpoint back to an earlier config only after a promotion or a mirror",
  },
  {
    action: "sagemaker:CreateEndpointConfig",
    functions: ["promote"],
    reason:
      "the config with the candidate alone, for a candidate promoted straight from a mirror step (a shadow)",
  },
];

/** Whether an exception explains an unused grant. */
export function covers(e: UnusedException, u: GrantUse): boolean {
  return e.action === u.action && (e.functions === undefined || e.functions.includes(u.label));
}
