import { timingSafeEqual } from "node:crypto";
import type http from "node:http";
import { SignatureV4 } from "@smithy/signature-v4";
import { NodeSha256 } from "./sha256.ts";

/** The credentials a local AWS endpoint accepts signatures of (the runtime's dummy ones). */
export interface LocalCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** How far a request's `X-Amz-Date` may be from this machine's clock, as on AWS. */
const MAX_SKEW_MS = 5 * 60 * 1000;

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/**
 * Checks a request's SigV4 signature as AWS does, by signing it again with `@smithy/signature-v4`
 * (the library the callers sign with) over the headers it names, and comparing: the key, the
 * service and the region must be these, the date within five minutes, the signature the same.
 * Returns what is wrong, or undefined when the request is signed right.
 */
export async function sigv4Problem(
  req: Pick<http.IncomingMessage, "method" | "url" | "headers">,
  body: Buffer,
  expected: { credentials: LocalCredentials; region: string; service: string },
  now = new Date(),
): Promise<string | undefined> {
  const authorization = req.headers.authorization;
  if (!authorization) return "no Authorization header";
  const parts = AUTHORIZATION.exec(authorization);
  if (!parts) return "the Authorization header is not a SigV4 signature";
  const [, keyId, , region, service, signedHeaders] = parts as unknown as string[];
  if (keyId !== expected.credentials.accessKeyId) return `unknown access key ${keyId}`;
  if (service !== expected.service) return `signed for service ${service}, not ${expected.service}`;
  if (region !== expected.region) return `signed for region ${region}, not ${expected.region}`;
  const stamp = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(
    String(req.headers["x-amz-date"] ?? ""),
  );
  if (!stamp) return "no X-Amz-Date header";
  const [, y, mo, d, h, mi, s] = stamp.map(Number) as number[];
  const signingDate = new Date(Date.UTC(y as number, (mo as number) - 1, d, h, mi, s));
  if (Math.abs(now.getTime() - signingDate.getTime()) > MAX_SKEW_MS) return "the signature has expired";
  const names = (signedHeaders as string).split(";");
  const headers: Record<string, string> = {};
  for (const name of names) {
    const value = req.headers[name];
    if (value === undefined) return `signed header ${name} is missing`;
    // The payload hash is computed again from the body, never taken from the request.
    if (name !== "x-amz-content-sha256") headers[name] = Array.isArray(value) ? value.join(",") : value;
  }
  const url = new URL(req.url ?? "/", "http://local");
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    query[key] = values.length === 1 ? (values[0] as string) : values;
  }
  const signer = new SignatureV4({
    service,
    region,
    sha256: NodeSha256,
    credentials: expected.credentials,
    applyChecksum: names.includes("x-amz-content-sha256"),
  });
  const again = await signer.sign(
    {
      method: req.method ?? "GET",
      protocol: "http:",
      hostname: String(req.headers.host ?? "").replace(/:\d+$/, ""),
      path: url.pathname,
      query,
      headers,
      ...(body.length > 0 ? { body } : {}),
    },
    { signingDate },
  );
  const computed = Buffer.from(String(again.headers.authorization ?? ""));
  const given = Buffer.from(authorization);
  if (computed.length !== given.length || !timingSafeEqual(computed, given)) {
    return "the request signature does not match";
  }
  return undefined;
}
