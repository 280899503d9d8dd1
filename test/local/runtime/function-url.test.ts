import { signedFetch } from "@sfn-rollouts/test-support/signed-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StreamingHandler } from "../../../functions/handlers/router.ts";
import { extractFunctionUrls } from "../../../local/asl/extract.ts";
import { localFunctionArn } from "../../../local/asl/intrinsics.ts";
import { FORBIDDEN_BODY, localStreamingRuntime } from "../../../local/aws/function-url.ts";
import { streamingHandler } from "../../../local/aws/lambda.ts";
import { type Runtime, startRuntime } from "../../../local/runtime.ts";

/**
 * The embedded runtime runs the `AWS::Lambda::Url` resources of a template: each is a local
 * Function URL in front of the function it names, with its auth, and `Fn::GetAtt` of its
 * `FunctionUrl` is that local address wherever the template says it.
 */

/** Answers what the function saw: the path, the query, its env's own URL. */
const echo: StreamingHandler = async (event, responseStream) => {
  const stream = localStreamingRuntime.HttpResponseStream.from(responseStream, {
    statusCode: 201,
    headers: { "content-type": "application/json", "x-echo": "yes" },
  });
  const body = JSON.stringify({
    path: event.rawPath,
    query: event.rawQueryString,
    method: event.requestContext.http.method,
    self: process.env.SELF_URL,
  });
  await new Promise<void>((resolve) => stream.end(body, () => resolve()));
};

function template(invokeMode = "RESPONSE_STREAM") {
  return {
    Resources: {
      Echo: {
        Type: "AWS::Lambda::Function",
        Properties: {
          FunctionName: "echo",
          Handler: "index.handler",
          Environment: { Variables: { SELF_URL: { "Fn::GetAtt": ["EchoUrl", "FunctionUrl"] } } },
        },
      },
      EchoUrl: {
        Type: "AWS::Lambda::Url",
        Properties: {
          TargetFunctionArn: { "Fn::GetAtt": ["Echo", "Arn"] },
          AuthType: "NONE",
          InvokeMode: "RESPONSE_STREAM",
        },
      },
      Guarded: {
        Type: "AWS::Lambda::Function",
        Properties: { FunctionName: "guarded", Handler: "index.handler" },
      },
      GuardedUrl: {
        Type: "AWS::Lambda::Url",
        Properties: { TargetFunctionArn: { Ref: "Guarded" }, AuthType: "AWS_IAM", InvokeMode: invokeMode },
      },
      Reader: {
        Type: "AWS::StepFunctions::StateMachine",
        Properties: {
          StateMachineName: "reader",
          DefinitionString: {
            "Fn::Join": [
              "",
              [
                '{"StartAt":"Url","States":{"Url":{"Type":"Pass","Result":{"url":"',
                { "Fn::GetAtt": ["EchoUrl", "FunctionUrl"] },
                '","arn":"',
                { "Fn::GetAtt": ["GuardedUrl", "FunctionArn"] },
                '"},"End":true}}}',
              ],
            ],
          },
        },
      },
    },
  };
}

describe("the embedded runtime runs a template's Function URLs", () => {
  let runtime: Runtime;
  let echoUrl: string;
  let guardedUrl: string;

  beforeAll(async () => {
    runtime = await startRuntime({
      template: template(),
      functions: { echo: { handler: streamingHandler(echo) }, guarded: { handler: streamingHandler(echo) } },
    });
    const urls = Object.fromEntries(runtime.functionUrls.map((u) => [u.logicalId, u.url]));
    echoUrl = urls.EchoUrl as string;
    guardedUrl = urls.GuardedUrl as string;
  });
  afterAll(() => runtime?.close());

  it("resolves Fn::GetAtt FunctionUrl to the local address, trailing slash included, in definitions", async () => {
    expect(echoUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(guardedUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(guardedUrl).not.toBe(echoUrl);
    const { executionArn } = runtime.startExecution({ stateMachineArn: runtime.stateMachineArn("reader") });
    const done = await runtime.waitForExecution(executionArn);
    expect(JSON.parse(done.output ?? "null")).toEqual({
      url: echoUrl,
      arn: "arn:aws:lambda:local:000000000000:function:guarded",
    });
  });

  it("sends a request to the function it names, which sees its URL in its environment", async () => {
    const res = await fetch(`${echoUrl}items/7?color=red`, { method: "POST", body: "{}" });
    expect(res.status).toBe(201);
    expect(res.headers.get("x-echo")).toBe("yes");
    expect(await res.json()).toEqual({ path: "/items/7", query: "color=red", method: "POST", self: echoUrl });
  });

  it("answers an unsigned request to an AWS_IAM URL with 403, and serves one signed with the runtime's credentials", async () => {
    const unsigned = await fetch(`${guardedUrl}compare`);
    expect(unsigned.status).toBe(403);
    expect(await unsigned.text()).toBe(FORBIDDEN_BODY);

    const signedWith = (secretAccessKey: string) =>
      signedFetch(runtime.env.AWS_REGION as string, {
        accessKeyId: runtime.env.AWS_ACCESS_KEY_ID as string,
        secretAccessKey,
        sessionToken: runtime.env.AWS_SESSION_TOKEN as string,
      })(`${guardedUrl}compare`);
    const res = await signedWith(runtime.env.AWS_SECRET_ACCESS_KEY as string);
    expect(res.status).toBe(201);
    expect(((await res.json()) as { path: string }).path).toBe("/compare");

    const forged = await signedWith("not-the-runtime-secret");
    expect(forged.status).toBe(403);
    expect(forged.headers.get("x-rollouts-auth-problem")).toBe("the request signature does not match");
  });

  it("closes the URLs with the runtime", async () => {
    const other = await startRuntime({
      template: template(),
      functions: { echo: { handler: streamingHandler(echo) }, guarded: { handler: streamingHandler(echo) } },
    });
    const url = other.functionUrls[0]?.url as string;
    expect((await fetch(url)).status).toBe(201);
    await other.close();
    await expect(fetch(url)).rejects.toThrow();
  });
});

describe("Function URLs the embedded runtime refuses", () => {
  it("refuses a BUFFERED URL, naming the resource", async () => {
    await expect(
      startRuntime({
        template: template("BUFFERED"),
        functions: { echo: { handler: streamingHandler(echo) } },
      }),
    ).rejects.toThrow(/GuardedUrl.*BUFFERED/);
  });

  it("answers 502 naming the function when the function it names is not a streaming handler", async () => {
    const runtime = await startRuntime({
      template: template(),
      functions: { echo: { handler: async () => ({ statusCode: 200 }) } },
    });
    try {
      const url = runtime.functionUrls.find((u) => u.logicalId === "EchoUrl")?.url as string;
      const res = await fetch(url);
      expect(res.status).toBe(502);
      expect(await res.text()).toMatch(/echo.*streamifyResponse/);
    } finally {
      await runtime.close();
    }
  });
});

describe("extractFunctionUrls", () => {
  it("resolves a URL's function through the template's parameters, as the rest of the template", () => {
    const urls = extractFunctionUrls({
      Parameters: { Router: { Type: "String", Default: "model-router" } },
      Resources: {
        RouterUrl: {
          Type: "AWS::Lambda::Url",
          Properties: {
            TargetFunctionArn: { Ref: "Router" },
            AuthType: "NONE",
            InvokeMode: "RESPONSE_STREAM",
          },
        },
      },
    });
    expect(urls).toEqual([
      {
        logicalId: "RouterUrl",
        functionArn: localFunctionArn("model-router"),
        authType: "NONE",
        invokeMode: "RESPONSE_STREAM",
      },
    ]);
  });
});
