import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { TargetConfigurationError } from "../../functions/traffic/errors.ts";
import { eksToken, parseKubeconfig } from "../../functions/traffic/kubernetes/auth.ts";

/**
 * The EKS token checked against SigV4 computed here from the specification (canonical request,
 * string to sign, derived key) with node:crypto, not with the signer the target uses.
 */
function expectedPresignedUrl(options: {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  region: string;
  cluster: string;
  date: Date;
}): string {
  const host = `sts.${options.region}.amazonaws.com`;
  const amzDate = options.date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${options.region}/sts/aws4_request`;
  const params: Record<string, string> = {
    Action: "GetCallerIdentity",
    Version: "2011-06-15",
    "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
    "X-Amz-Credential": `${options.accessKeyId}/${scope}`,
    "X-Amz-Date": amzDate,
    "X-Amz-Expires": "60",
    "X-Amz-SignedHeaders": "host;x-k8s-aws-id",
    ...(options.sessionToken ? { "X-Amz-Security-Token": options.sessionToken } : {}),
  };
  const enc = (v: string) =>
    encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const query = Object.keys(params)
    .sort()
    .map((k) => `${enc(k)}=${enc(params[k] as string)}`)
    .join("&");
  const canonical = [
    "GET",
    "/",
    query,
    `host:${host}\nx-k8s-aws-id:${options.cluster}\n`,
    "host;x-k8s-aws-id",
    createHash("sha256").update("").digest("hex"),
  ].join("\n");
  const toSign = [
    "AWS4-HMAC-SHA256",
    amzDate,
    scope,
    createHash("sha256").update(canonical).digest("hex"),
  ].join("\n");
  const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data).digest();
  const key = hmac(
    hmac(hmac(hmac(`AWS4${options.secretAccessKey}`, day), options.region), "sts"),
    "aws4_request",
  );
  const signature = createHmac("sha256", key).update(toSign).digest("hex");
  return `https://${host}/?${query}&X-Amz-Signature=${signature}`;
}

const decode = (token: string) =>
  Buffer.from(token.slice("k8s-aws-v1.".length), "base64url").toString("utf8");

describe("EKS token", () => {
  const date = new Date("2026-12-01T12:00:00Z");
  const credentials = {
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  };

  it("is k8s-aws-v1. and the base64url, unpadded, of the presigned GetCallerIdentity URL naming the cluster", async () => {
    const token = await eksToken({
      clusterName: "shop",
      region: "eu-west-1",
      credentials,
      signingDate: date,
    });
    expect(token.startsWith("k8s-aws-v1.")).toBe(true);
    expect(token).not.toMatch(/[=+/]/);
    const sorted = (url: string) => {
      const u = new URL(url);
      return [u.origin, u.pathname, [...u.searchParams.entries()].sort()];
    };
    const expected = expectedPresignedUrl({ ...credentials, region: "eu-west-1", cluster: "shop", date });
    expect(sorted(decode(token))).toEqual(sorted(expected));
    expect(new URL(decode(token)).searchParams.get("X-Amz-Signature")).toBe(
      new URL(expected).searchParams.get("X-Amz-Signature"),
    );
  });

  it("signs the session token of temporary credentials (a Lambda role's)", async () => {
    const temporary = { ...credentials, sessionToken: "IQoJb3JpZ2luX2VjEXAMPLE/+=" };
    const token = await eksToken({
      clusterName: "shop",
      region: "us-east-1",
      credentials: temporary,
      signingDate: date,
    });
    const url = new URL(decode(token));
    const expected = new URL(
      expectedPresignedUrl({ ...temporary, region: "us-east-1", cluster: "shop", date }),
    );
    expect(url.searchParams.get("X-Amz-Security-Token")).toBe(temporary.sessionToken);
    expect(url.searchParams.get("X-Amz-Signature")).toBe(expected.searchParams.get("X-Amz-Signature"));
  });

  it("differs per cluster: a token for one cluster is no token for another", async () => {
    const a = await eksToken({ clusterName: "a", region: "us-east-1", credentials, signingDate: date });
    const b = await eksToken({ clusterName: "b", region: "us-east-1", credentials, signingDate: date });
    expect(new URL(decode(a)).searchParams.get("X-Amz-Signature")).not.toBe(
      new URL(decode(b)).searchParams.get("X-Amz-Signature"),
    );
  });
});

describe("kubeconfig", () => {
  const kubeconfig = `
apiVersion: v1
kind: Config
current-context: prod
contexts:
  - name: dev
    context: {cluster: dev, user: dev}
  - name: prod
    context: {cluster: prod, user: deployer}
clusters:
  - name: dev
    cluster: {server: "https://dev.example"}
  - name: prod
    cluster:
      server: https://prod.example:6443
      certificate-authority-data: ${Buffer.from("-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n").toString("base64")}
users:
  - name: dev
    user: {token: dev-token}
  - name: deployer
    user: {token: prod-token}
`;

  it("reads the current context's server, CA and token", () => {
    expect(parseKubeconfig(kubeconfig, "secret s")).toEqual({
      server: "https://prod.example:6443",
      ca: "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n",
      token: "prod-token",
    });
  });

  it("refuses credentials other than a token, naming the user", () => {
    const exec = kubeconfig.replace("user: {token: prod-token}", "user: {exec: {command: aws}}");
    expect(() => parseKubeconfig(exec, "secret s")).toThrow(TargetConfigurationError);
    expect(() => parseKubeconfig(exec, "secret s")).toThrow(/secret s: user "deployer" has no token/);
  });

  it("names a missing context", () => {
    expect(() => parseKubeconfig("current-context: x\ncontexts: []", "secret s")).toThrow(/no context "x"/);
  });
});
