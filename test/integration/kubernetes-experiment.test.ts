import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { deploymentManifest, shopRolloutFile } from "@sfn-rollouts/test-support/kube";
import {
  type PrometheusRangeServer,
  startPrometheusRange,
} from "@sfn-rollouts/test-support/prometheus-range";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../functions/clock.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import { type KubeApi, startKubeApi } from "../../local/kube/server.ts";
import { type EmbeddedStack, startEmbeddedStack } from "../../local/stack.ts";
import { DIGESTS } from "./scenario.ts";

/**
 * Argo's `experiment` step on the kubernetes target: the synthesized stack in the embedded runtime,
 * its handlers calling the local Kubernetes API, in virtual time. The experiment runs a baseline
 * ReplicaSet from the stable Deployment's pod template and a canary one from the candidate's; its
 * analysis (a Prometheus range query of the candidate's error ratio, against a local server
 * speaking Prometheus' API) lets v2 (0.1% errors) through and aborts v3 (8%). The ReplicaSets are
 * read over HTTP while the rollout runs, and are gone once it has ended either way.
 */
const NS = "default";
const RATIO: Record<string, number> = { v2: 0.001, v3: 0.08 };

const STRATEGY = [
  "canary:",
  "  scaleDownDelaySeconds: 30",
  "  steps:",
  "    - setWeight: 25",
  "    - experiment:",
  "        templates:",
  "          - { name: baseline, specRef: stable }",
  "          - { name: canary, specRef: canary, replicas: 2 }",
  "        analyses:",
  "          - name: errors",
  "            templateName: error-ratio",
  "            requiredForCompletion: true",
  "            args:",
  "              - { name: version, valueFrom: { podTemplateHashValue: Latest } }",
  '              - { name: hash, value: "{{templates.canary.podTemplateHash}}" }',
  "    - setWeight: 50",
];

const TEMPLATE = (url: string) =>
  [
    "apiVersion: argoproj.io/v1alpha1",
    "kind: AnalysisTemplate",
    "metadata: { name: error-ratio }",
    "spec:",
    "  args: [{ name: version }, { name: hash }]",
    "  metrics:",
    "    - name: error-ratio",
    "      interval: 1m",
    "      count: 2",
    "      successCondition: 'len(result) > 0 && all(result, # < 0.01)'",
    "      provider:",
    "        prometheus:",
    `          address: ${url}`,
    '          query: sum(rate(http_errors_total{version="{{args.version}}",rollouts_pod_template_hash="{{args.hash}}"}[1m]))',
    '          rangeQuery: { start: now() - duration("2m"), end: now(), step: 1m }',
    "",
  ].join("\n");

interface SeenSet {
  name: string;
  replicas: number;
  image: string;
  hash: string;
  templateLabels: Record<string, string>;
}

describe("an experiment step on the local Kubernetes API, on the embedded runtime", () => {
  let kube: KubeApi;
  let stack: EmbeddedStack;
  let prometheus: PrometheusRangeServer;
  const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));

  /** The experiment's ReplicaSets, as the API server lists them. */
  const experimentSets = async (): Promise<SeenSet[]> => {
    const res = await fetch(
      `${kube.url}/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=${encodeURIComponent("rollouts.sfn/experiment")}`,
    );
    expect(res.status).toBe(200);
    const list = (await res.json()) as {
      items: {
        metadata: { name: string; labels: Record<string, string> };
        spec: {
          replicas: number;
          template: {
            metadata: { labels: Record<string, string> };
            spec: { containers: { image: string }[] };
          };
        };
      }[];
    };
    return list.items.map((rs) => ({
      name: rs.metadata.name,
      replicas: rs.spec.replicas,
      image: rs.spec.template.spec.containers[0]?.image ?? "",
      hash: rs.metadata.labels["rollouts-pod-template-hash"] ?? "",
      templateLabels: rs.spec.template.metadata.labels,
    }));
  };

  /** The experiment's pods, as the API server lists them. */
  const experimentPods = async (): Promise<number> => {
    const res = await fetch(
      `${kube.url}/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent("rollouts-pod-template-hash")}`,
    );
    return ((await res.json()) as { items: unknown[] }).items.length;
  };

  /** Runs the rollout a second at a time until it ends, recording every experiment ReplicaSet seen. */
  const drive = async (tag: string, seen: Map<string, SeenSet>): Promise<RolloutItem | undefined> => {
    let item: RolloutItem | undefined;
    for (let s = 0; s < 900; s++) {
      await stack.runtime.settle();
      item = await stack.item();
      for (const set of await experimentSets()) seen.set(set.name, set);
      const mine = item?.currentRevision?.tag === tag;
      if (mine && item && (item.phase === "Healthy" || item.phase === "Degraded")) return item;
      await stack.runtime.advanceBy(1000);
    }
    return item;
  };

  beforeAll(async () => {
    prometheus = await startPrometheusRange((query) => {
      const version = /version="(v\d+)"/.exec(query)?.[1] ?? "";
      const ratio = RATIO[version];
      return ratio === undefined ? [] : [{ metric: { version }, at: () => ratio }];
    });
    kube = await startKubeApi({ clock, syncIntervalMs: 0, readyAfterMs: 3000 });
    for (const name of ["shop-stable", "shop-canary"]) {
      const res = await fetch(`${kube.url}/apis/apps/v1/namespaces/${NS}/deployments`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(deploymentManifest(name, 0, "shop:none", 60)),
      });
      expect(res.status).toBe(201);
    }
    const rollout = shopRolloutFile(STRATEGY);
    const template = join(dirname(rollout), "template.yaml");
    writeFileSync(template, TEMPLATE(prometheus.url));
    stack = await startEmbeddedStack({
      specFiles: [rollout, template],
      repository: "shop",
      target: {
        type: "kubernetes",
        server: kube.url,
        auth: { type: "token", token: "local" },
        stableDeployment: "shop-stable",
        canaryDeployment: "shop-canary",
        router: { type: "pods" },
        pollSeconds: 2,
      } as Parameters<typeof startEmbeddedStack>[0]["target"],
      clock,
    });
    await stack.push("v1", DIGESTS.v1);
    expect((await drive("v1", new Map()))?.phase).toBe("Healthy");
  });

  afterAll(async () => {
    await stack?.close();
    await kube?.close();
    await prometheus?.close();
  });

  it("runs v2's experiment next to the rollout, its analysis passes, and the ReplicaSets are deleted before the next step", async () => {
    await stack.push("v2", DIGESTS.v2);
    const seen = new Map<string, SeenSet>();
    const item = await drive("v2", seen);
    expect(item?.phase).toBe("Healthy");
    const sets = [...seen.values()].sort((a, b) => a.name.localeCompare(b.name));
    // Argo's names: <experiment>-<template>, the experiment <canary Deployment>-<hash>-<step index>.
    expect(sets.map((s) => s.name)).toEqual([
      expect.stringMatching(/^shop-canary-[bcdfghjklmnpqrstvwxz2456789]+-1-baseline$/),
      expect.stringMatching(/^shop-canary-[bcdfghjklmnpqrstvwxz2456789]+-1-canary$/),
    ]);
    const [baseline, canary] = sets;
    // baseline copies the stable pod template (v1), canary the candidate's (v2), with its replicas.
    expect(baseline?.image.endsWith(DIGESTS.v1)).toBe(true);
    expect(canary?.image.endsWith(DIGESTS.v2)).toBe(true);
    expect([baseline?.replicas, canary?.replicas]).toEqual([1, 2]);
    // Each template's pods carry its own hash, told apart from each other.
    expect(baseline?.templateLabels["rollouts-pod-template-hash"]).toBe(baseline?.hash);
    expect(canary?.templateLabels["rollouts-pod-template-hash"]).toBe(canary?.hash);
    expect(baseline?.hash).not.toBe(canary?.hash);
    expect(baseline?.templateLabels.app).toBe("shop");
    // The analysis measured v2 while the experiment ran; the step ended and deleted its ReplicaSets.
    // ... of the experiment's canary pods: {{templates.canary.podTemplateHash}} is its ReplicaSet's hash.
    expect(prometheus.queries.length).toBeGreaterThan(0);
    expect(
      prometheus.queries.every((q) =>
        q.query.includes(`version="v2",rollouts_pod_template_hash="${canary?.hash}"`),
      ),
    ).toBe(true);
    expect(await experimentSets()).toEqual([]);
    expect(await experimentPods()).toBe(0);
    const types = (item?.events ?? []).map((e) => e.type);
    expect(types).toContain("ExperimentCreated");
  });

  it("aborts v3, whose experiment analysis fails, and the abort deletes the experiment's ReplicaSets", async () => {
    await stack.push("v3", DIGESTS.v3);
    const seen = new Map<string, SeenSet>();
    const item = await drive("v3", seen);
    expect(item?.phase).toBe("Degraded");
    expect(item?.message).toMatch(/error-ratio/);
    expect([...seen.values()].map((s) => s.name.replace(/-[a-z0-9]+-1-/, "-HASH-1-")).sort()).toEqual([
      "shop-canary-HASH-1-baseline",
      "shop-canary-HASH-1-canary",
    ]);
    // The baseline is now v2's pod template (the stable side after v2's promotion).
    const baseline = [...seen.values()].find((s) => s.name.endsWith("-baseline"));
    expect(baseline?.image.endsWith(DIGESTS.v2)).toBe(true);
    const canary = [...seen.values()].find((s) => s.name.endsWith("-canary"));
    expect(
      prometheus.queries.some((q) =>
        q.query.includes(`version="v3",rollouts_pod_template_hash="${canary?.hash}"`),
      ),
    ).toBe(true);
    expect(await experimentSets()).toEqual([]);
    expect(await experimentPods()).toBe(0);
  });
});
