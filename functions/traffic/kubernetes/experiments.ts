import { canonicalJson } from "../../../statemachine/revision.ts";
import { TargetNotReadyError } from "../errors.ts";
import type { ExperimentTemplate } from "../port.ts";
import { type KubeClient, type KubeObject, RESOURCES } from "./client.ts";
import { record } from "./objects.ts";

/**
 * The ReplicaSets of an `experiment` step, shaped as Argo's experiment controller makes them
 * (`newReplicaSetFromTemplate` in Argo's experiments/replicaset.go): the experiment is named
 * `<canary Deployment>-<pod template hash>-<step index>` (Argo: `<rollout>-<hash>-<revision>-<step>`),
 * each ReplicaSet `<experiment>-<template>`; the pod template is the stable or the canary
 * Deployment's, its labels and selector given `rollouts-pod-template-hash` of the template as
 * copied (so the experiment's pods are told apart from the Deployments' in metrics), and Argo's
 * `experiment.argoproj.io/name` and `template-name` annotations.
 *
 * The ReplicaSet's own labels are the hash and the experiment's, not the pod template's: a
 * Deployment adopts an orphaned ReplicaSet whose labels its selector matches (and would scale it
 * away as an old one); Argo's have the Experiment as their controller instead.
 */

export const HASH_LABEL = "rollouts-pod-template-hash";
export const EXPERIMENT_LABEL = "rollouts.sfn/experiment";
export const NAME_ANNOTATION = "experiment.argoproj.io/name";
export const TEMPLATE_ANNOTATION = "experiment.argoproj.io/template-name";

/** The alphabet Kubernetes' `rand.SafeEncodeString` maps a hash's digits to (no vowels, no 0/1/3). */
const SAFE = "bcdfghjklmnpqrstvwxz2456789";

/** FNV-1a (32 bits) of `text`'s UTF-8 bytes. */
function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * A pod template's hash as a label value: FNV-1a of the template (and `salt`), its decimal digits
 * encoded as `SafeEncodeString` does, like Argo's and the Deployment controller's hashes.
 */
export function podTemplateHash(template: unknown, salt = ""): string {
  const digits = String(fnv32a(`${canonicalJson(template)}${salt}`));
  return [...digits].map((d) => SAFE[d.charCodeAt(0) % SAFE.length]).join("");
}

/** `<canary Deployment>-<hash of the candidate's pod template>-<step index>`. */
export function experimentName(canaryDeployment: KubeObject, stepIndex: number): string {
  const hash = podTemplateHash(withoutHash(record(record(canaryDeployment, "spec"), "template")));
  return `${canaryDeployment.metadata.name}-${hash}-${stepIndex}`;
}

/** A pod template without the hash labels a controller added. */
function withoutHash(template: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(template);
  const labels = record(record(copy, "metadata"), "labels") as Record<string, string>;
  delete labels[HASH_LABEL];
  delete labels["pod-template-hash"];
  return copy;
}

/** The ReplicaSet of one experiment template, from the Deployment its `specRef` names. */
export function experimentReplicaSet(
  experiment: string,
  template: ExperimentTemplate,
  source: KubeObject,
  namespace: string,
  routed: readonly string[] = [],
): KubeObject {
  const spec = record(source, "spec");
  const podTemplate = withoutHash(record(spec, "template"));
  // Behind a router, the labels that tell the stable Service's pods from the canary Service's
  // are left off, so neither Service sends the experiment's pods traffic (Argo: the Services
  // select the rollout's own rollouts-pod-template-hash).
  const podLabels = record(record(podTemplate, "metadata"), "labels") as Record<string, string>;
  for (const key of routed) delete podLabels[key];
  // Argo's experiment pods hash differently from the rollout's own, though their spec is the same.
  const hash = podTemplateHash(podTemplate, `${experiment}/${template.name}`);
  const labels = record(record(podTemplate, "metadata"), "labels") as Record<string, string>;
  labels[HASH_LABEL] = hash;
  const selector = structuredClone(record(spec, "selector"));
  const matchLabels = record(selector, "matchLabels") as Record<string, string>;
  for (const key of routed) delete matchLabels[key];
  matchLabels[HASH_LABEL] = hash;
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name: `${experiment}-${template.name}`,
      namespace,
      labels: { [HASH_LABEL]: hash, [EXPERIMENT_LABEL]: experiment.slice(0, 63).replace(/-+$/, "") },
      annotations: { [NAME_ANNOTATION]: experiment, [TEMPLATE_ANNOTATION]: template.name },
    },
    spec: {
      replicas: template.replicas,
      ...(typeof spec.minReadySeconds === "number" ? { minReadySeconds: spec.minReadySeconds } : {}),
      selector,
      template: podTemplate,
    },
  };
}

/**
 * The label keys whose values tell the stable Service's selector from the canary Service's: an
 * experiment's pods without them are selected by neither.
 */
export function routedLabels(stable: KubeObject, canary: KubeObject): string[] {
  const a = (stable.spec?.selector ?? {}) as Record<string, string>;
  const b = (canary.spec?.selector ?? {}) as Record<string, string>;
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]).sort();
}

/** One ReplicaSet of a running experiment, as the target records it. */
export interface ExperimentSet {
  readonly template: string;
  readonly name: string;
  readonly replicas: number;
  readonly podTemplateHash: string;
}

export class ExperimentSets {
  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
  ) {}

  /**
   * Creates the ReplicaSet; one of that name left by an earlier attempt of this experiment (same
   * annotations) is taken as it is, any other is an error naming it.
   */
  async create(rs: KubeObject): Promise<ExperimentSet> {
    const name = rs.metadata.name;
    const existing = await this.client.get(RESOURCES.replicaSets, this.namespace, name);
    const made = existing ?? (await this.client.create(RESOURCES.replicaSets, rs));
    const a = made.metadata.annotations ?? {};
    const want = rs.metadata.annotations ?? {};
    if (
      a[NAME_ANNOTATION] !== want[NAME_ANNOTATION] ||
      a[TEMPLATE_ANNOTATION] !== want[TEMPLATE_ANNOTATION]
    ) {
      throw new TargetNotReadyError(
        `ReplicaSet ${this.namespace}/${name} exists and is not this experiment's (annotation ${NAME_ANNOTATION}: ${a[NAME_ANNOTATION] ?? "none"})`,
      );
    }
    return {
      template: String(want[TEMPLATE_ANNOTATION]),
      name,
      replicas: Number(made.spec?.replicas ?? 0),
      podTemplateHash: made.metadata.labels?.[HASH_LABEL] ?? "",
    };
  }

  /**
   * One poll: ready when every ReplicaSet's controller saw its spec and it has all its pods
   * available; past `deadlineAt` it is an error with the counts, as Argo's experiment fails a
   * template that does not become available within its progress deadline.
   */
  async poll(
    sets: readonly ExperimentSet[],
    deadlineAt: number,
    now: number,
  ): Promise<{ ready: boolean; message: string }> {
    const counts: string[] = [];
    let ready = true;
    for (const set of sets) {
      const rs = await this.client.require(RESOURCES.replicaSets, this.namespace, set.name);
      const status = rs.status ?? {};
      const observed = Number(status.observedGeneration ?? 0) >= Number(rs.metadata.generation ?? 0);
      const available = Number(status.availableReplicas ?? 0);
      if (!observed || available < set.replicas) ready = false;
      counts.push(`${set.name} ${available}/${set.replicas} available`);
    }
    const progress = counts.join(", ");
    if (ready) return { ready: true, message: `the experiment's ReplicaSets are available: ${progress}` };
    if (now >= deadlineAt) {
      throw new TargetNotReadyError(
        `the experiment's ReplicaSets did not become available before their progress deadline (${new Date(deadlineAt).toISOString()}): ${progress}`,
      );
    }
    return { ready: false, message: `the experiment's ReplicaSets are not available yet: ${progress}` };
  }

  /** Deletes the ReplicaSets (their pods go with them); one already gone is fine. */
  async delete(sets: readonly ExperimentSet[]): Promise<string[]> {
    const deleted: string[] = [];
    for (const set of sets) {
      if (await this.client.delete(RESOURCES.replicaSets, this.namespace, set.name)) deleted.push(set.name);
    }
    return deleted;
  }
}
