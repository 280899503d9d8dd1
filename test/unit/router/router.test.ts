import { describe, expect, it } from "vitest";
import { assign } from "../../../functions/router/cohort.ts";
import type { Backend } from "../../../functions/router/config.ts";
import type { Recorder } from "../../../functions/router/recorder.ts";
import { type CallBackend, ModelRouter, type RouterRequest } from "../../../functions/router/router.ts";

const v1: Backend = { name: "v1", url: "http://v1.test" };
const v2: Backend = { name: "v2", url: "http://v2.test" };

/** Models answering `{label}` from a function of the body, synchronously unless told otherwise. */
function models(
  answers: Record<string, (body: { x?: number }) => unknown>,
): CallBackend & { calls: string[] } {
  const calls: string[] = [];
  const call: CallBackend = async (backend, request) => {
    calls.push(`${backend.name}${request.headers["x-shadow"] === "true" ? " shadow" : ""}`);
    const fn = answers[backend.name];
    if (!fn) throw new Error("connection refused");
    const body = JSON.parse(request.body || "{}");
    return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(fn(body)) };
  };
  return Object.assign(call, { calls });
}

const post = (body: unknown, headers: Record<string, string> = {}): RouterRequest => ({
  method: "POST",
  url: "/predict",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});

describe("model router", () => {
  it("sends a user's requests to one version by cohort, and says which on every answer", async () => {
    const call = models({ v1: () => ({ label: 1 }), v2: () => ({ label: 1 }) });
    const router = new ModelRouter({ call, config: { primary: v1, candidate: v2, weight: 30, salt: "s" } });
    for (let i = 0; i < 200; i++) {
      const user = `u${i}`;
      const expected = assign(user, "s", 30) === "candidate" ? "v2" : "v1";
      for (const headers of [{ "x-user-id": user }, {}] as Record<string, string>[]) {
        const answer = await router.route(post({ user, x: i }, headers));
        expect(answer.headers["x-model-version"]).toBe(expected);
        expect(answer.headers["x-route"]).toBe(expected === "v2" ? "candidate" : "primary");
        expect(answer.headers["x-request-id"]).toBeTruthy();
      }
    }
  });

  it("the default salt is the candidate's name", async () => {
    const call = models({ v1: () => ({}), v2: () => ({}) });
    const router = new ModelRouter({ call, config: { primary: v1, candidate: v2, weight: 50 } });
    for (let i = 0; i < 50; i++) {
      const answer = await router.route(post({ user: `u${i}` }));
      expect(answer.headers["x-model-version"]).toBe(assign(`u${i}`, "v2", 50) === "candidate" ? "v2" : "v1");
    }
  });

  it("a version that cannot answer is a 502 that still names the version", async () => {
    const call = models({ v1: () => ({}) });
    const router = new ModelRouter({ call, config: { primary: v1, candidate: v2, weight: 100 } });
    const answer = await router.route(post({ user: "a" }));
    expect(answer.status).toBe(502);
    expect(answer.headers["x-model-version"]).toBe("v2");
    expect(answer.body).toContain("v2 (http://v2.test) is unreachable");
  });

  it("not sticky: the split decides per request", async () => {
    const call = models({ v1: () => ({}), v2: () => ({}) });
    let n = 0;
    const router = new ModelRouter({
      call,
      split: () => n++ % 2 === 0,
      config: { primary: v1, candidate: v2, weight: 50, sticky: false },
    });
    const versions = [];
    for (let i = 0; i < 4; i++)
      versions.push((await router.route(post({ user: "same" }))).headers["x-model-version"]);
    expect(versions).toEqual(["v2", "v1", "v2", "v1"]);
  });

  it("mirrors after the answer, compares both answers, and records the shadow per version", async () => {
    // v2 disagrees whenever x is a multiple of 4: a quarter of the answers
    const call = models({
      v1: ({ x = 0 }) => ({ label: x % 2 }),
      v2: ({ x = 0 }) => ({ label: x % 4 === 0 ? 1 - (x % 2) : x % 2 }),
    });
    const router = new ModelRouter({ call, config: { primary: v1, candidate: v2, mirrorPercent: 100 } });
    for (let x = 0; x < 100; x++) {
      const answer = await router.route(post({ user: `u${x}`, x }));
      expect(answer.headers["x-model-version"]).toBe("v1");
      expect(JSON.parse(answer.body)).toEqual({ label: x % 2 });
    }
    await router.idle();
    const compare = JSON.parse(
      (await router.compare("/compare?primary=primary&candidate=candidate&window=60")).body,
    );
    expect(compare.primary.version).toBe("v1");
    expect(compare.primary.requests).toBe(100);
    expect(compare.primary.users).toBe(100);
    expect(compare.candidate.requests).toBe(0);
    expect(compare.candidate.shadow).toMatchObject({
      requests: 100,
      compared: 100,
      agreement: 75,
      agreement_rate: 0.75,
      disagreement_rate: 0.25,
    });
    expect(compare.mirror).toEqual({ queued: 100, sent: 100, dropped: 0, failed: 0 });
    expect(call.calls.filter((c) => c === "v2 shadow")).toHaveLength(100);
  });

  it("a hanging shadow neither delays nor changes the answer, and a full queue drops copies", async () => {
    const never = new Promise<never>(() => {});
    const call: CallBackend = async (backend) =>
      backend.name === "v2" ? never : { status: 200, headers: {}, body: '{"label":1}' };
    const router = new ModelRouter({
      call,
      mirrorQueue: 2,
      mirrorConcurrency: 1,
      config: { primary: v1, candidate: v2, mirrorPercent: 100 },
    });
    for (let i = 0; i < 6; i++) {
      const answer = await router.route(post({ user: `u${i}` }));
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('{"label":1}');
      // let the worker pick up the first copy (and hang on it)
      await new Promise((resolve) => setImmediate(resolve));
    }
    // one copy hangs in flight, two wait, the other three were dropped
    expect(router.mirror).toEqual({ queued: 3, sent: 0, dropped: 3, failed: 0 });
  });

  it("compares scores by absolute and relative difference", async () => {
    const call = models({
      v1: ({ x = 0 }) => ({ prediction: { score: 100 + x } }),
      v2: ({ x = 0 }) => ({ prediction: { score: 100 + x + (x < 5 ? 0.5 : 20) } }),
    });
    const router = new ModelRouter({
      call,
      config: {
        primary: v1,
        candidate: v2,
        mirrorPercent: 100,
        compare: { path: "prediction.score", kind: "score", absolute: 1, relative: 0.01 },
      },
    });
    for (let x = 0; x < 10; x++) await router.route(post({ user: `u${x}`, x }));
    await router.idle();
    const shadow = (router.recorder as Recorder).summary("v2", 60).shadow;
    expect(shadow.compared).toBe(10);
    expect(shadow.agreement).toBe(5);
    expect(shadow.mean_abs_diff).toBeCloseTo((5 * 0.5 + 5 * 20) / 10, 9);
  });

  it("feedback is attributed to the version that answered; unknown, repeated and forgotten ids are refused", async () => {
    const call = models({ v1: () => ({ label: 1 }), v2: () => ({ label: 0 }) });
    const router = new ModelRouter({
      call,
      maxRequestIds: 3,
      config: { primary: v1, candidate: v2, weight: 100 },
    });
    const ids = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        (await router.route(post({ user: `u${i}` }, { "x-request-id": `r${i}` }))).headers["x-request-id"],
      );
    expect(ids).toEqual(["r0", "r1", "r2", "r3"]);
    const good = await router.feedback(JSON.stringify({ request_id: "r1", good: true }));
    expect(good.status).toBe(200);
    expect(JSON.parse(good.body)).toEqual({ request_id: "r1", version: "v2", good: true });
    // a delayed label: the true label 1 against v2's answer 0 is bad feedback
    expect(
      JSON.parse((await router.feedback(JSON.stringify({ request_id: "r2", label: 1 }))).body).good,
    ).toBe(false);
    expect((await router.feedback(JSON.stringify({ request_id: "r1", good: false }))).status).toBe(409);
    const forgotten = await router.feedback(JSON.stringify({ request_id: "r0", good: true }));
    expect(forgotten.status).toBe(404);
    expect(forgotten.body).toContain("keeps the last 3 request ids");
    expect((await router.feedback("{")).status).toBe(400);
    const both = await router.feedback(JSON.stringify({ request_id: "r3", good: true, label: 1 }));
    expect(both.status).toBe(400);
    expect(both.body).toContain("exactly one of good");
    const v2Summary = (router.recorder as Recorder).summary("v2", 60);
    expect(v2Summary).toMatchObject({
      requests: 4,
      feedback: 2,
      feedback_good: 1,
      feedback_bad: 1,
      feedback_rate: 0.5,
    });
    expect((router.recorder as Recorder).summary("v1", 60).feedback).toBe(0);
  });

  it("refuses a configuration with a weight and no candidate, naming the field", () => {
    const router = new ModelRouter();
    expect(() => router.configure({ primary: v1, weight: 10 })).toThrow(/weight above 0 needs a candidate/);
  });

  it("GET /compare names what is missing", async () => {
    const router = new ModelRouter({ config: { primary: v1 } });
    const answer = await router.handle({ method: "GET", url: "/compare?primary=v1", headers: {}, body: "" });
    expect(answer.status).toBe(400);
    expect(answer.body).toContain("needs ?candidate=NAME");
  });
});
