import { describe, expect, it } from "vitest";
import type { Backend } from "../../../functions/router/config.ts";
import type { Recorder } from "../../../functions/router/recorder.ts";
import { type CallBackend, ModelRouter, type RouterRequest } from "../../../functions/router/router.ts";

/**
 * What a client cannot do to the router: take over another answer's request id (and so its
 * feedback), send an id the stores cannot key, or send feedback the router cannot compare safely.
 */

const v1: Backend = { name: "v1", url: "http://v1.test" };
const v2: Backend = { name: "v2", url: "http://v2.test" };

function counting(): CallBackend & { calls: string[] } {
  const calls: string[] = [];
  const call: CallBackend = async (backend) => {
    calls.push(backend.name);
    return { status: 200, headers: { "content-type": "application/json" }, body: '{"label":1}' };
  };
  return Object.assign(call, { calls });
}

const predict = (user: string, id?: string): RouterRequest => ({
  method: "POST",
  url: "/predict",
  headers: { "content-type": "application/json", "x-user-id": user, ...(id ? { "x-request-id": id } : {}) },
  body: JSON.stringify({ x: 1 }),
});

const feedback = (body: unknown) => ({
  method: "POST",
  url: "/feedback",
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** `depth` nested arrays around 1, as text. */
const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;

describe("the model router's request ids and bounds", () => {
  it("a request reusing a kept answer's id is refused before the model is called; its feedback stays the answer's", async () => {
    const call = counting();
    // Everyone on v2: the taken-over answer and the taker would be the same version, so only the
    // counts can tell whether the second request got the id.
    const router = new ModelRouter({ call, config: { primary: v1, candidate: v2, weight: 100 } });
    const first = await router.handle(predict("victim", "V"));
    expect(first.status).toBe(200);
    expect(first.headers["x-request-id"]).toBe("V");
    expect((await router.handle(feedback({ request_id: "V", good: true }))).status).toBe(200);
    expect((await router.handle(feedback({ request_id: "V", good: false }))).status).toBe(409);

    const again = await router.handle(predict("mallory", "V"));
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body).error).toContain('request id "V" already names an answer');
    expect(call.calls).toHaveLength(1);
    expect((await router.handle(feedback({ request_id: "V", good: false }))).status).toBe(409);
    const summary = (router.recorder as Recorder).summary("v2", 60);
    expect(summary).toMatchObject({ requests: 1, feedback: 1, feedback_good: 1 });
  });

  it("two requests with one id at once: one is answered, the other refused, and one answer is kept", async () => {
    const call = counting();
    const router = new ModelRouter({ call, config: { primary: v1 } });
    const answers = await Promise.all([
      router.handle(predict("a", "same")),
      router.handle(predict("b", "same")),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect((router.recorder as Recorder).summary("v1", 60).requests).toBe(1);
  });

  it("an id over 256 characters, or with spaces or control characters, is a 400 before the model is called", async () => {
    const call = counting();
    const router = new ModelRouter({ call, config: { primary: v1 } });
    const long = await router.handle(predict("a", "x".repeat(2000)));
    expect(long.status).toBe(400);
    expect(JSON.parse(long.body).error).toContain("x-request-id is 2000 characters long; the limit is 256");
    const spaced = await router.handle(predict("a", "a b"));
    expect(spaced.status).toBe(400);
    expect(JSON.parse(spaced.body).error).toContain("x-request-id");
    expect(call.calls).toHaveLength(0);
    expect((await router.handle(predict("a", "x".repeat(256)))).status).toBe(200);
  });

  it("a deeply nested feedback label is refused naming the limit, by its size or its depth", async () => {
    const router = new ModelRouter({ call: counting(), config: { primary: v1 } });
    await router.handle(predict("a", "r1"));
    // 100,000 levels are 200,000 bytes: over the size limit before their depth is read.
    const huge = await router.handle(feedback(`{"request_id":"r1","label":${nested(100_000)}}`));
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body).error).toContain("the limit is 65536 bytes");
    const deep = await router.handle(feedback(`{"request_id":"r1","label":${nested(30_000)}}`));
    expect(deep.status).toBe(400);
    expect(JSON.parse(deep.body).error).toContain("nested deeper than 32 levels");
    // The answer can still be judged.
    const fine = await router.handle(feedback(`{"request_id":"r1","label":${nested(20)}}`));
    expect(fine.status).toBe(200);
  });

  it("a feedback body over 64 KiB is a 413 naming the limit", async () => {
    const router = new ModelRouter({ call: counting(), config: { primary: v1 } });
    await router.handle(predict("a", "r1"));
    const big = await router.handle(feedback({ request_id: "r1", label: "x".repeat(70_000) }));
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body).error).toContain("65536 bytes");
  });

  it("a model's prediction too deep to compare is not kept: feedback on it is judged, not a crash", async () => {
    const deepAnswer: CallBackend = async () => ({
      status: 200,
      headers: {},
      body: `{"label":${nested(100_000)}}`,
    });
    const router = new ModelRouter({ call: deepAnswer, config: { primary: v1 } });
    expect((await router.handle(predict("a", "r1"))).status).toBe(200);
    const judged = await router.handle(feedback({ request_id: "r1", label: 1 }));
    expect(judged.status).toBe(200);
    expect(JSON.parse(judged.body).good).toBe(false);
  });
});
