import { type AwsCredentials, signedPost } from "./signed-post.ts";

/**
 * STS `AssumeRole` over its Query API, signed with SigV4: one call, not worth a client package in
 * every function's bundle. The Prometheus provider assumes a metric's `sigv4.roleArn` with it and
 * signs its queries with the role's credentials, as Argo's SigV4 round tripper does.
 */

/** Temporary credentials of an assumed role, and when they expire. */
export interface AssumedCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  readonly expiration: Date;
}

export interface AssumeRoleOptions {
  roleArn: string;
  /** Who assumes it, as the role's CloudTrail records show (`RoleSessionName`). */
  sessionName: string;
  /** Seconds the credentials last (STS: 900 up to the role's maximum); default STS's 3600. */
  durationSeconds?: number;
  region: string;
  credentials: AwsCredentials | (() => Promise<AwsCredentials>);
  signal: AbortSignal;
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
  /** Default `AWS_ENDPOINT_URL_STS`, else the region's endpoint (`sts.REGION.amazonaws.com`). */
  endpoint?: string;
}

/** The credentials, or why there are none: the call failed or STS refused it (its code and message). */
export type AssumeRoleAnswer =
  | { credentials: AssumedCredentials }
  | { failure: "unreachable"; url: string; error: unknown }
  | { failure: "refused"; status: number; code: string; message: string };

/** The text of the first `<name>` element of an STS XML answer, entities decoded. */
function element(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  if (!m) return undefined;
  return (m[1] as string).replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) =>
    e === "lt" ? "<" : e === "gt" ? ">" : e === "quot" ? '"' : e === "apos" ? "'" : "&",
  );
}

export async function assumeRole(options: AssumeRoleOptions): Promise<AssumeRoleAnswer> {
  const body = new URLSearchParams({
    Action: "AssumeRole",
    Version: "2011-06-15",
    RoleArn: options.roleArn,
    RoleSessionName: options.sessionName,
    ...(options.durationSeconds !== undefined ? { DurationSeconds: String(options.durationSeconds) } : {}),
  }).toString();
  // The regional endpoint (the China regions' in their own partition's domain).
  const domain = options.region.startsWith("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
  const address =
    options.endpoint ?? process.env.AWS_ENDPOINT_URL_STS ?? `https://sts.${options.region}.${domain}`;
  const sent = await signedPost({
    service: "sts",
    region: options.region,
    credentials: options.credentials,
    address,
    headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" },
    body,
    signal: options.signal,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  if ("failure" in sent) return sent;
  const res = sent.response;
  const text = await res.text();
  if (!res.ok) {
    return {
      failure: "refused",
      status: res.status,
      code: element(text, "Code") ?? "Unknown",
      message: element(text, "Message") ?? text.slice(0, 300),
    };
  }
  const accessKeyId = element(text, "AccessKeyId");
  const secretAccessKey = element(text, "SecretAccessKey");
  const sessionToken = element(text, "SessionToken");
  const expiration = new Date(element(text, "Expiration") ?? "");
  if (!accessKeyId || !secretAccessKey || !sessionToken || Number.isNaN(expiration.getTime())) {
    return {
      failure: "refused",
      status: res.status,
      code: "MalformedResponse",
      message: "no Credentials in the answer",
    };
  }
  return { credentials: { accessKeyId, secretAccessKey, sessionToken, expiration } };
}
