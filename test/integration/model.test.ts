import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { finished, type ModelStack, startModelStack } from "../../local/demo/model-stack.ts";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";

/**
 * Model rollouts on the synthesized stack in the embedded runtime, in virtual time: three stub
 * models behind the local proxy routing as a model router, users who send feedback for every
 * answer, and the model rollout (shadow → sticky 25% → 50%) judged through `/compare`. The
 * target names an MLflow tracking server (a local HTTP server answering MLflow's REST calls as
 * MLflow does), so each outcome is recorded in the registry.
 */
const digest = (n: number) => `sha256:${String(n).repeat(64)}`;

describe("a model rollout on the embedded runtime", () => {
  let dynamo: LocalDynamo;
  let m: ModelStack;
  const clock = new ManualClock(Date.parse("2026-11-30T12:00:00Z"));
  /** The MLflow REST calls received: path under `/api/2.0/mlflow/` and JSON body. */
  const mlflowCalls: Array<{ path: string; body: Record<string, string> }> = [];
  let mlflow: Server;

  beforeAll(async () => {
    mlflow = createServer((req, res) => {
      let text = "";
      req.on("data", (chunk) => {
        text += chunk;
      });
      req.on("end", () => {
        const path = (req.url ?? "").replace("/api/2.0/mlflow/", "");
        const known = ["registered-models/alias", "model-versions/set-tag"].includes(path);
        if (req.method !== "POST" || !known) {
          res.writeHead(404, { "content-type": "application/json" });
          res.end(
            JSON.stringify({ error_code: "ENDPOINT_NOT_FOUND", message: `no ${req.method} ${req.url}` }),
          );
          return;
        }
        mlflowCalls.push({ path, body: JSON.parse(text) as Record<string, string> });
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      });
    });
    await new Promise<void>((resolve) => mlflow.listen(0, "127.0.0.1", resolve));
    const trackingUri = `http://127.0.0.1:${(mlflow.address() as AddressInfo).port}`;
    dynamo = await startDynamo("dynalite");
    m = await startModelStack({
      clock,
      dynamo,
      tableName: "model-rollouts",
      mlflow: { trackingUri, model: "churn", alias: "production" },
    });
  });
  afterAll(async () => {
    await m?.close();
    await dynamo?.close();
    await new Promise((resolve) => mlflow?.close(resolve));
  });

  /** The registry is written by a side effect after the state write: wait for it in virtual time. */
  async function registryCalls(done: (calls: typeof mlflowCalls) => boolean) {
    for (let i = 0; i < 60 && !done(mlflowCalls); i++) {
      await m.stack.runtime.settle();
      await m.stack.runtime.advanceBy(1000);
    }
    return mlflowCalls;
  }

  /** Users send `rps` requests (and their feedback) each virtual second until the rollout of `tag` ends. */
  async function drive(tag: string, rps = 40, maxSeconds = 400) {
    for (let s = 0; s < maxSeconds; s++) {
      await m.stack.runtime.settle();
      const item = await m.stack.item();
      if (finished(tag)(item)) return item;
      if (item?.currentRevision?.tag === tag && item.phase === "Paused") {
        throw new Error(`${tag} paused: ${item.message}\n${(await measurements()).join("\n")}`);
      }
      await m.users.batch(rps);
      await m.stack.runtime.advanceBy(1000);
    }
    return m.stack.item();
  }

  async function measurements(): Promise<string[]> {
    const out: string[] = [];
    for (const run of await m.stack.store.listRuns(m.stack.rollout, StoredAnalysisSchema)) {
      for (const result of run.run.run.metricResults) {
        for (const x of result.measurements) out.push(`${result.name} ${x.phase} ${x.message ?? ""}`);
      }
    }
    return out;
  }

  it("v1 is the first release; v2 goes shadow → sticky canary → promoted", async () => {
    await m.stack.push("v1", digest(1));
    const first = await drive("v1");
    expect(first?.phase).toBe("Healthy");

    await m.stack.push("v2", digest(2));
    const item = await drive("v2");
    expect(item?.phase).toBe("Healthy");
    expect(item?.weight).toBe(100);
    const served = m.users.counts.byVersion.v2;
    expect(served?.served).toBeGreaterThan(0);
    // the shadow ran before any user met v2: its copies were compared with v1's answers
    const cfg = (await (await fetch(`${m.proxy.adminUrl}/admin/config`)).json()) as {
      config: { stableVersion: string; mirrorPercent: number; model: unknown };
      mirror: { queued: number; dropped: number };
    };
    expect(cfg.config).toMatchObject({ stableVersion: "v2", mirrorPercent: 0 });
    expect(cfg.config.model).not.toBeNull();
    expect(cfg.mirror.queued).toBeGreaterThanOrEqual(300);
    expect(cfg.mirror.dropped).toBe(0);
    const lines = await measurements();
    expect(lines.some((l) => l.startsWith("disagreement Successful"))).toBe(true);
    expect(lines.filter((l) => l.startsWith("quality Successful"))).toHaveLength(2);
    // the registry's production alias moved to v2 (the version from the tag)
    const calls = await registryCalls((c) => c.some((x) => x.body.version === "2"));
    const aliases = calls.filter((c) => c.path === "registered-models/alias").map((c) => c.body);
    expect(aliases.at(-1)).toEqual({ name: "churn", alias: "production", version: "2" });
    expect(calls).toContainEqual({
      path: "model-versions/set-tag",
      body: { name: "churn", version: "2", key: "rollout", value: "promoted" },
    });
  }, 600_000);

  it("v3, worse by about 9 points of accuracy, passes the shadow and is rolled back by feedback at 25%", async () => {
    const before = (await m.stack.item())?.executionArn;
    await m.stack.push("v3", digest(3));
    const item = await drive("v3");
    expect(item?.executionArn).not.toBe(before);
    expect(item?.phase).toBe("Degraded");
    expect(item?.weight).toBe(0);
    expect(item?.message).toMatch(
      /^RolloutAborted: Rollout aborted update to revision 3: Gate "quality" rolled back: candidate \d+\.\d% vs stable \d+\.\d% bad feedback/,
    );
    const v3 = m.users.counts.byVersion.v3;
    expect(v3?.served).toBeGreaterThanOrEqual(100);
    expect((v3?.bad ?? 0) / (v3?.served ?? 1)).toBeGreaterThan(0.07);
    // the proxy sends everyone back to v2
    const res = await fetch(`${m.proxy.url}/predict`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-user-id": "u1" },
      body: JSON.stringify({ features: [1, 1] }),
    });
    expect(res.headers.get("x-model-version")).toBe("v2");
    await res.body?.cancel();
    // the registry marks v3 rolled back with the judge's reason; the alias stays on v2
    const calls = await registryCalls((c) => c.some((x) => x.body.key === "rolled-back"));
    const tag = calls.find((c) => c.body.key === "rolled-back");
    expect(tag?.path).toBe("model-versions/set-tag");
    expect(tag?.body).toMatchObject({ name: "churn", version: "3" });
    expect(tag?.body.value).toMatch(
      /Gate "quality" rolled back: candidate \d+\.\d% vs stable \d+\.\d% bad feedback/,
    );
    expect(
      calls.filter((c) => c.path === "registered-models/alias").map((c) => c.body.version),
    ).not.toContain("3");
  }, 600_000);
});
