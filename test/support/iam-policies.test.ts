import { describe, expect, it } from "vitest";
import { iamRequests } from "./iam-calls.ts";
import { denials, functionRoles, grantUse } from "./iam-policies.ts";

/** A template as CDK writes one: a function, its role, the role's default policy with intrinsics. */
function template(statements: unknown[]) {
  return {
    Resources: {
      Table: { Type: "AWS::DynamoDB::Table", Properties: { TableName: "rollouts" } },
      BeginRole: { Type: "AWS::IAM::Role", Properties: {} },
      BeginRolePolicy: {
        Type: "AWS::IAM::Policy",
        Properties: {
          PolicyDocument: { Version: "2012-10-17", Statement: statements },
          Roles: [{ Ref: "BeginRole" }],
        },
      },
      Begin: {
        Type: "AWS::Lambda::Function",
        Properties: { Role: { "Fn::GetAtt": ["BeginRole", "Arn"] } },
        Metadata: { "aws:cdk:path": "Stack/Controller/Begin/Resource" },
      },
    },
  };
}

const TABLE_STATEMENT = {
  Sid: "RolloutTable",
  Effect: "Allow",
  Action: ["dynamodb:GetItem", "dynamodb:PutItem"],
  Resource: { "Fn::GetAtt": ["Table", "Arn"] },
};
const EVENTS_STATEMENT = {
  Sid: "Events",
  Effect: "Allow",
  Action: "events:PutEvents",
  Resource: {
    "Fn::Join": [
      "",
      [
        "arn:",
        { Ref: "AWS::Partition" },
        ":events:",
        { Ref: "AWS::Region" },
        ":",
        { Ref: "AWS::AccountId" },
        ":event-bus/default",
      ],
    ],
  },
};

const call = (action: string, resource: string) => ({ fn: "Begin", action, resource, context: {} });
const GET = call("dynamodb:GetItem", "arn:aws:dynamodb:local:000000000000:table/rollouts");
const PUT_EVENTS = call("events:PutEvents", "arn:aws:events:local:000000000000:event-bus/default");

describe("the IAM check of the tests", () => {
  it("reads a function's role statements from the template, intrinsics resolved to the runtime's ARNs", () => {
    const [begin] = functionRoles(template([TABLE_STATEMENT, EVENTS_STATEMENT]));
    expect(begin).toMatchObject({
      name: "Begin",
      label: "begin",
      roleArn: "arn:aws:iam::000000000000:role/BeginRole",
    });
    expect(begin?.statements.map((s) => s.statement.Resource)).toEqual([
      "arn:aws:dynamodb:local:000000000000:table/rollouts",
      "arn:aws:events:local:000000000000:event-bus/default",
    ]);
  });

  it("allows what the role grants and reports a removed grant as an implicit deny, with the statements of that service", async () => {
    const granted = functionRoles(template([TABLE_STATEMENT, EVENTS_STATEMENT]));
    expect(await denials(granted, [GET, PUT_EVENTS])).toEqual([]);
    const removed = functionRoles(template([TABLE_STATEMENT]));
    const denied = await denials(removed, [GET, PUT_EVENTS]);
    expect(denied.map((d) => [d.label, d.call.action, d.decision])).toEqual([
      ["begin", "events:PutEvents", "ImplicitlyDenied"],
    ]);
    // Another table's ARN is denied too: resources are compared, not only actions.
    const other = call("dynamodb:GetItem", "arn:aws:dynamodb:local:000000000000:table/other");
    expect((await denials(granted, [other])).map((d) => d.decision)).toEqual(["ImplicitlyDenied"]);
  });

  it("says which granted actions no call needed", async () => {
    const roles = functionRoles(template([TABLE_STATEMENT, EVENTS_STATEMENT]));
    const uses = await grantUse(roles, [GET]);
    expect(uses.filter((u) => !u.used).map((u) => u.action)).toEqual([
      "dynamodb:PutItem",
      "events:PutEvents",
    ]);
  });

  it("names each SDK call's IAM action and the resources AWS authorizes it against", () => {
    const requests = (clientName: string, commandName: string, input: Record<string, unknown>) =>
      iamRequests({ clientName, commandName, input }).map((r) => [r.action, r.resource, r.context]);
    expect(requests("LambdaClient", "InvokeCommand", { FunctionName: "hook", Qualifier: "live" })).toEqual([
      ["lambda:InvokeFunction", "arn:aws:lambda:local:000000000000:function:hook:live", {}],
    ]);
    expect(
      requests("SchedulerClient", "CreateScheduleCommand", {
        Name: "t1",
        GroupName: "timers",
        Target: { RoleArn: "arn:aws:iam::000000000000:role/Scheduler" },
      }),
    ).toEqual([
      ["scheduler:CreateSchedule", "arn:aws:scheduler:local:000000000000:schedule/timers/t1", {}],
      [
        "iam:PassRole",
        "arn:aws:iam::000000000000:role/Scheduler",
        { "iam:PassedToService": "scheduler.amazonaws.com" },
      ],
    ]);
    expect(
      requests("SageMakerClient", "UpdateEndpointCommand", {
        EndpointName: "Fraud",
        EndpointConfigName: "Fraud-r-1",
      }),
    ).toEqual([
      ["sagemaker:UpdateEndpoint", "arn:aws:sagemaker:local:000000000000:endpoint/fraud", {}],
      ["sagemaker:UpdateEndpoint", "arn:aws:sagemaker:local:000000000000:endpoint-config/fraud-r-1", {}],
    ]);
    expect(requests("SFNClient", "SendTaskFailureCommand", { taskToken: "t" })).toEqual([
      ["states:SendTaskFailure", "*", {}],
    ]);
    expect(() => requests("SFNClient", "ListExecutionsCommand", {})).toThrow(
      /no resource mapping for states:ListExecutions/,
    );
  });
});
