import { Sha256 } from "@aws-crypto/sha256-js";
import { SignatureV4 } from "@smithy/signature-v4";
import { parse as parseYaml } from "yaml";
import { getSecretValue } from "../../secrets-manager.ts";
import { TargetConfigurationError, TargetNotReadyError } from "../errors.ts";

/**
 * How the target authenticates to a cluster: EKS with the function's IAM identity (the token EKS
 * expects is a presigned STS `GetCallerIdentity` URL naming the cluster), a kubeconfig held in
 * Secrets Manager, or a plain bearer token (the local API, and tests against a real cluster).
 */

/** AWS credentials, as the SDK's credential chain gives them. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

/** An EKS token's prefix (aws-iam-authenticator's `v1` token format). */
const EKS_TOKEN_PREFIX = "k8s-aws-v1.";
/** Seconds the presigned URL is valid for, as `aws eks get-token` signs it. */
const PRESIGN_SECONDS = 60;
/** EKS accepts a token for 15 minutes; a new one is made well before. */
const TOKEN_REUSE_MS = 10 * 60 * 1000;

/**
 * The bearer token EKS accepts for the caller's IAM identity: `k8s-aws-v1.` and the base64url
 * (no padding) of an STS `GetCallerIdentity` URL presigned with SigV4 for 60 seconds, the header
 * `x-k8s-aws-id: <cluster name>` signed with it (so a token for one cluster is refused by another).
 */
export async function eksToken(options: {
  clusterName: string;
  region: string;
  credentials: AwsCredentials | AwsCredentialsProvider;
  /** The signing time (tests give a fixed one). */
  signingDate?: Date;
}): Promise<string> {
  const signer = new SignatureV4({
    service: "sts",
    region: options.region,
    sha256: Sha256,
    credentials: options.credentials,
  });
  const hostname = `sts.${options.region}.amazonaws.com`;
  const presigned = await signer.presign(
    {
      method: "GET",
      protocol: "https:",
      hostname,
      path: "/",
      query: { Action: "GetCallerIdentity", Version: "2011-06-15" },
      headers: { host: hostname, "x-k8s-aws-id": options.clusterName },
    },
    {
      expiresIn: PRESIGN_SECONDS,
      ...(options.signingDate ? { signingDate: options.signingDate } : {}),
    },
  );
  const query = Object.entries(presigned.query ?? {})
    .flatMap(([key, value]) =>
      (Array.isArray(value) ? value : [value]).map(
        (v) => `${encodeURIComponent(key)}=${encodeURIComponent(String(v))}`,
      ),
    )
    .join("&");
  const url = `https://${hostname}/?${query}`;
  return EKS_TOKEN_PREFIX + Buffer.from(url, "utf8").toString("base64url");
}

/** A token source that makes an EKS token and reuses it for 10 of its 15 minutes. */
export function eksTokenSource(options: {
  clusterName: string;
  region: string;
  credentials: AwsCredentialsProvider;
  now: () => number;
}): () => Promise<string> {
  let cached: { token: string; at: number } | undefined;
  return async () => {
    const now = options.now();
    if (cached && now - cached.at < TOKEN_REUSE_MS) return cached.token;
    const token = await eksToken({ ...options, signingDate: new Date(now) });
    cached = { token, at: now };
    return token;
  };
}

/** What a kubeconfig says about its current context. */
export interface KubeconfigCluster {
  readonly server: string;
  /** PEM. */
  readonly ca?: string;
  readonly token: string;
}

/**
 * The current context of a kubeconfig (YAML or JSON): the cluster's `server` and
 * `certificate-authority-data`, and the user's `token`. Other credentials (client certificates,
 * exec plugins) are refused with a message naming what to use instead.
 */
export function parseKubeconfig(text: string, where: string): KubeconfigCluster {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new TargetConfigurationError(`${where}: not a kubeconfig: ${(error as Error).message}`);
  }
  const config = (doc ?? {}) as {
    "current-context"?: string;
    contexts?: { name?: string; context?: { cluster?: string; user?: string } }[];
    clusters?: { name?: string; cluster?: { server?: string; "certificate-authority-data"?: string } }[];
    users?: { name?: string; user?: { token?: string } & Record<string, unknown> }[];
  };
  const contexts = Array.isArray(config.contexts) ? config.contexts : [];
  const contextName = config["current-context"] ?? contexts[0]?.name;
  const context = contexts.find((c) => c.name === contextName)?.context;
  if (!context)
    throw new TargetConfigurationError(`${where}: no context "${contextName ?? ""}" in the kubeconfig`);
  const cluster = (config.clusters ?? []).find((c) => c.name === context.cluster)?.cluster;
  if (!cluster?.server) {
    throw new TargetConfigurationError(`${where}: context "${contextName}" names no cluster with a server`);
  }
  const user = (config.users ?? []).find((u) => u.name === context.user)?.user;
  if (typeof user?.token !== "string" || user.token === "") {
    throw new TargetConfigurationError(
      `${where}: user "${context.user ?? ""}" has no token (client certificates and exec plugins are not supported: use a service account token, or the EKS access entry)`,
    );
  }
  const caData = cluster["certificate-authority-data"];
  return {
    server: cluster.server,
    ...(caData ? { ca: Buffer.from(caData, "base64").toString("utf8") } : {}),
    token: user.token,
  };
}

/** A secret's `SecretString` (`getSecretValue`), its failures as the traffic port's errors. */
export async function getSecretString(options: {
  secretId: string;
  region: string;
  credentials: AwsCredentialsProvider;
  timeoutMs: number;
  fetch?: typeof fetch;
  /** Default `AWS_ENDPOINT_URL_SECRETS_MANAGER`, else the region's endpoint. */
  endpoint?: string;
}): Promise<string> {
  const answer = await getSecretValue({ ...options, signal: AbortSignal.timeout(options.timeoutMs) });
  if ("secretString" in answer) return answer.secretString;
  switch (answer.failure) {
    case "unreachable":
      throw new TargetNotReadyError(
        `GetSecretValue ${options.secretId}: ${(answer.error as Error).message}`,
        {
          cause: answer.error,
        },
      );
    case "status": {
      const fault = `GetSecretValue ${options.secretId}: ${answer.status} ${answer.text.slice(0, 300)}`;
      throw answer.status >= 500 || answer.status === 429
        ? new TargetNotReadyError(fault)
        : new TargetConfigurationError(fault);
    }
    default:
      throw new TargetConfigurationError(
        `secret ${options.secretId} has no SecretString (a kubeconfig as text)`,
      );
  }
}
