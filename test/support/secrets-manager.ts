import { sigv4Problem } from "../../local/aws/sigv4-verify.ts";
import { type Recorded, startServer } from "./http-server.ts";

/** The credentials a test signs Secrets Manager calls with. */
export const SECRETS_CREDENTIALS = { accessKeyId: "AKIDLOCAL", secretAccessKey: "local-secret" };

/**
 * A local AWS Secrets Manager that answers `GetSecretValue` (the JSON 1.1 protocol: a POST with
 * `X-Amz-Target: secretsmanager.GetSecretValue`) from `secrets`, by ARN or name. A call whose SigV4
 * signature does not verify — another access key, another service, or signed for another host than
 * the Host it arrived with — is refused as AWS refuses it; an unknown secret is AWS's
 * `ResourceNotFoundException`. Every call is recorded.
 */
export async function startSecretsManager(secrets: Record<string, string>) {
  const server = await startServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
      res.end(JSON.stringify(body));
    };
    void verify(req).then((refusal) => {
      if (refusal) answer(400, refusal);
      else if (req.headers["x-amz-target"] !== "secretsmanager.GetSecretValue") {
        answer(400, { __type: "UnknownOperationException" });
      } else {
        const id = (JSON.parse(req.body || "{}") as { SecretId?: string }).SecretId ?? "";
        const value = secrets[id];
        if (value === undefined) {
          answer(400, {
            __type: "ResourceNotFoundException",
            message: "Secrets Manager can't find the specified secret.",
          });
        } else answer(200, { ARN: id, Name: id.split(":").at(-1), SecretString: value, VersionId: "v1" });
      }
    });
  });
  return server;
}

/** AWS's refusal of a request whose signature does not verify, or undefined when it does. */
async function verify(req: Recorded): Promise<{ __type: string; message: string } | undefined> {
  // Any region: the caller signs for the secret's, which the test chose.
  const region = /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(String(req.headers.authorization))?.[1] ?? "";
  const problem = await sigv4Problem(req, Buffer.from(req.body), {
    credentials: SECRETS_CREDENTIALS,
    region,
    service: "secretsmanager",
  });
  if (problem === undefined) return undefined;
  if (problem.startsWith("the request signature")) {
    return {
      __type: "InvalidSignatureException",
      message: `The request signature we calculated does not match (${problem}).`,
    };
  }
  return {
    __type: "UnrecognizedClientException",
    message: `The security token included in the request is invalid (${problem}).`,
  };
}
