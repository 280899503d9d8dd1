import { Sha256 } from "@aws-crypto/sha256-js";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";
import { deadline, describeFetchError, type Fetch, snippet } from "./http.ts";

/**
 * The keys of a metric provider (Datadog's API and app keys, New Relic's account and personal API
 * key), read from AWS Secrets Manager: a secret whose `SecretString` is a JSON object with the
 * keys Argo reads from its Kubernetes Secret (`api-key`, `app-key`, `address`;
 * `personal-api-key`, `account-id`, `region`, `base-url-nerdgraph`). One `GetSecretValue`,
 * signed with SigV4, is not worth a client package in every function's bundle.
 *
 * A secret is read once and kept for {@link SECRET_TTL_MS} of the measurements' own time, so a
 * rotated key is picked up within minutes. A secret that cannot be read is the measurement's
 * Error, with a message that names the secret and never a value.
 */
export interface SecretSource {
  read(secretId: string, now: Date, signal?: AbortSignal): Promise<SecretValues | SecretFailure>;
}

export interface SecretValues {
  values: Record<string, string>;
}
export interface SecretFailure {
  error: string;
}

/** How long a secret read is reused: five minutes. */
export const SECRET_TTL_MS = 5 * 60 * 1000;
/** The most a GetSecretValue call may take. */
const SECRET_TIMEOUT_SECONDS = 5;

/** AWS credentials, as the SDK's credential chain gives them. */
interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface SecretsManagerSourceOptions {
  fetch?: Fetch;
  credentials?: AwsCredentials | (() => Promise<AwsCredentials>);
  /** The region of a secret named by name rather than ARN; default `AWS_REGION`. */
  region?: string;
  /** Secrets Manager's endpoint; default `AWS_ENDPOINT_URL_SECRETS_MANAGER`, else the region's. */
  endpoint?: string;
}

/** Secrets Manager's `GetSecretValue` over HTTPS, each secret kept for five minutes. */
export class SecretsManagerSource implements SecretSource {
  private readonly cache = new Map<string, { at: number; values: Record<string, string> }>();

  constructor(private readonly options: SecretsManagerSourceOptions = {}) {}

  async read(secretId: string, now: Date, signal?: AbortSignal): Promise<SecretValues | SecretFailure> {
    const cached = this.cache.get(secretId);
    if (cached && now.getTime() - cached.at < SECRET_TTL_MS) return { values: cached.values };
    const text = await this.getSecretString(secretId, signal);
    if ("error" in text) return text;
    const values = secretValues(secretId, text.secretString);
    if ("values" in values) this.cache.set(secretId, { at: now.getTime(), values: values.values });
    return values;
  }

  private async getSecretString(
    secretId: string,
    signal?: AbortSignal,
  ): Promise<{ secretString: string } | SecretFailure> {
    // A secret's ARN names its region.
    const region =
      /^arn:aws[a-z-]*:secretsmanager:([a-z0-9-]+):/.exec(secretId)?.[1] ??
      this.options.region ??
      process.env.AWS_REGION ??
      process.env.AWS_DEFAULT_REGION;
    if (!region) return { error: `secret ${secretId}: no region (give the secret's ARN or set AWS_REGION)` };
    const hostname = `secretsmanager.${region}.amazonaws.com`;
    const body = JSON.stringify({ SecretId: secretId });
    const signer = new SignatureV4({
      service: "secretsmanager",
      region,
      sha256: Sha256,
      credentials: this.options.credentials ?? defaultProvider(),
    });
    const endpoint = (
      this.options.endpoint ??
      process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER ??
      `https://${hostname}`
    ).replace(/\/$/, "");
    let res: Response;
    try {
      const signed = await signer.sign({
        method: "POST",
        protocol: "https:",
        hostname,
        path: "/",
        headers: {
          host: hostname,
          "content-type": "application/x-amz-json-1.1",
          "x-amz-target": "secretsmanager.GetSecretValue",
        },
        body,
      });
      res = await (this.options.fetch ?? fetch)(`${endpoint}/`, {
        method: "POST",
        headers: signed.headers as Record<string, string>,
        body,
        signal: deadline(SECRET_TIMEOUT_SECONDS, signal),
      });
    } catch (e) {
      const why = describeFetchError("POST", `${endpoint}/`, e, SECRET_TIMEOUT_SECONDS);
      return { error: `secret ${secretId}: GetSecretValue failed: ${why}` };
    }
    const text = await res.text();
    if (!res.ok) {
      return { error: `secret ${secretId}: GetSecretValue answered ${res.status}: ${snippet(text, 300)}` };
    }
    let answer: { SecretString?: unknown };
    try {
      answer = JSON.parse(text) as { SecretString?: unknown };
    } catch {
      return { error: `secret ${secretId}: GetSecretValue answered what is not JSON` };
    }
    if (typeof answer?.SecretString !== "string") {
      return { error: `secret ${secretId} has no SecretString (a JSON object of the provider's keys)` };
    }
    return { secretString: answer.SecretString };
  }
}

/** The secret's keys: a JSON object whose values are strings (never printed in a message). */
export function secretValues(secretId: string, text: string): SecretValues | SecretFailure {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {
      error: `secret ${secretId}: its SecretString is not JSON (a JSON object of the provider's keys)`,
    };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return { error: `secret ${secretId}: its SecretString is not a JSON object of the provider's keys` };
  }
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value === "string") values[key] = value;
    else if (typeof value === "number") values[key] = String(value);
    else return { error: `secret ${secretId}: key "${key}" is not a string` };
  }
  return { values };
}

/**
 * The secret a metric reads: the one the controller holds under `name` (a template's
 * `secretRef.name` or `profile`), else for Argo's default name or no name the provider's own.
 */
export function secretIdFor(
  secrets: { own?: string; named?: Readonly<Record<string, string>> },
  name: string | undefined,
  defaultName: string,
): string | undefined {
  if (name === undefined) return secrets.own;
  return secrets.named?.[name] ?? (name === defaultName ? secrets.own : undefined);
}
