import { startServer } from "./http-server.ts";

/** The credentials a test signs Secrets Manager calls with. */
export const SECRETS_CREDENTIALS = { accessKeyId: "AKIDLOCAL", secretAccessKey: "local-secret" };

/**
 * A local AWS Secrets Manager that answers `GetSecretValue` (the JSON 1.1 protocol: a POST with
 * `X-Amz-Target: secretsmanager.GetSecretValue`) from `secrets`, by ARN or name. A call not signed
 * with SigV4 for the service `secretsmanager`, or by another access key, is refused as AWS refuses
 * it; an unknown secret is AWS's `ResourceNotFoundException`. Every call is recorded.
 */
export async function startSecretsManager(secrets: Record<string, string>) {
  const server = await startServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
      res.end(JSON.stringify(body));
    };
    const auth = String(req.headers.authorization ?? "");
    if (
      !auth.startsWith(`AWS4-HMAC-SHA256 Credential=${SECRETS_CREDENTIALS.accessKeyId}/`) ||
      !auth.includes("/secretsmanager/aws4_request")
    ) {
      answer(400, {
        __type: "UnrecognizedClientException",
        message: "The security token included in the request is invalid.",
      });
      return;
    }
    if (req.headers["x-amz-target"] !== "secretsmanager.GetSecretValue") {
      answer(400, { __type: "UnknownOperationException" });
      return;
    }
    const id = (JSON.parse(req.body || "{}") as { SecretId?: string }).SecretId ?? "";
    const value = secrets[id];
    if (value === undefined) {
      answer(400, {
        __type: "ResourceNotFoundException",
        message: "Secrets Manager can't find the specified secret.",
      });
      return;
    }
    answer(200, { ARN: id, Name: id.split(":").at(-1), SecretString: value, VersionId: "v1" });
  });
  return server;
}
