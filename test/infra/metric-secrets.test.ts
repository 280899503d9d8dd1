import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { ENV, HANDLERS, type HandlerName } from "../../functions/config.ts";
import { FUNCTION_NEEDS, PROJECT_ROOT } from "../../infra/functions.ts";
import { PropsError, RolloutController } from "../../infra/index.ts";
import type { MetricSecretsProps } from "../../infra/props.ts";

type Json = Record<string, unknown>;
type Statement = { Action: string | string[]; Resource: unknown; Sid?: string };

const DATADOG = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:datadog-AbCdEf";
const NEW_RELIC = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:newrelic-GhIjKl";
const file = (f: string) => `${PROJECT_ROOT.replace(/\/$/, "")}/${f}`;
const MEASURING = (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter((n) =>
  FUNCTION_NEEDS[n].includes("metrics"),
);

function controllerStack(template: string, secrets: (stack: Stack) => MetricSecretsProps | undefined) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });
  const stack = new Stack(app, "Vendors", { env: { account: "111122223333", region: "eu-west-1" } });
  const metricSecrets = secrets(stack);
  const controller = new RolloutController(stack, "Controller", metricSecrets ? { metricSecrets } : {});
  controller.addRollout("Shop", {
    spec: { files: [file("examples/rollout.yaml"), template.startsWith("/") ? template : file(template)] },
    target: { type: "lambda-alias", functionName: "shop", alias: "live" },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
  });
  return { stack, template: Template.fromStack(stack) };
}

function functionOf(template: Template, handler: HandlerName): Json {
  const [entry] = Object.values(
    template.findResources("AWS::Lambda::Function", {
      Properties: { Description: `sfn-rollouts: ${HANDLERS[handler]}` },
    }),
  );
  if (!entry) throw new Error(`no function ${handler}`);
  return (entry as { Properties: Json }).Properties;
}

function statementsOf(template: Template, handler: HandlerName): Statement[] {
  const role = ((functionOf(template, handler).Role as Json)["Fn::GetAtt"] as string[])[0];
  return Object.values(template.findResources("AWS::IAM::Policy"))
    .filter((p) => ((p.Properties.Roles ?? []) as Json[]).some((r) => r.Ref === role))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}

describe("the Datadog and New Relic secrets", () => {
  let stack: Stack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = controllerStack("examples/analysis-datadog.yaml", (s) => ({
      datadog: secretsmanager.Secret.fromSecretCompleteArn(s, "Datadog", DATADOG),
      newRelic: secretsmanager.Secret.fromSecretCompleteArn(s, "NewRelic", NEW_RELIC),
    })));
  });

  it("the measuring functions, and only they, are told each secret and may read exactly it", () => {
    expect(MEASURING.length).toBeGreaterThan(0);
    for (const n of Object.keys(HANDLERS) as HandlerName[]) {
      const env = ((functionOf(template, n).Environment as Json | undefined)?.Variables ?? {}) as Json;
      const secretStatements = statementsOf(template, n).filter((s) =>
        (Array.isArray(s.Action) ? s.Action : [s.Action]).some((a) => a.startsWith("secretsmanager:")),
      );
      if (MEASURING.includes(n)) {
        expect(env[ENV.datadogSecret], n).toBe(DATADOG);
        expect(env[ENV.newRelicSecret], n).toBe(NEW_RELIC);
        expect(secretStatements, n).toEqual([
          expect.objectContaining({
            Sid: "DatadogSecret",
            Action: "secretsmanager:GetSecretValue",
            Resource: DATADOG,
          }),
          expect.objectContaining({
            Sid: "NewRelicSecret",
            Action: "secretsmanager:GetSecretValue",
            Resource: NEW_RELIC,
          }),
        ]);
      } else {
        expect(env[ENV.datadogSecret], n).toBeUndefined();
        expect(secretStatements, n).toEqual([]);
      }
    }
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });

  it.each([
    ["influxdb", "examples/analysis-influxdb.yaml", ENV.influxdbSecret, "InfluxdbSecret"],
    ["wavefront", "examples/analysis-wavefront.yaml", ENV.wavefrontSecret, "WavefrontSecret"],
  ] as const)(
    "the %s secret is named to the measuring functions and granted, as Datadog's is",
    (key, example, variable, sid) => {
      const ARN = `arn:aws:secretsmanager:eu-west-1:111122223333:secret:${key}-StUvWx`;
      const { template: stack } = controllerStack(example, (s) => ({
        [key]: secretsmanager.Secret.fromSecretCompleteArn(s, "Vendor", ARN),
      }));
      for (const n of Object.keys(HANDLERS) as HandlerName[]) {
        const env = ((functionOf(stack, n).Environment as Json | undefined)?.Variables ?? {}) as Json;
        const granted = statementsOf(stack, n).filter((s) => s.Action === "secretsmanager:GetSecretValue");
        if (MEASURING.includes(n)) {
          expect(env[variable], n).toBe(ARN);
          expect(granted, n).toEqual([expect.objectContaining({ Sid: sid, Resource: ARN })]);
        } else {
          expect(env[variable], n).toBeUndefined();
          expect(granted, n).toEqual([]);
        }
      }
    },
  );

  it("a secret imported by name is granted with Secrets Manager's six-character suffix", () => {
    const { template: byName } = controllerStack("examples/analysis-datadog.yaml", (s) => ({
      datadog: secretsmanager.Secret.fromSecretNameV2(s, "Datadog", "datadog"),
    }));
    const [statement] = statementsOf(byName, MEASURING[0] as HandlerName).filter(
      (s) => s.Sid === "DatadogSecret",
    );
    expect(JSON.stringify(statement?.Resource)).toContain("secret:datadog-??????");
  });

  it("a secret a template names (profile, secretRef.name) is named to the functions and granted; an unknown one refused", () => {
    const TEAM = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:team-newrelic-MnOpQr";
    const dir = mkdtempSync(join(tmpdir(), "nr-profile-"));
    const profiled = join(dir, "template.yaml");
    writeFileSync(
      profiled,
      readFileSync(file("examples/analysis-newrelic.yaml"), "utf8").replace(
        "        newRelic:\n",
        "        newRelic:\n          profile: team-newrelic\n",
      ),
    );
    const { template: named } = controllerStack(profiled, (s) => ({
      named: { "team-newrelic": secretsmanager.Secret.fromSecretCompleteArn(s, "Team", TEAM) },
    }));
    // The spec is read at addRollout: the file is no longer needed once the stacks are made.
    const measuring = MEASURING[0] as HandlerName;
    const env = ((functionOf(named, measuring).Environment as Json).Variables ?? {}) as Json;
    expect(JSON.parse(String(env[ENV.metricSecrets]))).toEqual({ "team-newrelic": TEAM });
    expect(
      statementsOf(named, measuring).filter((s) => s.Action === "secretsmanager:GetSecretValue"),
    ).toEqual([expect.objectContaining({ Resource: TEAM })]);
    expect(() => controllerStack(profiled, () => undefined)).toThrow(
      'spec: an analysis\'s newRelic provider names the secret "team-newrelic" but the controller has no metricSecrets.named["team-newrelic"]',
    );
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ["examples/analysis-datadog.yaml", "datadog"],
    ["examples/analysis-newrelic.yaml", "newRelic"],
    ["examples/analysis-influxdb.yaml", "influxdb"],
    ["examples/analysis-wavefront.yaml", "wavefront"],
  ])("a rollout reading %s without its secret is refused", (template, provider) => {
    let error: unknown;
    try {
      controllerStack(template, () => undefined);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PropsError);
    expect(String((error as Error).message)).toContain(
      `spec: an analysis uses the ${provider} provider but the controller has no metricSecrets.${provider}`,
    );
  });
});
