import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { extractStack, handlerNameFor } from "../../../local/asl/extract.ts";
import { localFunctionArn, localStateMachineArn } from "../../../local/asl/intrinsics.ts";
import { type Runtime, startRuntime } from "../../../local/runtime.ts";

/** The only test file that imports aws-cdk-lib (~5 s): a small stack synthesized in-process. */
const workdir = mkdtempSync(join(tmpdir(), "sfn-rollouts-cdk-"));
let template: Record<string, unknown>;
let outdir: string;
let ids: { begin: string; greet: string; table: string; machine: string };
let runtime: Runtime | undefined;

beforeAll(() => {
  const code = join(workdir, "greet");
  mkdirSync(code);
  writeFileSync(
    join(code, "index.mjs"),
    "export const handler = async (event) => ({ greeting: process.env.GREETING, seen: event.input.detail['image-tag'] });\n",
  );
  outdir = join(workdir, "cdk.out");
  const app = new App({ outdir, context: { "aws:cdk:enable-asset-metadata": true } });
  const stack = new Stack(app, "Local");
  const table = new dynamodb.Table(stack, "Rollouts", {
    partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
  });
  const begin = new lambda.Function(stack, "BeginFunction", {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: "index.handler",
    code: lambda.Code.fromInline("exports.handler = async () => ({});"),
    environment: { ROLLOUTS_TABLE: table.tableName, ROLLOUTS_TABLE_ARN: table.tableArn },
  });
  const greet = new lambda.Function(stack, "GreetFunction", {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: "index.handler",
    code: lambda.Code.fromAsset(code),
    environment: { GREETING: "hello from the asset" },
  });
  const invoke = (placeholder: string, resultPath: string) => ({
    Type: "Task",
    Resource: "arn:aws:states:::lambda:invoke",
    Parameters: { FunctionName: `\${${placeholder}}`, Payload: { "input.$": "$" } },
    ResultSelector: { "value.$": "$.Payload" },
    ResultPath: resultPath,
  });
  const machine = new sfn.StateMachine(stack, "Demo", {
    definitionBody: sfn.DefinitionBody.fromString(
      JSON.stringify({
        StartAt: "Begin",
        States: {
          Begin: { ...invoke("BeginFunctionArn", "$.begin"), Next: "Greet" },
          Greet: { ...invoke("GreetFunctionArn", "$.greet"), End: true },
        },
      }),
    ),
    definitionSubstitutions: { BeginFunctionArn: begin.functionArn, GreetFunctionArn: greet.functionArn },
  });
  new events.Rule(stack, "EcrPush", {
    eventPattern: {
      source: ["aws.ecr"],
      detailType: ["ECR Image Action"],
      detail: { "action-type": ["PUSH"], result: ["SUCCESS"], "repository-name": ["demo"] },
    },
    targets: [new targets.SfnStateMachine(machine)],
  });
  const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(construct.node.defaultChild as lambda.CfnFunction);
  ids = {
    begin: logicalId(begin),
    greet: logicalId(greet),
    table: logicalId(table),
    machine: logicalId(machine),
  };
  template = app.synth().getStackByName(stack.stackName).template as Record<string, unknown>;
});

afterAll(async () => {
  await runtime?.close();
  rmSync(workdir, { recursive: true, force: true });
});

describe("ASL from a synthesized CDK stack", () => {
  it("resolves the definition, substitutions, environments, assets and rules", () => {
    const stack = extractStack(template, { refs: { [ids.table]: "rollouts-local" } });
    const [machine] = stack.stateMachines;
    expect(machine?.arn).toBe(localStateMachineArn(ids.machine));
    const states = machine?.definition.States as Record<string, { Parameters: { FunctionName: string } }>;
    expect(states.Begin?.Parameters.FunctionName).toBe(localFunctionArn(ids.begin));
    expect(states.Greet?.Parameters.FunctionName).toBe(localFunctionArn(ids.greet));
    const begin = stack.functions.find((f) => f.logicalId === ids.begin);
    expect(begin?.env).toEqual({
      ROLLOUTS_TABLE: "rollouts-local",
      ROLLOUTS_TABLE_ARN: "arn:aws:dynamodb:local:000000000000:table/rollouts-local",
    });
    expect(begin?.inlineCode).toContain("exports.handler");
    expect(handlerNameFor(begin!, ["begin", "set-weight"])).toBe("begin");
    const greet = stack.functions.find((f) => f.logicalId === ids.greet);
    expect(greet?.handler).toBe("index.handler");
    expect(greet?.assetPath).toMatch(/^asset\./);
    expect(stack.tables.map((t) => t.name)).toEqual(["rollouts-local"]);
    const [rule] = stack.rules;
    expect(rule?.eventPattern).toEqual({
      source: ["aws.ecr"],
      "detail-type": ["ECR Image Action"],
      detail: { "action-type": ["PUSH"], result: ["SUCCESS"], "repository-name": ["demo"] },
    });
    expect(rule?.targets.map((t) => t.arn)).toEqual([machine?.arn]);
  });

  it("runs the stack: the ECR rule starts the machine, one function in-process, one from its bundled asset", async () => {
    const stack = extractStack(template);
    const greet = stack.functions.find((f) => f.logicalId === ids.greet);
    runtime = await startRuntime({
      clock: new ManualClock(Date.parse("2026-01-01T00:00:00Z")),
      template,
      refs: { [ids.table]: "rollouts-local" },
      functions: {
        [ids.begin]: { handler: async () => ({ table: process.env.ROLLOUTS_TABLE }) },
        [ids.greet]: { module: join(outdir, greet?.assetPath ?? "", "index.mjs") },
      },
    });
    await runtime.putEvents([
      {
        Source: "aws.ecr",
        DetailType: "ECR Image Action",
        Detail: JSON.stringify({
          "action-type": "PUSH",
          result: "SUCCESS",
          "repository-name": "demo",
          "image-tag": "v7",
        }),
      },
    ]);
    const [execution] = runtime.sfn.listExecutions({ stateMachineArn: runtime.stateMachineArn(ids.machine) });
    const done = await runtime.waitForExecution(execution?.executionArn ?? "");
    expect(done.status).toBe("SUCCEEDED");
    const output = JSON.parse(done.output ?? "null");
    expect(output.begin).toEqual({ value: { table: "rollouts-local" } });
    expect(output.greet).toEqual({ value: { greeting: "hello from the asset", seen: "v7" } });
  });
});
