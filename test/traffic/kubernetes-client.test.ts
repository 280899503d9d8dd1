import https from "node:https";
import type { AddressInfo } from "node:net";
import { selfSignedCertificate } from "@sfn-rollouts/test-support/tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TargetNotReadyError } from "../../functions/traffic/errors.ts";
import { KubeClient, RESOURCES } from "../../functions/traffic/kubernetes/client.ts";

/**
 * TLS with the cluster's own CA: a self-signed API server (a certificate made by openssl for
 * 127.0.0.1 when the test starts) is trusted when its certificate is given as the CA, and refused otherwise; the
 * bearer token is sent; an answer that never comes is a named error within the timeout.
 */
const { cert, key } = selfSignedCertificate("local-kube-test-ca");
let server: https.Server;
let url = "";
const seen: { authorization?: string; path?: string }[] = [];

beforeAll(async () => {
  server = https.createServer({ cert, key }, (req, res) => {
    seen.push({ authorization: req.headers.authorization, path: req.url });
    if (req.url?.endsWith("/slow")) return; // never answers
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ kind: "Deployment", metadata: { name: "shop", resourceVersion: "7" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const client = (ca: string | undefined, timeoutMs = 2000) =>
  new KubeClient({ timeoutMs, endpoint: async () => ({ server: url, token: "tok", ...(ca ? { ca } : {}) }) });

describe("the kubernetes REST client", () => {
  it("trusts the cluster's CA for its own connection and sends the bearer token", async () => {
    const object = await client(cert).get(RESOURCES.deployments, "shop", "shop");
    expect(object?.metadata.resourceVersion).toBe("7");
    expect(seen.at(-1)).toEqual({
      authorization: "Bearer tok",
      path: "/apis/apps/v1/namespaces/shop/deployments/shop",
    });
  });

  it("refuses a server whose certificate the CA does not vouch for", async () => {
    const error = await client(undefined)
      .get(RESOURCES.deployments, "shop", "shop")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetNotReadyError);
    expect((error as Error).message).toMatch(/self[- ]signed certificate/);
  });

  it("gives up on a server that never answers, naming the call", async () => {
    // The server never answers, so only the client's own deadline can end the call: the error
    // naming that deadline is the proof, and a client without one fails on the test's timeout.
    const error = await client(cert, 300)
      .get(RESOURCES.deployments, "shop", "slow")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetNotReadyError);
    expect((error as Error).message).toMatch(
      /GET https:\/\/127\.0\.0\.1:\d+\/apis\/apps\/v1\/namespaces\/shop\/deployments\/slow: no answer within 300 ms/,
    );
  });
});
