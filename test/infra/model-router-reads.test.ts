import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as ecr from "aws-cdk-lib/aws-ecr";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { PropsError, RolloutController } from "../../infra/index.ts";
import { extractStack } from "../../local/asl/extract.ts";

const testApp = () =>
  new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });

/** The model example, its template reading the rollout's own router instead of a local one. */
function specReadingTheRouter(): string {
  const text = readFileSync("examples/model-shadow.yaml", "utf8");
  const filled = text.replace("value: http://127.0.0.1:8080", 'value: "{{rollout.modelRouter}}"');
  expect(filled).not.toBe(text);
  const file = join(mkdtempSync(join(tmpdir(), "router-reads-")), "model.yaml");
  writeFileSync(file, filled);
  return file;
}

function modelStack(file: string, router = true) {
  const stack = new Stack(testApp(), "Model", { env: { account: "111122223333", region: "eu-west-1" } });
  const controller = new RolloutController(stack, "Controller", { cloudWatchMetrics: false });
  controller.addRollout("Ranker", {
    spec: { files: [file] },
    target: {
      type: "sagemaker",
      endpointName: "Ranker-Prod",
      executionRoleArn: "arn:aws:iam::111122223333:role/ranker-sagemaker",
      ...(router ? { router: { type: "model", key: { header: "x-customer" } } } : {}),
    },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "ranker") },
  });
  return { stack, template: Template.fromStack(stack) };
}

type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };

/** The statements granting `lambda:InvokeFunctionUrl`, with the roles they are attached to. */
function urlGrants(template: Template): { roles: string[]; statement: Statement }[] {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap((p) =>
    (p.Properties.PolicyDocument.Statement as Statement[])
      .filter((s) => [s.Action].flat().includes("lambda:InvokeFunctionUrl"))
      .map((statement) => ({
        roles: (p.Properties.Roles as { Ref: string }[]).map((r) => r.Ref),
        statement,
      })),
  );
}

const routerId = (template: Template) => {
  const fns = template.findResources("AWS::Lambda::Function", {
    Properties: { Description: Match.stringLikeRegexp("model router") },
  });
  return Object.keys(fns)[0] as string;
};

describe("the functions that measure read the rollout's model router", () => {
  it("get lambda:InvokeFunctionUrl on exactly the router function, through its AWS_IAM URL only", () => {
    const { template } = modelStack("examples/model-shadow.yaml");
    const grants = urlGrants(template);
    const roles = grants.flatMap((g) => g.roles).sort();
    expect(roles).toHaveLength(2);
    for (const name of ["StartAnalysis", "Resume"]) {
      expect(roles.filter((r) => r.includes(name))).toHaveLength(1);
    }
    for (const { statement } of grants) {
      expect(statement.Resource).toEqual({ "Fn::GetAtt": [routerId(template), "Arn"] });
      expect(statement.Condition).toEqual({ StringEquals: { "lambda:FunctionUrlAuthType": "AWS_IAM" } });
    }
  });

  it("fills {{rollout.modelRouter}} with the router's Function URL, and stays cdk-nag clean", () => {
    const { stack, template } = modelStack(specReadingTheRouter());
    const url = Object.keys(template.findResources("AWS::Lambda::Url"))[0] as string;
    const definitions = Object.values(template.findResources("AWS::StepFunctions::StateMachine"))
      .map((m) => m.Properties.DefinitionString as { "Fn::Join"?: [string, unknown[]] } | string)
      .filter((d) => JSON.stringify(d).includes("latency-and-feedback"));
    expect(definitions).toHaveLength(1);
    const definition = definitions[0];
    expect(JSON.stringify(definition)).not.toContain("{{rollout.modelRouter}}");
    // The samples address is the URL's scheme, "//" and its host, which CloudFormation fills in.
    const parts = (definition as { "Fn::Join": [string, unknown[]] })["Fn::Join"][1];
    const at = parts.findIndex((p) => typeof p === "string" && p.endsWith('"address":"'));
    expect(at).toBeGreaterThanOrEqual(0);
    const split = { "Fn::Split": ["/", { "Fn::GetAtt": [url, "FunctionUrl"] }] };
    expect(parts.slice(at + 1, at + 4)).toEqual([
      { "Fn::Select": [0, split] },
      "//",
      { "Fn::Select": [2, split] },
    ]);
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
    expect(Annotations.fromStack(stack).findError("*", Match.anyValue())).toEqual([]);
  });

  it("makes the samples address of the URL's scheme and host, without the trailing slash, whatever the scheme", () => {
    const { template } = modelStack(specReadingTheRouter());
    const url = Object.keys(template.findResources("AWS::Lambda::Url"))[0] as string;
    const addressesWith = (functionUrl: string) =>
      extractStack(template.toJSON(), { refs: { [`${url}.FunctionUrl`]: functionUrl } })
        .stateMachines.map((m) => JSON.stringify(m.definition))
        .flatMap((text) => [...text.matchAll(/"address":"([^"]*)"/g)].map((m) => m[1]));
    const onAws = addressesWith("https://abc123def.lambda-url.eu-west-1.on.aws/");
    expect(onAws.length).toBeGreaterThan(0);
    expect(new Set(onAws)).toEqual(new Set(["https://abc123def.lambda-url.eu-west-1.on.aws"]));
    // The embedded runtime's Function URL is plain HTTP on this machine.
    expect(new Set(addressesWith("http://127.0.0.1:4567/"))).toEqual(new Set(["http://127.0.0.1:4567"]));
  });

  it("refuses {{rollout.modelRouter}} in a rollout without a model router, and grants nothing", () => {
    expect(() => modelStack(specReadingTheRouter(), false)).toThrow(PropsError);
    expect(() => modelStack(specReadingTheRouter(), false)).toThrow(/no model router/);
    expect(urlGrants(modelStack("examples/model-shadow.yaml", false).template)).toEqual([]);
  });
});
