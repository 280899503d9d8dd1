/**
 * The SageMaker endpoint target against moto, for the operations moto has: the stable variant read
 * from the endpoint and its config (`prepare`), the candidate's model and its two-variant config
 * created (`deployCandidate`), and the weights moved with `UpdateEndpointWeightsAndCapacities`
 * (`setWeight`, `abort`), each read back from moto. moto has no `UpdateEndpoint`: the step that
 * puts the endpoint on the candidate's config is done here by recreating the endpoint on it
 * (`docs/runtime.md`, "The AWS peer: moto"). The SDK-mock twin is `test/traffic/sagemaker.test.ts`.
 */
import {
  CreateEndpointCommand,
  CreateEndpointConfigCommand,
  CreateModelCommand,
  DeleteEndpointCommand,
  DescribeEndpointCommand,
  DescribeEndpointConfigCommand,
  DescribeModelCommand,
  SageMakerClient,
} from "@aws-sdk/client-sagemaker";
import { MOTO_ACCOUNT, type Moto, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import type { TargetState } from "../../functions/traffic/port.ts";
import { candidateHash } from "../../functions/traffic/sagemaker/models.ts";
import { resourcePrefix } from "../../functions/traffic/sagemaker/resources.ts";
import { candidateVariant } from "../../functions/traffic/sagemaker/variants.ts";
import { type SageMakerState, SageMakerTraffic } from "../../functions/traffic/sagemaker.ts";

const ROLE = `arn:aws:iam::${MOTO_ACCOUNT}:role/sagemaker`;
const STABLE_IMAGE = `${MOTO_ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/fraud@sha256:1111`;
const CANDIDATE_IMAGE = `${MOTO_ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/fraud@sha256:2222`;

let moto: Moto;
let sagemaker: SageMakerClient;
const clock = new ManualClock(Date.UTC(2026, 0, 1));

beforeAll(async () => {
  moto = await startMoto();
  sagemaker = new SageMakerClient(moto.config);
});
afterAll(async () => {
  sagemaker?.destroy();
  await moto?.close();
});

/** Endpoint `fraud` on config `fraud-v1`: variant `stable` (model `fraud-v1`) with all the traffic. */
beforeEach(async () => {
  await moto.reset();
  await sagemaker.send(
    new CreateModelCommand({
      ModelName: "fraud-v1",
      ExecutionRoleArn: ROLE,
      PrimaryContainer: { Image: STABLE_IMAGE },
    }),
  );
  await sagemaker.send(
    new CreateEndpointConfigCommand({
      EndpointConfigName: "fraud-v1",
      ProductionVariants: [
        {
          VariantName: "stable",
          ModelName: "fraud-v1",
          InstanceType: "ml.m5.large",
          InitialInstanceCount: 2,
          InitialVariantWeight: 1,
        },
      ],
    }),
  );
  await sagemaker.send(new CreateEndpointCommand({ EndpointName: "fraud", EndpointConfigName: "fraud-v1" }));
});

const target = () =>
  new SageMakerTraffic(
    { sagemaker },
    { type: "sagemaker", endpointName: "fraud", executionRoleArn: ROLE, progressDeadlineSeconds: 600 },
    clock,
  );

const weights = async () => {
  const endpoint = await sagemaker.send(new DescribeEndpointCommand({ EndpointName: "fraud" }));
  return Object.fromEntries(
    (endpoint.ProductionVariants ?? []).map((v) => [
      v.VariantName?.startsWith("candidate-") ? "candidate" : v.VariantName,
      v.DesiredWeight ?? v.CurrentWeight ?? 0,
    ]),
  );
};

/**
 * Prepare and deploy the candidate; the model and config it created are read from moto. moto
 * has no `UpdateEndpoint`, so the endpoint is recreated on the candidate's config, and the state
 * is the one `checkReadiness` would give once the endpoint is InService on it.
 */
async function ready(t: SageMakerTraffic): Promise<TargetState> {
  const prepared = (await t.prepare()).state as SageMakerState;
  expect(prepared.stableConfig).toBe("fraud-v1");
  expect(prepared.stableVariant).toMatchObject({
    VariantName: "stable",
    ModelName: "fraud-v1",
    InstanceType: "ml.m5.large",
    InitialInstanceCount: 2,
  });
  // moto answers UpdateEndpoint, the last call, with its "not found" page, which the SDK cannot read.
  await expect(t.deployCandidate(prepared, { image: CANDIDATE_IMAGE })).rejects.toThrow();

  const hash = candidateHash({ Image: CANDIDATE_IMAGE }, "fraud-v1");
  const modelName = `${resourcePrefix("fraud")}${hash}`;
  const deployConfig = `${modelName}-d`;
  const model = await sagemaker.send(new DescribeModelCommand({ ModelName: modelName }));
  expect(model.PrimaryContainer?.Image).toBe(CANDIDATE_IMAGE);
  expect(model.ExecutionRoleArn).toBe(ROLE);
  const config = await sagemaker.send(
    new DescribeEndpointConfigCommand({ EndpointConfigName: deployConfig }),
  );
  const variants = config.ProductionVariants ?? [];
  expect(variants.map((v) => [v.VariantName, v.ModelName, v.InitialVariantWeight, v.InstanceType])).toEqual([
    ["stable", "fraud-v1", 1, "ml.m5.large"],
    [`candidate-${hash}`, modelName, 0, "ml.m5.large"],
  ]);

  await sagemaker.send(new DeleteEndpointCommand({ EndpointName: "fraud" }));
  await sagemaker.send(
    new CreateEndpointCommand({ EndpointName: "fraud", EndpointConfigName: deployConfig }),
  );
  const variant = candidateVariant(prepared.stableVariant, `candidate-${hash}`, modelName, {});
  const state: SageMakerState = {
    ...prepared,
    phase: "ready",
    candidate: { hash, modelName, variant, deployConfig },
    created: { configs: [deployConfig], models: [modelName] },
  };
  return state;
}

describe("sagemaker against moto", () => {
  it("creates the candidate's model and config, and weights the endpoint's variants", async () => {
    const t = target();
    const state = await ready(t);
    expect(await weights()).toEqual({ stable: 1, candidate: 0 });

    const change = await t.setWeight(state, 30);
    expect(change.outcome).toBe("applied");
    const after = await weights();
    expect((100 * (after.candidate ?? 0)) / ((after.candidate ?? 0) + (after.stable ?? 0))).toBeCloseTo(
      30,
      6,
    );
    const observed = await t.readWeights(change.state);
    expect(observed.canary).toBeCloseTo(30, 6);
    expect(observed.drift).toBe(false);
  });

  it("aborts: all the weight back on the stable variant", async () => {
    const t = target();
    const { state } = await t.setWeight(await ready(t), 50);
    const aborted = await t.abort(state, { abortScaleDownDelaySeconds: 0 });
    const after = await weights();
    expect(after.candidate).toBe(0);
    expect(after.stable).toBeGreaterThan(0);
    // moto's endpoint is InService at once: a second call finds all the traffic back.
    const again = await t.abort(aborted.state, { abortScaleDownDelaySeconds: 0 });
    expect(again.ready).toBe(true);
    expect((again.state as SageMakerState).phase).toBe("aborted");
  });
});
