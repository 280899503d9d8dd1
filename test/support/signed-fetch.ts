import { SignatureV4 } from "@smithy/signature-v4";
import { NodeSha256 } from "../../local/aws/sha256.ts";

/**
 * `fetch` whose every request is signed with SigV4 for service `lambda`, as a caller of an
 * `AWS_IAM` Function URL signs it (string bodies only: what the tests send).
 */
export function signedFetch(
  region: string,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
): typeof fetch {
  const signer = new SignatureV4({ service: "lambda", region, credentials, sha256: NodeSha256 });
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (init.body !== undefined && init.body !== null && typeof init.body !== "string")
      throw new TypeError("signedFetch signs string bodies only");
    const signed = await signer.sign({
      method: init.method ?? "GET",
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...Object.fromEntries(new Headers(init.headers).entries()), host: url.host },
      ...(typeof init.body === "string" ? { body: init.body } : {}),
    });
    const { host: _, ...headers } = signed.headers;
    return fetch(url, { ...init, headers });
  };
}
