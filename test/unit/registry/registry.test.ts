import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AddTagsCommand, SageMakerClient, UpdateModelPackageCommand } from "@aws-sdk/client-sagemaker";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MlflowRegistry } from "../../../functions/registry/mlflow.ts";
import { RegistryError } from "../../../functions/registry/port.ts";
import { groupArn, SageMakerModelRegistry, tagValue } from "../../../functions/registry/sagemaker.ts";
import { modelOf, registryOf } from "../../../functions/registry/settings.ts";

const PACKAGE = "arn:aws:sagemaker:eu-west-1:123456789012:model-package/ranker/7";

/**
 * A local server speaking the MLflow REST API's shape for the calls the registry makes: aliases
 * and version tags of registered models, `RESOURCE_DOES_NOT_EXIST` for an unknown model or version.
 */
class MlflowServer {
  readonly requests: { path: string; body: Record<string, string> }[] = [];
  readonly aliases = new Map<string, string>();
  readonly tags = new Map<string, string>();
  readonly versions = new Set(["ranker/6", "ranker/7"]);
  server!: Server;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => {
        raw += c;
      });
      req.on("end", () => {
        const body = JSON.parse(raw || "{}") as Record<string, string>;
        this.requests.push({ path: req.url ?? "", body });
        const fail = (status: number, error_code: string, message: string) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify({ error_code, message }));
        };
        if (req.method !== "POST") return fail(405, "BAD_REQUEST", "method");
        if (!this.versions.has(`${body.name}/${body.version}`)) {
          return fail(
            404,
            "RESOURCE_DOES_NOT_EXIST",
            `Model Version (name=${body.name}, version=${body.version}) not found`,
          );
        }
        if (req.url === "/api/2.0/mlflow/registered-models/alias") {
          this.aliases.set(`${body.name}@${body.alias}`, body.version ?? "");
        } else if (req.url === "/api/2.0/mlflow/model-versions/set-tag") {
          this.tags.set(`${body.name}/${body.version}:${body.key}`, body.value ?? "");
        } else return fail(404, "ENDPOINT_NOT_FOUND", req.url ?? "");
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

describe("MlflowRegistry", () => {
  const mlflow = new MlflowServer();
  beforeAll(() => mlflow.start());
  afterAll(() => new Promise<void>((resolve) => mlflow.server.close(() => resolve())));

  it("moves the alias to the promoted version and tags it, through the REST API", async () => {
    const registry = new MlflowRegistry({
      type: "mlflow",
      trackingUri: `${mlflow.url}/`,
      model: "ranker",
      alias: "champion",
    });
    const said = await registry.promoted({ version: "7" });
    expect(said).toBe("MLflow model ranker: alias @champion → version 7");
    expect(mlflow.aliases.get("ranker@champion")).toBe("7");
    expect(mlflow.tags.get("ranker/7:rollout")).toBe("promoted");
    expect(mlflow.requests.slice(-2)).toEqual([
      {
        path: "/api/2.0/mlflow/registered-models/alias",
        body: { name: "ranker", alias: "champion", version: "7" },
      },
      {
        path: "/api/2.0/mlflow/model-versions/set-tag",
        body: { name: "ranker", version: "7", key: "rollout", value: "promoted" },
      },
    ]);
  });

  it("tags a rolled-back version with the reason, and leaves the alias alone", async () => {
    mlflow.aliases.set("ranker@champion", "6");
    const registry = new MlflowRegistry({
      type: "mlflow",
      trackingUri: mlflow.url,
      model: "ranker",
      alias: "champion",
    });
    await registry.rolledBack({ version: "7" }, "analysis model-quality failed: accuracy 0.63 < 0.95");
    expect(mlflow.tags.get("ranker/7:rolled-back")).toBe(
      "analysis model-quality failed: accuracy 0.63 < 0.95",
    );
    expect(mlflow.aliases.get("ranker@champion")).toBe("6");
  });

  it("says what MLflow refused, and refuses a release without a version number", async () => {
    const registry = new MlflowRegistry({
      type: "mlflow",
      trackingUri: mlflow.url,
      model: "ranker",
      alias: "champion",
    });
    await expect(registry.promoted({ version: "9" })).rejects.toThrow(
      /registered-models\/alias answered 404: RESOURCE_DOES_NOT_EXIST: Model Version \(name=ranker, version=9\) not found/,
    );
    await expect(registry.promoted({ version: null })).rejects.toThrow(RegistryError);
    const down = new MlflowRegistry({
      type: "mlflow",
      trackingUri: "http://127.0.0.1:9",
      model: "ranker",
      alias: "champion",
    });
    await expect(down.promoted({ version: "7" })).rejects.toThrow(
      /POST http:\/\/127.0.0.1:9\/api\/2.0\/mlflow\/registered-models\/alias failed/,
    );
  });
});

describe("SageMakerModelRegistry", () => {
  const sagemaker = mockClient(SageMakerClient);
  beforeEach(() => {
    sagemaker.reset();
    sagemaker.on(UpdateModelPackageCommand).resolves({ ModelPackageArn: PACKAGE });
    sagemaker.on(AddTagsCommand).resolves({});
  });
  const registry = () => new SageMakerModelRegistry(new SageMakerClient({ region: "eu-west-1" }));

  it("approves the promoted package and tags its group production=<version>", async () => {
    const said = await registry().promoted(modelOf({ image: PACKAGE, tag: "v7" }));
    expect(sagemaker.commandCalls(UpdateModelPackageCommand)[0]?.args[0].input).toMatchObject({
      ModelPackageArn: PACKAGE,
      ModelApprovalStatus: "Approved",
    });
    expect(sagemaker.commandCalls(AddTagsCommand)[0]?.args[0].input).toEqual({
      ResourceArn: "arn:aws:sagemaker:eu-west-1:123456789012:model-package-group/ranker",
      Tags: [{ Key: "production", Value: "7" }],
    });
    expect(said).toContain("tagged production=7");
  });

  it("tags a rolled-back package with the reason, as a valid tag value", async () => {
    await registry().rolledBack(
      { modelPackage: PACKAGE, version: "7" },
      'analysis "model-quality" failed; accuracy < 0.95 (p=1e-9)',
    );
    expect(sagemaker.commandCalls(AddTagsCommand)[0]?.args[0].input).toEqual({
      ResourceArn: PACKAGE,
      Tags: [{ Key: "rolled-back", Value: "analysis model-quality failed accuracy 0.95 p=1e-9" }],
    });
    expect(sagemaker.commandCalls(UpdateModelPackageCommand)).toHaveLength(0);
  });

  it("records nothing for a rollout of an image, and turns a refusal into RegistryError", async () => {
    expect(await registry().promoted({ version: "7" })).toContain("nothing recorded");
    sagemaker
      .on(AddTagsCommand)
      .rejects(Object.assign(new Error("not authorized"), { name: "AccessDeniedException" }));
    await expect(registry().rolledBack({ modelPackage: PACKAGE, version: "7" }, "x")).rejects.toThrow(
      /AddTags .*model-package\/ranker\/7 failed: AccessDeniedException: not authorized/,
    );
  });

  it("derives the group, the version and the registry from what the rollout carries", () => {
    expect(groupArn(PACKAGE)).toBe("arn:aws:sagemaker:eu-west-1:123456789012:model-package-group/ranker");
    expect(modelOf({ image: "123.dkr.ecr.eu-west-1.amazonaws.com/ranker@sha256:ab", tag: "v12" })).toEqual({
      version: "12",
    });
    expect(modelOf({ image: "r@sha256:ab", tag: "latest" })).toEqual({ version: null });
    expect(tagValue("x".repeat(300))).toHaveLength(256);
    expect(registryOf({ type: "sagemaker", endpointName: "e", modelPackageGroupName: "ranker" })).toEqual({
      type: "sagemaker",
      modelPackageGroupName: "ranker",
    });
    expect(
      registryOf({
        type: "plugin",
        name: "mesh",
        functionArn: "arn:aws:lambda:eu-west-1:123456789012:function:mesh",
        mlflow: { trackingUri: "http://m:5000", model: "ranker" },
      }),
    ).toEqual({
      type: "mlflow",
      trackingUri: "http://m:5000",
      model: "ranker",
      alias: "champion",
    });
    expect(registryOf({ type: "lambda-alias" })).toBeUndefined();
  });
});
