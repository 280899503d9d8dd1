import {
  CreateEndpointConfigCommand,
  CreateModelCommand,
  DeleteEndpointConfigCommand,
  SageMakerClient,
  UpdateEndpointCommand,
  UpdateEndpointWeightsAndCapacitiesCommand,
} from "@aws-sdk/client-sagemaker";
import {
  clock,
  PACKAGE,
  ROLE,
  sagemaker,
  settle,
  useSageMakerWorld,
  world,
} from "@sfn-rollouts/test-support/sagemaker-world";
import { describe, expect, it } from "vitest";
import {
  TargetConfigurationError,
  TargetNotReadyError,
  TargetStateError,
} from "../../functions/traffic/errors.ts";
import { createTrafficTarget } from "../../functions/traffic/index.ts";
import type { TargetState } from "../../functions/traffic/port.ts";
import { type SageMakerState, SageMakerTraffic } from "../../functions/traffic/sagemaker.ts";

useSageMakerWorld();

function router(extra: Record<string, unknown> = {}): SageMakerTraffic {
  return new SageMakerTraffic(
    { sagemaker: new SageMakerClient({ region: "eu-west-1" }) },
    {
      type: "sagemaker",
      endpointName: "ranker",
      executionRoleArn: ROLE,
      progressDeadlineSeconds: 1800,
      ...extra,
    },
    clock,
  );
}
const sm = (s: TargetState): SageMakerState => s as SageMakerState;

/** Prepared, deployed and InService: the candidate is a production variant at 0%. */
async function ready(r = router()): Promise<TargetState> {
  const { state } = await r.prepare();
  const deploying = await r.deployCandidate(state, { modelPackage: PACKAGE });
  settle();
  const res = await r.checkReadiness(deploying);
  expect(res.ready).toBe(true);
  return res.state;
}

/** Sets a weight and waits for the endpoint to settle, as the workflow's readiness loop does. */
async function weight(r: SageMakerTraffic, state: TargetState, percent: number): Promise<TargetState> {
  const change = await r.setWeight(state, percent);
  expect(change.outcome).toBe("applied");
  settle();
  const res = await r.checkReadiness(change.state);
  expect(res.ready).toBe(true);
  return res.state;
}

const lastWeights = () =>
  sagemaker.commandCalls(UpdateEndpointWeightsAndCapacitiesCommand).at(-1)?.args[0].input
    .DesiredWeightsAndCapacities;

describe("SageMakerTraffic", () => {
  it("is built from its settings by createTrafficTarget, and a bad field is named", () => {
    const client = new SageMakerClient({ region: "eu-west-1" });
    expect(
      createTrafficTarget(
        { type: "sagemaker", endpointName: "ranker", executionRoleArn: ROLE },
        { sagemaker: client },
        clock,
      ).type,
    ).toBe("sagemaker");
    expect(() =>
      createTrafficTarget(
        { type: "sagemaker", endpointName: "ranker_1", executionRoleArn: "role" },
        { sagemaker: client },
        clock,
      ),
    ).toThrow(/endpointName: a SageMaker endpoint name.*executionRoleArn: an IAM role ARN/s);
  });

  it("prepare reads the serving variant and refuses an endpoint that already splits or mirrors traffic", async () => {
    const { state, firstRelease, stable } = await router().prepare();
    expect(firstRelease).toBe(false);
    expect(stable).toBe("endpoint ranker → variant v6 (model ranker-v6, config ranker-config-v6)");
    expect(sm(state).stableVariant).toMatchObject({ VariantName: "v6", InstanceType: "ml.m5.large" });

    world.endpoint.ProductionVariants.push({ VariantName: "v7", CurrentWeight: 1, DesiredWeight: 1 });
    await expect(router().prepare()).rejects.toThrow(
      /already splits traffic \(config ranker-config-v6: v6=1, v7=1\)/,
    );
    world.endpoint.ProductionVariants.pop();
    world.endpoint.ShadowProductionVariants = [{ VariantName: "v7", CurrentWeight: 1, DesiredWeight: 1 }];
    await expect(router().prepare()).rejects.toThrow(/already mirrors requests to shadow variant v7/);
    await expect(router({ endpointName: "other" }).prepare()).rejects.toThrow(TargetConfigurationError);
  });

  it("deploys the model package as a second production variant at weight 0, then polls until InService", async () => {
    const r = router();
    const { state } = await r.prepare();
    const deploying = sm(await r.deployCandidate(state, { modelPackage: PACKAGE }));
    const model = sagemaker.commandCalls(CreateModelCommand)[0]?.args[0].input;
    expect(model).toMatchObject({ ExecutionRoleArn: ROLE, PrimaryContainer: { ModelPackageName: PACKAGE } });
    expect(model?.ModelName).toMatch(/^ranker-r-[0-9a-f]{10}$/);
    const config = sagemaker.commandCalls(CreateEndpointConfigCommand)[0]?.args[0].input;
    expect(config?.EndpointConfigName).toBe(deploying.candidate?.deployConfig);
    expect(config?.ProductionVariants).toEqual([
      {
        VariantName: "v6",
        ModelName: "ranker-v6",
        InstanceType: "ml.m5.large",
        InitialInstanceCount: 2,
        InitialVariantWeight: 1,
      },
      {
        VariantName: deploying.candidate?.variant.VariantName,
        ModelName: model?.ModelName,
        InstanceType: "ml.m5.large",
        InitialInstanceCount: 2,
        InitialVariantWeight: 0,
      },
    ]);
    expect(config?.DataCaptureConfig?.DestinationS3Uri).toBe("s3://captures/ranker");
    expect(sagemaker.commandCalls(UpdateEndpointCommand)[0]?.args[0].input).toEqual({
      EndpointName: "ranker",
      EndpointConfigName: deploying.candidate?.deployConfig,
    });

    const polling = await r.checkReadiness(deploying);
    expect(polling).toMatchObject({ ready: false, retryAfterSeconds: 30 });
    expect(polling.message).toContain("Updating");
    settle();
    const done = await r.checkReadiness(polling.state);
    expect(done.ready).toBe(true);
    expect(sm(done.state).phase).toBe("ready");
    expect(await r.readWeights(done.state)).toMatchObject({ canary: 0, stable: 100, drift: false });
  });

  it("deploys an image with the instance type of the settings", async () => {
    const r = router({ instanceType: "ml.g5.xlarge", initialInstanceCount: 1 });
    const { state } = await r.prepare();
    await r.deployCandidate(state, {
      image: "123456789012.dkr.ecr.eu-west-1.amazonaws.com/ranker@sha256:ab",
    });
    expect(sagemaker.commandCalls(CreateModelCommand)[0]?.args[0].input.PrimaryContainer).toEqual({
      Image: "123456789012.dkr.ecr.eu-west-1.amazonaws.com/ranker@sha256:ab",
    });
    expect(
      sagemaker.commandCalls(CreateEndpointConfigCommand)[0]?.args[0].input.ProductionVariants?.[1],
    ).toMatchObject({
      InstanceType: "ml.g5.xlarge",
      InitialInstanceCount: 1,
    });
    await expect(r.deployCandidate(state, { s3Key: "ranker/model.tar.gz" })).rejects.toThrow(
      /give artifact.modelPackage/,
    );
  });

  it("a retried deployment creates nothing twice and does not update the endpoint again", async () => {
    const r = router();
    const { state } = await r.prepare();
    const first = await r.deployCandidate(state, { modelPackage: PACKAGE });
    const again = await r.deployCandidate(state, { modelPackage: PACKAGE });
    expect(sm(again).candidate).toEqual(sm(first).candidate);
    expect(sagemaker.commandCalls(UpdateEndpointCommand)).toHaveLength(1);
    expect(Object.keys(world.models)).toHaveLength(2);
  });

  it("a Begin tried again after its endpoint update landed prepares from the stable config and finds the update", async () => {
    const r = router();
    const first = sm(await r.deployCandidate((await r.prepare()).state, { modelPackage: PACKAGE }));
    expect(world.endpoint.EndpointStatus).toBe("Updating");
    // The answer was lost: the whole Begin runs again while the endpoint moves to its config.
    const again = await r.prepare();
    expect(sm(again.state).stableConfig).toBe("ranker-config-v6");
    const redeployed = sm(await r.deployCandidate(again.state, { modelPackage: PACKAGE }));
    expect(redeployed.candidate).toEqual(first.candidate);
    expect(sagemaker.commandCalls(UpdateEndpointCommand)).toHaveLength(1);
    settle();
    expect((await r.checkReadiness(redeployed)).ready).toBe(true);

    // An update this target did not start (another config) is still waited for.
    world.endpoint.EndpointStatus = "Updating";
    world.endpoint.PendingDeploymentSummary = { EndpointConfigName: "ranker-config-v7" };
    await expect(router().prepare()).rejects.toThrow(
      /endpoint ranker is Updating: a rollout starts from an InService endpoint/,
    );
  });

  it("fails with DescribeEndpoint's FailureReason when the update fails or is rolled back", async () => {
    const r = router();
    const { state } = await r.prepare();
    const deploying = await r.deployCandidate(state, { modelPackage: PACKAGE });
    world.endpoint.EndpointStatus = "Failed";
    world.endpoint.FailureReason =
      "The primary container for production variant candidate did not pass the ping health check.";
    await expect(r.checkReadiness(deploying)).rejects.toThrow(
      /endpoint ranker is Failed \(the candidate variant\): The primary container .* did not pass the ping health check/,
    );
    world.endpoint.EndpointStatus = "Updating";
    settle("Image ranker@sha256:ab does not exist");
    await expect(r.checkReadiness(deploying)).rejects.toThrow(
      /did not take config ranker-r-[0-9a-f]+-d .*serves ranker-config-v6: Image ranker@sha256:ab does not exist/,
    );
  });

  it("fails after the progress deadline when the endpoint stays Updating", async () => {
    const r = router({ progressDeadlineSeconds: 600 });
    const { state } = await r.prepare();
    const deploying = await r.deployCandidate(state, { modelPackage: PACKAGE });
    clock.advance(599_000);
    expect((await r.checkReadiness(deploying)).ready).toBe(false);
    clock.advance(1_000);
    await expect(r.checkReadiness(deploying)).rejects.toThrow(TargetNotReadyError);
  });

  it("sets weights with UpdateEndpointWeightsAndCapacities, one DesiredWeight per variant, and polls after it", async () => {
    const r = router();
    const state = await ready(r);
    const candidate = sm(state).candidate?.variant.VariantName;
    const change = await r.setWeight(state, 25);
    expect(change.outcome).toBe("applied");
    expect(lastWeights()).toEqual([
      { VariantName: "v6", DesiredWeight: 75 },
      { VariantName: candidate, DesiredWeight: 25 },
    ]);
    // The endpoint is Updating after a weight change: readiness waits for it.
    expect((await r.checkReadiness(change.state)).ready).toBe(false);
    // A retry of the same call finds the weights already set and writes nothing.
    const retry = await r.setWeight(state, 25);
    expect(retry.outcome).toBe("applied");
    expect(sagemaker.commandCalls(UpdateEndpointWeightsAndCapacitiesCommand)).toHaveLength(1);
    settle();
    const settled = await r.checkReadiness(change.state);
    expect(settled.ready).toBe(true);
    expect(await r.readWeights(settled.state)).toMatchObject({ canary: 25, stable: 75, drift: false });
  });

  it("reports weights changed by someone else as drift, writes nothing, and overwrites only when told", async () => {
    const r = router();
    const state = await weight(r, await ready(r), 10);
    const candidate = sm(state).candidate?.variant.VariantName ?? "";
    for (const v of world.endpoint.ProductionVariants) {
      v.CurrentWeight = 1;
      v.DesiredWeight = v.CurrentWeight;
    }
    const change = await r.setWeight(state, 25);
    expect(change.outcome).toBe("drift");
    if (change.outcome !== "drift") return;
    expect(change.message).toBe(
      `endpoint ranker changed outside the rollout: the candidate receives 50% instead of 10% (config ${sm(state).candidate?.deployConfig}: v6=1, ${candidate}=1)`,
    );
    expect(sagemaker.commandCalls(UpdateEndpointWeightsAndCapacitiesCommand)).toHaveLength(1);
    const forced = await r.setWeight(state, 25, { overwriteDrift: true });
    expect(forced.outcome).toBe("applied");
    expect(lastWeights()).toContainEqual({ VariantName: candidate, DesiredWeight: 25 });
  });

  it("mirrors with a shadow variant beside the only production variant, and removes it", async () => {
    const r = router();
    const state = await ready(r);
    const candidate = sm(state).candidate;
    const change = await r.setMirrorRoute(state, {
      name: "shadow",
      percentage: 50,
      match: [{ method: { exact: "POST" } }],
    });
    expect(change.message).toContain("50% of the requests copied to shadow variant");
    expect(change.message).toContain("the match");
    const config = sagemaker.commandCalls(CreateEndpointConfigCommand).at(-1)?.args[0].input;
    expect(config?.ProductionVariants).toEqual([
      expect.objectContaining({ VariantName: "v6", InitialVariantWeight: 1 }),
    ]);
    expect(config?.ShadowProductionVariants).toEqual([
      expect.objectContaining({ VariantName: candidate?.variant.VariantName, InitialVariantWeight: 0.5 }),
    ]);
    expect(sagemaker.commandCalls(UpdateEndpointCommand).at(-1)?.args[0].input.EndpointConfigName).toBe(
      config?.EndpointConfigName,
    );
    settle();
    const mirrored = await r.checkReadiness(change.state);
    expect(mirrored.ready).toBe(true);
    expect(world.endpoint.ShadowProductionVariants?.[0]?.VariantName).toBe(candidate?.variant.VariantName);

    // The candidate is a shadow: it gets no live traffic until the mirror route is removed.
    await expect(r.setWeight(mirrored.state, 25)).rejects.toThrow(/remove the mirror route/);
    const removed = await r.setMirrorRoute(mirrored.state, { name: "shadow", percentage: 0 });
    expect(removed.message).toContain("mirror route shadow removed");
    expect(sagemaker.commandCalls(UpdateEndpointCommand).at(-1)?.args[0].input.EndpointConfigName).toBe(
      candidate?.deployConfig,
    );
    settle();
    const back = await r.checkReadiness(removed.state);
    expect(world.endpoint.ShadowProductionVariants).toBeUndefined();
    const weighted = await weight(r, back.state, 25);
    await expect(r.setMirrorRoute(weighted, { name: "shadow", percentage: 10 })).rejects.toThrow(
      /can mirror only while the candidate has no live traffic \(it has 25%\)/,
    );
  });

  it("promotes with all traffic to the candidate, then scales down to the candidate alone and deletes what it created", async () => {
    const r = router();
    let state = await ready(r);
    const mirror = await r.setMirrorRoute(state, { name: "shadow", percentage: 100 });
    settle();
    state = (await r.checkReadiness(mirror.state)).state;
    const removed = await r.setMirrorRoute(state, { name: "shadow", percentage: 0 });
    settle();
    state = await weight(r, (await r.checkReadiness(removed.state)).state, 50);
    const candidate = sm(state).candidate;
    const promoted = await r.promote(state, { scaleDownDelaySeconds: 600 });
    expect(lastWeights()).toEqual([
      { VariantName: "v6", DesiredWeight: 0 },
      { VariantName: candidate?.variant.VariantName, DesiredWeight: 100 },
    ]);
    settle();
    expect(await r.readWeights(promoted)).toMatchObject({ canary: 0, stable: 100, drift: false });

    const early = await r.scaleDown(promoted);
    expect(early).toMatchObject({ ready: false, retryAfterSeconds: 600 });
    clock.advance(600_000);
    const moving = await r.scaleDown(early.state);
    expect(moving.ready).toBe(false);
    const final = sagemaker.commandCalls(UpdateEndpointCommand).at(-1)?.args[0].input.EndpointConfigName;
    expect(final).toBe(`ranker-r-${candidate?.hash}-p`);
    expect(world.configs[final ?? ""]?.ProductionVariants).toEqual([
      expect.objectContaining({ VariantName: candidate?.variant.VariantName, InitialVariantWeight: 1 }),
    ]);
    // Nothing is deleted while the endpoint still moves.
    expect(sagemaker.commandCalls(DeleteEndpointConfigCommand)).toHaveLength(0);
    expect((await r.scaleDown(moving.state)).ready).toBe(false);
    settle();
    const done = await r.scaleDown(moving.state);
    expect(done.ready).toBe(true);
    expect(done.message).toContain("kept model ranker-v6 and config ranker-config-v6 for a return");
    expect(Object.keys(world.configs).sort()).toEqual(["ranker-config-v6", final].sort());
    expect(Object.keys(world.models).sort()).toEqual(["ranker-v6", candidate?.modelName].sort());
    expect(world.endpoint.ProductionVariants.map((v) => v.VariantName)).toEqual([
      candidate?.variant.VariantName,
    ]);

    // An abort after the scale-down moves the endpoint back to the previous config.
    const abort = await r.abort(done.state, { abortScaleDownDelaySeconds: 30 });
    expect(abort.ready).toBe(false);
    expect(sagemaker.commandCalls(UpdateEndpointCommand).at(-1)?.args[0].input.EndpointConfigName).toBe(
      "ranker-config-v6",
    );
    settle();
    const aborted = await r.abort(abort.state, { abortScaleDownDelaySeconds: 30 });
    expect(aborted.ready).toBe(true);
    expect(aborted.message).toContain("all traffic on variant v6");
  });

  it("aborts by putting the weights back, then removes the candidate variant and deletes its model", async () => {
    const r = router();
    const state = await weight(r, await ready(r), 25);
    const candidate = sm(state).candidate;
    const first = await r.abort(state, { abortScaleDownDelaySeconds: 30 });
    expect(first.ready).toBe(false);
    expect(lastWeights()).toEqual([
      { VariantName: "v6", DesiredWeight: 100 },
      { VariantName: candidate?.variant.VariantName, DesiredWeight: 0 },
    ]);
    expect((await r.abort(first.state, { abortScaleDownDelaySeconds: 30 })).ready).toBe(false);
    settle();
    const aborted = await r.abort(first.state, { abortScaleDownDelaySeconds: 30 });
    expect(aborted.ready).toBe(true);
    clock.advance(30_000);
    const moving = await r.scaleDown(aborted.state);
    expect(sagemaker.commandCalls(UpdateEndpointCommand).at(-1)?.args[0].input.EndpointConfigName).toBe(
      "ranker-config-v6",
    );
    settle();
    const done = await r.scaleDown(moving.state);
    expect(done.ready).toBe(true);
    expect(Object.keys(world.configs)).toEqual(["ranker-config-v6"]);
    expect(Object.keys(world.models)).toEqual(["ranker-v6"]);
  });

  it("fails an abort whose endpoint stays Updating past its deadline", async () => {
    const r = router();
    const { state } = await r.prepare();
    const deploying = await r.deployCandidate(state, { modelPackage: PACKAGE });
    const first = await r.abort(deploying, { abortScaleDownDelaySeconds: 30, progressDeadlineSeconds: 60 });
    expect(first.ready).toBe(false);
    clock.advance(60_000);
    await expect(r.abort(first.state, { abortScaleDownDelaySeconds: 30 })).rejects.toThrow(
      TargetNotReadyError,
    );
  });

  it("leaves a side that carries traffic again alone at scale-down", async () => {
    const r = router();
    const promoted = await r.promote(await weight(r, await ready(r), 50), { scaleDownDelaySeconds: 0 });
    settle();
    for (const v of world.endpoint.ProductionVariants) v.DesiredWeight = v.CurrentWeight = 1;
    const res = await r.scaleDown(promoted);
    expect(res.ready).toBe(true);
    expect(res.message).toContain("v6 carries traffic again; nothing scaled down");
    expect(sagemaker.commandCalls(DeleteEndpointConfigCommand)).toHaveLength(0);
  });

  it("cannot route by header and says how testers reach the candidate variant", async () => {
    const r = router();
    const state = await ready(r);
    const change = await r.setHeaderRoute(state, { name: "testers", match: [] });
    expect(change.applied).toBe(false);
    expect(change.message).toMatch(/testers invoke ranker with TargetVariant=candidate-[0-9a-f]{10}/);
  });

  it("refuses a state written by another target and traffic before the candidate is ready", async () => {
    const r = router();
    await expect(r.setWeight({ type: "lambda-alias" }, 10)).rejects.toThrow(TargetStateError);
    const { state } = await r.prepare();
    await expect(r.setWeight(state, 10)).rejects.toThrow(/must be ready/);
    await expect(r.setMirrorRoute(state, { name: "shadow", percentage: 10 })).rejects.toThrow(
      /must be ready/,
    );
  });
});
