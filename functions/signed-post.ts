import { Sha256 } from "@aws-crypto/sha256-js";
import { SignatureV4 } from "@smithy/signature-v4";

/**
 * One SigV4-signed POST to an AWS service's endpoint, for the single calls not worth a client
 * package in every function's bundle (`secrets-manager.ts`, `sts.ts`): the endpoint resolved, the
 * request signed for the host it goes to, sent; a call that never got an answer is said so.
 */

/** AWS credentials, as the SDK's credential chain gives them. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface SignedPostOptions {
  /** The signing name (`secretsmanager`, `sts`). */
  service: string;
  region: string;
  credentials: AwsCredentials | (() => Promise<AwsCredentials>);
  /** The endpoint's address: a custom one (a VPC endpoint, a local service) or the region's. */
  address: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
}

export type SignedPostAnswer =
  | { response: Response; url: string }
  | { failure: "unreachable"; url: string; error: unknown };

export async function signedPost(options: SignedPostOptions): Promise<SignedPostAnswer> {
  const endpoint = URL.parse(options.address);
  if (!endpoint) {
    return {
      failure: "unreachable",
      url: options.address,
      error: new TypeError(`invalid URL ${options.address}`),
    };
  }
  const path = endpoint.pathname.endsWith("/") ? endpoint.pathname : `${endpoint.pathname}/`;
  const url = `${endpoint.origin}${path}`;
  const signer = new SignatureV4({
    service: options.service,
    region: options.region,
    sha256: Sha256,
    credentials: options.credentials,
  });
  try {
    const signed = await signer.sign({
      method: "POST",
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      path,
      // Signed for the host the request goes to (a VPC endpoint, LocalStack): fetch sends the
      // URL's host, and AWS checks the signature against the Host header it received.
      headers: { ...options.headers, host: endpoint.host },
      body: options.body,
    });
    const { host: _, ...headers } = signed.headers as Record<string, string>;
    const response = await (options.fetch ?? fetch)(url, {
      method: "POST",
      headers,
      body: options.body,
      signal: options.signal,
    });
    return { response, url };
  } catch (error) {
    return { failure: "unreachable", url, error };
  }
}
