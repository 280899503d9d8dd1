import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { HANDLERS, type HandlerName } from "../../functions/config.ts";
import { EXAMPLE_FILES } from "../../infra/example-stack.ts";
import { FUNCTION_NEEDS } from "../../infra/functions.ts";
import { PropsError, RolloutController } from "../../infra/index.ts";

type Json = Record<string, unknown>;
type Statement = { Action: string | string[]; Resource: unknown; Sid?: string };

const testApp = () =>
  new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });

const MOVERS = (Object.keys(FUNCTION_NEEDS) as HandlerName[]).filter((n) =>
  FUNCTION_NEEDS[n].includes("target"),
);

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

function functionOf(template: Template, handler: HandlerName): { id: string; props: Json } {
  const [entry] = Object.entries(
    template.findResources("AWS::Lambda::Function", {
      Properties: { Description: `sfn-rollouts: ${HANDLERS[handler]}` },
    }),
  );
  if (!entry) throw new Error(`no function ${handler}`);
  return { id: entry[0], props: (entry[1] as { Properties: Json }).Properties };
}

const roleOf = (template: Template, handler: HandlerName) =>
  ((functionOf(template, handler).props.Role as Json)["Fn::GetAtt"] as string[])[0] as string;

function statementsOf(template: Template, role: string): Statement[] {
  return Object.values(template.findResources("AWS::IAM::Policy"))
    .filter((p) => ((p.Properties.Roles ?? []) as Json[]).some((r) => r.Ref === role))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}

function definitionOf(template: Template): { States: Record<string, Json> } {
  const [machine] = Object.values(template.findResources("AWS::StepFunctions::StateMachine")).filter(
    (r) => r.Properties.StateMachineName === undefined,
  );
  return JSON.parse(flat((machine as { Properties: Json }).Properties.DefinitionString)) as {
    States: Record<string, Json>;
  };
}

const base = {
  type: "kubernetes" as const,
  namespace: "shop",
  stableDeployment: "shop-stable",
  canaryDeployment: "shop-canary",
  router: {
    type: "gateway-api" as const,
    httpRoute: "shop",
    stableService: "shop-stable",
    canaryService: "shop-canary",
  },
};

function eksStack(vpc = false): { stack: Stack; template: Template } {
  const stack = new Stack(testApp(), "Eks", { env: { account: "111122223333", region: "eu-west-1" } });
  const controller = new RolloutController(stack, "Controller");
  const network = vpc ? new ec2.Vpc(stack, "Vpc", { maxAzs: 2, natGateways: 1 }) : undefined;
  network?.addFlowLog("FlowLog");
  controller.addRollout("Shop", {
    spec: { files: EXAMPLE_FILES },
    target: {
      ...base,
      cluster: {
        clusterName: "prod",
        clusterEndpoint: "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
        clusterCertificateAuthorityData: "LS0tLS1CRUdJTg==",
      },
      ...(network ? { vpc: network } : {}),
    },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
  });
  return { stack, template: Template.fromStack(stack) };
}

describe("a kubernetes target on an EKS cluster", () => {
  let stack: Stack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = eksStack());
  });

  it("embeds the endpoint, the CA, the cluster's name and the spec's replicas and surge, and polls readiness after each weight", () => {
    const definition = definitionOf(template);
    const step = definition.States["Step01-SetWeight-25"] as { Parameters: { Payload: Json } };
    const target = step.Parameters.Payload.target as Json;
    expect(target).toMatchObject({
      type: "kubernetes",
      server: "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
      certificateAuthority: "LS0tLS1CRUdJTg==",
      auth: { type: "eks", clusterName: "prod" },
      namespace: "shop",
      replicas: 4,
      maxSurge: 1,
    });
    expect(target).not.toHaveProperty("cluster");
    expect(Object.keys(definition.States).filter((s) => s.endsWith("-CheckReady")).length).toBeGreaterThan(1);
  });

  it("creates one access entry per target-calling role, in the group the shipped RBAC binds, and nothing for the others", () => {
    const entries = Object.values(template.findResources("AWS::EKS::AccessEntry")).map(
      (r) => r.Properties as Json,
    );
    expect(entries).toHaveLength(MOVERS.length);
    for (const e of entries)
      expect(e).toMatchObject({ ClusterName: "prod", Type: "STANDARD", KubernetesGroups: ["sfn-rollouts"] });
    const principals = entries.map((e) => flat(e.PrincipalArn)).sort();
    expect(principals).toEqual(MOVERS.map((n) => `<${roleOf(template, n)}.Arn>`).sort());
  });

  it("grants no IAM action for the cluster: the access entry maps the role", () => {
    for (const n of MOVERS) {
      const actions = statementsOf(template, roleOf(template, n)).flatMap((s) =>
        Array.isArray(s.Action) ? s.Action : [s.Action],
      );
      expect(
        actions.filter((a) => /^(eks|secretsmanager|ec2):/.test(a)),
        n,
      ).toEqual([]);
    }
    expect(functionOf(template, "promote").props.VpcConfig).toBeUndefined();
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe("a private endpoint", () => {
  let stack: Stack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = eksStack(true));
  });

  it("puts exactly the target-calling functions in the VPC's private subnets, with their network interface grants first", () => {
    for (const n of Object.keys(HANDLERS) as HandlerName[]) {
      const { props } = functionOf(template, n);
      if (MOVERS.includes(n)) {
        expect(props.VpcConfig, n).toMatchObject({
          SubnetIds: expect.any(Array),
          SecurityGroupIds: expect.any(Array),
        });
        expect((props.VpcConfig as { SubnetIds: unknown[] }).SubnetIds).toHaveLength(2);
        const actions = statementsOf(template, roleOf(template, n)).flatMap((s) =>
          Array.isArray(s.Action) ? s.Action : [s.Action],
        );
        expect(actions).toContain("ec2:CreateNetworkInterface");
        const deps =
          (template.toJSON().Resources[functionOf(template, n).id] as { DependsOn?: string[] }).DependsOn ??
          [];
        expect(
          deps.some((d) => d.includes("TargetPolicy")),
          n,
        ).toBe(true);
      } else {
        expect(props.VpcConfig, n).toBeUndefined();
      }
    }
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe("a kubeconfig in Secrets Manager", () => {
  let stack: Stack;
  let template: Template;
  beforeAll(() => {
    stack = new Stack(testApp(), "Secret", { env: { account: "111122223333", region: "eu-west-1" } });
    const controller = new RolloutController(stack, "Controller");
    const secret = secretsmanager.Secret.fromSecretCompleteArn(
      stack,
      "Kubeconfig",
      "arn:aws:secretsmanager:eu-west-1:111122223333:secret:shop-kubeconfig-AbCdEf",
    );
    controller.addRollout("Shop", {
      spec: { files: EXAMPLE_FILES },
      target: { ...base, kubeconfigSecret: secret },
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
    });
    template = Template.fromStack(stack);
  });

  it("embeds the secret's ARN and grants GetSecretValue on exactly it to exactly the target-calling functions", () => {
    const target = (definitionOf(template).States.Begin as { Parameters: { Payload: Json } }).Parameters
      .Payload.target;
    expect(target).toMatchObject({
      auth: {
        type: "kubeconfig-secret",
        secretArn: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:shop-kubeconfig-AbCdEf",
      },
    });
    for (const n of Object.keys(HANDLERS) as HandlerName[]) {
      const secretStatements = statementsOf(template, roleOf(template, n)).filter((s) =>
        (Array.isArray(s.Action) ? s.Action : [s.Action]).some((a) => a.startsWith("secretsmanager:")),
      );
      if (MOVERS.includes(n)) {
        expect(secretStatements, n).toEqual([
          expect.objectContaining({
            Action: "secretsmanager:GetSecretValue",
            Resource: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:shop-kubeconfig-AbCdEf",
          }),
        ]);
      } else {
        expect(secretStatements, n).toEqual([]);
      }
    }
    template.resourceCountIs("AWS::EKS::AccessEntry", 0);
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe("a job metric on a kubeconfig in Secrets Manager", () => {
  it("grants startAnalysis the secret too (it creates the first Job), and its Task carries the target", () => {
    const dir = mkdtempSync(join(tmpdir(), "kube-job-infra-"));
    const file = join(dir, "rollout.yaml");
    writeFileSync(
      file,
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: smoke}
spec:
  metrics:
    - name: smoke
      provider:
        job:
          spec: {backoffLimit: 0, template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox, command: [sh, -c, "exit 0"]}]}}}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  replicas: 4
  template: {spec: {containers: [{name: app, image: shop}]}}
  strategy:
    canary:
      steps:
        - setWeight: 25
        - analysis: {templates: [{templateName: smoke}]}
`,
    );
    const stack = new Stack(testApp(), "Jobs", { env: { account: "111122223333", region: "eu-west-1" } });
    const controller = new RolloutController(stack, "Controller");
    const secret = secretsmanager.Secret.fromSecretCompleteArn(
      stack,
      "Kubeconfig",
      "arn:aws:secretsmanager:eu-west-1:111122223333:secret:shop-kubeconfig-AbCdEf",
    );
    controller.addRollout("Shop", {
      spec: { files: [file] },
      target: { ...base, kubeconfigSecret: secret },
      trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
    });
    const template = Template.fromStack(stack);
    const readers = [...MOVERS, "startAnalysis"];
    for (const n of Object.keys(HANDLERS) as HandlerName[]) {
      const secretStatements = statementsOf(template, roleOf(template, n)).filter((s) =>
        (Array.isArray(s.Action) ? s.Action : [s.Action]).some((a) => a.startsWith("secretsmanager:")),
      );
      expect(secretStatements.length > 0, n).toBe(readers.includes(n));
    }
    const analysis = Object.values(definitionOf(template).States).find((s) =>
      JSON.stringify(s).includes('"templates"'),
    ) as { Parameters: { Payload: Json } };
    expect(analysis.Parameters.Payload.target).toMatchObject({ auth: { type: "kubeconfig-secret" } });
  });

  it("is refused on another target, naming the metric and the sfn-rollouts/lambda plugin", () => {
    const dir = mkdtempSync(join(tmpdir(), "kube-job-infra-"));
    const file = join(dir, "rollout.yaml");
    writeFileSync(
      file,
      `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: smoke}
spec:
  metrics:
    - name: smoke
      provider: {job: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  replicas: 4
  template: {spec: {containers: [{name: app, image: shop}]}}
  strategy:
    canary:
      steps:
        - setWeight: 25
        - analysis: {templates: [{templateName: smoke}]}
`,
    );
    const stack = new Stack(testApp(), "Plugin", { env: { account: "111122223333", region: "eu-west-1" } });
    const controller = new RolloutController(stack, "Controller");
    expect(() =>
      controller.addRollout("Shop", {
        spec: { files: [file] },
        target: {
          type: "plugin",
          name: "router",
          functionArn: "arn:aws:lambda:eu-west-1:111122223333:function:router",
        },
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
      }),
    ).toThrow(/metric "smoke".*sfn-rollouts\/lambda/s);
  });
});

describe("kubernetes target validation", () => {
  const attempt = (target: Json, embedded = false): string[] => {
    const app = new App({
      context: { "aws:cdk:bundling-stacks": [], ...(embedded ? { "sfn-rollouts:embedded": true } : {}) },
    });
    const stack = new Stack(app, "Bad");
    const controller = new RolloutController(stack, "Controller");
    try {
      controller.addRollout("Shop", {
        spec: { files: EXAMPLE_FILES },
        target: target as never,
        trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
      });
    } catch (error) {
      expect(error).toBeInstanceOf(PropsError);
      return [...(error as PropsError).problems];
    }
    return [];
  };

  it("needs exactly one way to the cluster, refuses a token outside the embedded runtime, and names bad fields", () => {
    expect(attempt({ ...base })).toEqual([
      expect.stringMatching(/^target: give exactly one of cluster .* or kubeconfigSecret/),
    ]);
    const problems = attempt({
      ...base,
      canaryDeployment: "shop-stable",
      router: { type: "istio", virtualService: "Bad_Name", stableService: "a", canaryService: "b" },
      auth: { type: "token", token: "t" },
      server: "http://127.0.0.1:1",
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^target\.auth: a token in the settings .* accepted only by the embedded runtime/,
        ),
        expect.stringMatching(/^target\.router\.virtualService: a Kubernetes name/),
      ]),
    );
    expect(
      attempt({ ...base, auth: { type: "token", token: "t" }, server: "http://127.0.0.1:1" }, true),
    ).toEqual([]);
  });
});
