/**
 * Secrets Manager's `GetSecretValue` (`functions/secrets-manager.ts`, signed with SigV4) and the
 * metric providers' key source over it, against moto: secrets created in moto, read back through
 * the adapters. The fake-fetch twins are `test/metrics/secrets.test.ts` and the Kubernetes
 * target's kubeconfig tests.
 */
import { MOTO_ACCOUNT, MOTO_REGION, type Moto, motoCall, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SecretsManagerSource } from "../../functions/metrics/secrets.ts";
import { getSecretValue } from "../../functions/secrets-manager.ts";

let moto: Moto;

beforeAll(async () => {
  moto = await startMoto();
});
afterAll(async () => {
  await moto?.close();
});
beforeEach(() => moto.reset());

/** Creates a secret in moto; its ARN. */
async function createSecret(name: string, secret: { SecretString?: string; SecretBinary?: string }) {
  const out = (await motoCall(moto, "secretsmanager", {
    target: "secretsmanager.CreateSecret",
    body: { Name: name, ...secret },
  })) as { ARN: string };
  return out.ARN;
}

const read = (secretId: string, region = MOTO_REGION) =>
  getSecretValue({
    secretId,
    region,
    credentials: moto.config.credentials,
    signal: AbortSignal.timeout(10_000),
    endpoint: moto.endpoint,
  });

describe("GetSecretValue against moto", () => {
  it("reads a secret's string by name and by ARN", async () => {
    const arn = await createSecret("shop/kubeconfig", { SecretString: "apiVersion: v1" });
    expect(arn).toMatch(
      new RegExp(`^arn:aws:secretsmanager:${MOTO_REGION}:${MOTO_ACCOUNT}:secret:shop/kubeconfig-`),
    );
    expect(await read("shop/kubeconfig")).toEqual({ secretString: "apiVersion: v1" });
    expect(await read(arn)).toEqual({ secretString: "apiVersion: v1" });
  });

  it("answers Secrets Manager's refusal for a secret that does not exist", async () => {
    // AWS answers 400; moto 404, with the same error type.
    const answer = await read("shop/missing");
    expect(answer).toMatchObject({ failure: "status", status: 404 });
    expect(answer).toHaveProperty("text", expect.stringContaining("ResourceNotFoundException"));
  });

  it("says so when the secret holds only binary", async () => {
    await createSecret("shop/binary", { SecretBinary: Buffer.from([1, 2, 3]).toString("base64") });
    expect(await read("shop/binary")).toEqual({ failure: "no-string" });
  });

  it("is signed for the secret's region: moto keeps secrets per region", async () => {
    await createSecret("shop/eu", { SecretString: "x" });
    expect(await read("shop/eu", "us-east-2")).toMatchObject({
      failure: "status",
      text: expect.stringContaining("ResourceNotFoundException"),
    });
  });
});

describe("SecretsManagerSource against moto", () => {
  it("reads a provider's keys from the secret's JSON", async () => {
    const arn = await createSecret("datadog", {
      SecretString: JSON.stringify({
        "api-key": "k-1",
        "app-key": "a-1",
        address: "https://api.datadoghq.eu",
      }),
    });
    const source = new SecretsManagerSource({
      credentials: moto.config.credentials,
      endpoint: moto.endpoint,
    });
    expect(await source.read(arn, new Date(0))).toEqual({
      values: { "api-key": "k-1", "app-key": "a-1", address: "https://api.datadoghq.eu" },
    });
    const missing = await source.read(
      `arn:aws:secretsmanager:${MOTO_REGION}:${MOTO_ACCOUNT}:secret:nope-abcdef`,
      new Date(0),
    );
    expect(missing).toHaveProperty("error", expect.stringContaining("GetSecretValue answered 404"));
  });
});
