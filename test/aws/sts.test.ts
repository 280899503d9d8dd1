/**
 * STS `AssumeRole` (`functions/sts.ts`, signed with SigV4) and the Prometheus provider's
 * `authentication.sigv4.roleArn` over it, against moto: the role is assumed in moto, its
 * credentials are kept until shortly before they expire, and the query to the Amazon Managed
 * Prometheus workspace is signed with them (the signature checked again with the assumed secret,
 * as AWS checks it). A refusal is STS's error document, from a local server answering it.
 */
import { startServer } from "@sfn-rollouts/test-support/http-server";
import { MOTO_ACCOUNT, MOTO_REGION, type Moto, motoCall, startMoto } from "@sfn-rollouts/test-support/moto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AssumedRoles, REFRESH_BEFORE_MS } from "../../functions/metrics/assumed-roles.ts";
import { defaultProviders, type Fetch } from "../../functions/metrics/index.ts";
import { assumeRole } from "../../functions/sts.ts";
import { sigv4Problem } from "../../local/aws/sigv4-verify.ts";
import { MetricSchema } from "../../statemachine/spec.ts";

let moto: Moto;
beforeAll(async () => {
  moto = await startMoto();
});
afterAll(async () => {
  await moto?.close();
});
beforeEach(() => moto.reset());

const WORKSPACE = `https://aps-workspaces.${MOTO_REGION}.amazonaws.com/workspaces/ws-1`;

async function createQueryRole(name = "prometheus-query"): Promise<string> {
  await motoCall(moto, "iam", {
    action: "CreateRole",
    version: "2010-05-08",
    params: {
      RoleName: name,
      AssumeRolePolicyDocument: JSON.stringify({
        Version: "2012-10-17",
        Statement: [
          {
            Effect: "Allow",
            Principal: { AWS: `arn:aws:iam::${MOTO_ACCOUNT}:root` },
            Action: "sts:AssumeRole",
          },
        ],
      }),
    },
  });
  return `arn:aws:iam::${MOTO_ACCOUNT}:role/${name}`;
}

/** `fetch` to moto that records each STS form it sends. */
function recordingFetch(forms: URLSearchParams[]): Fetch {
  return async (input, init) => {
    if (typeof init?.body === "string") forms.push(new URLSearchParams(init.body));
    return fetch(input, init);
  };
}

describe("AssumeRole against moto", () => {
  it("assumes a role: temporary credentials, a session token and their expiry", async () => {
    const roleArn = await createQueryRole();
    const before = Date.now();
    const answer = await assumeRole({
      roleArn,
      sessionName: "1764000000000000000",
      durationSeconds: 900,
      region: MOTO_REGION,
      credentials: moto.config.credentials,
      signal: AbortSignal.timeout(10_000),
      endpoint: moto.endpoint,
    });
    if (!("credentials" in answer)) throw new Error(`not assumed: ${JSON.stringify(answer)}`);
    const { credentials } = answer;
    expect(credentials.accessKeyId).toMatch(/^ASIA/);
    expect(credentials.secretAccessKey.length).toBeGreaterThan(0);
    expect(credentials.sessionToken.length).toBeGreaterThan(0);
    // Fifteen minutes from the call (whole seconds in STS's answer).
    const lasts = credentials.expiration.getTime() - before;
    expect(lasts).toBeGreaterThan(899_000 - 1_000);
    expect(lasts).toBeLessThanOrEqual(900_000 + 60_000);
  });

  it("keeps a role's credentials until a minute before they expire, then assumes it again", async () => {
    const roleArn = await createQueryRole();
    const forms: URLSearchParams[] = [];
    let clock = Date.now();
    const roles = new AssumedRoles({
      endpoint: moto.endpoint,
      base: () => moto.config.credentials,
      fetch: recordingFetch(forms),
      now: () => clock,
    });
    const [a, b] = await Promise.all([
      roles.credentials(roleArn, MOTO_REGION),
      roles.credentials(roleArn, MOTO_REGION),
    ]);
    expect(b).toBe(a);
    expect(forms).toHaveLength(1);
    expect(Object.fromEntries(forms[0] as URLSearchParams)).toEqual({
      Action: "AssumeRole",
      Version: "2011-06-15",
      RoleArn: roleArn,
      RoleSessionName: `${clock}000000`,
      DurationSeconds: "900",
    });
    clock = (a?.expiration.getTime() ?? 0) - REFRESH_BEFORE_MS - 1_000;
    expect(await roles.credentials(roleArn, MOTO_REGION)).toBe(a);
    expect(forms).toHaveLength(1);
    clock += 2_000;
    const renewed = await roles.credentials(roleArn, MOTO_REGION);
    expect(renewed).not.toBe(a);
    expect(forms).toHaveLength(2);
  });

  it("signs the Prometheus query with the assumed role's credentials", async () => {
    const roleArn = await createQueryRole();
    const roles = new AssumedRoles({ endpoint: moto.endpoint, base: () => moto.config.credentials });
    const seen: Array<{ url: string; init: RequestInit | undefined }> = [];
    const vector = JSON.stringify({
      status: "success",
      data: { resultType: "vector", result: [{ metric: {}, value: [1700000000, "0.97"] }] },
    });
    const providers = defaultProviders({
      assumedRoles: roles,
      fetch: async (url, init) => {
        seen.push({ url, init });
        return new Response(vector, { status: 200 });
      },
    });
    const metric = MetricSchema.parse({
      name: "success-rate",
      successCondition: "result[0] >= 0.95",
      provider: {
        prometheus: {
          address: WORKSPACE,
          query: "sum(rate(x[1m]))",
          authentication: { sigv4: { region: MOTO_REGION, roleArn } },
        },
      },
    });
    const answer = await providers.measure(metric, { now: new Date() });
    expect(answer).toMatchObject({ ok: true, result: [0.97] });
    const assumed = await roles.credentials(roleArn, MOTO_REGION);
    const sent = seen[0];
    const url = new URL(sent?.url ?? "");
    const headers = Object.fromEntries(
      Object.entries(sent?.init?.headers as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
    );
    expect(headers["x-amz-security-token"]).toBe(assumed.sessionToken);
    const problem = await sigv4Problem(
      {
        method: sent?.init?.method ?? "GET",
        url: `${url.pathname}${url.search}`,
        headers: { ...headers, host: url.host },
      },
      Buffer.from(String(sent?.init?.body ?? "")),
      { credentials: assumed, region: MOTO_REGION, service: "aps" },
    );
    expect(problem).toBeUndefined();
    // Not the function's own credentials.
    expect(headers.authorization).not.toContain(`Credential=${moto.config.credentials.accessKeyId}/`);
  });

  it("asks the region's STS endpoint, in the China partition's domain for a China region", async () => {
    const urls: string[] = [];
    const answer = `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>s&amp;k</SecretAccessKey><SessionToken>token</SessionToken><Expiration>2026-12-01T12:15:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`;
    for (const region of ["eu-west-1", "cn-north-1"]) {
      const out = await assumeRole({
        roleArn: "arn:aws-cn:iam::123456789012:role/amp-query",
        sessionName: "1",
        region,
        credentials: moto.config.credentials,
        signal: AbortSignal.timeout(10_000),
        fetch: async (url) => {
          urls.push(url);
          return new Response(answer, { status: 200, headers: { "content-type": "text/xml" } });
        },
      });
      expect(out).toEqual({
        credentials: {
          accessKeyId: "ASIAEXAMPLE",
          secretAccessKey: "s&k",
          sessionToken: "token",
          expiration: new Date("2026-12-01T12:15:00Z"),
        },
      });
    }
    expect(urls).toEqual([
      "https://sts.eu-west-1.amazonaws.com/",
      "https://sts.cn-north-1.amazonaws.com.cn/",
    ]);
  });

  it("a role STS refuses is an Error measurement with STS's code and message", async () => {
    const sts = await startServer((_req, res) => {
      res
        .writeHead(403, { "content-type": "text/xml" })
        .end(
          `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User: arn:aws:sts::123456789012:assumed-role/measure/fn is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::123456789012:role/other</Message></Error><RequestId>1</RequestId></ErrorResponse>`,
        );
    });
    try {
      const providers = defaultProviders({
        assumedRoles: new AssumedRoles({ endpoint: sts.url, base: () => moto.config.credentials }),
        fetch: async () => {
          throw new Error("the query must not be sent unsigned");
        },
      });
      const metric = MetricSchema.parse({
        name: "m",
        provider: {
          prometheus: {
            address: WORKSPACE,
            query: "up",
            authentication: {
              sigv4: { region: MOTO_REGION, roleArn: "arn:aws:iam::123456789012:role/other" },
            },
          },
        },
      });
      expect(await providers.measure(metric, { now: new Date() })).toEqual({
        ok: false,
        message:
          "sigv4: AssumeRole of arn:aws:iam::123456789012:role/other refused (403): AccessDenied: User: arn:aws:sts::123456789012:assumed-role/measure/fn is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::123456789012:role/other",
      });
      expect(sts.requests[0]?.headers.authorization).toMatch(/\/sts\/aws4_request/);
    } finally {
      await sts.close();
    }
  });
});
