import {
  SageMakerClient,
  UpdateEndpointCommand,
  UpdateEndpointWeightsAndCapacitiesCommand,
} from "@aws-sdk/client-sagemaker";
import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import {
  clock,
  PACKAGE,
  ROLE,
  sagemaker,
  settle,
  useSageMakerWorld,
  world,
} from "@sfn-rollouts/test-support/sagemaker-world";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelRouterConfig } from "../../functions/router/config.ts";
import { DynamoRouterConfig } from "../../functions/router/dynamodb-config.ts";
import { TargetStateError } from "../../functions/traffic/errors.ts";
import { createTrafficTarget } from "../../functions/traffic/index.ts";
import type { TargetState, TrafficTarget } from "../../functions/traffic/port.ts";
import type { SageMakerState } from "../../functions/traffic/sagemaker.ts";
import { ModelRouterTraffic } from "../../functions/traffic/sagemaker-model-router.ts";

useSageMakerWorld();

let db: DynaliteHarness;
beforeAll(async () => {
  db = await startDynalite();
});
afterAll(async () => {
  await db.close();
});

/** What the router function reads: the configuration item, uncached. */
const stored = (): Promise<ModelRouterConfig | null> =>
  new DynamoRouterConfig({
    client: db.client(),
    tableName: db.tableName,
    router: "ranker",
    cacheMs: 0,
  }).read();

function target(): TrafficTarget {
  return createTrafficTarget(
    {
      type: "sagemaker",
      endpointName: "ranker",
      executionRoleArn: ROLE,
      router: {
        type: "model",
        key: { header: "x-customer" },
        compare: { path: "score", kind: "score", absolute: 0.05 },
      },
    },
    {
      sagemaker: new SageMakerClient({ region: "eu-west-1" }),
      modelRouterConfig: (router) =>
        new DynamoRouterConfig({ client: db.client(), tableName: db.tableName, router, cacheMs: 0 }),
    },
    clock,
  );
}
const sm = (s: TargetState): SageMakerState => s as SageMakerState;
const variant = (name: string | undefined) => ({ name, sagemaker: { endpoint: "ranker", variant: name } });
const weightCalls = () => sagemaker.commandCalls(UpdateEndpointWeightsAndCapacitiesCommand).length;

async function ready(r: TrafficTarget): Promise<TargetState> {
  const { state } = await r.prepare();
  const deploying = await r.deployCandidate(state, { modelPackage: PACKAGE });
  settle();
  const res = await r.checkReadiness(deploying);
  expect(res.ready).toBe(true);
  return res.state;
}

describe("a SageMaker target with a model router", () => {
  it("is the model-routed target when the settings ask for router: {type: model}, and needs the table", () => {
    expect(target()).toBeInstanceOf(ModelRouterTraffic);
    expect(() =>
      createTrafficTarget(
        { type: "sagemaker", endpointName: "ranker", executionRoleArn: ROLE, router: { type: "model" } },
        { sagemaker: new SageMakerClient({ region: "eu-west-1" }) },
        clock,
      ),
    ).toThrow(/router's table/);
  });

  it("writes the router's configuration at each step instead of SageMaker weights and shadow variants", async () => {
    const r = target();
    const { state: prepared } = await r.prepare();
    expect(await stored()).toMatchObject({ primary: variant("v6"), candidate: null, weight: 0 });

    let state = await ready(r);
    const candidate = sm(state).candidate?.variant.VariantName;
    expect(candidate).toMatch(/^candidate-/);
    expect(sm(prepared).stableVariant.VariantName).toBe("v6");
    expect(await stored()).toMatchObject({
      primary: variant("v6"),
      candidate: variant(candidate),
      weight: 0,
      mirrorPercent: 0,
      key: { header: "x-customer", field: "user" },
      compare: { path: "score", kind: "score", absolute: 0.05 },
    });

    // The mirror is the router's comparing shadow: no endpoint update, no shadow variant.
    const updates = sagemaker.commandCalls(UpdateEndpointCommand).length;
    const mirror = await r.setMirrorRoute?.(state, {
      name: "shadow",
      percentage: 50,
      match: [{ method: { exact: "POST" } }],
    });
    expect(sagemaker.commandCalls(UpdateEndpointCommand)).toHaveLength(updates);
    expect(world.endpoint.ShadowProductionVariants).toBeUndefined();
    expect(await stored()).toMatchObject({ mirrorPercent: 50, mirrorMatch: [{ method: { exact: "POST" } }] });
    expect(mirror?.message).toContain("compares the answers");
    state = (await r.checkReadiness(mirror?.state as TargetState)).state;

    // A weight is the router's cohort; the mirror stays as it was; the endpoint's weights do not move.
    const change = await r.setWeight(state, 25);
    expect(change.outcome).toBe("applied");
    expect(weightCalls()).toBe(0);
    expect(await stored()).toMatchObject({ weight: 25, mirrorPercent: 50, candidate: variant(candidate) });
    expect(await r.readWeights(change.state)).toMatchObject({ canary: 25, expectedCanary: 25, drift: false });
    state = change.state;

    const removed = await r.setMirrorRoute?.(state, { name: "shadow", percentage: 0 });
    expect(await stored()).toMatchObject({ weight: 25, mirrorPercent: 0, mirrorMatch: [] });
    state = removed?.state as TargetState;

    const promoted = await r.promote(state, { scaleDownDelaySeconds: 600 });
    expect(await stored()).toMatchObject({
      primary: variant(candidate),
      candidate: null,
      weight: 0,
      mirrorPercent: 0,
    });
    settle();
    expect(sm(promoted).phase).toBe("promoted");
  });

  it("routes everyone back before the endpoint moves when it aborts", async () => {
    const r = target();
    let state = await ready(r);
    state = (await r.setWeight(state, 50)).state;
    const first = await r.abort(state, { abortScaleDownDelaySeconds: 30 });
    expect(await stored()).toMatchObject({ primary: variant("v6"), candidate: null, weight: 0 });
    expect(first.ready).toBe(true);
  });

  it("reports a weight someone else wrote into the router's configuration as drift, and overwrites it only when told", async () => {
    const r = target();
    const state = await ready(r);
    const at25 = await r.setWeight(state, 25);
    expect(at25.outcome).toBe("applied");
    const config = await stored();
    const other = new DynamoRouterConfig({
      client: db.client(),
      tableName: db.tableName,
      router: "ranker",
      cacheMs: 0,
    });
    await other.write({ ...(config as ModelRouterConfig), weight: 60 });
    const drifted = await r.setWeight(at25.state, 50);
    expect(drifted.outcome).toBe("drift");
    expect(drifted.weights).toMatchObject({ canary: 60, expectedCanary: 25, drift: true });
    expect(drifted.outcome === "drift" ? drifted.message : "").toContain("60% instead of 25%");
    expect((await stored())?.weight).toBe(60);
    const overwritten = await r.setWeight(at25.state, 50, { overwriteDrift: true });
    expect(overwritten.outcome).toBe("applied");
    expect((await stored())?.weight).toBe(50);
  });

  it("refuses a weight or a mirror before the candidate is ready, and a bad percentage, naming them", async () => {
    const r = target();
    const { state } = await r.prepare();
    await expect(r.setWeight(state, 10)).rejects.toThrow(TargetStateError);
    await expect(r.setMirrorRoute?.(state, { name: "shadow", percentage: 10 })).rejects.toThrow(
      /phase prepared/,
    );
    const readyState = await ready(target());
    await expect(r.setWeight(readyState, 101)).rejects.toThrow(/between 0 and 100, got 101/);
    await expect(r.setMirrorRoute?.(readyState, { name: "shadow", percentage: 1.5 })).rejects.toThrow(
      /got 1.5/,
    );
  });
});
