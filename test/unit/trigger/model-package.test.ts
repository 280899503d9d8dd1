import { SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import { SM } from "@sfn-rollouts/test-support/ecr";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { SfnTaskTokens } from "../../../functions/abort/index.ts";
import { ManualClock } from "../../../functions/clock.ts";
import { MemoryRolloutStore } from "../../../functions/store/index.ts";
import { pushedArtifact } from "../../../functions/traffic/artifact.ts";
import {
  InvalidTriggerEventError,
  modelPackageRoute,
  RolloutExecutionInputSchema,
  SfnExecutions,
  startRollout,
  type TriggerDeps,
} from "../../../functions/trigger/index.ts";

const sfn = mockClient(SFNClient);
const NOW = Date.UTC(2026, 11, 1, 9, 0, 0);
const PACKAGE = (v: number) => `arn:aws:sagemaker:eu-west-1:123456789012:model-package/ranker/${v}`;

/** A `SageMaker Model Package State Change` event as EventBridge delivers it. */
function packageEvent(version: number, status = "Approved", id = `event-${version}-${status}`) {
  return {
    version: "0",
    id,
    "detail-type": "SageMaker Model Package State Change",
    source: "aws.sagemaker",
    account: "123456789012",
    time: new Date(NOW - 60_000 + version * 1000).toISOString(),
    region: "eu-west-1",
    resources: [PACKAGE(version)],
    detail: {
      ModelPackageGroupName: "ranker",
      ModelPackageVersion: version,
      ModelPackageArn: PACKAGE(version),
      ModelPackageName: `ranker/${version}`,
      ModelApprovalStatus: status,
      ModelPackageStatus: "Completed",
    },
  };
}

function setup(): TriggerDeps {
  const client = new SFNClient({ region: "eu-west-1" });
  return {
    store: new MemoryRolloutStore({ clock: new ManualClock(NOW) }),
    executions: new SfnExecutions(client),
    tokens: new SfnTaskTokens(client),
    clock: new ManualClock(NOW),
    routes: [{ rollout: "ranker", repository: modelPackageRoute("ranker"), stateMachineArn: SM }],
  };
}

beforeEach(() => {
  sfn.reset();
  sfn.on(StartExecutionCommand).callsFake((input: { name: string }) => ({
    executionArn: `${SM.replace(":stateMachine:", ":execution:")}:${input.name}`,
    startDate: new Date(NOW),
  }));
});

describe("a model package approved in the Model Registry", () => {
  it("starts the group's rollout with the package as the revision; a redelivery starts nothing", async () => {
    const deps = setup();
    const result = await startRollout(deps, packageEvent(7));
    expect(result).toMatchObject({ kind: "handled", rollouts: [{ rollout: "ranker", outcome: "started" }] });
    const input = RolloutExecutionInputSchema.parse(
      JSON.parse(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.input ?? ""),
    );
    expect(input.revision).toMatchObject({ repository: "sagemaker:ranker", image: PACKAGE(7), tag: "v7" });
    expect(input.revision.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // What Begin gives the SageMaker target (its artifactFor): the package to create the candidate model from.
    expect(pushedArtifact(input.revision)).toEqual({
      modelPackage: PACKAGE(7),
      version: "v7",
    });
    // A redelivery before Begin recorded the execution re-issues the same name (Step Functions
    // starts nothing twice); the digest of the ARN is what makes it the same push.
    await startRollout(deps, packageEvent(7));
    const names = sfn.commandCalls(StartExecutionCommand).map((c) => c.args[0].input.name);
    expect(names).toHaveLength(2);
    expect(names[1]).toBe(names[0]);
    expect((await deps.store.get("ranker"))?.trigger?.generation).toBe(1);
  });

  it("ignores a version that is not approved, and a group no rollout names", async () => {
    const deps = setup();
    expect(await startRollout(deps, packageEvent(8, "PendingManualApproval"))).toEqual({
      kind: "ignored",
      reason: "ModelApprovalStatus PendingManualApproval",
    });
    const other = packageEvent(8);
    other.detail.ModelPackageGroupName = "fraud";
    expect(await startRollout(deps, other)).toMatchObject({ kind: "ignored" });
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });

  it("refuses an event without the fields the Model Registry sends, naming them", async () => {
    const bad = packageEvent(9) as { detail: Record<string, unknown> };
    delete bad.detail.ModelPackageArn;
    await expect(startRollout(setup(), bad)).rejects.toThrow(InvalidTriggerEventError);
    await expect(startRollout(setup(), bad)).rejects.toThrow(/detail.ModelPackageArn/);
  });
});
