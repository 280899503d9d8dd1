import { type AwsCredentials, signedPost } from "./signed-post.ts";

/**
 * Secrets Manager's `GetSecretValue`, signed with SigV4: one call, not worth a client package in
 * every function's bundle. The Kubernetes target reads a kubeconfig with it, the Datadog and New
 * Relic metric providers their keys; each turns a failure into its own error.
 */

/** AWS credentials, as the SDK's credential chain gives them. */
export type SecretsCredentials = AwsCredentials;

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
  const sent = await signedPost({
    service: "secretsmanager",
    region: options.region,
    credentials: options.credentials,
    address:
      options.endpoint ??
      process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER ??
      `https://secretsmanager.${options.region}.amazonaws.com`,
    headers: {
      "content-type": "application/x-amz-json-1.1",
      "x-amz-target": "secretsmanager.GetSecretValue",
    },
    body: JSON.stringify({ SecretId: options.secretId }),
    signal: options.signal,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  if ("failure" in sent) return sent;
  const res = sent.response;
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
