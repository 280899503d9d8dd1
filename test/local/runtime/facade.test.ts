import http from "node:http";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { DeleteScheduleCommand, GetScheduleCommand, SchedulerClient } from "@aws-sdk/client-scheduler";
import { ListExecutionsCommand, ListStateMachinesCommand, SFNClient } from "@aws-sdk/client-sfn";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Runtime, startRuntime } from "../../../local/runtime.ts";

/**
 * The façade answers the SDK and nothing a web page can send: a browser may POST to 127.0.0.1
 * without asking (a `text/plain` body goes out without a CORS preflight), and the façade must not
 * run a Lambda or touch a workflow for it.
 */

let runtime: Runtime;
const ran: unknown[] = [];
const local = { region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } };

beforeAll(async () => {
  runtime = await startRuntime({
    functions: {
      deploy: {
        handler: async (event) => {
          ran.push(event);
          return { ok: true };
        },
      },
    },
  });
});

afterAll(async () => {
  await runtime?.close();
});

const invokePath = "/2015-03-31/functions/deploy/invocations";

async function send(path: string, init: RequestInit) {
  const res = await fetch(`${runtime.facadeUrl}${path}`, init);
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    body: JSON.parse(text) as Record<string, string>,
  };
}

/** A GET with the headers as given, `Host` included (which `fetch` does not let a caller set). */
function rawGet(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: Record<string, string> }>((resolve, reject) => {
    const req = http.request(url, { method: "GET", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the local AWS façade refuses what a browser can send", () => {
  it.each([
    ["text/plain", "text/plain"],
    ["text/plain with a charset", "text/plain;charset=UTF-8"],
    ["a form", "application/x-www-form-urlencoded"],
    ["multipart", "multipart/form-data; boundary=x"],
  ])("a Lambda invocation with a %s body: 415, the function does not run", async (_what, type) => {
    const before = ran.length;
    const res = await send(invokePath, {
      method: "POST",
      headers: { "content-type": type },
      body: '{"x":1}',
    });
    expect(res.status).toBe(415);
    expect(res.type).toBe("application/json");
    expect(res.body.message).toMatch(/^Content-Type must be /);
    expect(res.body.__type).toBe("UnsupportedMediaTypeException");
    expect(ran.length).toBe(before);
  });

  it("a Step Functions call with a text/plain body: 415", async () => {
    const res = await send("/", {
      method: "POST",
      headers: { "content-type": "text/plain", "x-amz-target": "AWSStepFunctions.StartExecution" },
      body: JSON.stringify({ stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:x" }),
    });
    expect(res.status).toBe(415);
    expect(res.body.message).toBe("Content-Type must be application/x-amz-json-1.0, got text/plain");
  });

  it.each([
    ["an Origin of another site", { origin: "https://evil.example" }],
    ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
  ])("a request with %s: 403, even with a JSON body", async (_what, extra) => {
    const before = ran.length;
    const res = await send(invokePath, {
      method: "POST",
      headers: { "content-type": "application/json", ...extra },
      body: '{"x":1}',
    });
    expect(res.status).toBe(403);
    expect(res.body.message).toMatch(/^cross-origin request refused/);
    expect(ran.length).toBe(before);
  });

  it.each([
    ["a same-origin read under another Host name (DNS rebinding)", "rebind.evil.example", "same-origin"],
    ["a read under another Host name with Sec-Fetch-Site: none", "rebind.evil.example", "none"],
  ])("%s: 403 naming the host, nothing answered", async (_what, name, site) => {
    const port = new URL(runtime.facadeUrl).port;
    const host = `${name}:${port}`;
    const res = await rawGet(`${runtime.facadeUrl}/schedules/anything?groupName=default`, {
      host,
      "sec-fetch-site": site,
    });
    expect(res.status).toBe(403);
    expect(res.body.__type).toBe("AccessDeniedException");
    expect(res.body.message).toBe(
      `request refused: Host ${host} is not this listener (127.0.0.1:${port}, localhost:${port} or [::1]:${port})`,
    );
  });

  it("a Sec-Fetch-Site of another case is still cross-site: 403", async () => {
    const before = ran.length;
    const res = await send(invokePath, {
      method: "POST",
      headers: { "content-type": "application/json", "sec-fetch-site": "Cross-Site" },
      body: '{"x":1}',
    });
    expect(res.status).toBe(403);
    expect(ran.length).toBe(before);
  });

  it("the SDK's own requests still work: Invoke, Step Functions, Scheduler (bodies and bodiless)", async () => {
    const lambda = new LambdaClient({ ...local, endpoint: runtime.facadeUrl });
    const sfn = new SFNClient({ ...local, endpoint: runtime.facadeUrl });
    const scheduler = new SchedulerClient({ ...local, endpoint: runtime.facadeUrl });
    try {
      const before = ran.length;
      const out = await lambda.send(
        new InvokeCommand({ FunctionName: "deploy", Payload: new TextEncoder().encode('{"n":2}') }),
      );
      expect(JSON.parse(new TextDecoder().decode(out.Payload))).toEqual({ ok: true });
      expect(ran.slice(before)).toEqual([{ n: 2 }]);
      // Invoke with no payload at all.
      await lambda.send(new InvokeCommand({ FunctionName: "deploy" }));
      expect(ran.length).toBe(before + 2);
      // Answered by the engine (the machine does not exist), so the request went through.
      await expect(
        sfn.send(
          new ListExecutionsCommand({
            stateMachineArn: "arn:aws:states:us-east-1:000000000000:stateMachine:none",
          }),
        ),
      ).rejects.toMatchObject({ name: "StateMachineDoesNotExist" });
      await expect(scheduler.send(new GetScheduleCommand({ Name: "none" }))).rejects.toMatchObject({
        name: "ResourceNotFoundException",
      });
      await expect(scheduler.send(new DeleteScheduleCommand({ Name: "none" }))).rejects.toMatchObject({
        name: "ResourceNotFoundException",
      });
    } finally {
      lambda.destroy();
      sfn.destroy();
      scheduler.destroy();
    }
  });
});

describe("the local AWS façade answers as the region the request is signed for", () => {
  it("ListStateMachines lists that region's state machines, and those whose ARN names no region", async () => {
    const done = { StartAt: "Done", States: { Done: { Type: "Succeed" } } };
    runtime.sfn.createStateMachine({
      name: "in-eu",
      arn: "arn:aws:states:eu-west-1:111111111111:stateMachine:in-eu",
      definition: done,
    });
    runtime.sfn.createStateMachine({
      name: "in-us",
      arn: "arn:aws:states:us-east-1:222222222222:stateMachine:in-us",
      definition: done,
    });
    runtime.sfn.createStateMachine({ name: "anywhere", definition: done });
    const names = async (region: string) => {
      const sfn = new SFNClient({ ...local, region, endpoint: runtime.facadeUrl });
      try {
        const listed = await sfn.send(new ListStateMachinesCommand({}));
        return (listed.stateMachines ?? []).map((m) => m.name);
      } finally {
        sfn.destroy();
      }
    };
    expect(await names("eu-west-1")).toEqual(["in-eu", "anywhere"]);
    expect(await names("us-east-1")).toEqual(["in-us", "anywhere"]);
    expect(await names("ap-southeast-2")).toEqual(["anywhere"]);
  });
});
