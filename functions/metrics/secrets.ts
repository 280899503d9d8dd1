import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { getSecretValue, type SecretsCredentials } from "../secrets-manager.ts";
import { deadline, describeFetchError, type Fetch, snippet } from "./http.ts";

/**
 * The keys of a metric provider (Datadog's API and app keys, New Relic's account and personal API
 * key), read from AWS Secrets Manager: a secret whose `SecretString` is a JSON object with the
 * keys Argo reads from its Kubernetes Secret (`api-key`, `app-key`, `address`;
 * `personal-api-key`, `account-id`, `region`, `base-url-nerdgraph`), read with
 * `getSecretValue` (`functions/secrets-manager.ts`).
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

export interface SecretsManagerSourceOptions {
  fetch?: Fetch;
  credentials?: SecretsCredentials | (() => Promise<SecretsCredentials>);
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
    const answer = await getSecretValue({
      secretId,
      region,
      credentials: this.options.credentials ?? defaultProvider(),
      signal: deadline(SECRET_TIMEOUT_SECONDS, signal),
      ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}),
    });
    if ("secretString" in answer) return answer;
    switch (answer.failure) {
      case "unreachable": {
        const why = describeFetchError("POST", answer.url, answer.error, SECRET_TIMEOUT_SECONDS);
        return { error: `secret ${secretId}: GetSecretValue failed: ${why}` };
      }
      case "status":
        return {
          error: `secret ${secretId}: GetSecretValue answered ${answer.status}: ${snippet(answer.text, 300)}`,
        };
      default:
        return { error: `secret ${secretId} has no SecretString (a JSON object of the provider's keys)` };
    }
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
  // Own keys only: a name such as `constructor` must not find what every object inherits.
  const named = secrets.named && Object.hasOwn(secrets.named, name) ? secrets.named[name] : undefined;
  return named ?? (name === defaultName ? secrets.own : undefined);
}

/** Where a provider's keys are: the controller's secret for it, and its secrets by the names templates give them. */
export interface ProfileSecretOptions {
  /** Where the controller's secrets are read. */
  secrets?: SecretSource;
  /** The controller's secret for this provider (ARN or name). */
  secretId?: string;
  /** The controller's secrets by the names templates give them (a `profile`, a `secretRef.name`). */
  named?: Readonly<Record<string, string>>;
}

/**
 * The values of the secret a template's `profile` names (`secretIdFor`), as Argo's New Relic and
 * InfluxDB providers read theirs: `noOwnSecret` when no profile is given and the controller holds
 * no secret for the provider, Argo's `secrets "NAME" not found` for an unknown profile.
 */
export function readProfileSecret(
  options: ProfileSecretOptions,
  profile: string | undefined,
  defaultName: string,
  noOwnSecret: string,
  ctx: { now: Date; signal?: AbortSignal },
): Promise<SecretValues | SecretFailure> {
  const secretId = secretIdFor({ own: options.secretId, named: options.named }, profile, defaultName);
  if (!secretId || !options.secrets) {
    return Promise.resolve({
      error:
        profile === undefined
          ? noOwnSecret
          : `secrets "${profile}" not found: the controller has no secret named "${profile}" (RolloutController's metricSecrets.named)`,
    });
  }
  return options.secrets.read(secretId, ctx.now, ctx.signal);
}
