import { localProxyThroughPlugin } from "@sfn-rollouts/test-support/local-proxy";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { assign } from "../../functions/router/cohort.ts";
import { TargetStateError } from "../../functions/traffic/errors.ts";
import type { TargetState, TrafficTarget } from "../../functions/traffic/port.ts";
import { makeDataset, predict, startModel, TRUE_WEIGHTS, type Weights } from "../../local/demo/model.ts";
import { startProxy } from "../../local/proxy/server.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.();
});

const WORSE: Weights = [1.5, -2.0, 1.0];

async function model(version: string, weights: Weights, delayMs?: number): Promise<string> {
  const m = await startModel({ version, weights, ...(delayMs ? { delayMs } : {}) });
  closers.push(m.close);
  return m.url;
}

async function setup(options: { candidateDelayMs?: number; model?: Record<string, unknown> } = {}) {
  const v1 = await model("v1", TRUE_WEIGHTS);
  const v2 = await model("v2", WORSE, options.candidateDelayMs);
  const proxy = await startProxy({
    config: { stable: v1, stableVersion: "v1", ...(options.model ? { model: options.model } : {}) },
  });
  closers.push(proxy.close);
  const { router, close } = await localProxyThroughPlugin(
    { adminUrl: proxy.adminUrl, progressDeadlineSeconds: 10 },
    new ManualClock(1_000_000),
  );
  closers.push(close);
  const { state } = await router.prepare();
  const deployed = await router.deployCandidate(state, { image: v2, version: "v2" });
  const ready = await router.checkReadiness(deployed);
  return { proxy, router, state: ready.state };
}

async function predictAt(url: string, user: string, features: readonly [number, number], id?: string) {
  const res = await fetch(`${url}/predict`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-user-id": user, ...(id ? { "x-request-id": id } : {}) },
    body: JSON.stringify({ features }),
  });
  return {
    status: res.status,
    version: res.headers.get("x-model-version"),
    requestId: res.headers.get("x-request-id"),
    body: (await res.json()) as { label: number; version: string },
  };
}

async function compare(adminUrl: string) {
  return (await (await fetch(`${adminUrl}/compare?primary=stable&candidate=canary&window=600`)).json()) as {
    primary: Record<string, unknown> & { shadow: Record<string, unknown> };
    candidate: Record<string, unknown> & { shadow: Record<string, unknown> };
    mirror: Record<string, number>;
  };
}

describe("local proxy: model routing", () => {
  it("setMirrorRoute copies requests to the candidate, compares its answers and never changes the caller's", async () => {
    const { proxy, router, state } = await setup();
    const mirror = router.setMirrorRoute as NonNullable<TrafficTarget["setMirrorRoute"]>;
    const change = await mirror.call(router, state, { name: "shadow", percentage: 100 });
    expect(change.message).toBe("mirror shadow: 100% of all requests copied to v2");
    const data = makeDataset(7, 200);
    for (const [i, e] of data.entries()) {
      const answer = await predictAt(proxy.url, `u${i}`, e.features);
      expect(answer.status).toBe(200);
      expect(answer.version).toBe("v1");
      expect(answer.body.label).toBe(predict(TRUE_WEIGHTS, e.features));
    }
    await waitFor(async () => (await compare(proxy.adminUrl)).candidate.shadow.requests === 200);
    const stats = await compare(proxy.adminUrl);
    const disagree = data.filter(
      (e) => predict(TRUE_WEIGHTS, e.features) !== predict(WORSE, e.features),
    ).length;
    expect(stats.primary).toMatchObject({ version: "v1", requests: 200, users: 200 });
    expect(stats.candidate).toMatchObject({ version: "v2", requests: 0 });
    expect(stats.candidate.shadow).toMatchObject({ requests: 200, compared: 200, agreement: 200 - disagree });
    expect(disagree).toBeGreaterThan(0);
    // removing the route stops the copies
    expect((await mirror.call(router, state, { name: "shadow", percentage: 0 })).message).toBe(
      "mirror shadow removed",
    );
    await predictAt(proxy.url, "u0", [0, 0]);
    await new Promise((r) => setTimeout(r, 50));
    expect((await compare(proxy.adminUrl)).candidate.shadow.requests).toBe(200);
  });

  it("a slow shadow adds no latency to the caller's answer", async () => {
    const { proxy, router, state } = await setup({ candidateDelayMs: 1_500 });
    await router.setMirrorRoute?.(state, { name: "shadow", percentage: 100 });
    const started = Date.now();
    for (let i = 0; i < 20; i++) {
      const answer = await predictAt(proxy.url, `u${i}`, [1, 0]);
      expect(answer.version).toBe("v1");
    }
    // 20 answers in sequence, each mirrored to a model that takes 1.5 s: far less than one such wait
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("mirroring needs a ready candidate", async () => {
    const v1 = await model("v1", TRUE_WEIGHTS);
    const proxy = await startProxy({ config: { stable: v1, stableVersion: "v1" } });
    closers.push(proxy.close);
    const { router, close } = await localProxyThroughPlugin(
      { adminUrl: proxy.adminUrl, progressDeadlineSeconds: 10 },
      new ManualClock(0),
    );
    closers.push(close);
    const { state } = await router.prepare();
    await expect(router.setMirrorRoute?.(state, { name: "s", percentage: 10 })).rejects.toThrow(
      TargetStateError,
    );
  });

  it("a sticky canary keeps each user on one version; feedback is attributed to it", async () => {
    const { proxy, router, state } = await setup({ model: { salt: "rollout-1" } });
    const change = await router.setWeight(state as TargetState, 30);
    expect(change.outcome).toBe("applied");
    const ids: Array<{ id: string; version: string }> = [];
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 100; i++) {
        const user = `u${i}`;
        const answer = await predictAt(proxy.url, user, [1, 1], `r${round}-${i}`);
        expect(answer.version).toBe(assign(user, "rollout-1", 30) === "candidate" ? "v2" : "v1");
        ids.push({ id: answer.requestId as string, version: answer.version as string });
      }
    }
    for (const { id } of ids.slice(0, 50)) {
      const res = await fetch(`${proxy.url}/feedback`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ request_id: id, good: true }),
      });
      expect(res.status).toBe(200);
    }
    const stats = await compare(proxy.adminUrl);
    const onV2 = ids.slice(0, 50).filter((x) => x.version === "v2").length;
    expect(stats.candidate.feedback).toBe(onV2);
    expect(stats.primary.feedback).toBe(50 - onV2);
    expect(stats.candidate.users).toBe(
      [...Array(100).keys()].filter((i) => assign(`u${i}`, "rollout-1", 30) === "candidate").length,
    );
    // abort puts everyone back on v1 and stops any mirror
    await router.abort(change.state, { abortScaleDownDelaySeconds: 0 });
    expect((await predictAt(proxy.url, "u1", [1, 1])).version).toBe("v1");
    expect(proxy.config()).toMatchObject({ canary: null, weight: 0, mirrorPercent: 0 });
  });

  it("a served answer's id cannot be taken over, an id over 256 characters is refused, a deep label is a 400", async () => {
    const { proxy } = await setup({ model: { salt: "s" } });
    const feedback = (body: string) =>
      fetch(`${proxy.url}/feedback`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    expect((await predictAt(proxy.url, "victim", [1, 1], "V")).status).toBe(200);
    const good = JSON.stringify({ request_id: "V", good: true });
    expect((await feedback(good)).status).toBe(200);
    expect((await feedback(good)).status).toBe(409);
    const taken = await fetch(`${proxy.url}/predict`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-user-id": "mallory", "x-request-id": "V" },
      body: JSON.stringify({ features: [1, 1] }),
    });
    expect(taken.status).toBe(409);
    expect(((await taken.json()) as { error: string }).error).toContain(
      'request id "V" already names an answer',
    );
    expect((await feedback(good)).status).toBe(409);
    expect((await compare(proxy.adminUrl)).primary).toMatchObject({ requests: 1, feedback: 1 });

    const long = await fetch(`${proxy.url}/predict`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "x".repeat(2000) },
      body: JSON.stringify({ features: [1, 1] }),
    });
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: string }).error).toContain("the limit is 256");

    expect((await predictAt(proxy.url, "u1", [1, 1], "deep-1")).status).toBe(200);
    const depth = 30_000;
    const deep = await feedback(`{"request_id":"deep-1","label":${"[".repeat(depth)}1${"]".repeat(depth)}}`);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: string }).error).toContain("nested deeper than 32 levels");
    const huge = await feedback(
      `{"request_id":"deep-1","label":${"[".repeat(100_000)}1${"]".repeat(100_000)}}`,
    );
    expect(huge.status).toBe(413);
  });

  it("refuses a mirror match it cannot read, naming the field", async () => {
    const { proxy } = await setup();
    const res = await fetch(`${proxy.adminUrl}/admin/config`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mirrorPercent: 10, mirrorMatch: [{ method: { exact: "POST", prefix: "P" } }] }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("mirrorMatch");
  });
});

async function waitFor(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
