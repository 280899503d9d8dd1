import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { ENV, HANDLERS, type HandlerName, METRICS, TIMER_DELIVERY } from "../../functions/config.ts";
import { TABLE } from "../../functions/store/keys.ts";
import { EXAMPLE_CONTEXT, EXAMPLE_FILES, RolloutsExampleStack } from "../../infra/example-stack.ts";
import { FUNCTION_NEEDS } from "../../infra/functions.ts";
import { PropsError, RolloutController } from "../../infra/index.ts";
import { FUNCTION_PLACEHOLDERS } from "../../statemachine/compile.ts";
import {
  compile,
  loadRollout,
  parseRollout,
  type RolloutSpec,
  readSourcesSync,
} from "../../statemachine/index.ts";

const loadRolloutSync = (files: readonly string[]): RolloutSpec =>
  parseRollout(readSourcesSync(files, [])).spec;

type Json = Record<string, unknown>;
type Statement = { Action: string | string[]; Resource: unknown; Condition?: Json; Sid?: string };

/** No bundling and no built-in CloudFormation validation: this file checks the template itself. */
const testApp = () =>
  new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });

/** A CloudFormation value as one flat string, references as `<Logical.Attr>`. */
function flat(v: unknown): string {
  if (typeof v === "string") return v;
  const o = v as Json;
  if (o["Fn::Join"]) {
    const [sep, parts] = o["Fn::Join"] as [string, unknown[]];
    return parts.map(flat).join(sep);
  }
  if (o.Ref) return `<${o.Ref as string}>`;
  if (o["Fn::GetAtt"]) return `<${(o["Fn::GetAtt"] as string[]).join(".")}>`;
  return JSON.stringify(v);
}

/** `resume` → `Resume`: the construct's id of a handler's function (its role is `<id>Role`). */
const pascalId = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (s: Statement) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map(flat);

/** Every action without resource-level permissions that may have `Resource: *`, and nothing else. */
const JUSTIFIED_STAR = new Set([
  "xray:PutTraceSegments",
  "xray:PutTelemetryRecords",
  "xray:GetSamplingRules",
  "xray:GetSamplingTargets",
  "logs:CreateLogDelivery",
  "logs:GetLogDelivery",
  "logs:UpdateLogDelivery",
  "logs:DeleteLogDelivery",
  "logs:ListLogDeliveries",
  "logs:PutResourcePolicy",
  "logs:DescribeResourcePolicies",
  "logs:DescribeLogGroups",
  "states:SendTaskSuccess",
  "states:SendTaskFailure",
  "states:SendTaskHeartbeat",
  "cloudwatch:GetMetricData",
  "ecs:RegisterTaskDefinition",
  "ecs:DescribeTaskDefinition",
  "elasticloadbalancing:DescribeRules",
  "elasticloadbalancing:DescribeListeners",
]);

/** The statements that apply to one role: its default policy and every policy attached to it. */
function statementsOfRole(template: Template, roleLogicalId: string): Statement[] {
  const policies = template.findResources("AWS::IAM::Policy");
  return Object.values(policies)
    .filter((p) => ((p.Properties.Roles ?? []) as Json[]).some((r) => r.Ref === roleLogicalId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}

function roleOfFunction(template: Template, handler: HandlerName): string {
  const fns = template.findResources("AWS::Lambda::Function", {
    Properties: { Description: `sfn-rollouts: ${HANDLERS[handler]}` },
  });
  const [fn] = Object.values(fns);
  if (!fn) throw new Error(`no function ${handler}`);
  return (fn.Properties.Role["Fn::GetAtt"] as string[])[0] as string;
}

/** The functions whose roles hold a statement with this Sid, in `HANDLERS` order. */
function holdersOf(template: Template, sid: string): HandlerName[] {
  return (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter((h) =>
    statementsOfRole(template, roleOfFunction(template, h)).some((s) => s.Sid === sid),
  );
}

/** Traffic moves (and sides scale) in these; `checkReady` only reads. */
const TRAFFIC: HandlerName[] = ["begin", "setWeight", "promote", "abort", "resume"];

/** Handlers in `FUNCTION_NEEDS` order, as `holdersOf` lists them. */
const TRAFFIC_ORDER = (handlers: readonly HandlerName[]): HandlerName[] =>
  (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter((h) => handlers.includes(h));

function actionsOfFunction(template: Template, handler: HandlerName): Set<string> {
  return new Set(statementsOfRole(template, roleOfFunction(template, handler)).flatMap(actionsOf));
}

function rolloutStateMachine(template: Template): { id: string; props: Json } {
  const machines = Object.entries(template.findResources("AWS::StepFunctions::StateMachine")).filter(
    ([, r]) => r.Properties.StateMachineName === undefined,
  );
  expect(machines).toHaveLength(1);
  const [id, r] = machines[0] as [string, { Properties: Json }];
  return { id, props: r.Properties };
}

describe("the example stack (the reference canary on ALB + ECS)", () => {
  let stack: RolloutsExampleStack;
  let template: Template;
  let spec: RolloutSpec;

  beforeAll(async () => {
    const app = testApp();
    stack = new RolloutsExampleStack(app, "Example", { ...EXAMPLE_CONTEXT });
    template = Template.fromStack(stack);
    spec = (await loadRollout(EXAMPLE_FILES)).spec;
  });

  it("compiles the spec into one Standard state machine, a state per step, the target embedded", () => {
    const { props } = rolloutStateMachine(template);
    expect(props.StateMachineType).toBe("STANDARD");
    const definition = JSON.parse(flat(props.DefinitionString)) as { States: Record<string, Json> };
    for (const step of ["Step01-SetWeight-25", "Step02-Analysis", "Step03-SetWeight-50", "Step04-Pause-2s"]) {
      expect(Object.keys(definition.States)).toContain(step);
    }
    expect(Object.keys(definition.States)).toContain("Step05-Analysis");
    const settings = {
      type: "alb-ecs",
      listenerArn: EXAMPLE_CONTEXT.listenerArn,
      targetGroupA: EXAMPLE_CONTEXT.targetGroupA,
      targetGroupB: EXAMPLE_CONTEXT.targetGroupB,
      cluster: EXAMPLE_CONTEXT.cluster,
      serviceA: EXAMPLE_CONTEXT.serviceA,
      serviceB: EXAMPLE_CONTEXT.serviceB,
      containerName: EXAMPLE_CONTEXT.containerName,
    };
    // Exactly what the compiler produces for this spec and target (readiness checks: ECS has tasks).
    expect(definition).toEqual(
      JSON.parse(JSON.stringify(compile(spec, { target: settings, readinessChecks: true }))),
    );
    expect(definition.States["Candidate-CheckReady"]).toBeDefined();
    expect(JSON.stringify(definition.States["Step01-SetWeight-25"])).toContain(EXAMPLE_CONTEXT.listenerArn);
  });

  it("grants each target statement only to the functions that call it", () => {
    const expected: Record<string, HandlerName[]> = {
      TrafficDescribe: TRAFFIC,
      TrafficModifyRules: TRAFFIC,
      TrafficModifyListener: TRAFFIC,
      TrafficCreateTestersRule: ["setWeight"],
      TrafficTagTestersRule: ["setWeight"],
      EcsServices: ["begin", "checkReady", "abort", "resume"],
      EcsUpdateServices: ["begin", "abort", "resume"],
      EcsTaskDefinitions: ["begin"],
      EcsTagTaskDefinitions: ["begin"],
      EcsPassTaskRoles: ["begin"],
    };
    for (const [sid, handlers] of Object.entries(expected)) {
      expect(holdersOf(template, sid), sid).toEqual(TRAFFIC_ORDER(handlers));
    }
  });

  it("deploys a function only for what something invokes: the workflow's Tasks, the Timer (resume), the push rules (trigger)", () => {
    expect(Object.keys(HANDLERS).sort()).toEqual(
      [...Object.keys(FUNCTION_PLACEHOLDERS), "resume", "trigger"].sort(),
    );
    const described = Object.values(template.findResources("AWS::Lambda::Function"))
      .map((f) => String(f.Properties.Description))
      .filter((d) => d.startsWith("sfn-rollouts: "));
    expect(described.sort()).toEqual(
      Object.values(HANDLERS)
        .map((h) => `sfn-rollouts: ${h}`)
        .sort(),
    );
  });

  it("fills every function placeholder with that function's ARN", () => {
    const { props } = rolloutStateMachine(template);
    const subs = props.DefinitionSubstitutions as Record<string, Json>;
    expect(Object.keys(subs).sort()).toEqual(Object.values(FUNCTION_PLACEHOLDERS).sort());
    for (const [role, placeholder] of Object.entries(FUNCTION_PLACEHOLDERS)) {
      const fnId = roleOfFunction(template, role as HandlerName).replace(/Role[0-9A-F]{8}$/, "");
      expect(flat(subs[placeholder])).toMatch(new RegExp(`^<${fnId}[0-9A-F]{8}\\.Arn>$`));
    }
  });

  it("logs every execution at level ALL with data to a log group with retention, and traces with X-Ray", () => {
    const { props } = rolloutStateMachine(template);
    expect(props.TracingConfiguration).toEqual({ Enabled: true });
    const logging = props.LoggingConfiguration as {
      Level: string;
      IncludeExecutionData: boolean;
      Destinations: Json[];
    };
    expect(logging.Level).toBe("ALL");
    expect(logging.IncludeExecutionData).toBe(true);
    const destination = logging.Destinations[0] as { CloudWatchLogsLogGroup: Json };
    const groupRef = flat(destination.CloudWatchLogsLogGroup.LogGroupArn);
    const groupId = groupRef.slice(1, groupRef.indexOf("."));
    const group = template.toJSON().Resources[groupId];
    expect(group.Type).toBe("AWS::Logs::LogGroup");
    expect(group.Properties.RetentionInDays).toBe(30);
    expect(group.Properties.LogGroupName).toMatch(/^\/aws\/vendedlogs\/states\//);
  });

  it("lets the state machine invoke exactly the seven step functions", () => {
    const { props } = rolloutStateMachine(template);
    const roleId = (props.RoleArn as Json)["Fn::GetAtt"] as string[];
    const invoke = statementsOfRole(template, roleId[0] as string).filter((s) =>
      actionsOf(s).includes("lambda:InvokeFunction"),
    );
    expect(invoke).toHaveLength(1);
    expect(resourcesOf(invoke[0] as Statement)).toHaveLength(Object.keys(FUNCTION_PLACEHOLDERS).length);
    expect(resourcesOf(invoke[0] as Statement).every((r) => /^<Controller\w+\.Arn>$/.test(r))).toBe(true);
  });

  it("starts the rollout on a successful ECR push of a matching tag, through the trigger", () => {
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: {
        source: ["aws.ecr"],
        "detail-type": ["ECR Image Action"],
        detail: {
          "action-type": ["PUSH"],
          result: ["SUCCESS"],
          "repository-name": [EXAMPLE_CONTEXT.repositoryName],
          "image-tag": [{ prefix: "v" }],
        },
      },
      Targets: [
        Match.objectLike({ Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^ControllerTrigger"), "Arn"] } }),
      ],
    });
    template.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunction",
      Principal: "events.amazonaws.com",
      FunctionName: { "Fn::GetAtt": [Match.stringLikeRegexp("^ControllerTrigger"), "Arn"] },
    });
  });

  it("routes the push to the rollout's state machine in the trigger's environment", () => {
    const [trigger] = Object.values(
      template.findResources("AWS::Lambda::Function", {
        Properties: { Description: "sfn-rollouts: trigger" },
      }),
    );
    const routes = JSON.parse(flat(trigger?.Properties.Environment.Variables[ENV.rollouts]));
    const { id } = rolloutStateMachine(template);
    expect(routes).toEqual([
      { rollout: "demo", stateMachineArn: `<${id}>`, repository: "demo", tags: ["v*"] },
    ]);
  });

  it("creates the table: pk/sk, on demand, PITR, TTL on expiresAt, encryption, the list index", () => {
    template.resourceCountIs("AWS::DynamoDB::Table", 1);
    template.hasResource("AWS::DynamoDB::Table", {
      DeletionPolicy: "Retain",
      Properties: {
        KeySchema: [
          { AttributeName: TABLE.partitionKey, KeyType: "HASH" },
          { AttributeName: TABLE.sortKey, KeyType: "RANGE" },
        ],
        BillingMode: "PAY_PER_REQUEST",
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: TABLE.ttlAttribute, Enabled: true },
        SSESpecification: { SSEEnabled: true },
        GlobalSecondaryIndexes: [
          {
            IndexName: TABLE.listIndex.name,
            KeySchema: [
              { AttributeName: TABLE.listIndex.partitionKey, KeyType: "HASH" },
              { AttributeName: TABLE.listIndex.sortKey, KeyType: "RANGE" },
            ],
            Projection: { ProjectionType: "ALL" },
          },
        ],
      },
    });
  });

  it("creates one Node.js 22 ARM64 function per handler, traced, with its log group and the shared environment", () => {
    const fns = template.findResources("AWS::Lambda::Function");
    expect(Object.keys(fns)).toHaveLength(Object.keys(HANDLERS).length);
    for (const fn of Object.values(fns)) {
      const p = fn.Properties;
      expect(p.Runtime).toBe("nodejs22.x");
      expect(p.Architectures).toEqual(["arm64"]);
      expect(p.TracingConfig).toEqual({ Mode: "Active" });
      expect(p.Handler).toBe("index.handler");
      expect(p.LoggingConfig.LogGroup).toBeDefined();
      const env = p.Environment.Variables as Json;
      for (const name of [ENV.tableName, ENV.eventBusName, ENV.scheduleGroup, ENV.schedulerRoleArn]) {
        expect(env[name]).toBeDefined();
      }
      expect(flat(env[ENV.resumeFunctionArn])).toMatch(/:function:Example-Controller-[0-9A-F]{8}-resume$/);
      expect(flat(env[ENV.tickerStateMachineArn])).toMatch(
        /:stateMachine:Example-Controller-[0-9A-F]{8}-ticker$/,
      );
      expect(env[ENV.prometheusUrl]).toBe("http://prometheus.internal:9090");
      expect(env[ENV.rollouts] !== undefined).toBe(p.Description === "sfn-rollouts: trigger");
    }
    const groups = Object.values(template.findResources("AWS::Logs::LogGroup"));
    expect(groups.every((g) => g.Properties.RetentionInDays === 30)).toBe(true);
  });

  it("uses no Resource * except for actions without resource-level permissions", () => {
    const offending: string[] = [];
    for (const [id, policy] of Object.entries(template.findResources("AWS::IAM::Policy"))) {
      for (const s of policy.Properties.PolicyDocument.Statement as Statement[]) {
        if (!resourcesOf(s).includes("*")) continue;
        for (const a of actionsOf(s)) if (!JUSTIFIED_STAR.has(a)) offending.push(`${id}: ${a}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("grants each function only what its handler calls", () => {
    const has = (h: HandlerName, action: string) => actionsOfFunction(template, h).has(action);
    for (const name of Object.keys(HANDLERS) as HandlerName[]) {
      const needs = FUNCTION_NEEDS[name];
      expect(has(name, "dynamodb:UpdateItem"), name).toBe(true);
      expect(has(name, "dynamodb:Scan"), name).toBe(false);
      expect(has(name, "states:SendTaskSuccess"), name).toBe(needs.includes("tokens"));
      expect(has(name, "scheduler:CreateSchedule"), name).toBe(needs.includes("timer"));
      expect(has(name, "iam:PassRole") && needs.includes("timer"), name).toBe(needs.includes("timer"));
      // Of the target, each function gets what the port methods it calls send (readiness only reads).
      expect(has(name, "elasticloadbalancing:ModifyListener"), name).toBe(TRAFFIC.includes(name));
      expect(has(name, "ecs:UpdateService"), name).toBe(["begin", "abort", "resume"].includes(name));
      expect(has(name, "ecs:DescribeServices"), name).toBe(
        needs.includes("target") && name !== "setWeight" && name !== "promote",
      );
      expect(has(name, "events:PutEvents"), name).toBe(needs.includes("events"));
      expect(has(name, "states:StartExecution"), name).toBe(
        needs.includes("executions") || needs.includes("timer"),
      );
      expect(has(name, "lambda:InvokeFunction"), name).toBe(false);
    }
    // The handlers read and write single items; only the CLI lists (Query, the byKind index).
    for (const name of Object.keys(HANDLERS) as HandlerName[]) {
      const table = statementsOfRole(template, roleOfFunction(template, name)).filter((s) =>
        actionsOf(s).some((a) => a.startsWith("dynamodb:")),
      );
      expect(
        table.map((s) => ({ actions: actionsOf(s), resources: resourcesOf(s) })),
        name,
      ).toEqual([
        {
          actions: ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
          resources: ["<ControllerTable4B4ABDED.Arn>"],
        },
      ]);
    }
    // The example's metrics are Prometheus over HTTP: no CloudWatch or AMP permission anywhere.
    expect(has("resume", "cloudwatch:GetMetricData")).toBe(false);
    expect(has("resume", "aps:QueryMetrics")).toBe(false);
  });

  it("scopes the target's grants to the listener, its rules, the two services and the passed roles", () => {
    const statements = (["begin", "setWeight"] as const).flatMap((h) =>
      statementsOfRole(template, roleOfFunction(template, h)),
    );
    const find = (action: string) =>
      statements.filter((s) => actionsOf(s).includes(action)).flatMap(resourcesOf);
    const listener = EXAMPLE_CONTEXT.listenerArn;
    const rules = `${listener.replace(":listener/", ":listener-rule/")}/*`;
    expect(find("elasticloadbalancing:ModifyListener")).toEqual([listener, listener]);
    expect(find("elasticloadbalancing:ModifyRule")).toEqual([rules, rules]);
    expect(find("elasticloadbalancing:CreateRule")).toEqual([listener, rules]);
    expect(find("ecs:UpdateService")).toEqual([
      "arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:service/demo/demo-a",
      "arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:service/demo/demo-b",
    ]);
    const passRole = statements.find((s) => s.Sid === "EcsPassTaskRoles");
    expect(resourcesOf(passRole as Statement)).toEqual([
      EXAMPLE_CONTEXT.taskRoleArn,
      EXAMPLE_CONTEXT.executionRoleArn,
    ]);
    expect(passRole?.Condition).toEqual({
      StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" },
    });
  });

  it("gives the trigger StartExecution on the rollout and Describe/Stop on its executions only", () => {
    const { id } = rolloutStateMachine(template);
    const statements = statementsOfRole(template, roleOfFunction(template, "trigger"));
    const find = (action: string) =>
      statements.filter((s) => actionsOf(s).includes(action)).flatMap(resourcesOf);
    expect(find("states:StartExecution")).toEqual([`<${id}>`]);
    const executions = `arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<${id}.Name>:*`;
    expect(find("states:DescribeExecution")).toEqual([executions]);
    expect(find("states:StopExecution")).toEqual([executions]);
  });

  it("lets Scheduler, and only Scheduler of this account and group, invoke the resume function only", () => {
    const roles = template.findResources("AWS::IAM::Role", {
      Properties: {
        AssumeRolePolicyDocument: {
          Statement: [Match.objectLike({ Principal: { Service: "scheduler.amazonaws.com" } })],
        },
      },
    });
    const [role] = Object.values(roles);
    const trust = role?.Properties.AssumeRolePolicyDocument.Statement[0];
    expect(trust.Condition.StringEquals).toEqual({ "aws:SourceAccount": { Ref: "AWS::AccountId" } });
    expect(flat(trust.Condition.ArnEquals["aws:SourceArn"])).toMatch(
      /:schedule-group\/Example-Controller-[0-9A-F]{8}-timers$/,
    );
    const statements = role?.Properties.Policies[0].PolicyDocument.Statement as Statement[];
    expect(statements).toHaveLength(1);
    expect(actionsOf(statements[0] as Statement)).toEqual(["lambda:InvokeFunction"]);
    expect(resourcesOf(statements[0] as Statement)[0]).toMatch(
      /:function:Example-Controller-[0-9A-F]{8}-resume$/,
    );
    template.hasResourceProperties("AWS::Scheduler::ScheduleGroup", {
      Name: Match.stringLikeRegexp("^Example-Controller-[0-9A-F]{8}-timers$"),
    });
  });

  it("builds the ticker: an Express Wait SecondsPath $.seconds, then invoke resume asynchronously with $.payload", () => {
    const [ticker] = Object.values(
      template.findResources("AWS::StepFunctions::StateMachine", {
        Properties: { StateMachineName: Match.stringLikeRegexp("-ticker$") },
      }),
    );
    const definition = JSON.parse(flat(ticker?.Properties.DefinitionString));
    expect(definition.StartAt).toBe("Wait");
    expect(definition.States.Wait).toEqual({ Type: "Wait", SecondsPath: "$.seconds", Next: "Resume" });
    expect(ticker?.Properties.StateMachineType).toBe("EXPRESS");
    expect(definition.States.Resume.Parameters).toEqual({
      FunctionName: "${ResumeFunctionArn}",
      InvocationType: "Event",
      "Payload.$": "$.payload",
    });
    expect(flat(ticker?.Properties.DefinitionSubstitutions.ResumeFunctionArn)).toMatch(
      /^<ControllerResume[0-9A-F]{8}\.Arn>$/,
    );
    expect(ticker?.Properties.LoggingConfiguration.Level).toBe("ALL");
    // An Express execution cannot be stopped: no function is granted StopExecution on the ticker.
    for (const role of Object.keys(template.findResources("AWS::IAM::Role"))) {
      for (const statement of statementsOfRole(template, role)) {
        if (actionsOf(statement).includes("states:StopExecution"))
          expect(resourcesOf(statement).join(" ")).not.toMatch(/ticker/);
      }
    }
  });

  it("keeps what the Timer and the trigger could not deliver in encrypted dead-letter queues, with an alarm each", () => {
    const all = template.findResources("AWS::SQS::Queue");
    expect(Object.keys(all).sort()).toEqual([
      expect.stringMatching(/^ControllerTimerDeadLetters[0-9A-F]{8}$/),
      expect.stringMatching(/^ControllerTimerRedelivery[0-9A-F]{8}$/),
      expect.stringMatching(/^ControllerTriggerDeadLetters[0-9A-F]{8}$/),
    ]);
    const queues = Object.fromEntries(Object.entries(all).filter(([id]) => id.includes("DeadLetters")));
    const [timerQueue, triggerQueue] = Object.keys(queues).sort() as [string, string];
    for (const queue of Object.values(queues)) {
      expect(queue.Properties).toMatchObject({
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 1_209_600,
      });
    }
    for (const id of [timerQueue, triggerQueue]) {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/SQS",
        MetricName: "ApproximateNumberOfMessagesVisible",
        Dimensions: [{ Name: "QueueName", Value: { "Fn::GetAtt": [id, "QueueName"] } }],
        ComparisonOperator: "GreaterThanThreshold",
        Threshold: 0,
        TreatMissingData: "notBreaching",
      });
    }
    // Scheduler writes lost firings with the role it invokes resume with; the schedules name the queue.
    const [role] = Object.values(
      template.findResources("AWS::IAM::Role", {
        Properties: { Description: Match.stringLikeRegexp("EventBridge Scheduler") },
      }),
    );
    const deadLetters = ((role?.Properties.Policies ?? []) as Json[]).find(
      (p) => p.PolicyName === "DeadLetters",
    );
    expect((deadLetters?.PolicyDocument as { Statement: Statement[] } | undefined)?.Statement).toEqual([
      expect.objectContaining({ Action: "sqs:SendMessage", Resource: { "Fn::GetAtt": [timerQueue, "Arn"] } }),
    ]);
    const resume = Object.values(
      template.findResources("AWS::Lambda::Function", {
        Properties: { Description: "sfn-rollouts: resume" },
      }),
    )[0];
    expect(resume?.Properties.Environment.Variables[ENV.timerDeadLetterArn]).toEqual({
      "Fn::GetAtt": [timerQueue, "Arn"],
    });
    // The ticker's Catch sends the firing to the same queue, then fails the execution.
    const [ticker] = Object.values(
      template.findResources("AWS::StepFunctions::StateMachine", {
        Properties: { StateMachineName: Match.stringLikeRegexp("-ticker$") },
      }),
    );
    const definition = JSON.parse(flat(ticker?.Properties.DefinitionString));
    expect(definition.States.Resume.Catch).toEqual([
      { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "DeadLetter" },
    ]);
    expect(definition.States.DeadLetter).toMatchObject({
      Resource: "arn:aws:states:::sqs:sendMessage",
      Parameters: { QueueUrl: "${DeadLetterQueueUrl}" },
      Next: "Lost",
    });
    expect(definition.States.Lost).toMatchObject({ Type: "Fail", Error: "TimerFiringLost" });
    expect(ticker?.Properties.DefinitionSubstitutions.DeadLetterQueueUrl).toEqual({ Ref: timerQueue });
    // The push rule's target: 8 retries, then the trigger's queue, which lets only that rule write.
    const [rule] = Object.values(template.findResources("AWS::Events::Rule"));
    expect(rule?.Properties.Targets[0]).toMatchObject({
      RetryPolicy: { MaximumRetryAttempts: 8 },
      DeadLetterConfig: { Arn: { "Fn::GetAtt": [triggerQueue, "Arn"] } },
    });
    const policies = Object.values(template.findResources("AWS::SQS::QueuePolicy"));
    const triggerPolicy = policies.find((p) => JSON.stringify(p.Properties.Queues).includes(triggerQueue));
    const allows = ((triggerPolicy?.Properties.PolicyDocument.Statement ?? []) as Array<Json>).filter(
      (st) => st.Effect === "Allow",
    );
    expect(allows).toEqual([
      expect.objectContaining({
        Action: "sqs:SendMessage",
        Principal: { Service: "events.amazonaws.com" },
        Condition: { ArnEquals: { "aws:SourceArn": expect.anything() } },
      }),
    ]);
  });

  it("sends what resume throws, after Lambda's async retries, to its redelivery queue, and what trigger throws to its dead letters", () => {
    const [timerDeadLetters, redeliveryQueue, triggerQueue] = Object.keys(
      template.findResources("AWS::SQS::Queue"),
    ).sort() as [string, string, string];
    const functionId = (name: string) =>
      Object.keys(
        template.findResources("AWS::Lambda::Function", {
          Properties: { Description: `sfn-rollouts: ${name}` },
        }),
      )[0];
    const configs = Object.values(template.findResources("AWS::Lambda::EventInvokeConfig"));
    const configOf = (id: string | undefined) =>
      configs.find((c) => JSON.stringify(c.Properties.FunctionName).includes(`"${id}"`))?.Properties;
    for (const [name, queue] of [
      ["resume", redeliveryQueue],
      ["trigger", triggerQueue],
    ] as const) {
      const config = configOf(functionId(name));
      expect(config, `${name} has an EventInvokeConfig`).toMatchObject({
        Qualifier: "$LATEST",
        MaximumRetryAttempts: TIMER_DELIVERY.asyncRetryAttempts,
        MaximumEventAgeInSeconds: TIMER_DELIVERY.asyncMaximumEventAgeSeconds,
        DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": [queue, "Arn"] } } },
      });
    }
    expect(configs).toHaveLength(2);
    // The destination writes with the function's own role: SendMessage on its queue, nothing more.
    const sends = (name: string) =>
      (
        Object.values(template.findResources("AWS::IAM::Policy")).filter((p) =>
          JSON.stringify(p.Properties.Roles).includes(`${pascalId(name)}Role`),
        ) as Array<{ Properties: { PolicyDocument: { Statement: Statement[] } } }>
      )
        .flatMap((p) => p.Properties.PolicyDocument.Statement)
        .filter((st) => actionsOf(st).some((a) => a.startsWith("sqs:")));
    expect(sends("resume")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Action: "sqs:SendMessage",
          Resource: { "Fn::GetAtt": [redeliveryQueue, "Arn"] },
        }),
      ]),
    );
    // Resume sends nothing to the dead-letter queue itself: SQS moves what it still fails there.
    expect(JSON.stringify(sends("resume"))).not.toContain(timerDeadLetters);
    expect(sends("trigger")).toEqual([
      expect.objectContaining({
        Action: "sqs:SendMessage",
        Resource: { "Fn::GetAtt": [triggerQueue, "Arn"] },
      }),
    ]);
  });

  it("hands a firing resume failed on every async attempt back to resume from a queue, then to the dead letters", () => {
    const [timerDeadLetters, redeliveryQueue] = Object.keys(
      template.findResources("AWS::SQS::Queue"),
    ).sort() as [string, string];
    expect(redeliveryQueue).toMatch(/^ControllerTimerRedelivery/);
    const queue = template.findResources("AWS::SQS::Queue")[redeliveryQueue];
    expect(queue?.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      VisibilityTimeout: TIMER_DELIVERY.redeliveryVisibilitySeconds,
      RedrivePolicy: {
        deadLetterTargetArn: { "Fn::GetAtt": [timerDeadLetters, "Arn"] },
        maxReceiveCount: TIMER_DELIVERY.redeliveryReceives,
      },
    });
    // Lambda refuses an event source whose queue hides a message for less than the function's timeout.
    const resumeId = Object.keys(
      template.findResources("AWS::Lambda::Function", {
        Properties: { Description: "sfn-rollouts: resume" },
      }),
    )[0] as string;
    const resume = template.findResources("AWS::Lambda::Function")[resumeId];
    expect(TIMER_DELIVERY.redeliveryVisibilitySeconds).toBeGreaterThanOrEqual(resume?.Properties.Timeout);
    const mappings = Object.values(template.findResources("AWS::Lambda::EventSourceMapping"));
    expect(mappings.map((m) => m.Properties)).toEqual([
      expect.objectContaining({
        EventSourceArn: { "Fn::GetAtt": [redeliveryQueue, "Arn"] },
        FunctionName: { Ref: resumeId },
        FunctionResponseTypes: ["ReportBatchItemFailures"],
      }),
    ]);
    // The event source reads with resume's role, on that queue only.
    const consumes = Object.values(template.findResources("AWS::IAM::Policy"))
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
      .filter((st) => actionsOf(st).includes("sqs:ReceiveMessage"));
    expect(consumes.map((st) => st.Resource)).toEqual([{ "Fn::GetAtt": [redeliveryQueue, "Arn"] }]);
  });

  it("has a dashboard of weight, analysis runs and measurements by phase, executions, and an alarm on failures", () => {
    // Failed executions from the state machine's log, superseded ones left out (infra/dashboard.ts).
    template.hasResourceProperties("AWS::Logs::MetricFilter", {
      FilterPattern: '{ ($.type = "ExecutionFailed") && ($.details.error != "ExecutionSuperseded") }',
      MetricTransformations: [
        { MetricNamespace: METRICS.namespace, MetricName: "ExecutionsFailed-demo", MetricValue: "1" },
      ],
    });
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Namespace: METRICS.namespace,
      MetricName: "ExecutionsFailed-demo",
      Threshold: 1,
      TreatMissingData: "notBreaching",
    });
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    const body = flat(dashboard?.Properties.DashboardBody);
    for (const m of [METRICS.canaryWeight, METRICS.analysisRuns, METRICS.measurements, "ExecutionsFailed"]) {
      expect(body).toContain(m);
    }
    expect(body).toContain(`"Phase","Inconclusive"`);
    expect(body).toContain(`"${METRICS.dimension}","demo"`);
  });

  it("grantOperate: the table, task tokens, and the rollouts' executions — nothing more", () => {
    const [policy] = Object.values(
      template.findResources("AWS::IAM::Policy", { Properties: { Roles: ["rollouts-operator"] } }),
    );
    const statements = policy?.Properties.PolicyDocument.Statement as Statement[];
    const actions = statements.flatMap(actionsOf).sort();
    expect(actions).toEqual(
      [
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "states:DescribeExecution",
        "states:GetExecutionHistory",
        "states:ListExecutions",
        "states:ListTagsForResource",
        "states:SendTaskFailure",
        "states:SendTaskHeartbeat",
        "states:SendTaskSuccess",
        "states:StartExecution",
      ].sort(),
    );
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings, each acknowledgement with a reason", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
    const acks = stack.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, { reason?: string } | string>));
    expect(acks.length).toBeGreaterThan(10);
    for (const [id, value] of acks) {
      const reason = typeof value === "string" ? value : (value.reason ?? "");
      expect(reason.length, id).toBeGreaterThan(30);
    }
    expect(Annotations.fromStack(stack).findError("*", Match.stringLikeRegexp("AwsSolutions-.*"))).toEqual(
      [],
    );
    expect(Annotations.fromStack(stack).findWarning("*", Match.stringLikeRegexp("AwsSolutions-.*"))).toEqual(
      [],
    );
    expect(Annotations.fromStack(stack).findError("*", Match.anyValue())).toEqual([]);
  });
});

const LAMBDA_ERRORS = `${EXAMPLE_FILES[0]?.replace(/rollout\.yaml$/, "")}templates/lambda-errors.yaml`;

/** An Argo Rollout of a Lambda alias whose analysis reads CloudWatch (the lambda-errors template). */
function aliasRolloutFiles(): string[] {
  const dir = mkdtempSync(join(tmpdir(), "infra-"));
  const rollout = join(dir, "rollout.yaml");
  writeFileSync(
    rollout,
    [
      "apiVersion: argoproj.io/v1alpha1",
      "kind: Rollout",
      "metadata: { name: api }",
      "spec:",
      "  replicas: 1",
      "  template:",
      "    spec:",
      "      containers: [{ name: app, image: api }]",
      "  strategy:",
      "    canary:",
      "      steps:",
      "        - setWeight: 10",
      "        - analysis:",
      "            templates: [{ templateName: lambda-errors }]",
      "            args:",
      "              - { name: function-name, value: api }",
      "              - { name: alias, value: live }",
      "              - { name: version, value: '2' }",
      "        - setWeight: 50",
      "",
    ].join("\n"),
  );
  return [rollout, LAMBDA_ERRORS];
}

describe("a Lambda alias target, an AMP workspace, CloudWatch metrics and a customer key", () => {
  let stack: Stack;
  let template: Template;
  let operatorId: string;

  beforeAll(() => {
    const app = testApp();
    stack = new Stack(app, "Alias", { env: { account: "111122223333", region: "eu-west-1" } });
    const key = new kms.Key(stack, "Key", { enableKeyRotation: true });
    const operator = new iam.Role(stack, "Operator", { assumedBy: new iam.AccountRootPrincipal() });
    operatorId = stack.getLogicalId(operator.node.defaultChild as iam.CfnRole);
    const controller = new RolloutController(stack, "Controller", {
      prometheus: { workspace: "arn:aws:aps:eu-west-1:111122223333:workspace/ws-1234abcd" },
      encryptionKey: key,
      logRetention: logs.RetentionDays.ONE_WEEK,
      removalPolicy: RemovalPolicy.DESTROY,
      tableName: "rollouts",
    });
    // Granted before the rollout exists: the rollout added later is covered as well.
    controller.grantOperate(operator);
    controller.addRollout("Api", {
      spec: { files: aliasRolloutFiles() },
      target: { type: "lambda-alias", functionName: "api", alias: "live" },
      trigger: {
        repository: ecr.Repository.fromRepositoryName(stack, "Repo", "api"),
        tagPattern: "release-*-eu",
      },
    });
    template = Template.fromStack(stack);
  });

  it("polls readiness only for the candidate (no pods), and filters tags with a wildcard", () => {
    const { props } = rolloutStateMachine(template);
    const definition = JSON.parse(flat(props.DefinitionString)) as { States: Record<string, Json> };
    expect(Object.keys(definition.States)).toEqual(
      expect.arrayContaining(["Step01-SetWeight-10", "Step02-Analysis", "Step03-SetWeight-50"]),
    );
    expect(Object.keys(definition.States).filter((s) => s.endsWith("-CheckReady"))).toEqual([
      "Candidate-CheckReady",
    ]);
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: { detail: { "repository-name": ["api"], "image-tag": [{ wildcard: "release-*-eu" }] } },
    });
  });

  it("grants the alias's function and its versions, the pushed image, and nothing of ELB or ECS", () => {
    const actions = new Set(
      (["begin", "checkReady", "promote"] as const).flatMap((h) => [...actionsOfFunction(template, h)]),
    );
    for (const a of [
      "lambda:UpdateAlias",
      "lambda:UpdateFunctionCode",
      "lambda:PublishVersion",
      "ecr:BatchGetImage",
    ]) {
      expect(actions.has(a), a).toBe(true);
    }
    // No code path reads the function itself (GetFunction): readiness reads its configuration.
    expect(actions.has("lambda:GetFunction")).toBe(false);
    expect([...actions].some((a) => a.startsWith("elasticloadbalancing:") || a.startsWith("ecs:"))).toBe(
      false,
    );
    const statements = statementsOfRole(template, roleOfFunction(template, "promote"));
    // The Service Authorization Reference: GetAlias and UpdateAlias authorize against the
    // `function` resource type, the unqualified function ARN (not `function:NAME:ALIAS`).
    const alias = statements.find((s) => s.Sid === "LambdaAlias");
    expect(actionsOf(alias as Statement)).toEqual(["lambda:GetAlias", "lambda:UpdateAlias"]);
    expect(resourcesOf(alias as Statement)).toEqual([
      "arn:<AWS::Partition>:lambda:eu-west-1:111122223333:function:api",
    ]);
  });

  it("grants each target statement only to the functions that call it", () => {
    const expected: Record<string, HandlerName[]> = {
      LambdaCode: ["begin"],
      LambdaImage: ["begin"],
      LambdaPublish: ["checkReady"],
      LambdaVersions: ["checkReady"],
      LambdaAlias: TRAFFIC,
    };
    for (const [sid, handlers] of Object.entries(expected)) {
      expect(holdersOf(template, sid), sid).toEqual(TRAFFIC_ORDER(handlers));
    }
  });

  it("signs for the workspace: its URL and region in the environment, aps:QueryMetrics on it for the analysis functions", () => {
    const [tick] = Object.values(
      template.findResources("AWS::Lambda::Function", {
        Properties: { Description: "sfn-rollouts: resume" },
      }),
    );
    expect(tick?.Properties.Environment.Variables[ENV.prometheusUrl]).toBe(
      "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1234abcd",
    );
    expect(tick?.Properties.Environment.Variables[ENV.prometheusSigv4Region]).toBe("eu-west-1");
    const aps = statementsOfRole(template, roleOfFunction(template, "resume")).find((s) =>
      actionsOf(s).includes("aps:QueryMetrics"),
    );
    expect(resourcesOf(aps as Statement)).toEqual([
      "arn:<AWS::Partition>:aps:eu-west-1:111122223333:workspace/ws-1234abcd",
    ]);
    expect(actionsOfFunction(template, "setWeight").has("aps:QueryMetrics")).toBe(false);
  });

  it("grants cloudwatch:GetMetricData to the measuring functions because the analysis reads CloudWatch", () => {
    for (const name of Object.keys(HANDLERS) as HandlerName[]) {
      expect(actionsOfFunction(template, name).has("cloudwatch:GetMetricData"), name).toBe(
        FUNCTION_NEEDS[name].includes("metrics"),
      );
    }
  });

  it("encrypts the table with the customer key, and every function may use it", () => {
    template.hasResourceProperties("AWS::DynamoDB::Table", {
      TableName: "rollouts",
      SSESpecification: { SSEEnabled: true, SSEType: "KMS", KMSMasterKeyId: Match.anyValue() },
    });
    template.hasResource("AWS::DynamoDB::Table", { DeletionPolicy: "Delete" });
    for (const name of Object.keys(HANDLERS) as HandlerName[]) {
      const key = statementsOfRole(template, roleOfFunction(template, name)).find(
        (s) => s.Sid === "TableKey",
      );
      expect(actionsOf(key as Statement), name).toEqual([
        "kms:Decrypt",
        "kms:Encrypt",
        "kms:GenerateDataKey",
        "kms:DescribeKey",
      ]);
      expect(key?.Condition).toEqual({
        StringEquals: { "kms:ViaService": "dynamodb.eu-west-1.amazonaws.com" },
      });
    }
    const groups = Object.values(template.findResources("AWS::Logs::LogGroup"));
    expect(groups.every((g) => g.Properties.RetentionInDays === 7)).toBe(true);
  });

  it("covers a rollout added after grantOperate", () => {
    const { id } = rolloutStateMachine(template);
    const statements = statementsOfRole(template, operatorId);
    expect(
      statements.filter((s) => actionsOf(s).includes("states:StartExecution")).flatMap(resourcesOf),
    ).toEqual([`<${id}>`]);
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe("a SageMaker endpoint target", () => {
  let stack: Stack;
  let template: Template;

  beforeAll(() => {
    stack = new Stack(testApp(), "Model", { env: { account: "111122223333", region: "eu-west-1" } });
    const controller = new RolloutController(stack, "Controller", { cloudWatchMetrics: false });
    controller.addRollout("Ranker", {
      spec: { files: ["examples/model-shadow.yaml"] },
      target: {
        type: "sagemaker",
        endpointName: "Ranker-Prod",
        executionRoleArn: "arn:aws:iam::111122223333:role/ranker-sagemaker",
        modelPackageGroupName: "ranker",
      },
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "ranker") },
    });
    template = Template.fromStack(stack);
  });

  it("polls readiness after every traffic step, the mirror steps included: the endpoint is Updating after each", () => {
    const { props } = rolloutStateMachine(template);
    const definition = JSON.parse(flat(props.DefinitionString)) as { States: Record<string, Json> };
    expect(Object.keys(definition.States).filter((s) => s.endsWith("-CheckReady"))).toEqual(
      expect.arrayContaining([
        "Candidate-CheckReady",
        "Step01-SetMirrorRoute-shadow-CheckReady",
        "Step03-SetMirrorRoute-shadow-CheckReady",
        "Step04-SetWeight-25-CheckReady",
      ]),
    );
  });

  it("grants each target statement only to the functions that call it", () => {
    const movers = TRAFFIC_ORDER([...TRAFFIC, "checkReady"]);
    const expected: Record<string, HandlerName[]> = {
      SageMakerEndpoint: movers,
      SageMakerEndpointUpdates: TRAFFIC,
      SageMakerEndpointConfigs: ["begin"],
      SageMakerEndpointConfigUpdates: TRAFFIC,
      SageMakerCreatedConfigs: ["begin", "setWeight", "promote", "resume"],
      SageMakerCreatedModels: ["begin"],
      SageMakerDeleteLeftovers: ["resume"],
      SageMakerPassExecutionRole: ["begin"],
      SageMakerModelPackages: movers,
      SageMakerModelPackageGroup: movers,
    };
    for (const [sid, handlers] of Object.entries(expected)) {
      expect(holdersOf(template, sid), sid).toEqual(TRAFFIC_ORDER(handlers));
    }
    const created = statementsOfRole(template, roleOfFunction(template, "begin")).find(
      (s) => s.Sid === "SageMakerCreatedModels",
    );
    expect(actionsOf(created as Statement)).toEqual(["sagemaker:CreateModel"]);
  });

  it("scopes the target's grants to the endpoint, the configs and models it creates, the package group and the execution role", () => {
    const statements = statementsOfRole(template, roleOfFunction(template, "begin"));
    const bySid = (sid: string) => resourcesOf(statements.find((s) => s.Sid === sid) as Statement);
    const arn = "arn:<AWS::Partition>:sagemaker:eu-west-1:111122223333";
    expect(bySid("SageMakerEndpoint")).toEqual([`${arn}:endpoint/ranker-prod`]);
    expect(bySid("SageMakerCreatedConfigs")).toEqual([`${arn}:endpoint-config/ranker-prod-r-*`]);
    expect(bySid("SageMakerCreatedModels")).toEqual([`${arn}:model/ranker-prod-r-*`]);
    expect(bySid("SageMakerModelPackages")).toEqual([`${arn}:model-package/ranker/*`]);
    const pass = statements.find((s) => s.Sid === "SageMakerPassExecutionRole");
    expect(resourcesOf(pass as Statement)).toEqual(["arn:aws:iam::111122223333:role/ranker-sagemaker"]);
    expect(pass?.Condition).toEqual({ StringEquals: { "iam:PassedToService": "sagemaker.amazonaws.com" } });
    const actions = actionsOfFunction(template, "setWeight");
    expect(actions.has("sagemaker:UpdateEndpointWeightsAndCapacities")).toBe(true);
    expect(actions.has("sagemaker:CreateModel")).toBe(false);
    expect(
      [...actions].some((a) => a.startsWith("elasticloadbalancing:") || a.startsWith("lambda:Update")),
    ).toBe(false);
    expect(
      statements
        .filter((s) => resourcesOf(s).includes("*"))
        .flatMap(actionsOf)
        .filter((a) => a.startsWith("sagemaker:")),
    ).toEqual([]);
  });

  it("starts the rollout when a version of the package group is approved, and may record the outcome on the group", () => {
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: {
        source: ["aws.sagemaker"],
        "detail-type": ["SageMaker Model Package State Change"],
        detail: { ModelPackageGroupName: ["ranker"], ModelApprovalStatus: ["Approved"] },
      },
    });
    const [trigger] = Object.values(
      template.findResources("AWS::Lambda::Function", {
        Properties: { Description: "sfn-rollouts: trigger" },
      }),
    );
    const routes = JSON.parse(flat(trigger?.Properties.Environment.Variables[ENV.rollouts])) as {
      repository: string;
    }[];
    expect(routes.map((r) => r.repository).sort()).toEqual(["ranker", "sagemaker:ranker"]);
    const statements = statementsOfRole(template, roleOfFunction(template, "promote"));
    const group = statements.find((s) => s.Sid === "SageMakerModelPackageGroup");
    expect(resourcesOf(group as Statement)).toEqual([
      "arn:<AWS::Partition>:sagemaker:eu-west-1:111122223333:model-package-group/ranker",
    ]);
    expect(actionsOf(statements.find((s) => s.Sid === "SageMakerModelPackages") as Statement)).toContain(
      "sagemaker:UpdateModelPackage",
    );
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe("a target plugin", () => {
  const account = { account: "111122223333", region: "eu-west-1" };
  const ARN = "arn:aws:lambda:eu-west-1:111122223333:function:mesh-router";
  const target = {
    type: "plugin" as const,
    name: "mesh",
    functionArn: ARN,
    config: { mesh: "prod", routes: [1, 2] },
  };
  /** The functions that call the target, and those that do not. */
  const callers = (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter((h) =>
    FUNCTION_NEEDS[h].includes("target"),
  );
  const others = (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter((h) => !callers.includes(h));
  let stack: Stack;
  let template: Template;

  /** The resources every statement granting lambda:InvokeFunction to `handler`'s role names. */
  const invokable = (t: Template, handler: HandlerName) =>
    statementsOfRole(t, roleOfFunction(t, handler))
      .filter((s) => actionsOf(s).includes("lambda:InvokeFunction"))
      .flatMap(resourcesOf);

  beforeAll(() => {
    stack = new Stack(testApp(), "Plugin", { env: account });
    const controller = new RolloutController(stack, "Controller", { cloudWatchMetrics: false });
    controller.addRollout("Mesh", {
      // A mirror step is the plugin's to refuse when it runs: the construct cannot know.
      spec: { files: ["examples/model-shadow.yaml"] },
      target,
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "mesh") },
    });
    template = Template.fromStack(stack);
  });

  it("embeds the plugin's settings in the Tasks as the compiler does, and polls readiness for the candidate only", () => {
    const { props } = rolloutStateMachine(template);
    const definition = JSON.parse(flat(props.DefinitionString)) as { States: Record<string, Json> };
    const spec = loadRolloutSync(["examples/model-shadow.yaml"]);
    expect(definition).toEqual(JSON.parse(JSON.stringify(compile(spec, { target, readinessChecks: false }))));
    expect(Object.keys(definition.States).filter((s) => s.endsWith("-CheckReady"))).toEqual([
      "Candidate-CheckReady",
    ]);
  });

  it("lets exactly the functions that move traffic invoke exactly the plugin's function", () => {
    for (const handler of callers) {
      const statement = statementsOfRole(template, roleOfFunction(template, handler)).find(
        (s) => s.Sid === "TargetPlugin",
      );
      expect(statement && actionsOf(statement), handler).toEqual(["lambda:InvokeFunction"]);
      expect(invokable(template, handler), handler).toEqual([ARN]);
    }
    for (const handler of others) expect(invokable(template, handler), handler).not.toContain(ARN);
  });

  it("grants a qualified ARN as it is, and a function of the same app by its reference", () => {
    const qualified = new Stack(testApp(), "Qualified", { env: account });
    new RolloutController(qualified, "C", { cloudWatchMetrics: false }).addRollout("Mesh", {
      spec: { files: EXAMPLE_FILES },
      target: { ...target, functionArn: `${ARN}:live` },
      trigger: { repository: ecr.Repository.fromRepositoryName(qualified, "R", "mesh") },
    });
    expect(invokable(Template.fromStack(qualified), "setWeight")).toEqual([`${ARN}:live`]);

    const own = new Stack(testApp(), "Own", { env: account });
    const fn = new lambda.Function(own, "MeshPlugin", {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: "index.handler",
      code: lambda.Code.fromInline("exports.handler = async () => ({})"),
    });
    new RolloutController(own, "C", { cloudWatchMetrics: false }).addRollout("Mesh", {
      spec: { files: EXAMPLE_FILES },
      target: { ...target, functionArn: fn.functionArn },
      trigger: { repository: ecr.Repository.fromRepositoryName(own, "R", "mesh") },
    });
    const ownTemplate = Template.fromStack(own);
    const id = own.getLogicalId(fn.node.defaultChild as lambda.CfnFunction);
    expect(invokable(ownTemplate, "promote")).toEqual([`<${id}.Arn>`]);
    expect(flat(rolloutStateMachine(ownTemplate).props.DefinitionString)).toContain(
      `"functionArn":"<${id}.Arn>"`,
    );
  });

  it("reports bad plugin settings with their field paths, all at once", () => {
    const bad = new Stack(testApp(), "BadPlugin");
    let error: unknown;
    try {
      new RolloutController(bad, "C", { cloudWatchMetrics: false }).addRollout("Mesh", {
        spec: { files: EXAMPLE_FILES },
        target: { type: "plugin", name: "", functionArn: "mesh-router", config: { "weight.$": "$.w" } },
        trigger: { repository: ecr.Repository.fromRepositoryName(bad, "R", "mesh") },
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PropsError);
    expect((error as PropsError).problems).toEqual([
      expect.stringMatching(/^target\.name: a plugin name: /),
      "target.functionArn: a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME, optionally :VERSION or :ALIAS)",
      'target.config.weight.$: a key ending in ".$" is a path that Step Functions evaluates in the Tasks\' Parameters',
    ]);
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe("validation: one error that lists every bad prop", () => {
  it("reports every bad controller prop at once", () => {
    const stack = new Stack(testApp(), "Bad");
    let error: unknown;
    try {
      new RolloutController(stack, "C", {
        tableName: "x",
        prometheus: { url: "prometheus:9090", workspace: "nope" } as never,
        logRetention: 42 as logs.RetentionDays,
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PropsError);
    const problems = (error as PropsError).problems;
    expect(problems.map((p) => p.split(":")[0])).toEqual([
      "tableName",
      "logRetention",
      "prometheus",
      "prometheus.url",
      "prometheus.workspace",
    ]);
    expect((error as Error).message).toContain("5 invalid props");
  });

  it("reports every bad rollout option at once: spec, target fields, tag pattern, id", () => {
    const stack = new Stack(testApp(), "BadRollout");
    const controller = new RolloutController(stack, "C", { cloudWatchMetrics: false });
    let error: unknown;
    try {
      controller.addRollout("bad id", {
        spec: { files: ["/nonexistent/rollout.yaml"] },
        target: {
          type: "alb-ecs",
          listenerArn: "not-an-arn",
          targetGroupA: EXAMPLE_CONTEXT.targetGroupA,
          targetGroupB: EXAMPLE_CONTEXT.targetGroupA,
          cluster: "demo",
          serviceA: "a",
          serviceB: "b",
          containerName: "app",
        },
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "R", "r"), tagPattern: "v 1/*" },
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PropsError);
    const text = (error as PropsError).problems.join("\n");
    expect(text).toContain("spec.files: /nonexistent/rollout.yaml: cannot read the file: no such file");
    expect(text).toContain("target.listenerArn");
    expect(text).toContain("trigger.tagPattern");
    expect(text).toContain('id: "bad id"');
    expect((error as PropsError).problems.length).toBeGreaterThanOrEqual(4);
  });

  it("refuses a spec with a mirror step for a target that cannot mirror, naming the step", () => {
    const stack = new Stack(testApp(), "NoMirror");
    const controller = new RolloutController(stack, "C", { cloudWatchMetrics: false });
    expect(() =>
      controller.addRollout("Ranker", {
        spec: { files: ["examples/model-shadow.yaml"] },
        target: { type: "lambda-alias", functionName: "ranker", alias: "live" },
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "R", "ranker") },
      }),
    ).toThrow(/step 1: setMirrorRoute "shadow": the lambda-alias target cannot mirror requests/);
  });

  it("shares the errorBudget prop over the spec's, for files and for a RolloutSpec, and refuses a bad one", () => {
    const stack = new Stack(testApp(), "Budget");
    const controller = new RolloutController(stack, "C");
    const target = { type: "lambda-alias" as const, functionName: "shop", alias: "live" };
    const files = ["examples/rollout-judged.yaml", "examples/analysis-judges.yaml"];
    const judges = (spec: RolloutSpec) =>
      spec.steps.flatMap((s) =>
        s.kind === "analysis"
          ? s.analysis.templates.flatMap((t) => t.metrics.map((m) => m.provider.judge))
          : [],
      );
    const added = controller.addRollout("Shop", {
      spec: { files },
      target,
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "R", "shop") },
      errorBudget: 0.01,
    });
    // Two gates, each 0.005 over both steps (the annotation's 0.05 is overridden).
    expect(judges(added.spec).map((j) => j?.test !== undefined && "alpha" in j && j.alpha)).toEqual([
      0.005, 0.005, 0.005, 0.005,
    ]);
    // A RolloutSpec built by hand (judges without a budget): their alphas are their own, and counted.
    const loaded = JSON.parse(JSON.stringify(loadRolloutSync(files)), (key, value) =>
      key === "budget" ? undefined : value,
    ) as RolloutSpec;
    expect(() =>
      controller.addRollout("Other", {
        spec: { ...loaded, name: "other" },
        target: { ...target, functionName: "other" },
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "R2", "other") },
        errorBudget: 0.04,
      }),
    ).toThrow(
      /spec: error budget: the gates' own alphas spend 0\.05 \(errors 0\.025, latency 0\.025\), more than the rollout's error budget 0\.04/,
    );
    expect(() =>
      controller.addRollout("Bad", {
        spec: { files },
        target: { ...target, functionName: "bad" },
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "R3", "bad") },
        errorBudget: 1.5,
      }),
    ).toThrow(/errorBudget: a probability strictly between 0 and 1 \(0\.05\), got 1\.5/);
  });

  it("refuses a rollout name that is not a short DNS label, from files and from a RolloutSpec", () => {
    const stack = new Stack(testApp(), "BadName");
    const controller = new RolloutController(stack, "C");
    const target = { type: "lambda-alias" as const, functionName: "api", alias: "live" };
    const repository = ecr.Repository.fromRepositoryName(stack, "R", "r");
    const dir = mkdtempSync(join(tmpdir(), "infra-"));
    const file = join(dir, "r.yaml");
    writeFileSync(file, "name: My_Rollout!\nsteps: [50, 100]\n");
    expect(() =>
      controller.addRollout("Files", { spec: { files: [file] }, target, trigger: { repository } }),
    ).toThrow(/name: "My_Rollout!" is not a rollout name: use at most 47 lower-case letters/);
    const spec = loadRolloutSync(EXAMPLE_FILES);
    expect(() =>
      controller.addRollout("Spec", {
        spec: { ...spec, name: "x".repeat(300) },
        target,
        trigger: { repository },
      }),
    ).toThrow(/\(300 characters\) is not a rollout name/);
  });

  it("refuses a spec whose definition Step Functions would refuse, with its size", () => {
    const stack = new Stack(testApp(), "TooBig");
    const controller = new RolloutController(stack, "C");
    const dir = mkdtempSync(join(tmpdir(), "infra-"));
    const file = join(dir, "big.yaml");
    const query = "x".repeat(30_000);
    writeFileSync(
      file,
      `name: big\nsteps: [${Array.from({ length: 39 }, (_, i) => i + 1).join(", ")}, 100]\n` +
        `analysis:\n  templates:\n    - name: t\n      metrics:\n` +
        `        - {name: m, provider: {prometheus: {address: "http://p:9090", query: "${query}"}}}\n`,
    );
    expect(() =>
      controller.addRollout("Big", {
        spec: { files: [file] },
        target: { type: "lambda-alias", functionName: "api", alias: "live" },
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "R", "r") },
      }),
    ).toThrow(
      /spec: rollout big: the state machine definition would be [\d,]+ characters once deployed, more than Step Functions' 1,048,576/,
    );
  });

  it("refuses a CloudWatch analysis when cloudWatchMetrics is false, and a duplicate rollout name", () => {
    const stack = new Stack(testApp(), "NoCloudWatch");
    const controller = new RolloutController(stack, "C", { cloudWatchMetrics: false });
    const target = {
      type: "lambda-alias" as const,
      functionName: "api",
      alias: "live",
    };
    const repository = ecr.Repository.fromRepositoryName(stack, "R", "r");
    controller.addRollout("One", { spec: { files: EXAMPLE_FILES }, target, trigger: { repository } });
    expect(() =>
      controller.addRollout("Two", { spec: { files: EXAMPLE_FILES }, target, trigger: { repository } }),
    ).toThrow(/a rollout named "demo" was already added/);
    expect(() =>
      controller.addRollout("Three", {
        spec: { files: aliasRolloutFiles() },
        target,
        trigger: { repository },
      }),
    ).toThrow(/uses the cloudWatch provider but the controller has cloudWatchMetrics: false/);
  });

  it("sees CloudWatch read through a judge, and writes a canary gate's cooldown into the trigger's routes", () => {
    const stack = new Stack(testApp(), "Judged");
    const refusing = new RolloutController(stack, "NoCw", { cloudWatchMetrics: false });
    const target = { type: "lambda-alias" as const, functionName: "api", alias: "live" };
    const repository = ecr.Repository.fromRepositoryName(stack, "R", "r");
    // The scored canary analysis reads `throughput` from CloudWatch inside its score.
    expect(() =>
      refusing.addRollout("Shop", {
        spec: { files: ["examples/envconfig/shop/shop/canary-analysis.yml"] },
        target,
        trigger: { repository },
      }),
    ).toThrow(/uses the cloudWatch provider but the controller has cloudWatchMetrics: false/);
    const dir = mkdtempSync(join(tmpdir(), "infra-"));
    const gate = join(dir, "gate.yaml");
    writeFileSync(
      gate,
      `apiVersion: sfn-rollouts/v1
name: gated
steps: [50, 100]
bake: 5m
health:
  judge:
    - name: gate
      test: canary-gate
      rollbackCooldown: 20m
      candidate:
        p95: {cloudWatch: {metricDataQueries: [{id: p, expression: "p95"}]}, value: "result[0].Values"}
        errorRate: {cloudWatch: {metricDataQueries: [{id: e, expression: "e"}]}, value: "result[0].Values"}
        n: {cloudWatch: {metricDataQueries: [{id: n, expression: "n"}]}, value: "result[0].Values"}
      stable:
        p95: {cloudWatch: {metricDataQueries: [{id: s, expression: "s"}]}, value: "result[0].Values"}
`,
    );
    const gated = new Stack(testApp(), "Gated");
    const controller = new RolloutController(gated, "C");
    controller.addRollout("Gated", {
      spec: { files: [gate] },
      target,
      trigger: { repository: ecr.Repository.fromRepositoryName(gated, "R", "r") },
    });
    const template = Template.fromStack(gated);
    const trigger = template.findResources("AWS::Lambda::Function", {
      Properties: {
        Description: "sfn-rollouts: trigger",
        Environment: { Variables: { ROLLOUTS_ROUTES: Match.anyValue() } },
      },
    });
    const routes = flat(Object.values(trigger).at(-1)?.Properties.Environment.Variables.ROLLOUTS_ROUTES);
    expect(routes).toContain('"cooldown":{"seconds":1200,"maxPerHour":3}');
    expect(actionsOfFunction(template, "resume")).toContain("cloudwatch:GetMetricData");

    // A model package approval starts the same rollout: its route carries the same cooldown.
    const model = new Stack(testApp(), "GatedModel", {
      env: { account: "111122223333", region: "eu-west-1" },
    });
    new RolloutController(model, "C").addRollout("Gated", {
      spec: { files: [gate] },
      target: {
        type: "sagemaker",
        endpointName: "ranker",
        executionRoleArn: "arn:aws:iam::111122223333:role/ranker-sagemaker",
        modelPackageGroupName: "ranker",
      },
      trigger: { repository: ecr.Repository.fromRepositoryName(model, "R", "r") },
    });
    const modelTrigger = Template.fromStack(model).findResources("AWS::Lambda::Function", {
      Properties: { Description: "sfn-rollouts: trigger" },
    });
    const modelRoutes = JSON.parse(
      flat(Object.values(modelTrigger).at(-1)?.Properties.Environment.Variables.ROLLOUTS_ROUTES),
    ) as { repository: string; cooldown?: unknown }[];
    expect(modelRoutes).toHaveLength(2);
    for (const route of modelRoutes) {
      expect(route.cooldown, route.repository).toEqual({ seconds: 1200, maxPerHour: 3 });
    }
  });

  it("refuses to synthesize more routes than the trigger's 4 KB environment can hold", async () => {
    const stack = new Stack(testApp(), "Many");
    const controller = new RolloutController(stack, "C");
    const { spec } = await loadRollout(EXAMPLE_FILES);
    const repository = ecr.Repository.fromRepositoryName(stack, "R", "r");
    const target = { type: "lambda-alias" as const, functionName: "api", alias: "live" };
    const add = (i: number) =>
      controller.addRollout(`Service${i}`, {
        spec: { ...spec, name: `service-${i}` },
        target,
        trigger: { repository },
      });
    for (let i = 0; i < 5; i++) add(i);
    expect(controller.node.validate()).toEqual([]);
    for (let i = 5; i < 25; i++) add(i);
    expect(controller.node.validate().join("\n")).toMatch(
      /25 rollouts make the trigger's ROLLOUTS_ROUTES about \d+ bytes/,
    );
  });

  it("refuses a target type it does not know, naming those it does (the local proxy is a plugin now)", () => {
    const stack = new Stack(testApp(), "Local");
    const controller = new RolloutController(stack, "C");
    expect(() =>
      controller.addRollout("Local", {
        spec: { files: EXAMPLE_FILES },
        target: { type: "local-proxy", adminUrl: "http://127.0.0.1:8080" } as never,
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "R", "r") },
      }),
    ).toThrow(
      "target.type: Invalid discriminator value. Expected 'alb-ecs' | 'lambda-alias' | 'kubernetes' | 'sagemaker' | 'plugin'",
    );
  });
});
