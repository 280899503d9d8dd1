import { SECRETS_CREDENTIALS, startSecretsManager } from "@sfn-rollouts/test-support/secrets-manager";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TargetConfigurationError, TargetNotReadyError } from "../../functions/traffic/errors.ts";
import { getSecretString } from "../../functions/traffic/kubernetes/auth.ts";

/** The kubeconfig secret of the Kubernetes target, read from a local Secrets Manager (GetSecretValue, SigV4). */

const KUBECONFIG = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:shop-kubeconfig-AbCdEf";
let secrets: Awaited<ReturnType<typeof startSecretsManager>>;
beforeAll(async () => {
  secrets = await startSecretsManager({ [KUBECONFIG]: "apiVersion: v1\nkind: Config\n" });
});
afterAll(() => secrets?.close());

const read = (secretId: string, credentials = SECRETS_CREDENTIALS) =>
  getSecretString({
    secretId,
    region: "eu-west-1",
    credentials: async () => credentials,
    timeoutMs: 5000,
    endpoint: secrets.url,
  });

describe("the kubeconfig secret", () => {
  it("is the secret's SecretString, read with a signed GetSecretValue", async () => {
    expect(await read(KUBECONFIG)).toBe("apiVersion: v1\nkind: Config\n");
    expect(secrets.requests.at(-1)?.headers["x-amz-target"]).toBe("secretsmanager.GetSecretValue");
  });

  it("a secret Secrets Manager does not have, or a refused signature, is a configuration error naming it", async () => {
    await expect(read("arn:aws:secretsmanager:eu-west-1:111122223333:secret:gone-XyZ123")).rejects.toThrow(
      TargetConfigurationError,
    );
    await expect(read("gone")).rejects.toThrow(/GetSecretValue gone: 400 .*ResourceNotFoundException/);
    await expect(read(KUBECONFIG, { accessKeyId: "OTHER", secretAccessKey: "x" })).rejects.toThrow(
      /UnrecognizedClientException/,
    );
  });

  it("an unreachable Secrets Manager is not ready (a retry may succeed)", async () => {
    await expect(
      getSecretString({
        secretId: KUBECONFIG,
        region: "eu-west-1",
        credentials: async () => SECRETS_CREDENTIALS,
        timeoutMs: 5000,
        endpoint: "http://127.0.0.1:2",
      }),
    ).rejects.toThrow(TargetNotReadyError);
  });
});
