/**
 * The Lambda alias target against moto: the real adapter, a real SDK client, and the alias'
 * routing config read back from moto after each step. The SDK-mock twin is
 * `test/traffic/lambda-alias.test.ts`.
 */
import {
  CreateAliasCommand,
  CreateFunctionCommand,
  GetAliasCommand,
  GetFunctionConfigurationCommand,
  LambdaClient,
  PublishVersionCommand,
  UpdateAliasCommand,
} from "@aws-sdk/client-lambda";
import { createLambdaRole, type Moto, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { TargetConfigurationError } from "../../functions/traffic/errors.ts";
import { type LambdaAliasState, LambdaAliasTraffic } from "../../functions/traffic/lambda-alias.ts";
import type { TargetState } from "../../functions/traffic/port.ts";

const STABLE_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/checkout@sha256:1111";
const CANDIDATE_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/checkout@sha256:2222";

let moto: Moto;
let lambda: LambdaClient;
const clock = new ManualClock(Date.UTC(2026, 0, 1));

beforeAll(async () => {
  moto = await startMoto();
  lambda = new LambdaClient(moto.config);
});
afterAll(async () => {
  lambda?.destroy();
  await moto?.close();
});

/** The function `checkout` (an image) with the alias `live` on its published version 1. */
beforeEach(async () => {
  await moto.reset();
  const role = await createLambdaRole(moto);
  await lambda.send(
    new CreateFunctionCommand({
      FunctionName: "checkout",
      Role: role,
      PackageType: "Image",
      Code: { ImageUri: STABLE_IMAGE },
    }),
  );
  const { Version } = await lambda.send(new PublishVersionCommand({ FunctionName: "checkout" }));
  await lambda.send(
    new CreateAliasCommand({ FunctionName: "checkout", Name: "live", FunctionVersion: Version }),
  );
});

function target(): LambdaAliasTraffic {
  return new LambdaAliasTraffic(
    { lambda },
    { type: "lambda-alias", functionName: "checkout", alias: "live", progressDeadlineSeconds: 300 },
    clock,
  );
}

const alias = () => lambda.send(new GetAliasCommand({ FunctionName: "checkout", Name: "live" }));

/** Prepare, deploy the candidate image and publish it: the state once the candidate is ready. */
async function readyCandidate(t: LambdaAliasTraffic): Promise<TargetState> {
  const { state, firstRelease } = await t.prepare();
  expect(firstRelease).toBe(false);
  const deployed = await t.deployCandidate(state, { image: CANDIDATE_IMAGE });
  const ready = await t.checkReadiness(deployed);
  expect(ready.ready).toBe(true);
  return ready.state;
}

describe("lambda-alias against moto", () => {
  it("deploys the image, publishes it as version 2 and weights the alias towards it", async () => {
    const t = target();
    const ready = await readyCandidate(t);
    expect((ready as LambdaAliasState).candidateVersion).toBe("2");
    const published = await lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: "checkout", Qualifier: "2" }),
    );
    expect(published.Version).toBe("2");

    const change = await t.setWeight(ready, 20);
    expect(change.outcome).toBe("applied");
    const weighted = await alias();
    expect(weighted.FunctionVersion).toBe("1");
    expect(weighted.RoutingConfig?.AdditionalVersionWeights).toEqual({ "2": 0.2 });
    const observed = await t.readWeights(change.state);
    expect([observed.canary, observed.stable, observed.drift]).toEqual([20, 80, false]);

    const promoted = await t.promote(change.state, { scaleDownDelaySeconds: 0 });
    const after = await alias();
    expect(after.FunctionVersion).toBe("2");
    expect(after.RoutingConfig?.AdditionalVersionWeights ?? {}).toEqual({});
    expect((promoted as LambdaAliasState).stableVersion).toBe("2");

    // An abort after the promotion points the alias back at the version before it.
    await t.abort(promoted, { abortScaleDownDelaySeconds: 0 });
    expect((await alias()).FunctionVersion).toBe("1");
  });

  it("aborts a canary back to the stable version with no routing config", async () => {
    const t = target();
    const ready = await readyCandidate(t);
    const { state } = await t.setWeight(ready, 50);
    expect((await alias()).RoutingConfig?.AdditionalVersionWeights).toEqual({ "2": 0.5 });
    await t.abort(state, { abortScaleDownDelaySeconds: 0 });
    const back = await alias();
    expect(back.FunctionVersion).toBe("1");
    expect(back.RoutingConfig?.AdditionalVersionWeights ?? {}).toEqual({});
  });

  it("sees a weight changed outside the rollout as drift and leaves it", async () => {
    const t = target();
    const ready = await readyCandidate(t);
    const { state } = await t.setWeight(ready, 10);
    await lambda.send(
      new UpdateAliasCommand({
        FunctionName: "checkout",
        Name: "live",
        RoutingConfig: { AdditionalVersionWeights: { "2": 0.4 } },
      }),
    );
    const change = await t.setWeight(state, 30);
    expect(change.outcome).toBe("drift");
    expect((await alias()).RoutingConfig?.AdditionalVersionWeights).toEqual({ "2": 0.4 });
  });

  it("refuses to start while the alias already routes to another version", async () => {
    await lambda.send(new PublishVersionCommand({ FunctionName: "checkout", Description: "again" }));
    await lambda.send(
      new UpdateAliasCommand({
        FunctionName: "checkout",
        Name: "live",
        RoutingConfig: { AdditionalVersionWeights: { "1": 0.1 } },
      }),
    );
    await expect(target().prepare()).rejects.toThrow(TargetConfigurationError);
  });
});
