import { deploymentManifest, type KubeFixture, kubeFixture, NS } from "@sfn-rollouts/test-support/kube";
import { afterEach, describe, expect, it } from "vitest";
import { TargetNotReadyError } from "../../functions/traffic/errors.ts";
import type { KubernetesState } from "../../functions/traffic/index.ts";
import type { TargetState } from "../../functions/traffic/port.ts";
import { RESOURCE_TYPES } from "../../local/kube/resources.ts";
import { canaryCounts } from "../../statemachine/pods.ts";

let fixture: KubeFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const deployments = `/apis/apps/v1/namespaces/${NS}/deployments`;

describe("kubernetes target, basic canary (pod counts behind one Service)", () => {
  it("scales stable and canary to Argo's counts at each weight, the candidate's image on the canary only", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    const router = f.router({});
    const prepared = await router.prepare();
    expect(prepared.firstRelease).toBe(false);
    expect(prepared.stable).toContain("shop-stable (shop:v1, 4 replicas)");
    let state = await router.deployCandidate(prepared.state, { image: "shop:v2" });
    state = (await f.settle(router, state)).state;
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 0, image: "shop:v2" });
    const seen: [number, number, number][] = [];
    for (const weight of [10, 25, 50, 75, 90]) {
      const change = await router.setWeight(state, weight);
      expect(change.outcome).toBe("applied");
      const ready = await f.settle(router, change.state);
      expect(ready.ready).toBe(true);
      state = ready.state;
      const canary = await f.deployment("shop-canary");
      const stable = await f.deployment("shop-stable");
      seen.push([weight, canary.replicas, stable.replicas]);
      expect(canary.available).toBe(canary.replicas);
      expect(stable.image).toBe("shop:v1");
    }
    // Argo's table for 4 replicas with a surge of 1 (statemachine/pods.ts, checked against Argo).
    expect(seen).toEqual(
      [10, 25, 50, 75, 90].map((w) => [w, canaryCounts(4, w, 1).canary, canaryCounts(4, w, 1).stable]),
    );
    expect(seen).toEqual([
      [10, 1, 4],
      [25, 1, 3],
      [50, 2, 2],
      [75, 3, 1],
      [90, 4, 1],
    ]);
    const weights = await router.readWeights(state);
    expect(weights).toMatchObject({ canary: 80, expectedCanary: 90, drift: false });
  });

  it("leaves setCanaryScale without effect, as Argo does without a traffic router", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    const router = f.router({});
    const prepared = await router.prepare();
    let state = (await f.settle(router, await router.deployCandidate(prepared.state, { image: "shop:v2" })))
      .state;
    state = (await f.settle(router, (await router.setWeight(state, 50)).state)).state;
    const change = await router.setCanaryScale?.(state, { replicas: 4 });
    expect(change?.message).toContain("without a traffic router");
    expect(change?.state).toEqual(state);
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 2 });
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 2 });
  });

  it("promotes: the image moves to the stable Deployment at full size, the canary goes to 0 after scaleDownDelaySeconds once stable runs it", async () => {
    fixture = await kubeFixture({ stableReplicas: 3 });
    const f = fixture;
    const router = f.router({});
    let state = (
      await f.settle(
        router,
        await router.deployCandidate((await router.prepare()).state, { image: "shop:v2" }),
      )
    ).state;
    state = (await f.settle(router, (await router.setWeight(state, 50)).state)).state;
    expect([
      (await f.deployment("shop-canary")).replicas,
      (await f.deployment("shop-stable")).replicas,
    ]).toEqual([2, 2]);
    state = await router.promote(state, { scaleDownDelaySeconds: 30 });
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 3, image: "shop:v2" });
    let down = await router.scaleDown(state);
    expect(down).toMatchObject({ ready: false, retryAfterSeconds: 30 });
    expect((await f.deployment("shop-canary")).replicas).toBe(2);
    f.advance(30_000);
    for (let i = 0; i < 10; i++) {
      down = await router.scaleDown(down.state);
      if (down.ready) break;
      f.advance(1000);
    }
    expect(down.ready).toBe(true);
    expect(down.message).toMatch(/shop-canary scaled down from 2 pods/);
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 0 });
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 3, available: 3, image: "shop:v2" });
  });

  it("aborts: the canary to 0 at once and the stable whole again", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    const router = f.router({});
    let state = (
      await f.settle(
        router,
        await router.deployCandidate((await router.prepare()).state, { image: "shop:v3" }),
      )
    ).state;
    state = (await router.setWeight(state, 25)).state;
    const aborted = await router.abort(state, { abortScaleDownDelaySeconds: 30 });
    expect(aborted.ready).toBe(true);
    expect(await f.deployment("shop-canary")).toMatchObject({ replicas: 0 });
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 4, image: "shop:v1" });
  });

  it("reports pods scaled by someone else as drift and writes nothing; overwriting is explicit", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    const router = f.router({});
    let state = (
      await f.settle(
        router,
        await router.deployCandidate((await router.prepare()).state, { image: "shop:v2" }),
      )
    ).state;
    state = (await router.setWeight(state, 25)).state;
    // An operator scales the canary by hand (kubectl scale: a merge patch).
    await f.api(
      "PATCH",
      `${deployments}/shop-canary`,
      { spec: { replicas: 3 } },
      "application/merge-patch+json",
    );
    const change = await router.setWeight(state, 50);
    expect(change.outcome).toBe("drift");
    if (change.outcome !== "drift") return;
    expect(change.message).toMatch(
      /weights changed outside the rollout: the candidate receives 50% instead of 25% \(3 canary and 3 stable pods/,
    );
    expect((await f.deployment("shop-canary")).replicas).toBe(3);
    expect((await f.deployment("shop-stable")).replicas).toBe(3);
    const forced = await router.setWeight(change.state, 50, { overwriteDrift: true });
    expect(forced.outcome).toBe("applied");
    expect([
      (await f.deployment("shop-canary")).replicas,
      (await f.deployment("shop-stable")).replicas,
    ]).toEqual([2, 2]);
  });

  it("re-reads after a 409 and re-decides: a change that lands between its read and its write is drift, not overwritten", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    const calls = f.calls;
    const router = f.router({});
    let state = (
      await f.settle(
        router,
        await router.deployCandidate((await router.prepare()).state, { image: "shop:v2" }),
      )
    ).state;
    state = (await router.setWeight(state, 25)).state;
    // Someone writes the canary Deployment right after the target read it: the target's PUT
    // carries the resourceVersion it read and gets a 409.
    const before = calls.length;
    let raced = false;
    const original = calls.push.bind(calls);
    calls.push = (...items) => {
      const n = original(...items);
      const call = items[0];
      if (!raced && call?.verb === "update" && call.name === "shop-canary") {
        raced = true;
        // Synchronously through the store: it lands before the PUT reaches the server.
        const type = RESOURCE_TYPES.find((t) => t.resource === "deployments");
        if (!type) throw new Error("no deployments");
        const current = f.kube.store.get(type, NS, "shop-canary");
        f.kube.store.update(type, NS, { ...current, spec: { ...current.spec, replicas: 5 } });
      }
      return n;
    };
    const change = await router.setWeight(state, 50);
    expect(raced).toBe(true);
    const updates = calls.slice(before).filter((c) => c.verb === "update" && c.name === "shop-canary");
    expect(updates).toHaveLength(1);
    expect(change.outcome).toBe("drift");
    expect((await f.deployment("shop-canary")).replicas).toBe(5);
  });

  it("fails readiness with the Deployment's own ProgressDeadlineExceeded message", async () => {
    fixture = await kubeFixture({ stableReplicas: 2 });
    const f = fixture;
    await f.api(
      "PATCH",
      `${deployments}/shop-canary`,
      { spec: { progressDeadlineSeconds: 20 } },
      "application/merge-patch+json",
    );
    const router = f.router({ progressDeadlineSeconds: 600 });
    let state = (
      await f.settle(
        router,
        await router.deployCandidate((await router.prepare()).state, { image: "shop:v3-never-ready" }),
      )
    ).state;
    state = (await router.setWeight(state, 50)).state;
    const error = await f.settle(router, state).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetNotReadyError);
    expect((error as Error).message).toMatch(
      /the candidate on Deployment default\/shop-canary failed: ReplicaSet "shop-canary-[a-z0-9]+" has timed out progressing\./,
    );
  });

  it("a first release goes straight to the stable Deployment", async () => {
    fixture = await kubeFixture({ stableReplicas: 4 });
    const f = fixture;
    await f.api("PUT", `${deployments}/shop-stable`, {
      ...deploymentManifest("shop-stable", 0, "shop:none"),
      metadata: {
        name: "shop-stable",
        namespace: NS,
        resourceVersion: ((await f.get(`${deployments}/shop-stable`)).metadata as { resourceVersion: string })
          .resourceVersion,
      },
    });
    f.advance(1000);
    const router = f.router({ replicas: 3 });
    const prepared = await router.prepare();
    expect(prepared.firstRelease).toBe(true);
    let state: TargetState = await router.deployCandidate(prepared.state, { image: "shop:v1" });
    state = (await f.settle(router, state)).state;
    state = await router.promote(state, { scaleDownDelaySeconds: 30 });
    expect((state as KubernetesState).pendingScaleDown).toBeUndefined();
    expect(await f.deployment("shop-stable")).toMatchObject({ replicas: 3, available: 3, image: "shop:v1" });
    expect((await f.deployment("shop-canary")).replicas).toBe(0);
  });
});
