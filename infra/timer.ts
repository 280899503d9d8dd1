import { ArnFormat, Names, type RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import type { Construct } from "constructs";
import { LAMBDA_SERVICE_RETRY } from "../statemachine/compile.ts";
import { acknowledgeStateMachineRole } from "./nag.ts";

/**
 * The Timer's names and ARNs (docs/state.md, "The Timer"). The resume function and the ticker get
 * physical names: their ARNs go into the functions' environment, and a reference (GetAtt) there
 * would make the resume function depend on itself.
 */
export interface TimerNames {
  scheduleGroupName: string;
  resumeName: string;
  tickerName: string;
  resumeArn: string;
  tickerArn: string;
  groupArn: string;
  /** The group's schedules (`…:schedule/<group>/*`). */
  schedules: string;
}

export function timerNames(scope: Construct): TimerNames {
  const stack = Stack.of(scope);
  const unique = (suffix: string, max: number) =>
    `${Names.uniqueResourceName(scope, { maxLength: max - suffix.length - 1, separator: "-" })}-${suffix}`;
  const scheduleGroupName = unique("timers", 64);
  const resumeName = unique("resume", 64);
  const tickerName = unique("ticker", 80);
  return {
    scheduleGroupName,
    resumeName,
    tickerName,
    resumeArn: stack.formatArn({
      service: "lambda",
      resource: "function",
      resourceName: resumeName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    }),
    tickerArn: stack.formatArn({
      service: "states",
      resource: "stateMachine",
      resourceName: tickerName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    }),
    groupArn: stack.formatArn({
      service: "scheduler",
      resource: "schedule-group",
      resourceName: scheduleGroupName,
    }),
    schedules: stack.formatArn({
      service: "scheduler",
      resource: "schedule",
      resourceName: `${scheduleGroupName}/*`,
    }),
  };
}

/**
 * The role EventBridge Scheduler of this account and group assumes to invoke resume and, when a
 * firing cannot be delivered after its retries, to put it in the dead-letter queue; nothing else.
 */
export function schedulerRole(scope: Construct, names: TimerNames, deadLetters: sqs.IQueue): iam.Role {
  const stack = Stack.of(scope);
  return new iam.Role(scope, "SchedulerRole", {
    description: "EventBridge Scheduler invokes the rollouts' resume function (the Timer)",
    assumedBy: new iam.ServicePrincipal("scheduler.amazonaws.com", {
      conditions: {
        StringEquals: { "aws:SourceAccount": stack.account },
        ArnEquals: { "aws:SourceArn": names.groupArn },
      },
    }),
    inlinePolicies: {
      InvokeResume: new iam.PolicyDocument({
        statements: [
          new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [names.resumeArn] }),
        ],
      }),
      DeadLetters: new iam.PolicyDocument({
        statements: [
          new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [deadLetters.queueArn] }),
        ],
      }),
    },
  });
}

/**
 * The ticker: delays under a minute, `{seconds, payload}` → Wait → hand `payload` to resume.
 * An Express state machine: billed per request and per GB-second (64 MB, 100 ms steps) instead of
 * $0.025 per 1,000 transitions, so a 5 s tick costs about a tenth of a Standard one. It invokes
 * resume asynchronously (`InvocationType: Event`), as Scheduler does, so the execution ends once
 * Lambda has accepted the event (well within Express's 5 minutes) and the firing gets resume's own
 * async retries and dead-letter queue (`TIMER_DELIVERY`). An invoke Lambda still refuses after the
 * retries goes to the dead-letter queue (`{firing, error}`) and the execution fails
 * (`TimerFiringLost`); an Express execution has no history but its log (level ALL).
 */
export function tickerStateMachine(
  scope: Construct,
  options: {
    name: string;
    resume: lambda.IFunction;
    deadLetters: sqs.IQueue;
    logRetention: logs.RetentionDays;
    removalPolicy: RemovalPolicy;
  },
): sfn.StateMachine {
  const { name, resume } = options;
  const definition = {
    Comment: "sfn-rollouts ticker (Express): delays under a minute. Input {seconds, payload}.",
    StartAt: "Wait",
    States: {
      Wait: { Type: "Wait", SecondsPath: "$.seconds", Next: "Resume" },
      Resume: {
        Type: "Task",
        Resource: "arn:aws:states:::lambda:invoke",
        Parameters: {
          FunctionName: "${ResumeFunctionArn}",
          InvocationType: "Event",
          "Payload.$": "$.payload",
        },
        ResultPath: null,
        Retry: [
          LAMBDA_SERVICE_RETRY,
          { ErrorEquals: ["States.ALL"], IntervalSeconds: 2, MaxAttempts: 3, BackoffRate: 2 },
        ],
        Catch: [{ ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "DeadLetter" }],
        End: true,
      },
      DeadLetter: {
        Type: "Task",
        Resource: "arn:aws:states:::sqs:sendMessage",
        Parameters: {
          QueueUrl: "${DeadLetterQueueUrl}",
          MessageBody: { "firing.$": "$.payload", "error.$": "$.error", "execution.$": "$$.Execution.Id" },
        },
        Retry: [{ ErrorEquals: ["States.ALL"], IntervalSeconds: 2, MaxAttempts: 5, BackoffRate: 2 }],
        Next: "Lost",
      },
      Lost: {
        Type: "Fail",
        Error: "TimerFiringLost",
        Cause: "Lambda refused the firing's invoke after every retry; it is in the dead-letter queue",
      },
    },
  };
  const logGroup = new logs.LogGroup(scope, "TickerLogs", {
    logGroupName: `/aws/vendedlogs/states/${name}`,
    retention: options.logRetention,
    removalPolicy: options.removalPolicy,
  });
  const ticker = new sfn.StateMachine(scope, "Ticker", {
    stateMachineName: name,
    stateMachineType: sfn.StateMachineType.EXPRESS,
    definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(definition)),
    definitionSubstitutions: {
      ResumeFunctionArn: resume.functionArn,
      DeadLetterQueueUrl: options.deadLetters.queueUrl,
    },
    // An Express execution has no history but its log.
    logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
    tracingEnabled: true,
  });
  ticker.addToRolePolicy(
    new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [resume.functionArn] }),
  );
  ticker.addToRolePolicy(
    new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [options.deadLetters.queueArn] }),
  );
  acknowledgeStateMachineRole(ticker);
  return ticker;
}
