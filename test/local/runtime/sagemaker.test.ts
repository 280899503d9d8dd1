import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  CreateEndpointCommand,
  CreateEndpointConfigCommand,
  CreateModelCommand,
  DeleteEndpointConfigCommand,
  DeleteModelCommand,
  DescribeEndpointCommand,
  DescribeEndpointConfigCommand,
  SageMakerClient,
  UpdateEndpointCommand,
  UpdateEndpointWeightsAndCapacitiesCommand,
} from "@aws-sdk/client-sagemaker";
import { InvokeEndpointCommand, ModelError, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../functions/clock.ts";
import { type ModelServer, startModel, TRUE_WEIGHTS } from "../../../local/demo/model.ts";
import { type Runtime, startRuntime } from "../../../local/runtime.ts";

/**
 * The local SageMaker through the real SDK clients: the control plane (AWS JSON 1.1) with endpoint
 * changes taking a minute of the runtime's virtual clock, the errors SageMaker gives, and
 * `InvokeEndpoint` answered by the model server of the variant's image.
 */

let runtime: Runtime;
let v1: ModelServer;
let v2: ModelServer;
let sm: SageMakerClient;
let smr: SageMakerRuntimeClient;

beforeAll(async () => {
  v1 = await startModel({ version: "v1", weights: TRUE_WEIGHTS });
  v2 = await startModel({ version: "v2", weights: [1.4, -2.1, 0.2] });
  runtime = await startRuntime({
    clock: new ManualClock(Date.parse("2026-01-01T00:00:00Z")),
    sagemaker: { updateSeconds: 60, images: { "fraud:v1": v1.url, "fraud:v2": v2.url } },
  });
  const client = {
    region: "us-east-1",
    endpoint: runtime.facadeUrl,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  };
  sm = new SageMakerClient(client);
  smr = new SageMakerRuntimeClient(client);
});

afterAll(async () => {
  await runtime?.close();
  await v1?.close();
  await v2?.close();
});

const invoke = async (endpoint: string, variant?: string) => {
  const out = await smr.send(
    new InvokeEndpointCommand({
      EndpointName: endpoint,
      ...(variant ? { TargetVariant: variant } : {}),
      ContentType: "application/json",
      Body: new TextEncoder().encode(JSON.stringify({ features: [1, 0] })),
    }),
  );
  return {
    variant: out.InvokedProductionVariant,
    body: JSON.parse(new TextDecoder().decode(out.Body)) as { version: string },
  };
};
const status = async (name: string) => await sm.send(new DescribeEndpointCommand({ EndpointName: name }));

describe("local SageMaker", () => {
  it("creates an endpoint that goes InService on the clock and answers from the variant's model", async () => {
    await sm.send(
      new CreateModelCommand({
        ModelName: "m1",
        PrimaryContainer: { Image: "fraud:v1" },
        ExecutionRoleArn: "arn:role",
      }),
    );
    await sm.send(
      new CreateEndpointConfigCommand({
        EndpointConfigName: "c1",
        ProductionVariants: [{ VariantName: "blue", ModelName: "m1", InitialVariantWeight: 1 }],
      }),
    );
    await sm.send(new CreateEndpointCommand({ EndpointName: "fraud", EndpointConfigName: "c1" }));
    expect((await status("fraud")).EndpointStatus).toBe("Creating");
    await expect(invoke("fraud")).rejects.toThrow(/Creating/);
    await runtime.advanceBy(60_000);
    const ready = await status("fraud");
    expect(ready.EndpointStatus).toBe("InService");
    expect(ready.EndpointConfigName).toBe("c1");
    expect(ready.ProductionVariants?.map((v) => [v.VariantName, v.CurrentWeight])).toEqual([["blue", 1]]);
    expect(await invoke("fraud")).toEqual({
      variant: "blue",
      body: expect.objectContaining({ version: "v1" }),
    });
  });

  it("moves to a new config only once the update is done, and routes TargetVariant", async () => {
    await sm.send(new CreateModelCommand({ ModelName: "m2", PrimaryContainer: { Image: "fraud:v2" } }));
    await sm.send(
      new CreateEndpointConfigCommand({
        EndpointConfigName: "c2",
        ProductionVariants: [
          { VariantName: "blue", ModelName: "m1", InitialVariantWeight: 1 },
          { VariantName: "green", ModelName: "m2", InitialVariantWeight: 0 },
        ],
      }),
    );
    const described = await sm.send(new DescribeEndpointConfigCommand({ EndpointConfigName: "c2" }));
    expect(described.ProductionVariants?.map((v) => v.VariantName)).toEqual(["blue", "green"]);
    await sm.send(new UpdateEndpointCommand({ EndpointName: "fraud", EndpointConfigName: "c2" }));
    const updating = await status("fraud");
    expect([updating.EndpointStatus, updating.EndpointConfigName]).toEqual(["Updating", "c1"]);
    expect(updating.PendingDeploymentSummary?.EndpointConfigName).toBe("c2");
    // A second change while one runs is refused, as SageMaker does.
    await expect(
      sm.send(new UpdateEndpointCommand({ EndpointName: "fraud", EndpointConfigName: "c1" })),
    ).rejects.toMatchObject({
      name: "ValidationException",
      message: expect.stringMatching(/in-progress endpoint/),
    });
    await runtime.advanceBy(60_000);
    expect((await status("fraud")).EndpointConfigName).toBe("c2");
    expect(await invoke("fraud", "green")).toEqual({
      variant: "green",
      body: expect.objectContaining({ version: "v2" }),
    });
    // Weight 0: only a TargetVariant reaches green.
    for (let i = 0; i < 5; i++) expect((await invoke("fraud")).variant).toBe("blue");
    await expect(invoke("fraud", "purple")).rejects.toMatchObject({
      name: "ValidationException",
      message: expect.stringMatching(/purple is not a production variant of endpoint fraud/),
    });
  });

  it("shifts weights with UpdateEndpointWeightsAndCapacities: desired at once, current when InService", async () => {
    await sm.send(
      new UpdateEndpointWeightsAndCapacitiesCommand({
        EndpointName: "fraud",
        DesiredWeightsAndCapacities: [
          { VariantName: "blue", DesiredWeight: 0 },
          { VariantName: "green", DesiredWeight: 100 },
        ],
      }),
    );
    const updating = await status("fraud");
    expect(updating.EndpointStatus).toBe("Updating");
    expect(
      updating.ProductionVariants?.map((v) => [v.VariantName, v.CurrentWeight, v.DesiredWeight]),
    ).toEqual([
      ["blue", 1, 0],
      ["green", 0, 100],
    ]);
    await runtime.advanceBy(60_000);
    expect((await status("fraud")).EndpointStatus).toBe("InService");
    expect((await invoke("fraud")).body.version).toBe("v2");
    await expect(
      sm.send(
        new UpdateEndpointWeightsAndCapacitiesCommand({
          EndpointName: "fraud",
          DesiredWeightsAndCapacities: [{ VariantName: "red", DesiredWeight: 1 }],
        }),
      ),
    ).rejects.toMatchObject({ name: "ValidationException", message: expect.stringMatching(/\[red\]/) });
  });

  it("answers SageMaker's ValidationException for unknown and existing names", async () => {
    const refused = (p: Promise<unknown>, message: RegExp) =>
      expect(p).rejects.toMatchObject({
        name: "ValidationException",
        message: expect.stringMatching(message),
      });
    await refused(
      sm.send(new DescribeEndpointCommand({ EndpointName: "nope" })),
      /Could not find endpoint "nope"/,
    );
    await refused(
      sm.send(new DescribeEndpointConfigCommand({ EndpointConfigName: "nope" })),
      /Could not find endpoint configuration "nope"/,
    );
    await refused(sm.send(new DeleteModelCommand({ ModelName: "nope" })), /Could not find model/);
    await refused(sm.send(new DeleteEndpointConfigCommand({ EndpointConfigName: "nope" })), /Could not find/);
    await refused(
      sm.send(new CreateModelCommand({ ModelName: "m1", PrimaryContainer: { Image: "fraud:v1" } })),
      /already existing model/,
    );
    await refused(
      sm.send(
        new CreateEndpointConfigCommand({
          EndpointConfigName: "c1",
          ProductionVariants: [{ VariantName: "blue", ModelName: "m1" }],
        }),
      ),
      /already existing endpoint configuration/,
    );
    await refused(
      sm.send(
        new CreateEndpointConfigCommand({
          EndpointConfigName: "c9",
          ProductionVariants: [{ VariantName: "blue", ModelName: "ghost" }],
        }),
      ),
      /Could not find model/,
    );
    await refused(invoke("nope"), /Endpoint nope of account .* not found/);
  });

  it("fails an update whose model has no server: back on the old config, with a reason", async () => {
    await sm.send(new CreateModelCommand({ ModelName: "m3", PrimaryContainer: { Image: "fraud:v9" } }));
    await sm.send(
      new CreateEndpointConfigCommand({
        EndpointConfigName: "c3",
        ProductionVariants: [{ VariantName: "red", ModelName: "m3" }],
      }),
    );
    await sm.send(new UpdateEndpointCommand({ EndpointName: "fraud", EndpointConfigName: "c3" }));
    await runtime.advanceBy(60_000);
    const after = await status("fraud");
    expect(after.EndpointStatus).toBe("InService");
    expect(after.EndpointConfigName).toBe("c2");
    expect(after.FailureReason).toMatch(/red .*m3/);
  });

  it("reports a model's error status as ModelError with the original status", async () => {
    const out = smr.send(
      new InvokeEndpointCommand({
        EndpointName: "fraud",
        ContentType: "application/json",
        Body: new TextEncoder().encode("{}"),
      }),
    );
    await expect(out).rejects.toBeInstanceOf(ModelError);
    await expect(out).rejects.toMatchObject({
      OriginalStatusCode: 400,
      OriginalMessage: expect.stringMatching(/features/),
    });
  });

  it("copies requests to a shadow variant and answers from the production one", async () => {
    let copies = 0;
    const shadow = createServer((req, res) => {
      copies++;
      req.resume();
      res.writeHead(200, { "content-type": "application/json" }).end('{"version":"shadow"}');
    });
    await new Promise<void>((resolve) => shadow.listen(0, "127.0.0.1", resolve));
    try {
      runtime.sagemaker.serve("fraud:shadow", `http://127.0.0.1:${(shadow.address() as AddressInfo).port}`);
      await sm.send(new CreateModelCommand({ ModelName: "m4", PrimaryContainer: { Image: "fraud:shadow" } }));
      await sm.send(
        new CreateEndpointConfigCommand({
          EndpointConfigName: "c4",
          ProductionVariants: [{ VariantName: "green", ModelName: "m2", InitialVariantWeight: 1 }],
          ShadowProductionVariants: [{ VariantName: "grey", ModelName: "m4", InitialVariantWeight: 1 }],
        }),
      );
      await sm.send(new UpdateEndpointCommand({ EndpointName: "fraud", EndpointConfigName: "c4" }));
      await runtime.advanceBy(60_000);
      expect((await status("fraud")).ShadowProductionVariants?.map((v) => v.VariantName)).toEqual(["grey"]);
      for (let i = 0; i < 3; i++) expect((await invoke("fraud")).body.version).toBe("v2");
      await expect.poll(() => copies).toBe(3);
    } finally {
      await new Promise((resolve) => shadow.close(resolve));
    }
  });

  it("refuses an invocation body a web page can send without a preflight", async () => {
    const res = await fetch(`${runtime.facadeUrl}/endpoints/fraud/invocations`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: '{"features":[1,0]}',
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ __type: "UnsupportedMediaTypeException" });
  });

  it("deletes configs and models", async () => {
    await sm.send(new DeleteEndpointConfigCommand({ EndpointConfigName: "c3" }));
    await sm.send(new DeleteModelCommand({ ModelName: "m3" }));
    await expect(sm.send(new DescribeEndpointConfigCommand({ EndpointConfigName: "c3" }))).rejects.toThrow(
      /Could not find/,
    );
  });
});
