import { defaultProvider } from "@aws-sdk/credential-provider-node";
import type { SecretsCredentials } from "../secrets-manager.ts";
import { type AssumedCredentials, assumeRole } from "../sts.ts";
import { describeFetchError, type Fetch } from "./http.ts";

/**
 * The credentials of the roles metrics name (`authentication.sigv4.roleArn`), assumed with STS
 * `AssumeRole` from the function's own credentials, as Argo's SigV4 round tripper assumes them
 * (aws-sdk-go's `stscreds`: a session named by the time in nanoseconds, fifteen minutes). Each
 * role's credentials are kept for the process and assumed again {@link REFRESH_BEFORE_MS} before
 * they expire, so a measurement never signs with credentials about to lapse; measurements taken
 * together share one call.
 */

/** Assumed again this long before the credentials expire: one minute. */
export const REFRESH_BEFORE_MS = 60_000;
/** How long the credentials last: stscreds' default, fifteen minutes (STS's least). */
const DURATION_SECONDS = 900;
/** The most an AssumeRole call may take. */
const STS_TIMEOUT_SECONDS = 5;

export interface AssumedRolesOptions {
  fetch?: Fetch;
  /** The credentials that assume the role (default: the default chain, or the named profile). */
  base?: (profile: string | undefined) => SecretsCredentials | (() => Promise<SecretsCredentials>);
  /** STS's endpoint; default `AWS_ENDPOINT_URL_STS`, else the region's. */
  endpoint?: string;
  /** The wall clock (credentials expire in real time); default `Date.now`. */
  now?: () => number;
}

export class AssumedRoles {
  private readonly held = new Map<string, Promise<AssumedCredentials>>();
  private readonly now: () => number;

  constructor(private readonly options: AssumedRolesOptions = {}) {
    this.now = options.now ?? (() => Date.now());
  }

  /** A credential provider of `roleArn`, assumed through STS in `region` from `profile`'s credentials. */
  provider(roleArn: string, region: string, profile?: string): () => Promise<SecretsCredentials> {
    return () => this.credentials(roleArn, region, profile);
  }

  async credentials(roleArn: string, region: string, profile?: string): Promise<AssumedCredentials> {
    const key = JSON.stringify([roleArn, region, profile ?? null]);
    const held = this.held.get(key);
    if (held) {
      const fresh = await held.then(
        (c) => (c.expiration.getTime() - this.now() > REFRESH_BEFORE_MS ? c : undefined),
        () => undefined,
      );
      if (fresh) return fresh;
      if (this.held.get(key) !== held) return this.credentials(roleArn, region, profile);
    }
    const call = this.assume(roleArn, region, profile);
    this.held.set(key, call);
    // A refusal is not kept: the next measurement asks again.
    call.catch(() => {
      if (this.held.get(key) === call) this.held.delete(key);
    });
    return call;
  }

  private async assume(roleArn: string, region: string, profile?: string): Promise<AssumedCredentials> {
    const answer = await assumeRole({
      roleArn,
      // As aws-sdk-go's stscreds names a session it is given no name for: the time in nanoseconds.
      sessionName: `${this.now()}000000`,
      durationSeconds: DURATION_SECONDS,
      region,
      credentials: this.options.base
        ? this.options.base(profile)
        : defaultProvider(profile ? { profile } : {}),
      signal: AbortSignal.timeout(STS_TIMEOUT_SECONDS * 1000),
      ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}),
    });
    if ("credentials" in answer) return answer.credentials;
    if (answer.failure === "unreachable") {
      throw new Error(
        `AssumeRole of ${roleArn} failed: ${describeFetchError("POST", answer.url, answer.error, STS_TIMEOUT_SECONDS)}`,
      );
    }
    throw new Error(`AssumeRole of ${roleArn} refused (${answer.status}): ${answer.code}: ${answer.message}`);
  }
}
