import { App, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { ENV } from "../../functions/config.ts";
import { PropsError, type Rollout, RolloutController } from "../../infra/index.ts";

/** No bundling and no built-in CloudFormation validation: this file checks the template itself. */
const testApp = () =>
  new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });

type Statement = {
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, unknown>;
  Sid?: string;
};

function modelStack(options: { authType?: lambda.FunctionUrlAuthType; router?: boolean } = {}) {
  const stack = new Stack(testApp(), "Model", { env: { account: "111122223333", region: "eu-west-1" } });
  const encryptionKey = new kms.Key(stack, "Key", { enableKeyRotation: true });
  const controller = new RolloutController(stack, "Controller", { cloudWatchMetrics: false, encryptionKey });
  const rollout = controller.addRollout("Ranker", {
    spec: { files: ["examples/model-shadow.yaml"] },
    target: {
      type: "sagemaker",
      endpointName: "Ranker-Prod",
      executionRoleArn: "arn:aws:iam::111122223333:role/ranker-sagemaker",
      ...(options.router === false ? {} : { router: { type: "model", key: { header: "x-customer" } } }),
    },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "ranker") },
    ...(options.authType ? { modelRouter: { authType: options.authType } } : {}),
  });
  return { stack, rollout, template: Template.fromStack(stack) };
}

const routerFunction = (template: Template) => {
  const fns = template.findResources("AWS::Lambda::Function", {
    Properties: { Description: Match.stringLikeRegexp("model router") },
  });
  expect(Object.keys(fns)).toHaveLength(1);
  const [id, fn] = Object.entries(fns)[0] as [string, { Properties: Record<string, unknown> }];
  return { id, props: fn.Properties };
};

const statementsOf = (template: Template, roleRef: unknown): Statement[] => {
  const roleId = (roleRef as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0];
  return Object.values(template.findResources("AWS::IAM::Policy"))
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
};

describe("a SageMaker target with a model router", () => {
  let stack: Stack;
  let rollout: Rollout;
  let template: Template;
  beforeAll(() => {
    ({ stack, rollout, template } = modelStack());
  });

  it("creates the router function behind a streaming Function URL signed with IAM, and outputs its URL", () => {
    const { id, props } = routerFunction(template);
    expect(props.Runtime).toBe("nodejs22.x");
    const env = (props.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(env[ENV.routerName]).toBe("Ranker-Prod");
    expect(env[ENV.tableName]).toEqual({ Ref: expect.stringMatching(/^ControllerTable/) });
    template.hasResourceProperties("AWS::Lambda::Url", {
      AuthType: "AWS_IAM",
      InvokeMode: "RESPONSE_STREAM",
      TargetFunctionArn: { "Fn::GetAtt": [id, "Arn"] },
    });
    const outputs = template.findOutputs("*", { Value: { "Fn::GetAtt": [Match.anyValue(), "FunctionUrl"] } });
    expect(Object.keys(outputs)).toHaveLength(1);
    expect(rollout.modelRouter?.url).toBeDefined();
    expect(rollout.modelRouter?.function).toBeDefined();
  });

  it("lets the router read and write only the rollout's MODEL# items and invoke only the endpoint", () => {
    const { props } = routerFunction(template);
    const statements = statementsOf(template, props.Role);
    const items = statements.find((s) => s.Sid === "RouterItems") as Statement;
    expect(items.Action).toEqual([
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
      "dynamodb:Query",
    ]);
    expect(items.Condition).toEqual({
      "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": ["MODEL#Ranker-Prod"] },
    });
    const invoke = statements.find((s) => s.Sid === "InvokeEndpoint") as Statement;
    expect(invoke.Action).toBe("sagemaker:InvokeEndpoint");
    expect(JSON.stringify(invoke.Resource)).toContain(":endpoint/ranker-prod");
    expect(statements.some((s) => s.Sid === "TableKey")).toBe(true);
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    expect(actions.filter((a) => a.startsWith("sagemaker:"))).toEqual(["sagemaker:InvokeEndpoint"]);
    expect(actions.some((a) => a.startsWith("states:") || a === "dynamodb:Scan")).toBe(false);
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
    expect(Annotations.fromStack(stack).findError("*", Match.anyValue())).toEqual([]);
  });

  it("makes the URL public only when the app says NONE", () => {
    const { template: open } = modelStack({ authType: lambda.FunctionUrlAuthType.NONE });
    open.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE", InvokeMode: "RESPONSE_STREAM" });
  });

  it("deploys no router without router: {type: model}, and refuses router options for such a target", () => {
    const { template: plain, rollout: r } = modelStack({ router: false });
    expect(Object.keys(plain.findResources("AWS::Lambda::Url"))).toHaveLength(0);
    expect(r.modelRouter).toBeUndefined();
    expect(() => modelStack({ router: false, authType: lambda.FunctionUrlAuthType.NONE })).toThrow(
      PropsError,
    );
  });
});
