import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Duration, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as ecr from "aws-cdk-lib/aws-ecr";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { ENV, HANDLERS, type HandlerName } from "../../functions/config.ts";
import { PropsError, RolloutController } from "../../infra/index.ts";

type Json = Record<string, unknown>;
type Statement = { Action: string | string[]; Resource: unknown };

const SMOKE = "arn:aws:lambda:eu-west-1:111122223333:function:smoke";
const LOAD = "arn:aws:lambda:eu-west-1:111122223333:function:load-test:live";

const testApp = () =>
  new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });

function nativeSpec(extra: string): string {
  const dir = mkdtempSync(join(tmpdir(), "infra-safety-"));
  const file = join(dir, "native.yaml");
  writeFileSync(file, `name: api\nimage: api:1\nsteps: [10, 100]\n${extra}\n`);
  return file;
}

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
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (s: Statement) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map(flat);

function statementsOfRole(template: Template, roleLogicalId: string): Statement[] {
  return Object.values(template.findResources("AWS::IAM::Policy"))
    .filter((p) => ((p.Properties.Roles ?? []) as Json[]).some((r) => r.Ref === roleLogicalId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}
function roleOfFunction(template: Template, handler: HandlerName): string {
  const [fn] = Object.values(
    template.findResources("AWS::Lambda::Function", {
      Properties: { Description: `sfn-rollouts: ${HANDLERS[handler]}` },
    }),
  );
  if (!fn) throw new Error(`no function ${handler}`);
  return (fn.Properties.Role["Fn::GetAtt"] as string[])[0] as string;
}
/** Every statement of every role in the stack granting `action`, with its role. */
function grantsOf(template: Template, action: string): Array<{ roles: string[]; resources: string[] }> {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap((p) =>
    (p.Properties.PolicyDocument.Statement as Statement[])
      .filter((s) => actionsOf(s).includes(action))
      .map((s) => ({
        roles: ((p.Properties.Roles ?? []) as Json[]).map((r) => String(r.Ref)),
        resources: resourcesOf(s),
      })),
  );
}

describe("a rollout with alarms and hooks", () => {
  let stack: Stack;
  let template: Template;

  beforeAll(() => {
    const app = testApp();
    stack = new Stack(app, "Guarded", { env: { account: "111122223333", region: "eu-west-1" } });
    const errors = new cloudwatch.Alarm(stack, "Errors", {
      alarmName: "api-errors",
      metric: new cloudwatch.Metric({
        namespace: "AWS/Lambda",
        metricName: "Errors",
        period: Duration.minutes(1),
      }),
      threshold: 5,
      evaluationPeriods: 1,
    });
    const controller = new RolloutController(stack, "Controller");
    controller.addRollout("Api", {
      spec: {
        files: [
          nativeSpec(`alarms: [api-errors, "arn:aws:cloudwatch:eu-west-1:111122223333:alarm:api-p99"]
hooks: {beforeTraffic: "${SMOKE}", afterTraffic: {function: "${LOAD}", timeoutSeconds: 1800}}`),
        ],
      },
      target: { type: "lambda-alias", functionName: "api", alias: "live" },
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "api") },
      alarms: [errors, "api-throttles"],
    });
    template = Template.fromStack(stack);
  });

  it("sends a CloudWatch Alarm State Change to ALARM of exactly its alarms to the trigger", () => {
    const rules = template.findResources("AWS::Events::Rule", {
      Properties: { EventPattern: { source: ["aws.cloudwatch"] } },
    });
    const [rule] = Object.values(rules);
    expect(Object.keys(rules)).toHaveLength(1);
    expect(rule?.Properties.EventPattern).toEqual({
      source: ["aws.cloudwatch"],
      "detail-type": ["CloudWatch Alarm State Change"],
      detail: { alarmName: ["api-errors", "api-p99", "api-throttles"], state: { value: ["ALARM"] } },
    });
    const trigger = Object.entries(template.findResources("AWS::Lambda::Function")).find(
      ([, f]) => f.Properties.Description === "sfn-rollouts: trigger",
    )?.[0];
    expect(flat(rule?.Properties.Targets[0].Arn)).toBe(`<${trigger}.Arn>`);
    const routes = (
      (Object.values(template.findResources("AWS::Lambda::Function")).find(
        (f) => f.Properties.Description === "sfn-rollouts: trigger",
      )?.Properties.Environment.Variables ?? {}) as Json
    )[ENV.rollouts];
    expect(flat(routes)).toContain('"alarms":["api-errors","api-p99","api-throttles"]');
  });

  it("lets the alarm check read exactly those alarms, and nothing else read any", () => {
    expect(grantsOf(template, "cloudwatch:DescribeAlarms")).toEqual([
      {
        roles: [roleOfFunction(template, "checkAlarms")],
        resources: [
          "arn:<AWS::Partition>:cloudwatch:eu-west-1:111122223333:alarm:api-errors",
          "arn:aws:cloudwatch:eu-west-1:111122223333:alarm:api-p99",
          "arn:<AWS::Partition>:cloudwatch:eu-west-1:111122223333:alarm:api-throttles",
        ],
      },
    ]);
    expect(
      statementsOfRole(template, roleOfFunction(template, "checkAlarms")).flatMap(actionsOf),
    ).not.toContain("lambda:InvokeFunction");
  });

  it("lets the hook function invoke exactly the hook functions, and no other function invoke them", () => {
    const grants = grantsOf(template, "lambda:InvokeFunction").filter((g) =>
      g.resources.some((r) => r.includes(":function:smoke") || r.includes(":function:load-test")),
    );
    expect(grants).toEqual([{ roles: [roleOfFunction(template, "hook")], resources: [SMOKE, LOAD] }]);
  });

  it("compiles the checks and hooks into the state machine", () => {
    const [machine] = Object.values(
      template.findResources("AWS::StepFunctions::StateMachine", {
        Properties: { DefinitionString: Match.anyValue() },
      }),
    ).filter((m) => flat(m.Properties.DefinitionString).includes("Hook-BeforeTraffic"));
    const definition = flat(machine?.Properties.DefinitionString);
    expect(definition).toContain('"Step01-SetWeight-10-CheckAlarms"');
    expect(definition).toContain('"Promote-CheckAlarms"');
    expect(definition).toContain('"Step01-SetWeight-10-Hook-AfterTraffic"');
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
    expect(Annotations.fromStack(stack).findError("*", Match.anyValue())).toEqual([]);
  });

  it("warns about an alarm the app does not define: it must exist when the rollout runs", () => {
    expect(
      Annotations.fromStack(stack).findWarning(
        "*",
        Match.stringLikeRegexp('alarm "api-throttles" is not defined in this app'),
      ),
    ).toHaveLength(1);
  });
});

describe("alarm validation at synth time", () => {
  it("refuses an alarm ARN of another region or account: its changes never reach this rollout", () => {
    const stack = new Stack(testApp(), "Elsewhere", {
      env: { account: "111122223333", region: "eu-west-1" },
    });
    const controller = new RolloutController(stack, "Controller");
    expect(() =>
      controller.addRollout("Api", {
        spec: {
          files: [nativeSpec('alarms: ["arn:aws:cloudwatch:us-east-1:111122223333:alarm:api-errors"]')],
        },
        target: { type: "lambda-alias", functionName: "api", alias: "live" },
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "api") },
      }),
    ).toThrow(PropsError);
  });

  it("refuses a name one typo away from an alarm of the app", () => {
    const app = testApp();
    const stack = new Stack(app, "Typo", { env: { account: "111122223333", region: "eu-west-1" } });
    new cloudwatch.Alarm(stack, "Errors", {
      alarmName: "api-errors",
      metric: new cloudwatch.Metric({ namespace: "AWS/Lambda", metricName: "Errors" }),
      threshold: 5,
      evaluationPeriods: 1,
    });
    new RolloutController(stack, "Controller").addRollout("Api", {
      spec: { files: [nativeSpec("alarms: [api-erors]")] },
      target: { type: "lambda-alias", functionName: "api", alias: "live" },
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "api") },
    });
    expect(() => app.synth()).toThrow(
      /no alarm named "api-erors" in this app \(did you mean "api-errors"\?\)/,
    );
  });
});

describe("a rollout whose analysis measures with a Lambda function", () => {
  it("lets exactly the measuring functions invoke exactly that function", () => {
    const dir = mkdtempSync(join(tmpdir(), "infra-lambda-metric-"));
    const file = join(dir, "native.yaml");
    writeFileSync(
      file,
      `name: api
image: api:1
steps: [10, 100]
analysis:
  templates:
    - name: smoke
      metrics:
        - name: smoke
          successCondition: result.passed == result.total
          provider: {plugin: {sfn-rollouts/lambda: {function: checkout-test, payload: {cases: 20}}}}
`,
    );
    const stack = new Stack(testApp(), "Measured", { env: { account: "111122223333", region: "eu-west-1" } });
    new RolloutController(stack, "Controller").addRollout("Api", {
      spec: { files: [file] },
      target: { type: "lambda-alias", functionName: "api", alias: "live" },
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "api") },
    });
    const template = Template.fromStack(stack);
    const grants = grantsOf(template, "lambda:InvokeFunction").filter((g) =>
      g.resources.some((r) => r.includes(":function:checkout-test")),
    );
    expect(grants.map((g) => g.roles[0]).sort()).toEqual(
      (["startAnalysis", "resume"] as const).map((n) => roleOfFunction(template, n)).sort(),
    );
    for (const g of grants) {
      expect(g.resources).toEqual([
        "arn:<AWS::Partition>:lambda:eu-west-1:111122223333:function:checkout-test",
      ]);
    }
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });
});
