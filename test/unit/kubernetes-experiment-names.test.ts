import { describe, expect, it } from "vitest";
import {
  experimentName,
  experimentReplicaSet,
  podTemplateHash,
  routedLabels,
} from "../../functions/traffic/kubernetes/experiments.ts";

/** The names and labels of an experiment's ReplicaSets, as Argo's experiment controller gives them. */

const deployment = (name: string, image: string, extra: Record<string, string> = {}) => ({
  metadata: { name },
  spec: {
    selector: { matchLabels: { app: "shop", "rollouts.sfn/deployment": name } },
    minReadySeconds: 5,
    template: {
      metadata: { labels: { app: "shop", "rollouts.sfn/deployment": name, ...extra } },
      spec: { containers: [{ name: "app", image }] },
    },
  },
});

describe("an experiment's names and labels", () => {
  it("hashes a pod template into SafeEncodeString's alphabet, whatever the order of its keys", () => {
    const a = podTemplateHash({ metadata: { labels: { x: "1", y: "2" } }, spec: { containers: [] } });
    const b = podTemplateHash({ spec: { containers: [] }, metadata: { labels: { y: "2", x: "1" } } });
    expect(a).toBe(b);
    expect(a).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
    expect(podTemplateHash({ spec: { containers: [{ image: "v2" }] } })).not.toBe(
      podTemplateHash({ spec: { containers: [{ image: "v3" }] } }),
    );
    expect(podTemplateHash({}, "one")).not.toBe(podTemplateHash({}, "two"));
  });

  it("names the experiment after the canary Deployment, its template's hash and the step, as Argo's <rollout>-<hash>-<revision>-<step>", () => {
    const v2 = experimentName(deployment("shop-canary", "shop:v2"), 3);
    expect(v2).toMatch(/^shop-canary-[bcdfghjklmnpqrstvwxz2456789]+-3$/);
    // A hash label a controller added does not change it; a new image does.
    expect(experimentName(deployment("shop-canary", "shop:v2", { "pod-template-hash": "abc" }), 3)).toBe(v2);
    expect(experimentName(deployment("shop-canary", "shop:v3"), 3)).not.toBe(v2);
  });

  it("copies the source's pod template and selector, adds the template's hash, and keeps the Deployment's labels off the ReplicaSet", () => {
    const rs = experimentReplicaSet(
      "shop-canary-x-1",
      { name: "baseline", specRef: "stable", replicas: 2 },
      deployment("shop-stable", "shop:v1"),
      "default",
    );
    const hash = rs.metadata.labels?.["rollouts-pod-template-hash"];
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
    expect(rs).toEqual({
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: {
        name: "shop-canary-x-1-baseline",
        namespace: "default",
        labels: { "rollouts-pod-template-hash": hash, "rollouts.sfn/experiment": "shop-canary-x-1" },
        annotations: {
          "experiment.argoproj.io/name": "shop-canary-x-1",
          "experiment.argoproj.io/template-name": "baseline",
        },
      },
      spec: {
        replicas: 2,
        minReadySeconds: 5,
        selector: {
          matchLabels: {
            app: "shop",
            "rollouts.sfn/deployment": "shop-stable",
            "rollouts-pod-template-hash": hash,
          },
        },
        template: {
          metadata: {
            labels: {
              app: "shop",
              "rollouts.sfn/deployment": "shop-stable",
              "rollouts-pod-template-hash": hash,
            },
          },
          spec: { containers: [{ name: "app", image: "shop:v1" }] },
        },
      },
    });
    // Another experiment, or another template of it, hashes its pods apart.
    const other = experimentReplicaSet(
      "shop-canary-x-1",
      { name: "canary", specRef: "stable", replicas: 2 },
      deployment("shop-stable", "shop:v1"),
      "default",
    );
    expect(other.metadata.labels?.["rollouts-pod-template-hash"]).not.toBe(hash);
  });

  it("behind a router, leaves off the labels that tell the stable Service's pods from the canary Service's", () => {
    const service = (selector: Record<string, string>) => ({ metadata: { name: "s" }, spec: { selector } });
    const routed = routedLabels(
      service({ app: "shop", "rollouts.sfn/deployment": "shop-stable" }),
      service({ app: "shop", "rollouts.sfn/deployment": "shop-canary", track: "canary" }),
    );
    expect(routed).toEqual(["rollouts.sfn/deployment", "track"]);
    const rs = experimentReplicaSet(
      "e",
      { name: "canary", specRef: "canary", replicas: 1 },
      deployment("shop-canary", "shop:v2"),
      "default",
      routed,
    );
    const spec = rs.spec as {
      selector: { matchLabels: Record<string, string> };
      template: { metadata: { labels: Record<string, string> } };
    };
    expect(Object.keys(spec.template.metadata.labels).sort()).toEqual(["app", "rollouts-pod-template-hash"]);
    expect(Object.keys(spec.selector.matchLabels).sort()).toEqual(["app", "rollouts-pod-template-hash"]);
  });
});
