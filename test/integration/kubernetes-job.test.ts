import { deploymentManifest, shopRolloutFile } from "@sfn-rollouts/test-support/kube";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import { runUid } from "../../functions/metrics/job.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { type KubeApi, startKubeApi } from "../../local/kube/server.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../../local/stack.ts";
import { DIGESTS } from "./scenario.ts";

/**
 * A job metric on the kubernetes target: the synthesized stack in the embedded runtime, its
 * analysis creating batch/v1 Jobs in the local Kubernetes API, in virtual time. The analysis step
 * runs a smoke-test Job against the candidate's version (`{{args.version}}`, Argo's
 * `podTemplateHashValue: Latest`); the smoke test passes against v2 and fails against v3 (the
 * local Job controller is told so, as the program in a real Job would decide it). v2 is
 * promoted, v3 aborted at its analysis; each Job is read back from the API.
 */
const NS = "default";
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${NS}/deployments`;
const JOBS = `/apis/batch/v1/namespaces/${NS}/jobs`;

function rolloutFile(): string {
  return shopRolloutFile(
    [
      "canary:",
      "  steps:",
      "    - setWeight: 25",
      "    - analysis:",
      "        templates: [{ templateName: smoke }]",
      "        args: [{ name: version, valueFrom: { podTemplateHashValue: Latest } }]",
      "    - setWeight: 50",
    ],
    [
      "apiVersion: argoproj.io/v1alpha1",
      "kind: AnalysisTemplate",
      "metadata: { name: smoke }",
      "spec:",
      "  args: [{ name: version }]",
      "  metrics:",
      "    - name: smoke",
      "      provider:",
      "        job:",
      "          metadata: { labels: { app: shop-smoke } }",
      "          spec:",
      "            backoffLimit: 0",
      "            template:",
      "              spec:",
      "                restartPolicy: Never",
      '                containers: [{ name: smoke, image: smoke-test, args: ["--version", "{{args.version}}"] }]',
      "---",
    ],
  );
}

interface Job {
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: { template: { spec: { containers: { args: string[] }[] } } };
  status?: { conditions?: { type: string; status: string }[] };
}

/** The smoke test's exit code: it fails against v3. */
const smokeExitCode = (job: { spec?: unknown }) => {
  const args = (job.spec as Job["spec"]).template.spec.containers[0]?.args ?? [];
  return args.includes("v3") ? 1 : 0;
};

describe("a job metric on the local Kubernetes API, on the embedded runtime", () => {
  let kube: KubeApi;
  let stack: EmbeddedStack;

  const jobs = async (): Promise<Job[]> =>
    ((await (await fetch(`${kube.url}${JOBS}`)).json()) as { items: Job[] }).items;
  const image = async (name: string) => {
    const d = (await (await fetch(`${kube.url}${DEPLOYMENTS}/${name}`)).json()) as {
      spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
    };
    return d.spec.template.spec.containers[0]?.image ?? "";
  };

  const drive = async (done: (item: RolloutItem | undefined) => boolean) => {
    for (let s = 0; s < 900; s++) {
      await stack.runtime.settle();
      const item = await stack.item();
      if (done(item)) return item;
      await stack.runtime.advanceBy(1000);
    }
    return stack.item();
  };

  beforeAll(async () => {
    const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
    kube = await startKubeApi({ clock, syncIntervalMs: 0, readyAfterMs: 3000, jobExitCode: smokeExitCode });
    for (const name of ["shop-stable", "shop-canary"]) {
      const res = await fetch(`${kube.url}${DEPLOYMENTS}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(deploymentManifest(name, 0, "shop:none", 60)),
      });
      expect(res.status).toBe(201);
    }
    stack = await startEmbeddedStack({
      specFiles: [rolloutFile()],
      repository: "shop",
      target: {
        type: "kubernetes",
        server: kube.url,
        auth: { type: "token", token: "local" },
        stableDeployment: "shop-stable",
        canaryDeployment: "shop-canary",
        pollSeconds: 2,
      },
      clock,
    });
    await stack.push("v1", DIGESTS.v1);
    const first = await drive((i) => i?.currentRevision?.tag === "v1" && i.phase === "Healthy");
    expect(first?.phase).toBe("Healthy");
  });

  afterAll(async () => {
    await stack?.close();
    await kube?.close();
  });

  it("promotes v2 once its smoke-test Job completes: the Job carries the run's uid, the metric and v2", async () => {
    await stack.push("v2", DIGESTS.v2);
    const item = await drive(
      (i) => i?.currentRevision?.tag === "v2" && (i.phase === "Healthy" || i.phase === "Degraded"),
    );
    expect(item?.phase).toBe("Healthy");
    expect((await image("shop-stable")).endsWith(`@${DIGESTS.v2}`)).toBe(true);
    const all = await jobs();
    expect(all).toHaveLength(1);
    const job = all[0] as Job;
    const uid = job.metadata.labels["analysisrun.argoproj.io/uid"] as string;
    const runName = job.metadata.annotations["analysisrun.argoproj.io/name"] as string;
    expect(uid).toBe(runUid(runName));
    expect(job.metadata.name).toBe(`${uid}.smoke.1`);
    expect(job.metadata.labels.app).toBe("shop-smoke");
    expect(job.metadata.annotations["analysisrun.argoproj.io/metric-name"]).toBe("smoke");
    expect(job.spec.template.spec.containers[0]?.args).toEqual(["--version", "v2"]);
    expect(job.status?.conditions?.map((c) => c.type)).toContain("Complete");
  });

  it("aborts v3 when its smoke-test Job fails: v2 stays on stable", async () => {
    await stack.push("v3", DIGESTS.v3);
    const item = await drive(
      (i) => i?.currentRevision?.tag === "v3" && (i.phase === "Healthy" || i.phase === "Degraded"),
    );
    expect(item?.phase).toBe("Degraded");
    expect(item?.message).toMatch(/smoke/);
    expect((await image("shop-stable")).endsWith(`@${DIGESTS.v2}`)).toBe(true);
    const v3 = (await jobs()).filter((j) => j.spec.template.spec.containers[0]?.args.includes("v3"));
    expect(v3).toHaveLength(1);
    expect(v3[0]?.status?.conditions?.map((c) => c.type)).toContain("Failed");
    expect(v3[0]?.metadata.name.endsWith(".smoke.1")).toBe(true);
  });

  it("deletes v4's Job, still running, when v5 supersedes it; v5's own Job completes and v5 is promoted", async () => {
    const argsOf = (j: Job) => j.spec.template.spec.containers[0]?.args ?? [];
    await stack.push("v4", DIGESTS.v4);
    let v4: Job | undefined;
    for (let s = 0; s < 300 && !v4; s++) {
      await stack.runtime.settle();
      v4 = (await jobs()).find((j) => argsOf(j).includes("v4"));
      if (!v4) await stack.runtime.advanceBy(1000);
    }
    expect(v4).toBeDefined();
    // The run reads its Job again 10 s after creating it: v5 arrives before that.
    await stack.push("v5", `sha256:${"5".repeat(64)}`);
    const item = await drive(
      (i) => i?.currentRevision?.tag === "v5" && (i.phase === "Healthy" || i.phase === "Degraded"),
    );
    expect(item?.phase).toBe("Healthy");
    // v4's run, orphaned, ends at its next tick: its Job is deleted (Argo's Terminate).
    for (let s = 0; s < 30; s++) {
      await stack.runtime.advanceBy(1000);
      await stack.runtime.settle();
    }
    const left = await jobs();
    expect(left.filter((j) => argsOf(j).includes("v4"))).toEqual([]);
    const v5 = left.filter((j) => argsOf(j).includes("v5"));
    expect(v5).toHaveLength(1);
    expect(v5[0]?.status?.conditions?.map((c) => c.type)).toContain("Complete");
  });
});
