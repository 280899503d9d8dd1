import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decide, functionRoles } from "@sfn-rollouts/test-support/iam-policies";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as ecr from "aws-cdk-lib/aws-ecr";
import { AwsSolutionsChecks } from "cdk-nag";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDLERS, type HandlerName } from "../../functions/config.ts";
import { FUNCTION_NEEDS, PROJECT_ROOT } from "../../infra/functions.ts";
import { PropsError, RolloutController } from "../../infra/index.ts";

/**
 * `authentication.sigv4.roleArn`: the functions that measure, and only they, may `sts:AssumeRole`
 * exactly the roles the rollout's Prometheus metrics name; what is not a role's ARN is refused.
 */

type Json = Record<string, unknown>;
type Statement = { Action: string | string[]; Resource: unknown; Sid?: string };

const QUERY_ROLE = "arn:aws:iam::444455556666:role/amp-query";
const OTHER_ROLE = "arn:aws:iam::444455556666:role/amp-query-eu";
const MEASURING = (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter((n) =>
  FUNCTION_NEEDS[n].includes("metrics"),
);

const template = (roles: string[]) => `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: success-rate}
spec:
  args: [{name: version}]
  metrics:
${roles
  .map(
    (role, i) => `    - name: m${i}
      successCondition: result[0] >= 0.95
      provider:
        prometheus:
          address: https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1
          query: sum(rate(ok{version="{{args.version}}"}[1m])) / sum(rate(all{version="{{args.version}}"}[1m]))
${role ? `          authentication: {sigv4: {region: eu-west-1, roleArn: "${role}"}}\n` : ""}`,
  )
  .join("")}`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "assume-roles-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function controllerStack(roles: string[]) {
  const path = join(dir, `t-${roles.length}-${Math.abs(hash(roles.join()))}.yaml`);
  writeFileSync(path, template(roles));
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });
  const stack = new Stack(app, "Amp", { env: { account: "111122223333", region: "eu-west-1" } });
  const controller = new RolloutController(stack, "Controller", {});
  controller.addRollout("Shop", {
    spec: { files: [`${PROJECT_ROOT.replace(/\/$/, "")}/examples/rollout.yaml`, path] },
    target: { type: "lambda-alias", functionName: "shop", alias: "live" },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
  });
  return { stack, template: Template.fromStack(stack) };
}

function hash(s: string): number {
  let h = 0;
  for (const c of s) h = (h * 31 + c.charCodeAt(0)) | 0;
  return h;
}

function statementsOf(t: Template, handler: HandlerName): Statement[] {
  const [fn] = Object.values(
    t.findResources("AWS::Lambda::Function", {
      Properties: { Description: `sfn-rollouts: ${HANDLERS[handler]}` },
    }),
  );
  if (!fn) throw new Error(`no function ${handler}`);
  const role = (((fn as { Properties: Json }).Properties.Role as Json)["Fn::GetAtt"] as string[])[0];
  return Object.values(t.findResources("AWS::IAM::Policy"))
    .filter((p) => ((p.Properties.Roles ?? []) as Json[]).some((r) => r.Ref === role))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}

const assumes = (s: Statement) =>
  (Array.isArray(s.Action) ? s.Action : [s.Action]).includes("sts:AssumeRole");

describe("the roles Prometheus metrics assume", () => {
  let stack: Stack;
  let synthesized: Template;
  beforeAll(() => {
    ({ stack, template: synthesized } = controllerStack([QUERY_ROLE, OTHER_ROLE, QUERY_ROLE]));
  });

  it("the measuring functions, and only they, may assume exactly the roles named, each once", () => {
    expect(MEASURING.length).toBeGreaterThan(0);
    for (const n of Object.keys(HANDLERS) as HandlerName[]) {
      const granted = statementsOf(synthesized, n).filter(assumes);
      if (MEASURING.includes(n)) {
        expect(granted, n).toEqual([
          expect.objectContaining({
            Sid: "AssumeMetricRoles",
            Effect: "Allow",
            Resource: [QUERY_ROLE, OTHER_ROLE],
          }),
        ]);
      } else {
        expect(granted, n).toEqual([]);
      }
    }
  });

  it("IAM allows each measuring function the AssumeRole calls of the roles named, and no other", async () => {
    // The handler of each function (by its name, else its logical id), from its description.
    const handlerOf = new Map<string, HandlerName>();
    for (const n of Object.keys(HANDLERS) as HandlerName[]) {
      const found = synthesized.findResources("AWS::Lambda::Function", {
        Properties: { Description: `sfn-rollouts: ${HANDLERS[n]}` },
      });
      for (const [id, fn] of Object.entries(found))
        handlerOf.set(String(fn.Properties.FunctionName ?? id), n);
    }
    const roles = functionRoles(synthesized.toJSON()).filter((r) => handlerOf.has(r.name));
    expect(roles.filter((r) => MEASURING.includes(handlerOf.get(r.name) as HandlerName))).toHaveLength(
      MEASURING.length,
    );
    const call = (fn: string, resource: string) => ({ fn, action: "sts:AssumeRole", resource, context: {} });
    for (const role of roles) {
      const handler = handlerOf.get(role.name) as HandlerName;
      const allowed = MEASURING.includes(handler) ? "Allowed" : "ImplicitlyDenied";
      for (const arn of [QUERY_ROLE, OTHER_ROLE]) {
        expect(await decide(call(role.name, arn), role.roleArn, role.statements), `${handler} ${arn}`).toBe(
          allowed,
        );
      }
      expect(
        await decide(call(role.name, "arn:aws:iam::444455556666:role/admin"), role.roleArn, role.statements),
        handler,
      ).toBe("ImplicitlyDenied");
    }
  });

  it("a rollout without roleArn grants no sts:AssumeRole", () => {
    const { template: none } = controllerStack([""]);
    for (const n of Object.keys(HANDLERS) as HandlerName[])
      expect(statementsOf(none, n).filter(assumes), n).toEqual([]);
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });

  it("a roleArn that is not a role's ARN is refused with the metric that names it", () => {
    let error: unknown;
    try {
      controllerStack(["amp-query", "arn:aws:iam::444455556666:user/someone"]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PropsError);
    const message = (error as Error).message;
    expect(message).toContain(
      `spec: template "success-rate", metric "m0": authentication.sigv4.roleArn "amp-query" is not an IAM role's ARN (arn:aws:iam::ACCOUNT:role/NAME): the measuring functions may assume exactly the roles the spec names`,
    );
    expect(message).toContain(
      `metric "m1": authentication.sigv4.roleArn "arn:aws:iam::444455556666:user/someone"`,
    );
  });
});
