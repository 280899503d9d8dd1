import {
  CreateEndpointConfigCommand,
  type CreateEndpointConfigInput,
  CreateModelCommand,
  type CreateModelInput,
  DeleteEndpointConfigCommand,
  DeleteModelCommand,
  DescribeEndpointCommand,
  DescribeEndpointConfigCommand,
  type ProductionVariant,
  SageMakerClient,
  UpdateEndpointCommand,
  UpdateEndpointWeightsAndCapacitiesCommand,
  type UpdateEndpointWeightsAndCapacitiesInput,
} from "@aws-sdk/client-sagemaker";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import type { ModelRouterConfig } from "../../functions/router/config.ts";
import { DynamoRouterConfig } from "../../functions/router/dynamodb-config.ts";
import { RouterStateError } from "../../functions/traffic/errors.ts";
import { createTrafficRouter } from "../../functions/traffic/index.ts";
import type { RouterState, TrafficRouter } from "../../functions/traffic/port.ts";
import type { SageMakerState } from "../../functions/traffic/sagemaker.ts";
import { SageMakerModelRouter } from "../../functions/traffic/sagemaker-model-router.ts";
import { type DynaliteHarness, startDynalite } from "../support/dynalite.ts";

const ROLE = "arn:aws:iam::123456789012:role/ranker-sagemaker";
const PACKAGE = "arn:aws:sagemaker:eu-west-1:123456789012:model-package/ranker/7";
const sagemaker = mockClient(SageMakerClient);
const validation = (message: string) => Object.assign(new Error(message), { name: "ValidationException" });

/**
 * A small in-memory SageMaker: endpoint configs, models and one endpoint whose updates stay
 * `Updating` until the test calls {@link settle}, as on AWS where they take minutes.
 */
interface World {
  models: Record<string, CreateModelInput>;
  configs: Record<string, CreateEndpointConfigInput>;
  endpoint: {
    EndpointConfigName: string;
    EndpointStatus: string;
    FailureReason?: string;
    ProductionVariants: { VariantName: string; CurrentWeight: number; DesiredWeight: number }[];
    ShadowProductionVariants?: { VariantName: string; CurrentWeight: number; DesiredWeight: number }[];
    PendingDeploymentSummary?: { EndpointConfigName: string };
  };
  /** What the update in progress does when it settles. */
  next?: () => void;
}
let world: World;
let clock: ManualClock;

function variants(list: ProductionVariant[] | undefined) {
  return (list ?? []).map((v) => ({
    VariantName: v.VariantName ?? "",
    CurrentWeight: v.InitialVariantWeight ?? 1,
    DesiredWeight: v.InitialVariantWeight ?? 1,
  }));
}

/** Finishes the update in progress; `fail` rolls it back with a reason, as SageMaker does. */
function settle(fail?: string): void {
  const next = world.next;
  world.next = undefined;
  world.endpoint.PendingDeploymentSummary = undefined;
  if (fail) {
    world.endpoint.EndpointStatus = "InService";
    world.endpoint.FailureReason = fail;
    return;
  }
  next?.();
  world.endpoint.EndpointStatus = "InService";
}

beforeEach(() => {
  sagemaker.reset();
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  world = {
    models: { "ranker-v6": { ModelName: "ranker-v6" } },
    configs: {
      "ranker-config-v6": {
        EndpointConfigName: "ranker-config-v6",
        ProductionVariants: [
          {
            VariantName: "v6",
            ModelName: "ranker-v6",
            InstanceType: "ml.m5.large",
            InitialInstanceCount: 2,
            InitialVariantWeight: 1,
          },
        ],
        DataCaptureConfig: {
          InitialSamplingPercentage: 10,
          DestinationS3Uri: "s3://captures/ranker",
          CaptureOptions: [{ CaptureMode: "Input" }],
        },
      },
    },
    endpoint: {
      EndpointConfigName: "ranker-config-v6",
      EndpointStatus: "InService",
      ProductionVariants: [{ VariantName: "v6", CurrentWeight: 1, DesiredWeight: 1 }],
    },
  };
  sagemaker.on(DescribeEndpointCommand).callsFake((input: { EndpointName?: string }) => {
    if (input.EndpointName !== "ranker") throw validation(`Could not find endpoint "${input.EndpointName}".`);
    return structuredClone({ EndpointName: "ranker", ...world.endpoint });
  });
  sagemaker.on(DescribeEndpointConfigCommand).callsFake((input: { EndpointConfigName?: string }) => {
    const config = world.configs[input.EndpointConfigName ?? ""];
    if (!config) throw validation("Could not find endpoint configuration");
    return structuredClone(config);
  });
  sagemaker.on(CreateModelCommand).callsFake((input: CreateModelInput) => {
    if (world.models[input.ModelName ?? ""]) throw validation("Cannot create already existing model");
    world.models[input.ModelName ?? ""] = input;
    return { ModelArn: `arn:aws:sagemaker:eu-west-1:123456789012:model/${input.ModelName}` };
  });
  sagemaker.on(CreateEndpointConfigCommand).callsFake((input: CreateEndpointConfigInput) => {
    if (world.configs[input.EndpointConfigName ?? ""])
      throw validation("Cannot create already existing endpoint configuration");
    world.configs[input.EndpointConfigName ?? ""] = input;
    return {};
  });
  sagemaker.on(UpdateEndpointCommand).callsFake((input: { EndpointConfigName?: string }) => {
    if (world.endpoint.EndpointStatus !== "InService") throw validation("Cannot update in-progress endpoint");
    const config = world.configs[input.EndpointConfigName ?? ""];
    if (!config) throw validation("Could not find endpoint configuration");
    world.endpoint.EndpointStatus = "Updating";
    world.endpoint.FailureReason = undefined;
    world.endpoint.PendingDeploymentSummary = { EndpointConfigName: input.EndpointConfigName ?? "" };
    world.next = () => {
      world.endpoint.EndpointConfigName = input.EndpointConfigName ?? "";
      world.endpoint.ProductionVariants = variants(config.ProductionVariants);
      world.endpoint.ShadowProductionVariants = config.ShadowProductionVariants
        ? variants(config.ShadowProductionVariants)
        : undefined;
    };
    return {};
  });
  sagemaker
    .on(UpdateEndpointWeightsAndCapacitiesCommand)
    .callsFake((input: UpdateEndpointWeightsAndCapacitiesInput) => {
      if (world.endpoint.EndpointStatus !== "InService")
        throw validation("Cannot update in-progress endpoint");
      for (const d of input.DesiredWeightsAndCapacities ?? []) {
        const v = world.endpoint.ProductionVariants.find((p) => p.VariantName === d.VariantName);
        if (!v) throw validation(`The variant name(s) [${d.VariantName}] is/are not present`);
        v.DesiredWeight = d.DesiredWeight ?? v.DesiredWeight;
      }
      world.endpoint.EndpointStatus = "Updating";
      world.next = () => {
        for (const v of world.endpoint.ProductionVariants) v.CurrentWeight = v.DesiredWeight;
      };
      return {};
    });
  sagemaker.on(DeleteEndpointConfigCommand).callsFake((input: { EndpointConfigName?: string }) => {
    delete world.configs[input.EndpointConfigName ?? ""];
    return {};
  });
  sagemaker.on(DeleteModelCommand).callsFake((input: { ModelName?: string }) => {
    delete world.models[input.ModelName ?? ""];
    return {};
  });
});

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

function target(): TrafficRouter {
  return createTrafficRouter(
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
const sm = (s: RouterState): SageMakerState => s as SageMakerState;
const variant = (name: string | undefined) => ({ name, sagemaker: { endpoint: "ranker", variant: name } });
const weightCalls = () => sagemaker.commandCalls(UpdateEndpointWeightsAndCapacitiesCommand).length;

async function ready(r: TrafficRouter): Promise<RouterState> {
  const { state } = await r.prepare();
  const deploying = await r.deployCandidate(state, { modelPackage: PACKAGE });
  settle();
  const res = await r.checkReadiness(deploying);
  expect(res.ready).toBe(true);
  return res.state;
}

describe("a SageMaker target with a model router", () => {
  it("is the model-routed target when the settings ask for router: {type: model}, and needs the table", () => {
    expect(target()).toBeInstanceOf(SageMakerModelRouter);
    expect(() =>
      createTrafficRouter(
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
    state = (await r.checkReadiness(mirror?.state as RouterState)).state;

    // A weight is the router's cohort; the mirror stays as it was; the endpoint's weights do not move.
    const change = await r.setWeight(state, 25);
    expect(change.outcome).toBe("applied");
    expect(weightCalls()).toBe(0);
    expect(await stored()).toMatchObject({ weight: 25, mirrorPercent: 50, candidate: variant(candidate) });
    expect(await r.readWeights(change.state)).toMatchObject({ canary: 25, expectedCanary: 25, drift: false });
    state = change.state;

    const removed = await r.setMirrorRoute?.(state, { name: "shadow", percentage: 0 });
    expect(await stored()).toMatchObject({ weight: 25, mirrorPercent: 0, mirrorMatch: [] });
    state = removed?.state as RouterState;

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

  it("refuses a weight or a mirror before the candidate is ready, and a bad percentage, naming them", async () => {
    const r = target();
    const { state } = await r.prepare();
    await expect(r.setWeight(state, 10)).rejects.toThrow(RouterStateError);
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
