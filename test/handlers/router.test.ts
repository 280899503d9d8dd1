import { InvokeEndpointCommand, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createHandler } from "../../functions/handlers/router.ts";
import { DynamoRouterConfig } from "../../functions/router/dynamodb-config.ts";
import { backendCaller } from "../../functions/router/sagemaker-backend.ts";
import { SharedModelRouter } from "../../functions/router/shared.ts";
import {
  type LocalFunctionUrl,
  localStreamingRuntime,
  startFunctionUrl,
} from "../../local/aws/function-url.ts";

const sagemaker = mockClient(SageMakerRuntimeClient);
const answerBody = (label: number) => new TextEncoder().encode(JSON.stringify({ label }));

/** A promise the test settles itself. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

let db: DynaliteHarness;
let url: LocalFunctionUrl;
let config: DynamoRouterConfig;

beforeAll(async () => {
  db = await startDynalite();
  config = new DynamoRouterConfig({ client: db.client(), tableName: db.tableName, router: "fraud" });
  const shared = new SharedModelRouter({
    client: db.client(),
    tableName: db.tableName,
    router: "fraud",
    call: backendCaller(new SageMakerRuntimeClient({ region: "eu-west-1" })),
    configCacheMs: 0,
  });
  url = await startFunctionUrl(createHandler(() => shared, localStreamingRuntime));
});
afterAll(async () => {
  await url.close();
  await db.close();
  sagemaker.restore();
});
afterEach(() => {
  sagemaker.reset();
});

const endpoint = "fraud-endpoint";
const variant = (name: string) => ({ name, sagemaker: { endpoint, variant: name } });

describe("the router function behind a Function URL", () => {
  it("answers before a slow shadow, then sends the copy within the invocation and records it", async () => {
    await config.write({ primary: variant("v1"), candidate: variant("v2"), mirrorPercent: 100 });
    sagemaker.on(InvokeEndpointCommand, { TargetVariant: "v1" }).resolves({
      Body: answerBody(1),
      ContentType: "application/json",
      InvokedProductionVariant: "v1",
    } as never);
    // The shadow answers only when the test lets it: what happened before that cannot have waited
    // for it, whatever the machine's speed.
    const events: string[] = [];
    const shadow = deferred();
    const shadowCalled = deferred();
    sagemaker.on(InvokeEndpointCommand, { TargetVariant: "v2" }).callsFake(async () => {
      shadowCalled.resolve();
      await shadow.promise;
      events.push("shadow answered");
      return { Body: answerBody(0), ContentType: "application/json", InvokedProductionVariant: "v2" };
    });
    // A router that waited for the shadow before answering never gets here: the test's timeout fails it.
    const response = await fetch(`${url.url}/invocations?x=1`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-user-id": "alice", "x-request-id": "req-1" },
      body: JSON.stringify({ x: 1 }),
    });
    const body = await response.json();
    events.push("caller answered");
    expect(response.status).toBe(200);
    expect(body).toEqual({ label: 1 });
    expect(response.headers.get("x-model-version")).toBe("v1");
    expect(response.headers.get("x-request-id")).toBe("req-1");
    expect(response.headers.get("x-route")).toBe("primary");

    // The copy is sent after the answer, and the invocation returns only once it is answered.
    const invocation = url.settled().then(() => events.push("invocation returned"));
    await shadowCalled.promise;
    // Turns of the event loop in which an invocation that did not wait for its shadow would return.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    shadow.resolve();
    await invocation;
    expect(events).toEqual(["caller answered", "shadow answered", "invocation returned"]);
    const calls = sagemaker.commandCalls(InvokeEndpointCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => c.TargetVariant).sort()).toEqual(["v1", "v2"]);
    expect(calls.every((c) => c.EndpointName === endpoint && c.InferenceId === "req-1")).toBe(true);
    expect(new TextDecoder().decode(calls[0]?.Body as Uint8Array)).toBe(JSON.stringify({ x: 1 }));

    const compare = await fetch(`${url.url}/compare?primary=primary&candidate=candidate&window=60`);
    const summary = (await compare.json()) as {
      primary: { requests: number };
      candidate: { shadow: unknown };
    };
    expect(summary.primary.requests).toBe(1);
    expect(summary.candidate.shadow).toMatchObject({ requests: 1, compared: 1, agreement: 0 });
    const feedback = await fetch(`${url.url}/feedback`, {
      method: "POST",
      body: JSON.stringify({ request_id: "req-1", good: true }),
      headers: { "content-type": "application/json" },
    });
    expect(feedback.status).toBe(200);
    expect(await feedback.json()).toEqual({ request_id: "req-1", version: "v1", good: true });
  });

  it("passes a model's error on with its status, naming the version", async () => {
    await config.write({ primary: variant("v1") });
    const error = Object.assign(new Error("boom"), {
      name: "ModelError",
      OriginalStatusCode: 422,
      OriginalMessage: "feature x is missing",
      $metadata: {},
    });
    sagemaker.on(InvokeEndpointCommand).rejects(error);
    const response = await fetch(`${url.url}/invocations`, { method: "POST", body: "{}" });
    expect(response.status).toBe(422);
    expect(response.headers.get("x-model-version")).toBe("v1");
    expect(((await response.json()) as { error: string }).error).toContain("sagemaker:fraud-endpoint/v1");
  });

  it("answers 504 naming the variant when SageMaker does not answer in time", async () => {
    const shared = new SharedModelRouter({
      client: db.client(),
      tableName: db.tableName,
      router: "fraud",
      call: backendCaller(new SageMakerRuntimeClient({ region: "eu-west-1" })),
      timeoutMs: 100,
    });
    // SageMaker answers only after the router has answered, and ignores the abort signal: the
    // router's own deadline is the one thing that can end the call. A router without one never
    // answers, and the test's timeout fails it.
    const sageMaker = deferred();
    sagemaker.on(InvokeEndpointCommand).callsFake(async () => {
      await sageMaker.promise;
      throw new Error("too late");
    });
    const answer = await shared.handle({ method: "POST", url: "/invocations", headers: {}, body: "{}" });
    sageMaker.resolve();
    expect(sagemaker.commandCalls(InvokeEndpointCommand)).toHaveLength(1);
    expect(answer.status).toBe(504);
    expect(answer.body).toContain("v1 (sagemaker:fraud-endpoint/v1) did not answer within 100 ms");
  });

  it("answers 503 naming the item when the stored configuration is not valid, and 400 for a malformed event", async () => {
    const { DynamoDBDocumentClient, PutCommand } = await import("@aws-sdk/lib-dynamodb");
    await DynamoDBDocumentClient.from(db.client()).send(
      new PutCommand({ TableName: db.tableName, Item: { pk: "MODEL#fraud", sk: "CONFIG", config: "{" } }),
    );
    const response = await fetch(`${url.url}/invocations`, { method: "POST", body: "{}" });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: string }).error).toContain(
      "MODEL#fraud/CONFIG: config is not JSON",
    );

    const chunks: Buffer[] = [];
    const { PassThrough } = await import("node:stream");
    const sink = new PassThrough();
    sink.on("data", (c: Buffer) => chunks.push(c));
    const handler = createHandler(
      () => new SharedModelRouter({ client: db.client(), tableName: db.tableName, router: "fraud" }),
      localStreamingRuntime,
    );
    await handler({ rawPath: "/x" } as never, sink);
    const text = Buffer.concat(chunks).toString("utf8");
    expect(text).toContain('"statusCode":400');
    expect(text).toContain("requestContext.http.method is missing");
  });
});

describe("what the router function refuses", () => {
  const predictV1 = () =>
    sagemaker.on(InvokeEndpointCommand).resolves({
      Body: answerBody(1),
      ContentType: "application/json",
      InvokedProductionVariant: "v1",
    } as never);
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${url.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });

  it("a request reusing an answered id is a 409 before SageMaker is called; feedback stays with the answer", async () => {
    await config.write({ primary: variant("v1") });
    predictV1();
    expect((await post("/invocations", "{}", { "x-request-id": "victim-1" })).status).toBe(200);
    const feedback = JSON.stringify({ request_id: "victim-1", good: true });
    expect((await post("/feedback", feedback)).status).toBe(200);
    expect((await post("/feedback", feedback)).status).toBe(409);
    const again = await post("/invocations", "{}", { "x-request-id": "victim-1" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: string }).error).toContain("already names an answer");
    expect(sagemaker.commandCalls(InvokeEndpointCommand)).toHaveLength(1);
    expect((await post("/feedback", feedback)).status).toBe(409);
  });

  it("a 2,000-character id is a 400 naming the limit, before SageMaker is called", async () => {
    await config.write({ primary: variant("v1") });
    predictV1();
    const answer = await post("/invocations", "{}", { "x-request-id": "x".repeat(2000) });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: string }).error).toContain("the limit is 256");
    expect(sagemaker.commandCalls(InvokeEndpointCommand)).toHaveLength(0);
  });

  it("a deeply nested feedback label is a 400 naming the depth limit", async () => {
    await config.write({ primary: variant("v1") });
    predictV1();
    expect((await post("/invocations", "{}", { "x-request-id": "deep-1" })).status).toBe(200);
    const depth = 30_000;
    const answer = await post(
      "/feedback",
      `{"request_id":"deep-1","label":${"[".repeat(depth)}1${"]".repeat(depth)}}`,
    );
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: string }).error).toContain("nested deeper than 32 levels");
  });

  it("the local Function URL refuses a body over Lambda's 6 MB payload as Lambda does, without invoking", async () => {
    let invoked = 0;
    const counting = await startFunctionUrl(async (event, stream, context) => {
      invoked += 1;
      await createHandler(() => {
        throw new Error("not reached");
      }, localStreamingRuntime)(event, stream, context);
    });
    try {
      const answer = await fetch(counting.url, { method: "POST", body: "x".repeat(7 * 1024 * 1024) });
      expect(answer.status).toBe(413);
      expect(answer.headers.get("x-amzn-errortype")).toBe("RequestEntityTooLargeException");
      expect(await answer.text()).toBe(
        '{"Message":"Request must be smaller than 6291456 bytes for the InvokeFunction operation"}',
      );
      // A body under 6 MB whose event (headers, base64) is over it is refused too.
      const binary = await fetch(counting.url, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: new Uint8Array(5 * 1024 * 1024),
      });
      expect(binary.status).toBe(413);
      expect(invoked).toBe(0);
    } finally {
      await counting.close();
    }
  });
});
