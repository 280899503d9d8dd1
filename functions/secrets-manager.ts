import { Sha256 } from "@aws-crypto/sha256-js";
import { SignatureV4 } from "@smithy/signature-v4";

/**
 * Secrets Manager's `GetSecretValue`, signed with SigV4: one call, not worth a client package in
 * every function's bundle. The Kubernetes target reads a kubeconfig with it, the Datadog and New
 * Relic metric providers their keys; each turns a failure into its own error.
 */

/** AWS credentials, as the SDK's credential chain gives them. */
export interface SecretsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface GetSecretValueOptions {
  secretId: string;
  region: string;
  credentials: SecretsCredentials | (() => Promise<SecretsCredentials>);
  signal: AbortSignal;
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
  /** Default `AWS_ENDPOINT_URL_SECRETS_MANAGER`, else the region's endpoint. */
  endpoint?: string;
}

/** The secret's text, or why there is none: the call failed, Secrets Manager refused it, or no `SecretString`. */
export type GetSecretValueAnswer =
  | { secretString: string }
  | { failure: "unreachable"; url: string; error: unknown }
  | { failure: "status"; status: number; text: string }
  | { failure: "no-string" };

export async function getSecretValue(options: GetSecretValueOptions): Promise<GetSecretValueAnswer> {
  const body = JSON.stringify({ SecretId: options.secretId });
  const signer = new SignatureV4({
    service: "secretsmanager",
    region: options.region,
    sha256: Sha256,
    credentials: options.credentials,
  });
  const address =
    options.endpoint ??
    process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER ??
    `https://secretsmanager.${options.region}.amazonaws.com`;
  const endpoint = URL.parse(address);
  if (!endpoint)
    return { failure: "unreachable", url: address, error: new TypeError(`invalid URL ${address}`) };
  const path = endpoint.pathname.endsWith("/") ? endpoint.pathname : `${endpoint.pathname}/`;
  const url = `${endpoint.origin}${path}`;
  let res: Response;
  try {
    const signed = await signer.sign({
      method: "POST",
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      path,
      headers: {
        // Signed for the host the request goes to (a VPC endpoint, LocalStack): fetch sends the
        // URL's host, and AWS checks the signature against the Host header it received.
        host: endpoint.host,
        "content-type": "application/x-amz-json-1.1",
        "x-amz-target": "secretsmanager.GetSecretValue",
      },
      body,
    });
    res = await (options.fetch ?? fetch)(url, {
      method: "POST",
      headers: signed.headers as Record<string, string>,
      body,
      signal: options.signal,
    });
  } catch (error) {
    return { failure: "unreachable", url, error };
  }
  const text = await res.text();
  if (!res.ok) return { failure: "status", status: res.status, text };
  let secret: { SecretString?: unknown } | undefined;
  try {
    secret = JSON.parse(text) as { SecretString?: unknown };
  } catch {
    secret = undefined;
  }
  return typeof secret?.SecretString === "string"
    ? { secretString: secret.SecretString }
    : { failure: "no-string" };
}
